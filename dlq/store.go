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
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/redrive/redrive/config"
	"github.com/redrive/redrive/internal/jsonscan"
	"github.com/redrive/redrive/internal/text"
	"github.com/redrive/redrive/queue"
	"github.com/redrive/redrive/sqlbatch"
)

// UnparseableKey is the row key (row_key) stored for bodies without a usable key.
const UnparseableKey = "__unparseable__"

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
	// usable key gets class `poison` and reason `unparseable: ...; ...`.
	Class string
	// Reason is a short human-readable text, no secrets.
	Reason string
	// FailedAt is when the failure was recorded.
	FailedAt time.Time
	// Attempt, when set, is the failed attempt this failure is (a
	// permanent failure stored at once, without an attempt record): it is
	// appended to the history the message's attempt record carries.
	Attempt *Attempt
	// Version is the worker version storing the failure: the row's
	// version when neither Attempt nor the attempt record names one.
	Version string

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

// Stores gives the Store that keeps a source queue's rows: the one seam
// through which a capture reaches its database, so that a pipeline can keep
// its rows in a database of its own by a Stores that maps its
// queue there. A Store is the Stores of a deployment whose pipelines all
// share one database (the DB binding).
type Stores interface {
	// Of returns the store of the rows of source queue q.
	Of(q string) Store
}

// Of implements Stores: every queue's rows are in s.
func (s Store) Of(string) Store { return s }

// Store writes failures to dlq_messages.
type Store struct {
	DB *sql.DB
	// Batch runs Save's statements in one round trip (D1's batch() in the
	// worker); nil: a transaction on DB (native tests).
	Batch sqlbatch.Runner
	// Pipelines are the configured pipelines (nil: the beer one).
	Pipelines Pipelines
}

// Put stores failures in one statement (see Save) and discards the outcomes.
func (s Store) Put(ctx context.Context, fs []Failure) error {
	_, err := s.Save(ctx, fs)
	return err
}

// keyFields are the members of ensureSignaturesSQL's elements (encoded.key)
// and putFields those of putSQL's (encoded.put), as columns of the
// statement's elems: the elements are read once each, in a MATERIALIZED
// common table expression. Read where they are used (j.value ->> '$.x' in
// each expression), json_each renders an element's text again for every
// member read: 40 times per row in putSQL, most of its time.
var (
	keyFields = []string{"message_id", "source", "hash", "failed_at", "sig", "sig_class", "sig_text", "usig"}
	putFields = []string{"message_id", "source", "hash", "failed_at", "sig", "usig", "row_key", "label_1", "label_2",
		"attempts", "raw", "encoding", "content_type", "class", "reason", "problem", "version", "entries", "entry_version", "borrow"}
)

// fieldsOf is the SELECT list that reads fields from json_each's value,
// each as a column of its name: entries as JSON, the others as SQL values.
func fieldsOf(fields []string) string {
	var b strings.Builder
	for i, f := range fields {
		if i > 0 {
			b.WriteString(", ")
		}
		op := "->>"
		if f == "entries" || f == "borrow" {
			op = "->"
		}
		fmt.Fprintf(&b, "value %s '$.%s' AS %s", op, f, f)
	}
	return b.String()
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
var putSQL = `WITH elems AS MATERIALIZED (SELECT ` + fieldsOf(putFields) + ` FROM json_each(?))
	INSERT INTO dlq_messages(id, message_id, row_key, label_1, label_2, failed_at, failure_count,
		failure_reason, failure_class, source_queue, raw_message, raw_encoding, content_type, body_hash,
		last_message_id, first_failed_at, updated_at, history, history_dropped, signature, version, tally_seq,
		replay_count)
	SELECT COALESCE(
			(SELECT d.id FROM dlq_messages d
				WHERE d.source_queue = j.source AND d.body_hash = j.hash AND ` + lineageIndexCond + `
					AND d.last_message_id = j.message_id
					AND NOT EXISTS (SELECT 1 FROM dlq_messages f WHERE f.message_id = j.message_id)
				LIMIT 1),
			(SELECT d.id FROM dlq_messages d
				WHERE d.source_queue = j.source AND d.body_hash = j.hash AND ` + lineageIndexCond + `
					AND d.status <> 'acknowledged'
					AND NOT EXISTS (SELECT 1 FROM dlq_messages f WHERE f.message_id = j.message_id)
				ORDER BY d.status IN ('replaying', 'replayed') DESC, d.id DESC LIMIT 1)),
		` + borrowed("j.borrow ->> '$.message_id'", "j.message_id") + `, j.row_key, j.label_1, j.label_2,
		j.failed_at,
		max(COALESCE(a.attempt, 0), j.attempts),
		COALESCE(j.reason, substr(
			CASE WHEN j.problem IS NULL THEN '' ELSE 'unparseable: ' || (j.problem) || '; ' END ||
			COALESCE(a.error_class || ': ' || a.error, 'no attempt record'), 1, ` + maxReasonSQL + `)),
		COALESCE(j.class, CASE WHEN j.problem IS NULL THEN COALESCE(a.error_class, 'unknown') ELSE 'poison' END),
		j.source, j.raw, j.encoding, j.content_type, j.hash,
		j.message_id, ` + borrowed("min(j.failed_at, COALESCE(j.borrow ->> '$.first_failed_at', j.failed_at))", "j.failed_at") + `, j.failed_at,
		` + borrowed(HistoryKeepSQL("(j.borrow ->> '$.history')", "("+HistoryKeepSQL("a.history", "j.entries")+")"),
	HistoryKeepSQL("a.history", "j.entries")) + `,
		COALESCE(a.history_dropped, 0) + ` + HistoryDroppedSQL("a.history", "j.entries") + ` + ` +
	borrowed("COALESCE(j.borrow ->> '$.history_dropped', 0) + "+HistoryDroppedSQL("(j.borrow ->> '$.history')", "("+HistoryKeepSQL("a.history", "j.entries")+")"), "0") + `,
		` + signatureSQL + `,
		COALESCE(j.entry_version, a.version, j.version),
		1, ` + borrowed("j.borrow ->> '$.replay_count'", "0") + `
	FROM elems AS j LEFT JOIN message_attempts a ON a.queue = j.source AND a.message_id = j.message_id
	WHERE true
	ON CONFLICT(id) DO UPDATE SET status = 'pending',
		-- The latest failure's time, never going back (a repeat failure
		-- stamped by a clock behind the row's): newest-first paging never
		-- meets a row again behind its cursor.
		failed_at = max(dlq_messages.failed_at, excluded.failed_at),
		failure_count = excluded.failure_count, failure_reason = excluded.failure_reason,
		failure_class = excluded.failure_class, last_message_id = excluded.last_message_id,
		updated_at = excluded.updated_at,
		-- A repeat failure that overtakes its replay's final update: that update
		-- (conditional on replaying_at) then matches nothing, so count the replay here.
		replay_count = dlq_messages.replay_count + (dlq_messages.status = 'replaying'), replaying_at = NULL,
		-- The repeat failure's attempts follow the earlier ones.
		history = ` + HistoryKeepSQL("dlq_messages.history", "excluded.history") + `,
		history_dropped = dlq_messages.history_dropped + excluded.history_dropped + ` + HistoryDroppedSQL("dlq_messages.history", "excluded.history") + `,
		signature = excluded.signature, version = excluded.version
		WHERE dlq_messages.last_message_id <> excluded.last_message_id
	ON CONFLICT(message_id) DO NOTHING
	RETURNING message_id, last_message_id`

// borrowed is the SQL expression that is yes for a failure stored as the
// row of a message another database still holds (putSQL's element's
// borrow, set by Capture during a move: Capture.lookAside) and no for
// every other: a borrowed row takes that row's message_id, replay_count,
// first failure and history, and, in the batch's last statement
// (rekeySQL), its id, so that the message keeps its id and its actions
// across databases. It is not borrowed (a new row of its own) when this
// database holds a row of that message_id already (an imported copy that
// is not a lineage match: acknowledged).
func borrowed(yes, no string) string {
	return `CASE WHEN j.borrow IS NULL THEN ` + no + ` WHEN NOT EXISTS (SELECT 1 FROM dlq_messages f WHERE f.message_id = j.borrow ->> '$.message_id')
		THEN ` + yes + ` ELSE ` + no + ` END`
}

// rekeySQL gives each row a capture batch borrowed (see borrowed) the id
// of the row it continues, unless this database holds that id already:
// ?1 is the JSON array of the batch's borrows ({message_id, borrow}). It
// reads the rows it rekeys through the message_id index; the batch's
// counts (by status, queue, hour and signature) do not depend on the id.
const rekeySQL = `UPDATE dlq_messages SET id = b.id
	FROM (SELECT value ->> '$.borrow.id' AS id, value ->> '$.borrow.message_id' AS mid, value ->> '$.message_id' AS m
		FROM json_each(?1)) AS b
	WHERE dlq_messages.message_id = b.mid AND dlq_messages.last_message_id = b.m
		AND dlq_messages.id > (SELECT last_id FROM capture_mark WHERE id = 1)
		AND NOT EXISTS (SELECT 1 FROM dlq_messages o WHERE o.id = b.id)`

// rekeySamplesSQL, before rekeySQL, names each borrowed row in its
// signature's sample_ids (countSignaturesSQL took its id before the
// rekey) by the id it is about to take. ?1 as rekeySQL's.
const rekeySamplesSQL = `UPDATE dlq_signatures SET sample_ids = (SELECT json_group_array(CASE WHEN s.value = r.z THEN r.bid ELSE s.value END)
		FROM json_each(dlq_signatures.sample_ids) AS s)
	FROM (SELECT d.id AS z, d.signature AS sig, b.id AS bid
		FROM (SELECT value ->> '$.borrow.id' AS id, value ->> '$.borrow.message_id' AS mid, value ->> '$.message_id' AS m
			FROM json_each(?1)) AS b
		JOIN dlq_messages d ON d.message_id = b.mid AND d.last_message_id = b.m
		WHERE d.id > (SELECT last_id FROM capture_mark WHERE id = 1)
			AND NOT EXISTS (SELECT 1 FROM dlq_messages o WHERE o.id = b.id)) AS r
	WHERE dlq_signatures.signature = r.sig`

// HistoryKeepSQL is the JSON array of the entries of the JSON arrays a and
// b (SQL expressions, NULL counts as empty), a's first: the first
// HistoryHead and the newest MaxHistory-HistoryHead of them. When both are
// NULL (a capture without an attempt record or history entry, the common
// case) it is '[]' without the windowed subquery, which was a third of
// putSQL's time.
func HistoryKeepSQL(a, b string) string {
	return fmt.Sprintf(`CASE WHEN %[1]s IS NULL AND %[2]s IS NULL THEN '[]' ELSE (SELECT json_group_array(json(value)) FROM (
			SELECT value, ROW_NUMBER() OVER (ORDER BY k) AS i, COUNT(*) OVER () AS n FROM (
				SELECT value, key AS k FROM json_each(COALESCE(%[1]s, '[]'))
				UNION ALL SELECT value, 1000000 + key FROM json_each(COALESCE(%[2]s, '[]')))
			ORDER BY k) WHERE i <= %[3]d OR i > n - %[4]d) END`, a, b, HistoryHead, MaxHistory-HistoryHead)
}

// HistoryDroppedSQL is how many entries HistoryKeepSQL(a, b) leaves out.
func HistoryDroppedSQL(a, b string) string {
	return fmt.Sprintf(`max(0, json_array_length(COALESCE(%s, '[]')) + json_array_length(COALESCE(%s, '[]')) - %d)`, a, b, MaxHistory)
}

// UnknownSignature is the signature of a failure without an attempt record:
// SignatureOf("unknown", "no attempt record"), written out so that package
// initialisation runs no regexp (TestUnknownSignatureIsSignatureOf).
var UnknownSignature = Signature{Key: "e6907e54b5f2f2cf", Class: "unknown", Text: "no attempt record"}

// signatureSQL is a stored failure's signature in putSQL and
// ensureSignaturesSQL: the one Go computed (explicit class and reason,
// poison), else its attempt record's, else UnknownSignature's on its queue
// (usig, set for queues other than the beer queue: UnknownSignatureIn).
var signatureSQL = `COALESCE(j.sig, a.signature, j.usig, '` + UnknownSignature.Key + `')`

// ensureSignaturesSQL creates the dlq_signatures row of every signature of
// a batch not seen before (before putSQL, which removes the attempt records
// that name them). Known signatures cost nothing (DO NOTHING).
var ensureSignaturesSQL = `WITH elems AS MATERIALIZED (SELECT ` + fieldsOf(keyFields) + ` FROM json_each(?))
	INSERT INTO dlq_signatures(signature, class, text, first_seen, last_seen, source_queue)
	SELECT ` + signatureSQL + `,
		COALESCE(j.sig_class, a.error_class, '` + UnknownSignature.Class + `'),
		COALESCE(j.sig_text, a.signature_text, '` + UnknownSignature.Text + `'),
		j.failed_at, j.failed_at, j.source
	FROM elems AS j LEFT JOIN message_attempts a ON a.queue = j.source AND a.message_id = j.message_id
	-- Not for redeliveries (their attempt record is gone: they would name
	-- the unknown signature): a first failure stored, or a repeat failure
	-- stored (found as putSQL finds it, through the lineage index).
	WHERE NOT EXISTS (SELECT 1 FROM dlq_messages f WHERE f.message_id = j.message_id)
		AND NOT EXISTS (SELECT 1 FROM dlq_messages d
			WHERE d.source_queue = j.source AND d.body_hash = j.hash AND ` + lineageIndexCond + `
				AND d.last_message_id = j.message_id)
	ON CONFLICT(signature) DO NOTHING`

// countSignaturesSQL adds the rows a batch's putSQL created (the rows above
// its capture_mark, see markSQL) to their signatures' pending counts, one row written per
// signature: last seen, versions seen (newest first, at most 10) and the
// first 5 sample ids. Repeat failures (rows updated by putSQL) are counted
// by the trigger dlq_messages_signature_moved.
const countSignaturesSQL = `UPDATE dlq_signatures SET pending = pending + c.n, last_seen = max(last_seen, c.last),
		versions = CASE WHEN NOT EXISTS (SELECT 1 FROM json_each(c.vs) WHERE value IS NOT NULL
				AND value NOT IN (SELECT value FROM json_each(dlq_signatures.versions))) THEN versions
			ELSE (SELECT json_group_array(v) FROM (SELECT v FROM (
				SELECT value AS v, key - 1000 AS k FROM json_each(c.vs)
					WHERE value IS NOT NULL AND value NOT IN (SELECT value FROM json_each(dlq_signatures.versions))
				UNION ALL SELECT value, key FROM json_each(dlq_signatures.versions)) ORDER BY k LIMIT 10)) END,
		sample_ids = CASE WHEN json_array_length(sample_ids) >= 5 THEN sample_ids
			ELSE (SELECT json_group_array(v) FROM (SELECT v FROM (
				SELECT value AS v, key AS k FROM json_each(dlq_signatures.sample_ids)
				UNION ALL SELECT value, 1000 + key FROM json_each(c.ids)) ORDER BY k LIMIT 5)) END
	FROM (SELECT d.signature AS sig, COUNT(*) AS n, MAX(d.failed_at) AS last,
			json_group_array(DISTINCT d.version) AS vs, json_group_array(d.id) AS ids
		FROM dlq_messages d WHERE ` + newRowsCond + ` AND d.signature IS NOT NULL
		GROUP BY d.signature) AS c
	WHERE dlq_signatures.signature = c.sig`

// The rows a capture batch's putSQL inserted are those above the highest id
// before it (capture_mark, set by markSQL in the same batch): ids are
// AUTOINCREMENT and a batch runs alone, so no other row can be there. The
// batch counts them itself in dlq_tally and dlq_activity (tallyOf: one row
// written per group, not one per row); putSQL
// inserts them with tally_seq = 1, which keeps dlq_messages_inserted's
// per-row upserts away (migrations/0029). A new row is always pending.
//
// markSQL reads one row of dlq_messages (the end of its rowid b-tree) and
// writes one; each statement after putSQL reads the batch's new rows by a
// rowid range, never the rest of the table.
const (
	markSQL = `INSERT INTO capture_mark(id, last_id) VALUES (1, (SELECT COALESCE(MAX(id), 0) FROM dlq_messages))
	ON CONFLICT(id) DO UPDATE SET last_id = excluded.last_id`
	newRowsCond = `d.id > (SELECT last_id FROM capture_mark WHERE id = 1)`
	tallyNewSQL = `INSERT INTO dlq_tally(status, source_queue, label_key, n)
	SELECT d.status, d.source_queue, CASE WHEN d.status = 'pending' AND d.label_2 IS NOT NULL THEN '=' || d.label_2 ELSE '' END, COUNT(*)
	FROM dlq_messages d WHERE ` + newRowsCond + ` GROUP BY 1, 2, 3
	ON CONFLICT(status, source_queue, label_key) DO UPDATE SET n = n + excluded.n`
	activityNewSQL = `INSERT INTO dlq_activity(kind, hour, source_queue, n, events)
	SELECT 'failed', CAST(d.failed_at AS INTEGER) / 3600000, d.source_queue, COUNT(*), COUNT(*)
	FROM dlq_messages d WHERE ` + newRowsCond + ` GROUP BY 2, 3
	ON CONFLICT(kind, hour, source_queue) DO UPDATE SET n = n + excluded.n, events = events + excluded.events`
	// tallyOneSQL and activityOneSQL are tallyNewSQL and activityNewSQL for
	// a batch whose failures all have the same group (source queue, label_2)
	// or hour and source queue, which Go knows: no GROUP BY, whose sorter D1 bills as a
	// second row read per row. A new row is pending, its source_queue,
	// label_2 and failed_at are its failure's.
	tallyOneSQL = `INSERT INTO dlq_tally(status, source_queue, label_key, n)
	SELECT 'pending', ?, ?, COUNT(*) FROM dlq_messages d WHERE ` + newRowsCond + ` HAVING COUNT(*) > 0
	ON CONFLICT(status, source_queue, label_key) DO UPDATE SET n = n + excluded.n`
	activityOneSQL = `INSERT INTO dlq_activity(kind, hour, source_queue, n, events)
	SELECT 'failed', CAST(? AS INTEGER), ?, COUNT(*), COUNT(*) FROM dlq_messages d WHERE ` + newRowsCond + ` HAVING COUNT(*) > 0
	ON CONFLICT(kind, hour, source_queue) DO UPDATE SET n = n + excluded.n, events = events + excluded.events`
)

// tallyOf returns the statements that count a batch's new rows in
// dlq_tally and dlq_activity (after putSQL, see markSQL).
func tallyOf(encs []encoded) (tally, activity sqlbatch.Stmt) {
	tally, activity = sqlbatch.Stmt{SQL: tallyNewSQL}, sqlbatch.Stmt{SQL: activityNewSQL}
	source, label, _ := strings.Cut(encs[0].group, "\x00")
	oneGroup, oneHour := true, true
	for _, e := range encs[1:] {
		oneGroup = oneGroup && e.group == encs[0].group
		s, _, _ := strings.Cut(e.group, "\x00")
		oneHour = oneHour && e.hour == encs[0].hour && s == source
	}
	if oneGroup {
		tally = sqlbatch.Stmt{SQL: tallyOneSQL, Args: []any{source, label}}
	}
	if oneHour {
		activity = sqlbatch.Stmt{SQL: activityOneSQL, Args: []any{encs[0].hour, source}}
	}
	return tally, activity
}

// lineageIndexCond is idx_dlq_replay_lineage's condition (schema.sql), for
// table alias d. A query uses a partial index only when its WHERE contains
// the index's condition as written.
const lineageIndexCond = `(d.status = 'replaying' OR d.replay_count > 0)`

// maxReasonSQL is maxReason for putSQL (characters there, bytes elsewhere).
const maxReasonSQL = "1000"

// encoded is one failure as the store statements' JSON elements: put, its
// element of putSQL's parameter, and key, its element of
// ensureSignaturesSQL's (what that statement reads of a failure: no body
// and no beer, so that D1 parses a few kilobytes for it, not the batch).
//
// The elements of put: message_id, row_key, label_1, label_2, attempts,
// source, raw (the body's text, or base64 per encoding), encoding,
// content_type, hash (BodyHash), failed_at (Unix ms), version; class and
// reason (when given; else derived in SQL from the message's attempt
// record and problem), problem (a poison body's); sig, sig_class and
// sig_text (the signature when Go knows it: an explicit class and reason,
// or a poison body; else the attempt record's is used, signatureSQL); usig
// (the unknown signature's key on the row's queue when it is not the beer
// queue's); entries (history entries after the attempt record's,
// Failure.Attempt) and entry_version. A member that would be null is left
// out: ->> reads NULL for it either way. key holds message_id, source,
// hash, failed_at and the sig members.
type encoded struct {
	put, key []byte
	// borrow is {message_id, borrow} of a failure that continues a row
	// another database holds (Capture.lookAside; rekeySQL's element), nil
	// for every other.
	borrow []byte
	// group is the dlq_tally group and hour the dlq_activity hour the
	// failure's row gets when it is a new row (tallyOf).
	group string
	hour  int64
}

// encodeFailure builds f's elements of the store statements' parameters
// (see encoded), without reflection unless f carries a history entry.
//
// A failure not parsed yet is parsed through the pipeline of its source
// queue in ps.
func encodeFailure(f Failure, ps Pipelines) (encoded, error) {
	ct := f.contentType()
	b := f.parsed
	if b == nil {
		p := parseBody(f.Body, ct == queue.Bytes, ps.shapeOf(f.SourceQueue))
		b = &p
	}
	raw, enc := storedBody(f, ct)
	rowKey := b.Key
	if b.Problem != "" {
		rowKey = UnparseableKey
	}
	failedAt := f.FailedAt.UnixMilli()
	hash := BodyHash(ct, f.Body)

	common := commonMembers(f, b, hash, failedAt)
	key := append(common[:len(common):len(common)], '}')
	put, err := putElement(f, b, ct, common, rowKey, raw, enc)
	if err != nil {
		return encoded{}, err
	}
	return encoded{put: put, key: key, group: tallyGroup(f.SourceQueue, b.Label2), hour: failedAt / 3_600_000}, nil
}

// storedBody is f's body as put's raw member holds it and that member's
// encoding: the text as it is, or base64 for bytes and for text JSON
// cannot carry.
func storedBody(f Failure, ct queue.ContentType) (raw, enc string) {
	raw, enc = f.Body, "text"
	switch {
	case ct == queue.Bytes:
		enc = "base64" // the text form of bytes is base64 already
	case f.asBase64 || !utf8.ValidString(raw):
		// JSON cannot carry invalid UTF-8: keep the exact bytes as base64.
		raw, enc = base64.StdEncoding.EncodeToString([]byte(raw)), "base64"
	}
	return raw, enc
}

// commonMembers opens the JSON object of the members put and key share:
// message_id, source, hash, failed_at and the signature's (sig, sig_class
// and sig_text when Go knows it, else usig for a queue whose unknown
// signature is not the beer queue's). The object is left unclosed.
func commonMembers(f Failure, b *body, hash string, failedAt int64) []byte {
	common := make([]byte, 0, 256)
	common = member(common, '{', "message_id", f.MessageID)
	common = member(common, ',', "source", f.SourceQueue)
	common = member(common, ',', "hash", hash)
	common = strconv.AppendInt(append(common, `,"failed_at":`...), failedAt, 10)
	if sig, ok := f.signature(b); ok {
		common = member(common, ',', "sig", sig.Key)
		common = member(common, ',', "sig_class", sig.Class)
		common = member(common, ',', "sig_text", sig.Text)
	} else if u := UnknownSignatureIn(f.SourceQueue); u.Key != UnknownSignature.Key {
		common = member(common, ',', "usig", u.Key)
	}
	return common
}

// putElement is f's element of putSQL's parameter (see encoded): the
// common members, then the row's own (beer, attempts, the body as raw in
// encoding enc, class, reason, problem, version, and the history entry
// when f carries one), closed.
func putElement(f Failure, b *body, ct queue.ContentType, common []byte, rowKey, raw, enc string) ([]byte, error) {
	put := make([]byte, 0, len(common)+len(raw)+len(raw)/8+256)
	put = append(put, common...)
	put = member(put, ',', "row_key", rowKey)
	put = optMember(put, "label_1", b.Label1)
	put = optMember(put, "label_2", b.Label2)
	put = strconv.AppendInt(append(put, `,"attempts":`...), int64(f.Attempts), 10)
	put = member(put, ',', "raw", raw)
	put = member(put, ',', "encoding", enc)
	put = member(put, ',', "content_type", string(ct))
	put = optMember(put, "class", nonEmpty(f.Class))
	put = optMember(put, "reason", nonEmpty(f.Reason))
	put = optMember(put, "problem", nonEmpty(b.Problem))
	put = optMember(put, "version", nonEmpty(f.Version))
	if f.Attempt != nil {
		entries, err := json.Marshal([]HistoryEntry{f.Attempt.entry()})
		if err != nil {
			return nil, err
		}
		put = append(append(put, `,"entries":`...), entries...)
		put = optMember(put, "entry_version", nonEmpty(f.Attempt.Version))
	}
	put = append(put, '}')
	return put, nil
}

// tallyGroup is the dlq_tally group of a new row of source queue
// sourceQueue and second label label2 (see encoded.group): the queue, a
// NUL, and "=" and the label when there is one.
func tallyGroup(sourceQueue string, label2 *string) string {
	group := sourceQueue + "\x00"
	if label2 != nil {
		group += "=" + *label2
	}
	return group
}

// member appends sep, then "name": and the JSON string of value.
func member(dst []byte, sep byte, name, value string) []byte {
	dst = append(append(append(append(dst, sep, '"'), name...), '"'), ':')
	return jsonscan.AppendString(dst, value)
}

// optMember appends ,"name": and the JSON string of *value, or nothing
// when value is nil (putSQL reads NULL for an absent member).
func optMember(dst []byte, name string, value *string) []byte {
	if value == nil {
		return dst
	}
	return member(dst, ',', name, *value)
}

// encodeBatch builds the JSON parameter of putSQL.
func encodeBatch(fs []Failure) ([]byte, error) {
	put := make([][]byte, len(fs))
	for i, f := range fs {
		e, err := encodeFailure(f, nil)
		if err != nil {
			return nil, err
		}
		put[i] = e.put
	}
	return joinJSON(put), nil
}

// joinJSON is the JSON array of the encoded elements.
func joinJSON(elems [][]byte) []byte {
	n := 2
	for _, e := range elems {
		n += len(e) + 1
	}
	out := make([]byte, 0, n)
	out = append(out, '[')
	for i, e := range elems {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, e...)
	}
	return append(out, ']')
}

// signature is f's signature when Go knows it: an explicit class (its
// reason without the "<class>: " prefix), or a poison body's problem.
func (f Failure) signature(b *body) (Signature, bool) {
	switch {
	case f.Class != "":
		return SignatureIn(f.SourceQueue, f.Class, strings.TrimPrefix(f.Reason, f.Class+": ")), true
	case b.Problem != "":
		return SignatureIn(f.SourceQueue, "poison", "unparseable: "+b.Problem), true
	}
	return Signature{}, false
}

func nonEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// Save stores failures in ONE batch (one round trip) and reports, per message id, what
// it did (OutcomeNew, OutcomeRepeat or OutcomeDuplicate). It is idempotent
// on message id and follows lineage by body hash (see putSQL): a redelivered
// message never creates a second row and never changes a stored one; a
// replayed message that failed again updates its original row.
//
// The batch is bound as one JSON parameter: keep it under D1's 1 MB value
// limit (Capture splits large batches; see maxBatchBytes).
func (s Store) Save(ctx context.Context, fs []Failure) (map[string]Outcome, error) {
	encs := make([]encoded, len(fs))
	for i, f := range fs {
		e, err := encodeFailure(f, s.Pipelines)
		if err != nil {
			return nil, fmt.Errorf("dlq store encode: %w", err)
		}
		encs[i] = e
	}
	return s.saveEncoded(ctx, fs, encs)
}

// saveEncoded is Save of failures already encoded (encs[i] is fs[i]'s).
func (s Store) saveEncoded(ctx context.Context, fs []Failure, encs []encoded) (map[string]Outcome, error) {
	if len(fs) == 0 {
		return map[string]Outcome{}, nil
	}
	res, err := BatchOf(s.Batch, s.DB).Batch(ctx, saveStatements(encs)...)
	if err != nil {
		return nil, fmt.Errorf("dlq store %d failures: %w", len(fs), err)
	}
	out := make(map[string]Outcome, len(fs))
	for _, f := range fs {
		out[f.MessageID] = OutcomeDuplicate
	}
	// RETURNING's rows, [{"message_id":…,"last_message_id":…},…], read
	// without reflection.
	rows := bytes.TrimSpace(res[2])
	if !json.Valid(rows) || len(rows) == 0 || rows[0] != '[' {
		return nil, fmt.Errorf("dlq store result: not a JSON array: %.100s", rows)
	}
	var bad error
	jsonscan.Elements(rows, func(row []byte) {
		var first, last string
		var okFirst, okLast bool
		if len(row) > 0 && row[0] == '{' {
			jsonscan.Members(row, func(key, value []byte) {
				switch {
				case jsonscan.KeyIs(key, "message_id"):
					first, okFirst = jsonscan.Text(value)
				case jsonscan.KeyIs(key, "last_message_id"):
					last, okLast = jsonscan.Text(value)
				}
			})
		}
		switch {
		case !okFirst || !okLast:
			bad = fmt.Errorf("dlq store result: row %.100s", row)
		case first == last:
			out[last] = OutcomeNew
		default:
			out[last] = OutcomeRepeat
		}
	})
	if bad != nil {
		return nil, bad
	}
	return out, nil
}

// saveStatements is Save's batch for failures already encoded: one round
// trip, all or nothing: the batch's new signatures, the mark, the rows
// (putSQL, whose RETURNING rows are the third result), then the counts of
// the new rows (dlq_tally, dlq_activity, the signatures').
func saveStatements(encs []encoded) []sqlbatch.Stmt {
	put, keys := make([][]byte, len(encs)), make([][]byte, len(encs))
	for i, e := range encs {
		put[i], keys[i] = e.put, e.key
	}
	putJS, keysJS := string(joinJSON(put)), string(joinJSON(keys))
	tally, activity := tallyOf(encs)
	stmts := []sqlbatch.Stmt{
		{SQL: ensureSignaturesSQL, Args: []any{keysJS}},
		{SQL: markSQL},
		{SQL: putSQL, Args: []any{putJS}},
		tally, activity,
		{SQL: countSignaturesSQL},
	}
	var borrows [][]byte
	for _, e := range encs {
		if e.borrow != nil {
			borrows = append(borrows, e.borrow)
		}
	}
	if borrows != nil {
		js := string(joinJSON(borrows))
		stmts = append(stmts, sqlbatch.Stmt{SQL: rekeySamplesSQL, Args: []any{js}}, sqlbatch.Stmt{SQL: rekeySQL, Args: []any{js}})
	}
	return stmts
}

// body is what a message body says of its row: its key and labels.
type body struct {
	Key    string
	Label1 *string
	Label2 *string
	// Problem says why the body is poison ("" when it has a usable key).
	Problem string
}

// parseBody reads a body's key and labels through the pointers of p (the
// pipeline of its source queue, shapeOf): for the beer pipeline beer_id,
// beer_name and brewer, as before pipelines (beer_id must be a non-empty
// string, like the enrichment consumer's). It never fails: a body without a
// usable key gets a Problem, and whatever could be read is still returned.
func parseBody(src string, binary bool, p config.Pipeline) body {
	if binary {
		return body{Problem: fmt.Sprintf("binary body (%d base64 characters)", len(src))}
	}
	trimmed := bytes.TrimSpace([]byte(src))
	if len(trimmed) == 0 {
		return body{Problem: "empty body"}
	}
	if !json.Valid(trimmed) {
		// Only for the error's text (the reason and signature say it).
		var obj map[string]json.RawMessage
		err := json.Unmarshal(trimmed, &obj)
		if err == nil { // cannot happen: Unmarshal validates first
			return body{Problem: "body is not JSON"}
		}
		return body{Problem: "body is not JSON: " + text.Clip(err.Error(), 120)}
	}
	if !p.IsBeer() {
		return parsePipelineBody(trimmed, p)
	}
	if trimmed[0] != '{' {
		return body{Problem: "body is JSON but not an object"}
	}
	// The last of duplicate members wins, as in a map.
	var id, name, brewer []byte
	jsonscan.Members(trimmed, func(key, value []byte) {
		switch {
		case jsonscan.KeyIs(key, "beer_id"):
			id = value
		case jsonscan.KeyIs(key, "beer_name"):
			name = value
		case jsonscan.KeyIs(key, "brewer"):
			brewer = value
		}
	})
	b := body{Label1: textField(name), Label2: textField(brewer)}
	var ok bool
	switch {
	case id == nil:
		b.Problem = "no beer_id"
	case string(id) == "null":
		b.Problem = "beer_id is null"
	default:
		if b.Key, ok = jsonscan.Text(id); !ok {
			b.Problem = "beer_id is not a string"
		} else if b.Key == "" {
			b.Problem = "empty beer_id"
		}
	}
	return b
}

// textField returns a label's value: a JSON string as is, null/absent as
// nil, and any other JSON value (an object, an array) as its JSON text; cut
// to at most MaxLabelBytes bytes ("…" at the end, never inside a
// character), so that a pointer to a large object stores its first bytes,
// not the whole body.
func textField(raw json.RawMessage) *string {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	s, ok := jsonscan.Text(raw)
	if !ok {
		s = string(raw)
	}
	if len(s) > MaxLabelBytes {
		s = text.Clip(s, MaxLabelBytes-len("…"))
	}
	return &s
}
