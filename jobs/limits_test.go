package jobs

import (
	"context"
	"testing"
	"time"
)

// Unset limits mean batches of 1000 and a budget of 20 s: a run drains
// every full batch until one comes back short, and stops with more=true
// at the first full batch that ends past the budget.
func TestLimitsDefaults(t *testing.T) {
	clock := &fakeClock{t: time.Unix(1000, 0), step: 5 * time.Second}
	var limits []int
	full := 3 // batches that come back full
	total, more, err := Limits{Clock: clock.Now}.Start().Drain(context.Background(), func(_ context.Context, limit int) (int64, error) {
		limits = append(limits, limit)
		if len(limits) <= full {
			return int64(limit), nil
		}
		return 7, nil
	})
	if err != nil || more || total != 3007 || len(limits) != 4 || limits[0] != 1000 {
		t.Fatalf("total %d more %v err %v limits %v", total, more, err, limits)
	}
	// The clock moves 5 s per reading: the budget's start, then one per
	// full batch, so the fourth full batch ends at 20 s, past the budget.
	clock = &fakeClock{t: time.Unix(1000, 0), step: 5 * time.Second}
	calls := 0
	total, more, err = Limits{Clock: clock.Now}.Start().Drain(context.Background(), func(_ context.Context, limit int) (int64, error) {
		calls++
		return int64(limit), nil
	})
	if err != nil || !more || calls != 4 || total != 4000 {
		t.Fatalf("budget: calls %d total %d more %v err %v", calls, total, more, err)
	}
}

// fakeClock reads t, then moves it on by step.
type fakeClock struct {
	t    time.Time
	step time.Duration
}

func (c *fakeClock) Now() time.Time {
	now := c.t
	c.t = c.t.Add(c.step)
	return now
}
