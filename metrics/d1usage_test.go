package metrics

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/redrive/redrive/internal/promtext"
	"github.com/redrive/redrive/internal/sqlitetest"
)

// The meter adds each statement's usage to its operation and to the
// isolate's totals, and writes the totals in one statement at most once per
// Interval, adding to what other isolates wrote; /admin/metrics exports them.
func TestMeterCountsPerOperationAndFlushesAtMostOncePerInterval(t *testing.T) {
	db := sqlitetest.New(t)
	ctx := context.Background()
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	m := &Meter{DB: db, Interval: time.Minute, Clock: func() time.Time { return now }}
	list, op := Start(ctx, "GET /admin/dlq")
	m.Observe(list, Usage{Statements: 1, RowsRead: 50, RowsWritten: 0})
	m.Observe(list, Usage{Statements: 1, RowsRead: 2, RowsWritten: 1})
	m.Observe(ctx, Usage{Statements: 1, RowsRead: 7})
	if u := op.Usage(); u != (Usage{Statements: 2, RowsRead: 52, RowsWritten: 1}) {
		t.Fatalf("operation usage %+v", u)
	}
	if err := m.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	// Within the interval nothing is written; after it, the new counts are added.
	capture, _ := Start(ctx, QueueOp("beer-enrichment-dlq"))
	m.Observe(capture, Usage{Statements: 1, RowsRead: 700, RowsWritten: 701})
	now = now.Add(30 * time.Second)
	m.Flush(ctx)
	got, err := ReadD1Usage(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got["GET /admin/dlq"] != (Usage{2, 52, 1}) || got[OpOther] != (Usage{1, 7, 0}) {
		t.Fatalf("after the first flush: %+v", got)
	}
	now = now.Add(31 * time.Second)
	m.Observe(list, Usage{Statements: 1, RowsRead: 50})
	if err := m.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	got, _ = ReadD1Usage(ctx, db)
	if got["GET /admin/dlq"] != (Usage{3, 102, 1}) || got["queue beer-enrichment-dlq"] != (Usage{1, 700, 701}) {
		t.Fatalf("after the second flush: %+v", got)
	}
	// Another isolate's meter adds to the same row.
	other := &Meter{DB: db}
	other.Observe(list, Usage{Statements: 1, RowsRead: 1})
	other.Flush(ctx)
	got, _ = ReadD1Usage(ctx, db)
	if got["GET /admin/dlq"] != (Usage{4, 103, 1}) {
		t.Fatalf("two isolates: %+v", got)
	}

	snap, err := ReadSnapshot(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	WritePrometheus(&buf, snap, now)
	page, err := promtext.Parse(buf.String())
	if err != nil {
		t.Fatalf("%v\n%s", err, buf.String())
	}
	for k, v := range map[string]float64{
		promtext.Key("redrive_d1_rows_read_total", "op", "GET /admin/dlq"):               103,
		promtext.Key("redrive_d1_rows_written_total", "op", "queue beer-enrichment-dlq"): 701,
		promtext.Key("redrive_d1_statements_total", "op", "other"):                       1,
	} {
		if got, ok := page.Samples[k]; got != v {
			t.Errorf("%s = %v (present %v), want %v", k, got, ok, v)
		}
	}
	if page.Types["redrive_d1_rows_read_total"] != "counter" {
		t.Errorf("types %v", page.Types)
	}
}

// A flush that fails keeps its counts for the next one.
func TestMeterKeepsWhatItCouldNotWrite(t *testing.T) {
	db := sqlitetest.New(t)
	ctx := context.Background()
	m := &Meter{DB: db}
	op, _ := Start(ctx, "x")
	m.Observe(op, Usage{Statements: 1, RowsRead: 3})
	db.Exec(`ALTER TABLE d1_usage RENAME TO away`)
	if err := m.Flush(ctx); err == nil {
		t.Fatal("flush into a missing table succeeded")
	}
	db.Exec(`ALTER TABLE away RENAME TO d1_usage`)
	if err := m.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if got, _ := ReadD1Usage(ctx, db); got["x"] != (Usage{1, 3, 0}) {
		t.Fatalf("%+v", got)
	}
}
