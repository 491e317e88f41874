package upkeep

import (
	"testing"
	"time"

	"github.com/redrive/redrive/internal/sqlitetest"
)

// A rescue without a positive StuckAfter would take rows from replays still
// running: it refuses to run and changes nothing.
func TestRescueNeedsAPositiveStuckAfter(t *testing.T) {
	db := sqlitetest.New(t)
	now := time.Date(2030, 6, 1, 10, 5, 0, 0, time.UTC)
	seed(t, db, row{MsgID: "a", Key: "a", Status: "replaying", FailedAt: now.Add(-time.Hour), ReplayingAt: now})
	for _, d := range []time.Duration{0, -time.Minute} {
		sum, err := (&Rescue{DB: db, Log: discard, StuckAfter: d}).Run(ctx, now)
		if err == nil || err.Error() != "rescue: StuckAfter must be positive" || sum != nil {
			t.Errorf("StuckAfter %v: %v %v", d, sum, err)
		}
	}
	if n := count(t, db, `SELECT COUNT(*) FROM dlq_messages WHERE status = 'replaying'`); n != 1 || counter(t, db, CounterRescued) != 0 {
		t.Fatalf("replaying rows %d, rescued counter %d", n, counter(t, db, CounterRescued))
	}
}
