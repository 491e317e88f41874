package upkeep

import (
	"testing"
	"time"

	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/dlq/inspect"
	"github.com/redrive/redrive/internal/sqlitetest"
)

// The dlq_tally job keeps the chart's whole window: an hour just inside it
// survives the prune, one older is folded into the archive (its events
// still count in dlq_captured_total).
func TestTallyJobKeepsTheChartsWindow(t *testing.T) {
	db := sqlitetest.New(t)
	hour := time.Hour.Milliseconds()
	now := fixedClock()
	current := now.UnixMilli() - now.UnixMilli()%hour
	insert(t, db,
		adminRow{Key: "first", FailedAt: current - (dlq.SeriesHours-1)*hour},
		adminRow{Key: "older", FailedAt: current - (dlq.SeriesHours+1)*hour})
	if _, err := dlq.BatchOf(nil, db).Batch(ctx, recountStatements(now, false, false, false)...); err != nil {
		t.Fatal(err)
	}
	s, err := inspect.TimeSeries{DBs: dlq.Single(dlq.Store{DB: db}), Clock: fixedClock}.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if s.Total != 1 || s.Hourly[0].Failures != 1 {
		t.Errorf("after the prune: total %d, first hour %+v", s.Total, s.Hourly[0])
	}
	if n := count(t, db, `SELECT COUNT(*) FROM dlq_activity WHERE kind = 'failed' AND hour >= 0`); n != 1 {
		t.Errorf("%d failed hours kept, want 1", n)
	}
	if n := count(t, db, `SELECT SUM(events) FROM dlq_activity WHERE kind = 'failed'`); n != 2 {
		t.Errorf("%d capture events in all, want 2 (the archive keeps the older one)", n)
	}
}
