package metrics

import (
	"context"
	"database/sql"
	"fmt"
	"testing"

	"github.com/redrive/redrive/internal/sqlitetest"
)

// row is a dlq_messages row's status and failed_at (epoch ms).
type row struct {
	status   string
	failedAt int64
}

// dlqDB is a database holding one row per failed_at given (pending unless
// the status says otherwise), each a capture of source queue q.
func dlqDB(t *testing.T, q string, rows ...row) *sql.DB {
	t.Helper()
	db := sqlitetest.New(t)
	for i, r := range rows {
		if _, err := db.Exec(`INSERT INTO dlq_messages(message_id, row_key, status, source_queue, failed_at) VALUES (?, 'b', ?, ?, ?)`,
			fmt.Sprint(q, i), r.status, q, r.failedAt); err != nil {
			t.Fatal(err)
		}
	}
	return db
}

// AddDLQ adds another database's row counts and captures to a snapshot,
// and keeps the oldest pending row of the two: an older one replaces it, a
// newer one or none leaves it; a database with no pending row and no
// capture adds nothing (no dlq_captured_total sample that ReadSnapshot
// would not give either), and the snapshot's other counters stay.
func TestAddDLQMergesAnotherDatabase(t *testing.T) {
	ctx := context.Background()
	shared := dlqDB(t, "beer-enrichment", row{"pending", 5_000}, row{"acknowledged", 1_000})
	if err := (Counters{DB: shared}).Add(ctx, map[string]int64{"dlq_rescued_total": 4}); err != nil {
		t.Fatal(err)
	}
	s, err := ReadSnapshot(ctx, shared)
	if err != nil {
		t.Fatal(err)
	}
	if s.OldestPendingFailedAt != 5_000 || s.Counters[CapturedTotal] != 2 {
		t.Fatalf("shared snapshot: %+v", s)
	}
	newer := dlqDB(t, "orders", row{"pending", 9_000}, row{"pending", 7_000}, row{"replayed", 100})
	if err := s.AddDLQ(ctx, newer); err != nil {
		t.Fatal(err)
	}
	if s.OldestPendingFailedAt != 5_000 || s.Counters[CapturedTotal] != 5 || s.Counters["dlq_rescued_total"] != 4 {
		t.Fatalf("after a newer database: oldest %d, counters %v", s.OldestPendingFailedAt, s.Counters)
	}
	none := dlqDB(t, "tickets", row{"acknowledged", 50})
	if err := s.AddDLQ(ctx, none); err != nil {
		t.Fatal(err)
	}
	if s.OldestPendingFailedAt != 5_000 || s.Counters[CapturedTotal] != 6 {
		t.Fatalf("after a database with no pending row: oldest %d, counters %v", s.OldestPendingFailedAt, s.Counters)
	}
	older := dlqDB(t, "orders", row{"pending", 3_000})
	if err := s.AddDLQ(ctx, older); err != nil {
		t.Fatal(err)
	}
	if s.OldestPendingFailedAt != 3_000 || s.Counters[CapturedTotal] != 7 {
		t.Fatalf("after an older database: oldest %d, counters %v", s.OldestPendingFailedAt, s.Counters)
	}
	want := map[[2]string]int64{{"pending", "beer-enrichment"}: 1, {"acknowledged", "beer-enrichment"}: 1,
		{"pending", "orders"}: 3, {"replayed", "orders"}: 1, {"acknowledged", "tickets"}: 1}
	got := map[[2]string]int64{}
	for _, c := range s.DLQ {
		got[[2]string{c.Status, c.SourceQueue}] += c.Rows
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("row counts %v, want %v", got, want)
	}

	// A snapshot with no pending row takes the other database's oldest;
	// one with no counters map gets one.
	var empty Snapshot
	if err := empty.AddDLQ(ctx, sqlitetest.New(t)); err != nil {
		t.Fatal(err)
	}
	if _, ok := empty.Counters[CapturedTotal]; ok || empty.OldestPendingFailedAt != 0 || len(empty.DLQ) != 0 {
		t.Fatalf("an empty database added %+v", empty)
	}
	if err := empty.AddDLQ(ctx, newer); err != nil {
		t.Fatal(err)
	}
	if empty.OldestPendingFailedAt != 7_000 || empty.Counters[CapturedTotal] != 3 {
		t.Fatalf("into an empty snapshot: %+v", empty)
	}
}

// A database that cannot be read is an error, not a partial snapshot.
func TestAddDLQReportsAnUnreadableDatabase(t *testing.T) {
	db := sqlitetest.New(t)
	db.Close()
	var s Snapshot
	if err := s.AddDLQ(context.Background(), db); err == nil {
		t.Fatal("no error from a closed database")
	}
}

// A pipeline on its own database counts its actions in that database's
// counters table (acknowledges, replays, poison rows, rescues, retention
// deletions): AddDLQ adds every one of them to the snapshot's, name by
// name, so the scrape reports a pipeline's real figures wherever its rows
// are. A counter only the other database has appears; one only the
// snapshot has stays.
func TestAddDLQAddsAnotherDatabasesCounters(t *testing.T) {
	ctx := context.Background()
	shared := dlqDB(t, "beer-enrichment", row{"pending", 5_000})
	if err := (Counters{DB: shared}).Add(ctx, map[string]int64{"dlq_acknowledged_total": 2, "dlq_rescued_total": 1}); err != nil {
		t.Fatal(err)
	}
	s, err := ReadSnapshot(ctx, shared)
	if err != nil {
		t.Fatal(err)
	}
	own := dlqDB(t, "tickets", row{"pending", 6_000})
	if err := (Counters{DB: own}).Add(ctx, map[string]int64{"dlq_acknowledged_total": 5, "dlq_replayed_total": 3,
		"dlq_poison_total": 1, "dlq_retention_deleted_age_total": 4}); err != nil {
		t.Fatal(err)
	}
	if err := s.AddDLQ(ctx, own); err != nil {
		t.Fatal(err)
	}
	want := map[string]int64{"dlq_acknowledged_total": 7, "dlq_rescued_total": 1, "dlq_replayed_total": 3,
		"dlq_poison_total": 1, "dlq_retention_deleted_age_total": 4, CapturedTotal: 2}
	for name, n := range want {
		if s.Counters[name] != n {
			t.Errorf("%s = %d, want %d (counters %v)", name, s.Counters[name], n, s.Counters)
		}
	}
}
