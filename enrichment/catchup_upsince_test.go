package enrichment

import (
	"context"
	"testing"
	"time"

	"github.com/redrive/redrive/internal/sqlitetest"
	"github.com/redrive/redrive/queue/queuetest"
)

// up_since, the start of the job's current stretch of runs, carries over
// from the previous run unless there was a gap longer than LostAfter (a gap
// of exactly LostAfter is none), the previous run is later than now, or it
// recorded no (or a future) up_since; then the stretch starts now.
func TestCatchUpUpSinceCarriesOverWithoutAGap(t *testing.T) {
	now := catchUpNow
	since := now.Add(-3 * time.Hour).UnixMilli()
	for _, c := range []struct {
		name    string
		lastRun time.Time // zero: no previous run
		upSince any       // the previous run's up_since (nil: absent)
		want    int64
	}{
		{"first run", time.Time{}, nil, now.UnixMilli()},
		{"previous run a minute ago", now.Add(-time.Minute), since, since},
		{"previous run at the same instant", now, since, since},
		{"previous run exactly LostAfter ago", now.Add(-time.Hour), since, since},
		{"previous run just over LostAfter ago", now.Add(-time.Hour - time.Millisecond), since, now.UnixMilli()},
		{"previous run in the future", now.Add(time.Millisecond), since, now.UnixMilli()},
		{"previous run without up_since", now.Add(-time.Minute), nil, now.UnixMilli()},
		{"previous up_since in the future", now.Add(-time.Minute), now.Add(time.Millisecond).UnixMilli(), now.UnixMilli()},
		{"previous up_since now", now.Add(-time.Minute), now.UnixMilli(), now.UnixMilli()},
	} {
		db := sqlitetest.New(t)
		if !c.lastRun.IsZero() {
			sum := map[string]any{}
			if c.upSince != nil {
				sum["up_since"] = c.upSince
			}
			recordRun(t, db, c.lastRun, sum, nil)
		}
		sum, err := newCatchUp(db, &queuetest.Sender{}).Run(context.Background(), now)
		if err != nil || sum["up_since"] != c.want {
			t.Errorf("%s: up_since %v (want %d), err %v", c.name, sum["up_since"], c.want, err)
		}
		// The lost rule waits until LostAfter past up_since.
		if from := c.want + time.Hour.Milliseconds(); from > now.UnixMilli() && sum["lost_check_from"] != from {
			t.Errorf("%s: lost_check_from %v, want %d", c.name, sum["lost_check_from"], from)
		}
	}
}
