package dlq

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/internal/sqlitetest"
	"github.com/redrive/redrive/queue/queuetest"
)

// Attempts reported by a consumer outside redrive (RecordAll, one batch)
// land in the same records as the beer consumer's: the captured row of an
// orders message carries their history, failure count, reason and
// signature, and its group is the reported failure's.
func TestRecordAllReportsLandInHistoryAndSignature(t *testing.T) {
	ps := withPipelines(t) // orders: queue "orders", key /order/id, label customer
	db := sqlitetest.New(t)
	a := Attempts{DB: db}
	long := strings.Repeat("x", MaxReportError)
	err := a.RecordAll(context.Background(), nil, []Attempt{
		{MessageID: "o1", Queue: "orders", Attempt: 1, Class: "permanent", Error: "card declined for order 1001", At: t0},
		{MessageID: "o2", Queue: "orders", Attempt: 1, Class: "unknown", Error: long, At: t0},
		{MessageID: "o1", Queue: "orders", Attempt: 2, Class: "permanent", Error: "card declined for order 1001", At: t0.Add(time.Second)},
	})
	if err != nil {
		t.Fatal(err)
	}
	got := records(t, db)
	if len(got) != 2 || got["o1"].Attempt != 2 || got["o1"].Queue != "orders" || got["o2"].Class != "unknown" ||
		len(got["o2"].Error) > maxAttemptError+len("…") {
		t.Fatalf("records = %+v", got)
	}

	c := &Capture{DB: db, Log: discard, SourceQueue: map[string]string{"orders-dlq": "orders"}, Stores: Single(Store{DB: db, Pipelines: ps}),
		Clock: func() time.Time { return t0.Add(time.Minute) }}
	body := `{"order":{"id":1001,"customer":"acme","fail":"card declined"}}`
	m := queuetest.New("o1", body)
	m.Attempt = 1
	if err := c.ConsumeBatch(context.Background(), "orders-dlq", queuetest.Batch(m)); err != nil {
		t.Fatal(err)
	}
	h, _, sig, _ := historyOf(t, db, `message_id = 'o1'`)
	if len(h) != 2 || h[0].Attempt != 1 || h[1].Attempt != 2 || h[1].Class != "permanent" || h[1].MessageID != "o1" {
		t.Fatalf("history = %+v", h)
	}
	if want := SignatureIn("orders", "permanent", "card declined for order 1001").Key; sig != want {
		t.Fatalf("signature %s, want %s", sig, want)
	}
	var n int64
	var reason, class, source, key, customer string
	if err := db.QueryRow(`SELECT failure_count, failure_reason, failure_class, source_queue, row_key, label_1 FROM dlq_messages WHERE message_id = 'o1'`).
		Scan(&n, &reason, &class, &source, &key, &customer); err != nil {
		t.Fatal(err)
	}
	if n != 2 || class != "permanent" || source != "orders" || reason != "permanent: card declined for order 1001" || key != "1001" || customer != "acme" {
		t.Fatalf("row: count %d class %s source %s reason %q key %s customer %s", n, class, source, reason, key, customer)
	}
	// The record is removed once its row is stored; o2's stays until its message arrives.
	if got := records(t, db); len(got) != 1 || got["o2"].MessageID != "o2" {
		t.Fatalf("records after capture = %+v", got)
	}
}

// RecordAll is all or nothing: one bad statement writes none of the report.
func TestRecordAllIsOneBatch(t *testing.T) {
	db := sqlitetest.New(t)
	mustExec(t, db, `CREATE TRIGGER fail_o2 BEFORE INSERT ON message_attempts WHEN NEW.message_id = 'o2' BEGIN SELECT RAISE(ABORT, 'no'); END`)
	err := Attempts{DB: db}.RecordAll(context.Background(), nil, []Attempt{
		{MessageID: "o1", Queue: "orders", Attempt: 1, Class: "permanent", Error: "e", At: t0},
		{MessageID: "o2", Queue: "orders", Attempt: 1, Class: "permanent", Error: "e", At: t0},
	})
	if err == nil {
		t.Fatal("the failing batch reported no error")
	}
	if got := records(t, db); len(got) != 0 {
		t.Fatalf("a failed report left records: %+v", got)
	}
	if err := (Attempts{DB: db}).RecordAll(context.Background(), nil, nil); err != nil {
		t.Fatalf("empty report: %v", err)
	}
}

// An attempt record belongs to its queue: a report for queue odd naming a
// message id of queue orders writes a record of its own and leaves orders'
// record alone (neither overwritten nor given a higher attempt), whichever
// came first; the capture of the orders message reads its own queue's
// record (its count, reason and failure group: no group is created for
// odd's record) and removes only that one, as does a repeat failure that
// takes a new message id.
func TestAttemptRecordsArePerQueue(t *testing.T) {
	ps := withPipelines(t)
	db := sqlitetest.New(t)
	a := Attempts{DB: db}
	ctx := context.Background()
	for _, at := range []Attempt{
		{MessageID: "m1", Queue: "odd", Attempt: 7, Class: "transient", Error: "odd's own", At: t0},
		{MessageID: "m1", Queue: "orders", Attempt: 3, Class: "permanent", Error: "card declined", At: t0},
		{MessageID: "m1", Queue: "odd", Attempt: 8, Class: "transient", Error: "written over", At: t0.Add(time.Second)},
	} {
		if err := a.RecordAll(ctx, nil, []Attempt{at}); err != nil {
			t.Fatal(err)
		}
	}
	perQueue := func(id string) map[string]Attempt {
		t.Helper()
		rows, err := db.Query(`SELECT queue, attempt, error FROM message_attempts WHERE message_id = ?`, id)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		out := map[string]Attempt{}
		for rows.Next() {
			var at Attempt
			if err := rows.Scan(&at.Queue, &at.Attempt, &at.Error); err != nil {
				t.Fatal(err)
			}
			out[at.Queue] = at
		}
		return out
	}
	got := perQueue("m1")
	if len(got) != 2 || got["orders"].Attempt != 3 || got["orders"].Error != "card declined" || got["odd"].Attempt != 8 {
		t.Fatalf("records of m1 = %+v, want one per queue, orders' untouched", got)
	}
	c := &Capture{DB: db, Log: discard, SourceQueue: map[string]string{"orders-dlq": "orders"}, Stores: Single(Store{DB: db, Pipelines: ps}),
		Clock: func() time.Time { return t0.Add(time.Minute) }}
	m := queuetest.New("m1", `{"order":{"id":7,"customer":"acme"}}`)
	m.Attempt = 1
	if err := c.ConsumeBatch(ctx, "orders-dlq", queuetest.Batch(m)); err != nil {
		t.Fatal(err)
	}
	var n int64
	var reason, sig string
	if err := db.QueryRow(`SELECT failure_count, failure_reason, signature FROM dlq_messages WHERE message_id = 'm1'`).Scan(&n, &reason, &sig); err != nil {
		t.Fatal(err)
	}
	want := SignatureIn("orders", "permanent", "card declined").Key
	if n != 3 || reason != "permanent: card declined" || sig != want {
		t.Fatalf("captured row: count %d reason %q signature %s, want orders' record (3, permanent: card declined, %s)", n, reason, sig, want)
	}
	var groups, pending int64
	if err := db.QueryRow(`SELECT COUNT(*), SUM(pending) FROM dlq_signatures`).Scan(&groups, &pending); err != nil {
		t.Fatal(err)
	}
	if groups != 1 || pending != 1 {
		t.Fatalf("%d failure groups (%d pending), want orders' alone", groups, pending)
	}
	if got := perQueue("m1"); len(got) != 1 || got["odd"].Attempt != 8 {
		t.Fatalf("records after the capture = %+v, want odd's alone", got)
	}
	// The row takes a new message id (a repeat failure): only its queue's
	// record of that id goes.
	for _, q := range []string{"odd", "orders"} {
		if err := a.Record(ctx, Attempt{MessageID: "m2", Queue: q, Attempt: 1, Class: "transient", Error: "e", At: t0}); err != nil {
			t.Fatal(err)
		}
	}
	mustExec(t, db, `UPDATE dlq_messages SET last_message_id = 'm2' WHERE message_id = 'm1'`)
	if got := perQueue("m2"); len(got) != 1 || got["odd"].Attempt != 1 {
		t.Fatalf("records of m2 after its repeat failure on orders = %+v, want odd's alone", got)
	}
}

// Migration 0033 keeps every attempt record (its history and attempt
// number) and rekeys the table by queue and message id: afterwards a
// record of another queue with the same message id is a record of its
// own, and a capture on the records' queue still reads and removes its
// own.
func TestMigration0033KeepsAttemptRecords(t *testing.T) {
	ps := withPipelines(t)
	db := sqlitetest.Migrated(t, "0033")
	// A record as the code before 0033 wrote it (keyed by message id).
	mustExec(t, db, `INSERT INTO message_attempts(message_id, queue, attempt, error_class, error, recorded_at, history, signature, signature_text)
		VALUES ('m1', 'orders', 4, 'permanent', 'card declined', 1000, '[{"attempt":4,"error":"card declined"}]', 'sig', 'card declined')`)
	sqlitetest.Migrate(t, db, "0033")
	if err := (Attempts{DB: db}).Record(context.Background(),
		Attempt{MessageID: "m1", Queue: "odd", Attempt: 9, Class: "transient", Error: "other", At: t0}); err != nil {
		t.Fatal(err)
	}
	var n, attempt int64
	var history string
	if err := db.QueryRow(`SELECT (SELECT COUNT(*) FROM message_attempts), attempt, history FROM message_attempts
		WHERE queue = 'orders' AND message_id = 'm1'`).Scan(&n, &attempt, &history); err != nil {
		t.Fatal(err)
	}
	if n != 2 || attempt != 4 || !strings.Contains(history, `"error":"card declined"`) {
		t.Fatalf("after 0033: %d records, orders' attempt %d history %s", n, attempt, history)
	}
	c := &Capture{DB: db, Log: discard, SourceQueue: map[string]string{"orders-dlq": "orders"}, Stores: Single(Store{DB: db, Pipelines: ps}),
		Clock: func() time.Time { return t0.Add(time.Minute) }}
	if err := c.ConsumeBatch(context.Background(), "orders-dlq", queuetest.Batch(queuetest.New("m1", `{"order":{"id":1}}`))); err != nil {
		t.Fatal(err)
	}
	var count int64
	if err := db.QueryRow(`SELECT failure_count FROM dlq_messages WHERE message_id = 'm1'`).Scan(&count); err != nil {
		t.Fatal(err)
	}
	if left := records(t, db); count != 4 || len(left) != 1 || left["m1"].Queue != "odd" {
		t.Fatalf("capture after 0033: failure_count %d, records left %+v", count, left)
	}
}
