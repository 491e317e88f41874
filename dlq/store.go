package dlq

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"
	"time"
	"unicode/utf8"
)

// LineageField is the top-level JSON field a replayed message carries: the
// id of its dlq_messages row, so that a repeat failure updates that row.
// The enrichment consumer ignores it.
const LineageField = "_redrive_dlq_id"

// UnparseableBeerID is the beer_id stored for bodies without a usable beer_id.
const UnparseableBeerID = "__unparseable__"

// Failure is one dead-lettered message to store.
type Failure struct {
	// MessageID is the queue message id (dedup key for redeliveries).
	MessageID string
	// SourceQueue is the queue the message failed on (not the DLQ).
	SourceQueue string
	// Body is the message body as text (base64 when Binary).
	Body   string
	Binary bool
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
}

// Outcome is what storing one failure did to dlq_messages.
type Outcome string

const (
	// OutcomeNew: the failure created a new row.
	OutcomeNew Outcome = "new"
	// OutcomeRepeat: the failure carried the lineage of an existing row
	// (a replayed message failed again) and updated that row.
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
//   - A body carrying LineageField = N where row N exists targets row N (the
//     id column is set to N), so ON CONFLICT(id) updates it: back to
//     pending, replay_count kept, failed_at/failure_* and last_message_id
//     set — unless last_message_id already is this message (a redelivery of
//     the repeat failure: no change). The row's original message_id, body
//     and beer columns stay as first stored.
//   - Otherwise id is NULL (a new row) and ON CONFLICT(message_id) DO
//     NOTHING absorbs redeliveries: an existing row keeps its status
//     (acknowledged and replayed rows are never resurrected).
//
// RETURNING lists each row written: message_id = last_message_id for a new
// row, message_id <> last_message_id for a lineage update. Messages absent
// from the result were duplicates.
const putSQL = `INSERT INTO dlq_messages(id, message_id, beer_id, beer_name, brewer, failed_at, failure_count,
		failure_reason, failure_class, source_queue, raw_message, raw_encoding, last_message_id, first_failed_at, updated_at)
	SELECT (SELECT d.id FROM dlq_messages d WHERE d.id = j.value ->> '$.lineage'),
		j.value ->> '$.message_id', j.value ->> '$.beer_id', j.value ->> '$.beer_name', j.value ->> '$.brewer',
		j.value ->> '$.failed_at',
		max(COALESCE(a.attempt, 0), j.value ->> '$.attempts'),
		COALESCE(j.value ->> '$.reason', substr(
			CASE WHEN j.value ->> '$.problem' IS NULL THEN '' ELSE 'unparseable: ' || (j.value ->> '$.problem') || '; ' END ||
			COALESCE(a.error_class || ': ' || a.error, 'no attempt record'), 1, ` + maxReasonSQL + `)),
		COALESCE(j.value ->> '$.class', CASE WHEN j.value ->> '$.problem' IS NULL THEN COALESCE(a.error_class, 'unknown') ELSE 'poison' END),
		j.value ->> '$.source', j.value ->> '$.raw', j.value ->> '$.encoding', j.value ->> '$.message_id',
		j.value ->> '$.failed_at', j.value ->> '$.failed_at'
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

// maxReasonSQL is maxReason for putSQL (characters there, bytes elsewhere).
const maxReasonSQL = "1000"

// putRow is one element of the JSON batch bound to putSQL.
type putRow struct {
	MessageID string  `json:"message_id"`
	BeerID    string  `json:"beer_id"`
	BeerName  *string `json:"beer_name"`
	Brewer    *string `json:"brewer"`
	Lineage   int64   `json:"lineage,omitempty"`
	Attempts  int     `json:"attempts"`
	Source    string  `json:"source"`
	Raw       string  `json:"raw"`
	Encoding  string  `json:"encoding"`
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
		b := f.parsed
		if b == nil {
			p := parseBody(f.Body, f.Binary)
			b = &p
		}
		raw, enc := f.Body, "text"
		switch {
		case f.Binary:
			enc = "base64"
		case !utf8.ValidString(raw):
			// JSON cannot carry invalid UTF-8: keep the exact bytes as base64.
			raw, enc = base64.StdEncoding.EncodeToString([]byte(raw)), "base64"
		}
		beerID := b.BeerID
		if b.Problem != "" {
			beerID = UnparseableBeerID
		}
		rows[i] = putRow{MessageID: f.MessageID, BeerID: beerID, BeerName: b.BeerName, Brewer: b.Brewer,
			Lineage: b.Lineage, Attempts: f.Attempts, Source: f.SourceQueue, Raw: raw, Encoding: enc,
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
// on message id and follows lineage (see LineageField): a redelivered
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
	// Lineage is the dlq_messages id of a replayed message (0: none).
	Lineage int64
	// Problem says why the body is poison ("" when it has a usable beer_id).
	Problem string
}

// parseBody reads beer_id, beer_name, brewer and the lineage field from a
// message body. It never fails: a body without a usable beer_id gets a
// Problem, and whatever could be read is still returned.
func parseBody(text string, binary bool) body {
	if binary {
		return body{Problem: fmt.Sprintf("binary body (%d base64 characters)", len(text))}
	}
	trimmed := bytes.TrimSpace([]byte(text))
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
		return body{Problem: "body is not JSON: " + shorten(err.Error(), 120)}
	}
	if obj == nil {
		return body{Problem: "body is JSON but not an object"}
	}
	b := body{BeerName: textField(obj["beer_name"]), Brewer: textField(obj["brewer"]), Lineage: lineage(obj[LineageField])}
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

// lineage reads LineageField: a positive integer, as a JSON number or a
// numeric string; anything else means no lineage.
func lineage(raw json.RawMessage) int64 {
	if len(raw) == 0 {
		return 0
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		s = string(raw)
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 {
		return 0
	}
	return n
}

// shorten cuts s to at most n bytes without splitting a UTF-8 sequence.
func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := n
	for i > 0 && s[i]&0xC0 == 0x80 {
		i--
	}
	return s[:i] + "…"
}
