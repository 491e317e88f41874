package dlq

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"github.com/redrive/redrive/internal/text"
	"time"
	"unicode/utf8"

	"github.com/redrive/redrive/queue"
)

// UnparseableBeerID is the beer_id stored for bodies without a usable beer_id.
const UnparseableBeerID = "__unparseable__"

// Failure is one dead-lettered message to store.
type Failure struct {
	// MessageID is the queue message id (dedup key for redeliveries).
	MessageID string
	// SourceQueue is the queue the message failed on (not the DLQ).
	SourceQueue string
	// Body is the body's text form, as queue.Message.Body returns it (base64
	// for queue.Bytes).
	Body string
	// ContentType is how the message was sent (queue.Message.Body's type);
	// replay sends the body back with it. Empty means JSON when Body is
	// valid JSON, else Text (what rows stored before content types get).
	ContentType queue.ContentType
	// Attempts is the number of attempts made on the source queue; the
	// message's attempt record wins when it counts more.
	Attempts int
	// Class is transient | rate_limited | permanent | poison | unknown | ...
	// Class and Reason left empty are derived by the store statement itself:
	// from the message's attempt record (message_attempts, which also gives
	// failure_count), else `unknown` / `no attempt record`; a body without a
	// usable beer_id gets class `poison` and reason `unparseable: ...; ...`.
	Class string
	// Reason is a short human-readable text, no secrets.
	Reason string
	// FailedAt is when the failure was recorded.
	FailedAt time.Time

	// parsed is Body already parsed (by Capture), so it is parsed once.
	parsed *body
	// asBase64 stores a text or JSON body as base64 (Capture's minimal row
	// of a message that could not be stored as it is).
	asBase64 bool
}

// contentType is f's content type, derived when empty (see Failure.ContentType).
func (f Failure) contentType() queue.ContentType {
	if f.ContentType != "" {
		return f.ContentType
	}
	if json.Valid([]byte(f.Body)) {
		return queue.JSON
	}
	return queue.Text
}

// BodyHash is a body's lineage key: the hex of the first 16 bytes of
// SHA-256 over its content type, "\n" and its text form (base64 for bytes).
// A replay sends the body unchanged, so a replayed message that fails again
// arrives with the same hash as its row (see putSQL).
func BodyHash(ct queue.ContentType, text string) string {
	h := sha256.New()
	h.Write([]byte(ct))
	h.Write([]byte{'\n'})
	h.Write([]byte(text))
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// Outcome is what storing one failure did to dlq_messages.
type Outcome string

const (
	// OutcomeNew: the failure created a new row.
	OutcomeNew Outcome = "new"
	// OutcomeRepeat: a replayed message failed again (same source queue and
	// body hash as a row a replay claimed) and updated that row.
	OutcomeRepeat Outcome = "repeat"
	// OutcomeDuplicate: a redelivery of a message already stored; nothing changed.
	OutcomeDuplicate Outcome = "duplicate"
)

// Store writes failures to dlq_messages.
type Store struct {
	DB *sql.DB
}

// Put stores failures in one statement (see Save) and discards the outcomes.
func (s Store) Put(ctx context.Context, fs []Failure) error {
	_, err := s.Save(ctx, fs)
	return err
}

// putSQL is the whole store: one INSERT over the JSON batch.
//
// Lineage: replay sends a row's body unchanged (nothing is added to it), so
// a replayed message that fails again is recognised by its body: the same
// source_queue and body_hash (BodyHash) as a row that a replay claimed,
// found through the partial index idx_dlq_replay_lineage (rows enter it when
// a replay claims them, so an ordinary capture pays no index write for
// body_hash). The subquery that sets id picks that row when
//
//   - it is not acknowledged, or its last_message_id is this message (a
//     redelivery of a repeat failure: the update below is then a no-op);
//     so no body, whatever it contains, reopens an acknowledged row;
//   - and no row has message_id = this message: that is a redelivery of a
//     first failure, which ON CONFLICT(message_id) DO NOTHING must absorb
//     (SQLite checks the id conflict first, so id must stay NULL for it);
//
// preferring the row whose last_message_id is this message, then a row being
// (or just) replayed, then the newest. (Two subqueries under COALESCE: D1's
// SQLite rejects a reference to the outer row in a subquery's ORDER BY.) Two
// rows with identical bodies from the same queue are told apart only by that
// order: the one being replayed wins.
//
// With a row found, ON CONFLICT(id) updates it: back to pending, replay_count
// kept, failed_at/failure_* and last_message_id set — unless last_message_id
// already is this message (a redelivery of the repeat failure: no change).
// The row's original message_id, body and beer columns stay as first stored.
// Otherwise id is NULL (a new row) and ON CONFLICT(message_id) DO NOTHING
// absorbs redeliveries: an existing row keeps its status (acknowledged and
// replayed rows are never resurrected).
//
// RETURNING lists each row written: message_id = last_message_id for a new
// row, message_id <> last_message_id for a lineage update. Messages absent
// from the result were duplicates.
const putSQL = `INSERT INTO dlq_messages(id, message_id, beer_id, beer_name, brewer, failed_at, failure_count,
		failure_reason, failure_class, source_queue, raw_message, raw_encoding, content_type, body_hash,
		last_message_id, first_failed_at, updated_at)
	SELECT COALESCE(
			(SELECT d.id FROM dlq_messages d
				WHERE d.source_queue = j.value ->> '$.source' AND d.body_hash = j.value ->> '$.hash' AND ` + lineageIndexCond + `
					AND d.last_message_id = j.value ->> '$.message_id'
					AND NOT EXISTS (SELECT 1 FROM dlq_messages f WHERE f.message_id = j.value ->> '$.message_id')
				LIMIT 1),
			(SELECT d.id FROM dlq_messages d
				WHERE d.source_queue = j.value ->> '$.source' AND d.body_hash = j.value ->> '$.hash' AND ` + lineageIndexCond + `
					AND d.status <> 'acknowledged'
					AND NOT EXISTS (SELECT 1 FROM dlq_messages f WHERE f.message_id = j.value ->> '$.message_id')
				ORDER BY d.status IN ('replaying', 'replayed') DESC, d.id DESC LIMIT 1)),
		j.value ->> '$.message_id', j.value ->> '$.beer_id', j.value ->> '$.beer_name', j.value ->> '$.brewer',
		j.value ->> '$.failed_at',
		max(COALESCE(a.attempt, 0), j.value ->> '$.attempts'),
		COALESCE(j.value ->> '$.reason', substr(
			CASE WHEN j.value ->> '$.problem' IS NULL THEN '' ELSE 'unparseable: ' || (j.value ->> '$.problem') || '; ' END ||
			COALESCE(a.error_class || ': ' || a.error, 'no attempt record'), 1, ` + maxReasonSQL + `)),
		COALESCE(j.value ->> '$.class', CASE WHEN j.value ->> '$.problem' IS NULL THEN COALESCE(a.error_class, 'unknown') ELSE 'poison' END),
		j.value ->> '$.source', j.value ->> '$.raw', j.value ->> '$.encoding', j.value ->> '$.content_type', j.value ->> '$.hash',
		j.value ->> '$.message_id', j.value ->> '$.failed_at', j.value ->> '$.failed_at'
	FROM json_each(?) AS j LEFT JOIN message_attempts a ON a.message_id = j.value ->> '$.message_id'
	WHERE true
	ON CONFLICT(id) DO UPDATE SET status = 'pending', failed_at = excluded.failed_at,
		failure_count = excluded.failure_count, failure_reason = excluded.failure_reason,
		failure_class = excluded.failure_class, last_message_id = excluded.last_message_id,
		updated_at = excluded.updated_at,
		-- A repeat failure that overtakes its replay's final update: that update
		-- (conditional on replaying_at) then matches nothing, so count the replay here.
		replay_count = dlq_messages.replay_count + (dlq_messages.status = 'replaying'), replaying_at = NULL
		WHERE dlq_messages.last_message_id <> excluded.last_message_id
	ON CONFLICT(message_id) DO NOTHING
	RETURNING message_id, last_message_id`

// lineageIndexCond is idx_dlq_replay_lineage's condition (schema.sql), for
// table alias d. A query uses a partial index only when its WHERE contains
// the index's condition as written.
const lineageIndexCond = `(d.status = 'replaying' OR d.replay_count > 0)`

// maxReasonSQL is maxReason for putSQL (characters there, bytes elsewhere).
const maxReasonSQL = "1000"

// putRow is one element of the JSON batch bound to putSQL.
type putRow struct {
	MessageID   string  `json:"message_id"`
	BeerID      string  `json:"beer_id"`
	BeerName    *string `json:"beer_name"`
	Brewer      *string `json:"brewer"`
	Attempts    int     `json:"attempts"`
	Source      string  `json:"source"`
	Raw         string  `json:"raw"`
	Encoding    string  `json:"encoding"`
	ContentType string  `json:"content_type"`
	Hash        string  `json:"hash"`
	// Class and Reason, when empty, are derived in SQL from the message's
	// attempt record (message_attempts) and Problem.
	Class    *string `json:"class"`
	Reason   *string `json:"reason"`
	Problem  *string `json:"problem"`
	FailedAt int64   `json:"failed_at"`
}

// encodeBatch builds the JSON parameter of putSQL.
func encodeBatch(fs []Failure) ([]byte, error) {
	rows := make([]putRow, len(fs))
	for i, f := range fs {
		ct := f.contentType()
		b := f.parsed
		if b == nil {
			p := parseBody(f.Body, ct == queue.Bytes)
			b = &p
		}
		raw, enc := f.Body, "text"
		switch {
		case ct == queue.Bytes:
			enc = "base64" // the text form of bytes is base64 already
		case f.asBase64 || !utf8.ValidString(raw):
			// JSON cannot carry invalid UTF-8: keep the exact bytes as base64.
			raw, enc = base64.StdEncoding.EncodeToString([]byte(raw)), "base64"
		}
		beerID := b.BeerID
		if b.Problem != "" {
			beerID = UnparseableBeerID
		}
		rows[i] = putRow{MessageID: f.MessageID, BeerID: beerID, BeerName: b.BeerName, Brewer: b.Brewer,
			Attempts: f.Attempts, Source: f.SourceQueue, Raw: raw, Encoding: enc,
			ContentType: string(ct), Hash: BodyHash(ct, f.Body),
			Class: nonEmpty(f.Class), Reason: nonEmpty(f.Reason), Problem: nonEmpty(b.Problem), FailedAt: f.FailedAt.UnixMilli()}
	}
	return json.Marshal(rows)
}

func nonEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// Save stores failures in ONE statement and reports, per message id, what
// it did (OutcomeNew, OutcomeRepeat or OutcomeDuplicate). It is idempotent
// on message id and follows lineage by body hash (see putSQL): a redelivered
// message never creates a second row and never changes a stored one; a
// replayed message that failed again updates its original row.
//
// The batch is bound as one JSON parameter: keep it under D1's 1 MB value
// limit (Capture splits large batches; see maxBatchBytes).
func (s Store) Save(ctx context.Context, fs []Failure) (map[string]Outcome, error) {
	if len(fs) == 0 {
		return map[string]Outcome{}, nil
	}
	js, err := encodeBatch(fs)
	if err != nil {
		return nil, fmt.Errorf("dlq store encode: %w", err)
	}
	rows, err := s.DB.QueryContext(ctx, putSQL, string(js))
	if err != nil {
		return nil, fmt.Errorf("dlq store %d failures: %w", len(fs), err)
	}
	defer rows.Close()
	out := make(map[string]Outcome, len(fs))
	for _, f := range fs {
		out[f.MessageID] = OutcomeDuplicate
	}
	for rows.Next() {
		var first, last string
		if err := rows.Scan(&first, &last); err != nil {
			return nil, fmt.Errorf("dlq store scan: %w", err)
		}
		if first == last {
			out[last] = OutcomeNew
		} else {
			out[last] = OutcomeRepeat
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("dlq store %d failures: %w", len(fs), err)
	}
	return out, nil
}

// body is what a message body says about its beer.
type body struct {
	BeerID   string
	BeerName *string
	Brewer   *string
	// Problem says why the body is poison ("" when it has a usable beer_id).
	Problem string
}

// parseBody reads beer_id, beer_name and brewer from a message body. It never fails: a body without a usable beer_id gets a
// Problem, and whatever could be read is still returned.
func parseBody(src string, binary bool) body {
	if binary {
		return body{Problem: fmt.Sprintf("binary body (%d base64 characters)", len(src))}
	}
	trimmed := bytes.TrimSpace([]byte(src))
	if len(trimmed) == 0 {
		return body{Problem: "empty body"}
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(trimmed, &obj); err != nil {
		switch trimmed[0] {
		case '[', '"', 't', 'f', 'n', '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
			if json.Valid(trimmed) {
				return body{Problem: "body is JSON but not an object"}
			}
		}
		return body{Problem: "body is not JSON: " + text.Clip(err.Error(), 120)}
	}
	if obj == nil {
		return body{Problem: "body is JSON but not an object"}
	}
	b := body{BeerName: textField(obj["beer_name"]), Brewer: textField(obj["brewer"])}
	raw, ok := obj["beer_id"]
	switch {
	case !ok:
		b.Problem = "no beer_id"
	case string(raw) == "null":
		b.Problem = "beer_id is null"
	case json.Unmarshal(raw, &b.BeerID) != nil:
		b.Problem = "beer_id is not a string"
	case b.BeerID == "":
		b.Problem = "empty beer_id"
	}
	return b
}

// textField returns a JSON string as is, null/absent as nil, and any other
// JSON value as its JSON text.
func textField(raw json.RawMessage) *string {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		s = string(raw)
	}
	return &s
}
