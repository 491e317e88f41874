package upkeep

import (
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/dlq/resolve"
	"github.com/redrive/redrive/internal/sqlitetest"
	"github.com/redrive/redrive/jobs"
	"github.com/redrive/redrive/queue/queuetest"
)

// A settle batch that fails after the sends: Run returns the error, and
// the rows stay replaying with their claim (no other replay claims them, so
// nothing is sent twice) until Rescue returns them to pending; then they
// are replayed like any other (pins settle's err == nil and err != nil).
func TestReplaySettleFailureLeavesRowsReplayingUntilRescued(t *testing.T) {
	db := sqlitetest.New(t)
	ids := insert(t, db, adminRow{Key: "1", FailedAt: 1}, adminRow{Key: "2", FailedAt: 2})
	mustExec(t, db, `CREATE TRIGGER no_settle BEFORE UPDATE OF status ON dlq_messages WHEN OLD.status = 'replaying'
		BEGIN SELECT RAISE(ABORT, 'settle refused'); END`)
	s := &queuetest.Sender{}
	r := newReplay(db, s)
	res, err := r.Run(ctx, resolve.ReplayRequest{Selection: dlq.Selection{IDs: ids}})
	if err == nil || !strings.Contains(err.Error(), "replay settle (2 sent, 0 failed") || !strings.Contains(err.Error(), "settle refused") {
		t.Fatalf("run: %+v, %v; want the settle's error", res, err)
	}
	if len(s.Sent["beer-enrichment"]) != 2 {
		t.Fatalf("%d sent, want 2", len(s.Sent["beer-enrichment"]))
	}
	claimedAt := fixedClock().UnixMilli()
	if n := count(t, db, `SELECT COUNT(*) FROM dlq_messages WHERE status = 'replaying' AND replaying_at = ? AND replay_count = 0 AND replayed_at IS NULL`,
		claimedAt); n != 2 {
		t.Fatalf("%d rows replaying with their claim, want 2", n)
	}
	if n := counter(t, db, resolve.CounterReplayed); n != 0 {
		t.Fatalf("%s = %d after a failed settle", resolve.CounterReplayed, n)
	}
	// Still claimed: another replay sends nothing.
	res, err = r.Run(ctx, resolve.ReplayRequest{Selection: dlq.Selection{IDs: ids}})
	if err != nil || res.ClaimedCount != 0 || res.SkippedCount != 2 || res.Skipped[0].Reason != "not_pending" || len(s.Sent["beer-enrichment"]) != 2 {
		t.Fatalf("second replay: %+v %v, %d sent in all", res, err, len(s.Sent["beer-enrichment"]))
	}
	mustExec(t, db, `DROP TRIGGER no_settle`)
	rescue := &Rescue{DB: db, Log: discard, StuckAfter: 10 * time.Minute, Limits: jobs.Limits{ChunkRows: 100, Budget: time.Minute}}
	if _, err := rescue.Run(ctx, fixedClock().Add(20*time.Minute)); err != nil {
		t.Fatal(err)
	}
	res, err = r.Run(ctx, resolve.ReplayRequest{Selection: dlq.Selection{IDs: ids}})
	if err != nil || res.ReplayedCount != 2 || len(s.Sent["beer-enrichment"]) != 4 {
		t.Fatalf("after the rescue: %+v %v", res, err)
	}
	if n := count(t, db, `SELECT COUNT(*) FROM dlq_messages WHERE status = 'replayed' AND replay_count = 1`); n != 2 || counter(t, db, resolve.CounterReplayed) != 2 {
		t.Fatalf("%d rows replayed once, counter %d", n, counter(t, db, resolve.CounterReplayed))
	}
}
