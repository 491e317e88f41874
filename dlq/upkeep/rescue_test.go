package upkeep

import (
	"testing"
	"time"

	"github.com/redrive/redrive/internal/sqlitetest"
	"github.com/redrive/redrive/jobs"
)

func TestRescueReturnsStuckRowsToPending(t *testing.T) {
	db := sqlitetest.New(t)
	now := time.Date(2030, 6, 1, 10, 5, 0, 0, time.UTC)
	r := &Rescue{DB: db, Log: discard, StuckAfter: 10 * time.Minute}
	seed(t, db,
		row{MsgID: "stuck", Key: "1", Status: "replaying", FailedAt: now.Add(-time.Hour), ReplayingAt: now.Add(-11 * time.Minute)},
		row{MsgID: "exactly-due", Key: "1", Status: "replaying", FailedAt: now.Add(-time.Hour), ReplayingAt: now.Add(-10 * time.Minute)},
		row{MsgID: "no-claim-time", Key: "2", Status: "replaying", FailedAt: now.Add(-time.Hour)},
		row{MsgID: "in-flight", Key: "3", Status: "replaying", FailedAt: now.Add(-time.Hour), ReplayingAt: now.Add(-9 * time.Minute)},
		row{MsgID: "replayed", Key: "4", Status: "replayed", FailedAt: now.Add(-time.Hour), ReplayedAt: now.Add(-time.Hour)},
	)
	sum, err := r.Run(ctx, now)
	if err != nil || sum["rescued"] != int64(3) {
		t.Fatalf("summary %v %v", sum, err)
	}
	if n := count(t, db, `SELECT COUNT(*) FROM dlq_messages WHERE status = 'pending' AND replaying_at IS NULL AND updated_at = ?
		AND message_id IN ('stuck', 'exactly-due', 'no-claim-time')`, now.UnixMilli()); n != 3 {
		t.Fatalf("rescued rows in pending = %d, want 3", n)
	}
	if n := count(t, db, `SELECT COUNT(*) FROM dlq_messages WHERE message_id = 'in-flight' AND status = 'replaying'`); n != 1 {
		t.Fatal("a replay younger than StuckAfter was rescued")
	}
	if n := count(t, db, `SELECT COUNT(*) FROM dlq_messages WHERE message_id = 'replayed' AND status = 'replayed'`); n != 1 {
		t.Fatal("a replayed row was touched")
	}
	if n := counter(t, db, CounterRescued); n != 3 {
		t.Fatalf("counter = %d", n)
	}
	// Later, the in-flight one is stuck too; nothing else changes.
	sum, err = r.Run(ctx, now.Add(2*time.Minute))
	if err != nil || sum["rescued"] != int64(1) || counter(t, db, CounterRescued) != 4 {
		t.Fatalf("second run %v %v", sum, err)
	}
}

func TestRescueIsBoundedByBatchAndBudget(t *testing.T) {
	db := sqlitetest.New(t)
	now := time.Date(2030, 6, 1, 10, 5, 0, 0, time.UTC)
	clock := &fakeClock{T: now, Step: time.Second}
	r := &Rescue{DB: db, Log: discard, StuckAfter: 10 * time.Minute, Limits: jobs.Limits{ChunkRows: 2, Budget: time.Second, Clock: clock.Now}}
	for _, id := range []string{"a", "b", "c"} {
		seed(t, db, row{MsgID: id, Key: id, Status: "replaying", FailedAt: now.Add(-time.Hour), ReplayingAt: now.Add(-time.Hour)})
	}
	sum, err := r.Run(ctx, now)
	if err != nil || sum["rescued"] != int64(2) || sum["more"] != true {
		t.Fatalf("first run %v %v", sum, err)
	}
	sum, err = r.Run(ctx, now)
	if err != nil || sum["rescued"] != int64(1) || sum["more"] != false {
		t.Fatalf("second run %v %v", sum, err)
	}
}
