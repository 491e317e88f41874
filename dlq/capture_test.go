package dlq

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/internal/sqlitetest"
	"github.com/redrive/redrive/metrics"
	"github.com/redrive/redrive/queue"
	"github.com/redrive/redrive/queue/queuetest"
)

const dlqName = "beer-enrichment-dlq"

func newCapture(db *sql.DB, logs *bytes.Buffer) *Capture {
	return &Capture{DB: db, Log: slog.New(slog.NewJSONHandler(logs, nil)),
		SourceQueue: map[string]string{dlqName: "beer-enrichment"}, Clock: func() time.Time { return t0 }}
}

func counters(t *testing.T, db *sql.DB) map[string]int64 {
	t.Helper()
	all, err := metrics.Counters{DB: db}.All(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return all
}

func consume(t *testing.T, c *Capture, msgs ...*queuetest.Message) {
	t.Helper()
	if err := c.ConsumeBatch(context.Background(), dlqName, queuetest.Batch(msgs...)); err != nil {
		t.Fatalf("ConsumeBatch: %v", err)
	}
}

func beer(id string) string {
	return fmt.Sprintf(`{"beer_id":%q,"beer_name":"Beer %s","brewer":"Brewer"}`, id, id)
}

// The true attempt count and reason come from the attempt records, which are
// removed once stored; without a record the DLQ delivery's attempts and
// "no attempt record" are stored. Every message is acked after the store.
func TestCaptureStoresBatchWithAttemptRecords(t *testing.T) {
	db := sqlitetest.New(t)
	var logs bytes.Buffer
	c := newCapture(db, &logs)
	a := Attempts{DB: db}
	ctx := context.Background()
	a.Record(ctx, Attempt{MessageID: "m1", Queue: "beer-enrichment", Attempt: 4, Class: "transient", Error: "provider status 500: down", At: t0})
	a.Record(ctx, Attempt{MessageID: "m2", Queue: "beer-enrichment", Attempt: 2, Class: "permanent", Error: "provider status 400", At: t0})
	a.Record(ctx, Attempt{MessageID: "other", Queue: "beer-enrichment", Attempt: 1, Class: "transient", Error: "x", At: t0})
	m1, m2, m3 := queuetest.New("m1", beer("1")), queuetest.New("m2", beer("2")), queuetest.New("m3", beer("3"))
	m3.Attempt = 2
	consume(t, c, m1, m2, m3)

	for _, m := range []*queuetest.Message{m1, m2, m3} {
		if !m.Acked || m.Retried {
			t.Fatalf("%s: acked %v retried %v", m.MsgID, m.Acked, m.Retried)
		}
	}
	want := map[string]struct {
		count  int64
		class  string
		reason string
	}{
		"m1": {4, "transient", "transient: provider status 500: down"},
		"m2": {2, "permanent", "permanent: provider status 400"},
		"m3": {2, "unknown", "no attempt record"},
	}
	for id, w := range want {
		r := readRow(t, db, `message_id = ?`, id)
		if r.FailureCount != w.count || r.Class.String != w.class || r.Reason.String != w.reason ||
			r.SourceQueue != "beer-enrichment" || r.Status != "pending" || r.FailedAt != t0.UnixMilli() {
			t.Errorf("%s = %+v", id, r)
		}
	}
	left := records(t, db)
	if len(left) != 1 || left["other"].Attempt != 1 {
		t.Fatalf("attempt records left = %v, want only the unrelated one", left)
	}
	wantCounters(t, db, 3, 0, 0)
	if !strings.Contains(logs.String(), `"new":3`) {
		t.Fatalf("no batch summary in logs: %s", logs.String())
	}
}

// A redelivered batch (same message ids) creates no row, changes nothing,
// is acked and counted as duplicates; an acknowledged row stays acknowledged.
func TestCaptureRedeliveryIsAbsorbed(t *testing.T) {
	db := sqlitetest.New(t)
	c := newCapture(db, &bytes.Buffer{})
	consume(t, c, queuetest.New("m1", beer("1")), queuetest.New("m2", beer("2")))
	mustExec(t, db, `UPDATE dlq_messages SET status = 'acknowledged', acknowledged_at = 1 WHERE message_id = 'm1'`)
	mustExec(t, db, `UPDATE dlq_messages SET status = 'replayed', replay_count = 1 WHERE message_id = 'm2'`)

	r1, r2 := queuetest.New("m1", beer("1")), queuetest.New("m2", beer("2"))
	r1.Attempt, r2.Attempt = 2, 2
	c.Clock = func() time.Time { return t0.Add(time.Hour) }
	consume(t, c, r1, r2)
	if !r1.Acked || !r2.Acked {
		t.Fatal("redelivered messages not acked")
	}
	if n := count(t, db, `SELECT COUNT(*) FROM dlq_messages`); n != 2 {
		t.Fatalf("rows = %d, want 2", n)
	}
	if r := readRow(t, db, `message_id = 'm1'`); r.Status != "acknowledged" || r.FailedAt != t0.UnixMilli() {
		t.Fatalf("acknowledged row changed: %+v", r)
	}
	if r := readRow(t, db, `message_id = 'm2'`); r.Status != "replayed" || r.ReplayCount != 1 {
		t.Fatalf("replayed row changed: %+v", r)
	}
	wantCounters(t, db, 2, 2, 0)
}

// A replayed message (a new message id, the row's body unchanged) that
// failed again updates its original row through the consumer.
func TestCaptureReplayedMessageFailingAgainUpdatesItsRow(t *testing.T) {
	db := sqlitetest.New(t)
	var logs bytes.Buffer
	c := newCapture(db, &logs)
	consume(t, c, queuetest.New("m1", beer("1")))
	id := readRow(t, db, `message_id = 'm1'`).ID
	mustExec(t, db, `UPDATE dlq_messages SET status = 'replayed', replay_count = 1, replayed_at = 5 WHERE id = ?`, id)

	Attempts{DB: db}.Record(context.Background(), Attempt{MessageID: "m9", Queue: "beer-enrichment", Attempt: 4, Class: "transient", Error: "provider status 503", At: t0})
	c.Clock = func() time.Time { return t0.Add(time.Hour) }
	replayed := queuetest.New("m9", beer("1"))
	consume(t, c, replayed)

	r := readRow(t, db, `id = ?`, id)
	if !replayed.Acked || r.Status != "pending" || r.ReplayCount != 1 || r.FailureCount != 4 || r.Reason.String != "transient: provider status 503" ||
		r.FailedAt != t0.Add(time.Hour).UnixMilli() || r.LastMessageID != "m9" || r.MessageID != "m1" {
		t.Fatalf("row after repeat failure = %+v (acked %v)", r, replayed.Acked)
	}
	if n := count(t, db, `SELECT COUNT(*) FROM dlq_messages`); n != 1 {
		t.Fatalf("rows = %d, want 1", n)
	}
	wantCounters(t, db, 2, 0, 0)
	if !strings.Contains(logs.String(), `"repeats":1`) {
		t.Fatalf("repeat not logged: %s", logs.String())
	}
}

// Poison bodies are stored with a reason and the placeholder beer_id, their
// good neighbours once each, nothing panics and no payload reaches the logs.
func TestCapturePoisonIsStoredWithItsNeighbours(t *testing.T) {
	db := sqlitetest.New(t)
	var logs bytes.Buffer
	c := newCapture(db, &logs)
	Attempts{DB: db}.Record(context.Background(), Attempt{MessageID: "p-text", Queue: "beer-enrichment", Attempt: 4, Class: "permanent", Error: "invalid message body", At: t0})
	big := strings.Repeat("Z", 127*1024)
	poison := map[string]*queuetest.Message{
		"p-text":   queuetest.New("p-text", "SECRET-PAYLOAD not json"),
		"p-nobeer": queuetest.New("p-nobeer", `{"beer_name":"SECRET-PAYLOAD"}`),
		"p-array":  queuetest.New("p-array", `["SECRET-PAYLOAD"]`),
		"p-empty":  queuetest.New("p-empty", ``),
		"p-numid":  queuetest.New("p-numid", `{"beer_id":12}`),
		"p-big":    queuetest.New("p-big", big),
		"p-utf8":   queuetest.New("p-utf8", "\xff\xfe{"),
		"p-bin":    {MsgID: "p-bin", Attempt: 1, Text: base64.StdEncoding.EncodeToString([]byte{0, 1, 2, 0xff}), Type: queue.Bytes},
	}
	good1, good2 := queuetest.New("g1", beer("g1")), queuetest.New("g2", beer("g2"))
	batch := []*queuetest.Message{good1}
	for _, m := range poison {
		batch = append(batch, m)
	}
	batch = append(batch, good2)
	consume(t, c, batch...)

	for _, m := range batch {
		if !m.Acked {
			t.Errorf("%s not acked", m.MsgID)
		}
	}
	for id, m := range poison {
		r := readRow(t, db, `message_id = ?`, id)
		raw := r.Raw
		if r.Encoding == "base64" && m.Type != queue.Bytes {
			b, _ := base64.StdEncoding.DecodeString(raw)
			raw = string(b)
		}
		if r.Key != UnparseableKey || r.Class.String != "poison" || !strings.HasPrefix(r.Reason.String, "unparseable: ") || raw != m.Text {
			t.Errorf("%s = %+v", id, shortRow(r))
		}
	}
	if r := readRow(t, db, `message_id = 'p-text'`); r.FailureCount != 4 || !strings.HasSuffix(r.Reason.String, "; permanent: invalid message body") {
		t.Errorf("poison with an attempt record = %+v", shortRow(r))
	}
	if r := readRow(t, db, `message_id = 'p-utf8'`); r.Encoding != "base64" {
		t.Errorf("invalid UTF-8 kept as %s", r.Encoding)
	}
	if r := readRow(t, db, `message_id = 'p-bin'`); r.Encoding != "base64" || r.Reason.String != "unparseable: binary body (8 base64 characters); no attempt record" {
		t.Errorf("binary = %+v", shortRow(r))
	}
	if r := readRow(t, db, `message_id = 'p-nobeer'`); r.Reason.String != "unparseable: no beer_id; no attempt record" || r.Label1.String != "SECRET-PAYLOAD" {
		t.Errorf("no beer_id = %+v", shortRow(r))
	}
	for _, id := range []string{"g1", "g2"} {
		if n := count(t, db, `SELECT COUNT(*) FROM dlq_messages WHERE row_key = ?`, id); n != 1 {
			t.Errorf("good neighbour %s stored %d times", id, n)
		}
	}
	wantCounters(t, db, int64(len(batch)), 0, int64(len(poison)))
	if strings.Contains(logs.String(), "SECRET-PAYLOAD") {
		t.Fatalf("a payload reached the logs: %s", logs.String())
	}
}

// A batch of 100 costs one statement, with or without attempt records: the
// records are joined, and triggers count the rows and remove the records.
func TestCaptureStatementsPerBatch(t *testing.T) {
	plain, db, stmts := flakyDB(t, 1_000_000)
	c := newCapture(db, &bytes.Buffer{})
	batch := func(prefix string) []*queuetest.Message {
		var msgs []*queuetest.Message
		for i := range 100 {
			msgs = append(msgs, queuetest.New(fmt.Sprint(prefix, i), beer(fmt.Sprint(prefix, i))))
		}
		return msgs
	}
	consume(t, c, batch("a")...)
	if n := stmts.Load(); n != 1 {
		t.Fatalf("statements without attempt records = %d, want 1", n)
	}
	msgs := batch("b")
	for _, m := range msgs {
		Attempts{DB: plain}.Record(context.Background(), Attempt{MessageID: m.MsgID, Queue: "beer-enrichment", Attempt: 4, Class: "transient", Error: "e", At: t0})
	}
	stmts.Store(0)
	consume(t, c, msgs...)
	if n := stmts.Load(); n != 1 {
		t.Fatalf("statements with attempt records = %d, want 1", n)
	}
	if n := count(t, plain, `SELECT COUNT(*) FROM dlq_messages`); n != 200 {
		t.Fatalf("rows = %d", n)
	}
	if n := count(t, plain, `SELECT COUNT(*) FROM message_attempts`); n != 0 {
		t.Fatalf("attempt records left = %d", n)
	}
}

// D1 unavailable before anything is stored: no message is acked; each is
// retried with the exponential delay of its own attempt (not the batch's
// retry_delay), and the batch returns nil (every message is settled).
func TestCaptureD1UnavailableRetriesEachMessageWithBackoff(t *testing.T) {
	db := sqlitetest.New(t)
	db.Close()
	c := newCapture(db, &bytes.Buffer{})
	c.RetryBase = 300 * time.Second
	m1, m2, m3 := queuetest.New("m1", beer("1")), queuetest.New("m2", "poison"), queuetest.New("m3", beer("3"))
	m2.Attempt, m3.Attempt = 3, 10
	if err := c.ConsumeBatch(context.Background(), dlqName, queuetest.Batch(m1, m2, m3)); err != nil {
		t.Fatalf("ConsumeBatch: %v", err)
	}
	for m, want := range map[*queuetest.Message]time.Duration{m1: 300 * time.Second, m2: 1200 * time.Second, m3: 12 * time.Hour} {
		if m.Acked || !m.Retried || m.RetryDelay != want {
			t.Errorf("%s (attempt %d): acked %v retried %v delay %v, want %v", m.MsgID, m.Attempt, m.Acked, m.Retried, m.RetryDelay, want)
		}
	}
}

// D1 failing at the store: the store fails, the probe fails; nothing is
// acked or stored one by one, every message is retried with backoff.
func TestCaptureD1FailingDuringTheStoreRetriesEachMessage(t *testing.T) {
	plain, flaky, stmts := flakyDB(t, 0)
	c := newCapture(flaky, &bytes.Buffer{})
	m1, m2 := queuetest.New("m1", beer("1")), queuetest.New("m2", beer("2"))
	m2.Attempt = 2
	if err := c.ConsumeBatch(context.Background(), dlqName, queuetest.Batch(m1, m2)); err != nil {
		t.Fatalf("ConsumeBatch: %v", err)
	}
	if m1.Acked || m2.Acked || m1.RetryDelay != DefaultRetryBase || m2.RetryDelay != 2*DefaultRetryBase {
		t.Fatalf("m1 %+v m2 %+v", m1, m2)
	}
	if n := count(t, plain, `SELECT COUNT(*) FROM dlq_messages`); n != 0 {
		t.Fatalf("rows = %d", n)
	}
	// store and probe: no one-by-one stores.
	if n := stmts.Load(); n > 2 {
		t.Fatalf("%d statements against an unavailable D1", n)
	}
}

// A table the store needs is missing (renamed): D1 answers `SELECT 1`, but
// the capture cannot write. The probe sees it, so the messages are retried
// with backoff instead of being stored one by one (and, from their third
// delivery, "unstorable"). Once the table is back they are stored once.
func TestCaptureMissingTableIsD1Unavailable(t *testing.T) {
	// (Renaming counters would not do: SQLite rewrites the triggers that use it.)
	for table, sqls := range map[string][2]string{
		"dlq_messages":     {`ALTER TABLE dlq_messages RENAME TO away`, `ALTER TABLE away RENAME TO dlq_messages`},
		"message_attempts": {`ALTER TABLE message_attempts RENAME TO away`, `ALTER TABLE away RENAME TO message_attempts`},
		"counters":         {`DROP TABLE counters`, `CREATE TABLE counters (name TEXT PRIMARY KEY, value INTEGER NOT NULL DEFAULT 0)`},
	} {
		t.Run(table, func(t *testing.T) {
			db := sqlitetest.New(t)
			var logs bytes.Buffer
			c := newCapture(db, &logs)
			c.RetryBase = 7 * time.Second
			mustExec(t, db, sqls[0])
			var msgs []*queuetest.Message
			for i := range 3 {
				m := queuetest.New(fmt.Sprint("m", i), beer(fmt.Sprint(i)))
				m.Attempt = 3 + i
				msgs = append(msgs, m)
			}
			consume(t, c, msgs...)
			for i, m := range msgs {
				if want := 7 * time.Second << (2 + i); m.Acked || !m.Retried || m.RetryDelay != want {
					t.Fatalf("%s: %+v, want retried after %v", m.MsgID, m, want)
				}
			}
			if strings.Contains(logs.String(), "one by one") {
				t.Fatalf("missing %s taken for a content problem: %s", table, logs.String())
			}
			mustExec(t, db, sqls[1])
			for _, m := range msgs {
				m.Retried, m.Attempt = false, m.Attempt+1
			}
			consume(t, c, msgs...)
			consume(t, c, msgs...) // a redelivery changes nothing
			if n := count(t, db, `SELECT COUNT(*) FROM dlq_messages WHERE message_id IN ('m0', 'm1', 'm2') AND failure_class = 'unknown'`); n != 3 {
				t.Fatalf("rows after the table came back = %d, want 3", n)
			}
		})
	}
}

// A large batch is split under D1's value limit; when D1 fails between two
// statements, the first part stays stored and acked, the rest is retried.
func TestCaptureSplitsLargeBatches(t *testing.T) {
	pad := strings.Repeat("x", 120*1024)
	var msgs []*queuetest.Message
	for i := range 12 {
		msgs = append(msgs, queuetest.New(fmt.Sprint("m", i), fmt.Sprintf(`{"beer_id":"%d","pad":%q}`, i, pad)))
	}
	var batch []*captured
	c := newCapture(sqlitetest.New(t), &bytes.Buffer{})
	for _, m := range msgs {
		batch = append(batch, c.prepare(m, "beer-enrichment", t0))
	}
	parts := chunks(batch, maxBatchBytes)
	if len(parts) < 2 {
		t.Fatalf("12 x 120 KB in %d statement(s)", len(parts))
	}
	for _, p := range parts {
		var fs []Failure
		for _, cm := range p {
			fs = append(fs, cm.failure)
		}
		if js, _ := encodeBatch(fs); len(js) > maxBatchBytes {
			t.Fatalf("statement parameter of %d bytes", len(js))
		}
	}

	// All stored when D1 answers.
	db := sqlitetest.New(t)
	consume(t, newCapture(db, &bytes.Buffer{}), msgs...)
	if n := count(t, db, `SELECT COUNT(*) FROM dlq_messages`); n != 12 {
		t.Fatalf("rows = %d, want 12", n)
	}

	// D1 fails after the first store statement.
	for _, m := range msgs {
		m.Acked = false
	}
	plain, flaky, _ := flakyDB(t, 1)
	if err := newCapture(flaky, &bytes.Buffer{}).ConsumeBatch(context.Background(), dlqName, queuetest.Batch(msgs...)); err != nil {
		t.Fatalf("ConsumeBatch: %v", err)
	}
	first := len(parts[0])
	for i, m := range msgs {
		if m.Acked != (i < first) || m.Retried != (i >= first) {
			t.Fatalf("message %d: acked %v retried %v (first statement had %d)", i, m.Acked, m.Retried, first)
		}
	}
	if n := count(t, plain, `SELECT COUNT(*) FROM dlq_messages`); n != int64(first) {
		t.Fatalf("rows = %d, want %d", n, first)
	}
}

// A message that makes the batch statement fail (here a trigger rejects it)
// does not hold back its neighbours: they are stored one by one and acked;
// it is retried, and from its third delivery on kept as a minimal row.
func TestCaptureOneBadMessageDoesNotHoldBackItsNeighbours(t *testing.T) {
	db := sqlitetest.New(t)
	mustExec(t, db, `CREATE TRIGGER reject_bad BEFORE INSERT ON dlq_messages WHEN NEW.raw_message LIKE '%"bad"%'
		BEGIN SELECT RAISE(ABORT, 'rejected by test trigger'); END`)
	var logs bytes.Buffer
	c := newCapture(db, &logs)
	Attempts{DB: db}.Record(context.Background(), Attempt{MessageID: "bad", Queue: "beer-enrichment", Attempt: 4, Class: "transient", Error: "e", At: t0})
	good1, bad, good2 := queuetest.New("g1", beer("g1")), queuetest.New("bad", beer("bad")), queuetest.New("g2", beer("g2"))
	consume(t, c, good1, bad, good2)
	if !good1.Acked || !good2.Acked || bad.Acked || !bad.Retried {
		t.Fatalf("g1 %+v bad %+v g2 %+v", good1, bad, good2)
	}
	if n := count(t, db, `SELECT COUNT(*) FROM dlq_messages`); n != 2 {
		t.Fatalf("rows = %d, want 2", n)
	}
	wantCounters(t, db, 2, 0, 0)

	// Second delivery, alone: retried again.
	bad2 := queuetest.New("bad", beer("bad"))
	bad2.Attempt = 2
	consume(t, c, bad2)
	if bad2.Acked || !bad2.Retried {
		t.Fatalf("second delivery: %+v", bad2)
	}
	// Third delivery: kept as a minimal poison row (body as base64), acked.
	bad3 := queuetest.New("bad", beer("bad"))
	bad3.Attempt = 3
	consume(t, c, bad3)
	if !bad3.Acked || bad3.Retried {
		t.Fatalf("third delivery: %+v", bad3)
	}
	r := readRow(t, db, `message_id = 'bad'`)
	raw, _ := base64.StdEncoding.DecodeString(r.Raw)
	if string(raw) != beer("bad") || r.Encoding != "base64" || r.Key != UnparseableKey || r.Class.String != "poison" ||
		r.FailureCount != 4 || !strings.HasPrefix(r.Reason.String, "unstorable: ") || !strings.Contains(r.Reason.String, "rejected by test trigger") {
		t.Fatalf("minimal row = %+v", r)
	}
	if _, left := records(t, db)["bad"]; left {
		t.Fatal("attempt record of the stored message kept")
	}
	wantCounters(t, db, 3, 0, 1)
}

// A message whose minimal row cannot be stored either is retried, never dropped.
func TestCaptureUnstorableMessageIsRetriedNotDropped(t *testing.T) {
	db := sqlitetest.New(t)
	mustExec(t, db, `CREATE TRIGGER reject_all BEFORE INSERT ON dlq_messages BEGIN SELECT RAISE(ABORT, 'nope'); END`)
	m := queuetest.New("m1", beer("1"))
	m.Attempt = 10
	consume(t, newCapture(db, &bytes.Buffer{}), m)
	if m.Acked || !m.Retried {
		t.Fatalf("message %+v", m)
	}
}

var _ queue.Message = (*queuetest.Message)(nil)

// The log names each poison message stored, with its problem, and only
// those; the batch's log line counts them.
func TestCaptureLogsPoisonMessagesOnly(t *testing.T) {
	db := sqlitetest.New(t)
	var logs bytes.Buffer
	c := newCapture(db, &logs)
	good, bad := queuetest.New("good", beer("1")), queuetest.New("bad", "not json")
	if err := c.ConsumeBatch(context.Background(), dlqName, queuetest.Batch(good, bad)); err != nil || !good.Acked || !bad.Acked {
		t.Fatalf("ConsumeBatch: %v, good %+v, bad %+v", err, good, bad)
	}
	var poison []string
	batchLines := 0
	for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		var e map[string]any
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		switch e["msg"] {
		case "dlq: poison message stored":
			poison = append(poison, fmt.Sprint(e["message_id"], " ", e["problem"] != ""))
		case "dlq: captured batch":
			batchLines++
			if e["poison"] != float64(1) || e["new"] != float64(2) {
				t.Errorf("batch line %s", line)
			}
		}
	}
	if len(poison) != 1 || poison[0] != "bad true" || batchLines != 1 {
		t.Fatalf("poison lines %q, batch lines %d:\n%s", poison, batchLines, logs.String())
	}
}

// A message alone in its chunk whose store statement fails is not sent
// again by itself (it would be the same statement): one store statement,
// then two probes (probeStore: 3 statements each), and it is retried; with
// a neighbour, the one-by-one stores run (one each).
func TestCaptureLoneMessageIsNotStoredTwice(t *testing.T) {
	plain, db, stmts := flakyDB(t, 1_000_000)
	mustExec(t, plain, `CREATE TRIGGER reject_bad BEFORE INSERT ON dlq_messages WHEN NEW.raw_message LIKE '%"bad"%'
		BEGIN SELECT RAISE(ABORT, 'rejected by test trigger'); END`)
	c := newCapture(db, &bytes.Buffer{})
	bad := queuetest.New("bad", beer("bad"))
	if err := c.ConsumeBatch(context.Background(), dlqName, queuetest.Batch(bad)); err != nil || bad.Acked || !bad.Retried {
		t.Fatalf("ConsumeBatch: %v, %+v", err, bad)
	}
	alone := stmts.Load()
	stmts.Store(0)
	bad, good := queuetest.New("bad", beer("bad")), queuetest.New("good", beer("good"))
	if err := c.ConsumeBatch(context.Background(), dlqName, queuetest.Batch(bad, good)); err != nil || bad.Acked || !good.Acked {
		t.Fatalf("ConsumeBatch: %v, %+v, %+v", err, bad, good)
	}
	if pair := stmts.Load(); alone != 7 || pair != alone+2 {
		t.Fatalf("statements: %d alone (want 7: store, probe, probe), %d with a neighbour (want 9: and one store each)", alone, pair)
	}
}

// The batch's log line counts what became of its messages: new and
// retried, after a store failure while D1 answers and with D1 unavailable;
// none is left unsettled.
func TestCaptureBatchLogLineCountsEachOutcome(t *testing.T) {
	counts := func(t *testing.T, logs *bytes.Buffer) string {
		t.Helper()
		var line map[string]any
		for _, l := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
			var e map[string]any
			if json.Unmarshal([]byte(l), &e) == nil && e["msg"] == "dlq: captured batch" {
				line = e
			}
		}
		logs.Reset()
		return fmt.Sprintf("messages %v new %v repeats %v duplicates %v poison %v retried %v unsettled %v",
			line["messages"], line["new"], line["repeats"], line["duplicates"], line["poison"], line["retried"], line["unsettled"])
	}
	db := sqlitetest.New(t)
	mustExec(t, db, `CREATE TRIGGER reject_bad BEFORE INSERT ON dlq_messages WHEN NEW.raw_message LIKE '%"bad"%'
		BEGIN SELECT RAISE(ABORT, 'rejected by test trigger'); END`)
	var logs bytes.Buffer
	c := newCapture(db, &logs)
	consume(t, c, queuetest.New("g1", beer("g1")), queuetest.New("bad", beer("bad")), queuetest.New("g2", beer("g2")))
	if got := counts(t, &logs); got != "messages 3 new 2 repeats 0 duplicates 0 poison 0 retried 1 unsettled 0" {
		t.Fatalf("a rejected message: %s", got)
	}
	db.Close()
	consume(t, c, queuetest.New("g3", beer("g3")), queuetest.New("g4", beer("g4")))
	if got := counts(t, &logs); got != "messages 2 new 0 repeats 0 duplicates 0 poison 0 retried 2 unsettled 0" {
		t.Fatalf("D1 unavailable: %s", got)
	}
}

// finish counts a message that is neither stored nor retried as
// unsettled (the log line's alarm for a message the capture forgot: every
// path of ConsumeBatch settles each message, so only a direct call can
// show it), apart from the retried ones.
func TestCaptureBatchLogLineCountsUnsettledMessages(t *testing.T) {
	var logs bytes.Buffer
	c := newCapture(sqlitetest.New(t), &logs)
	batch := []*captured{
		{msg: queuetest.New("u1", beer("u1"))},
		{msg: queuetest.New("r1", beer("r1")), retried: true},
		{msg: queuetest.New("u2", beer("u2"))},
		{msg: queuetest.New("n1", beer("n1")), outcome: OutcomeNew},
	}
	c.finish(context.Background(), dlqName, "beer-enrichment", batch, time.Now())
	var line map[string]any
	for _, l := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		var e map[string]any
		if json.Unmarshal([]byte(l), &e) == nil && e["msg"] == "dlq: captured batch" {
			line = e
		}
	}
	if line["unsettled"] != float64(2) || line["retried"] != float64(1) || line["new"] != float64(1) {
		t.Fatalf("batch line: %v", line)
	}
}
