package upkeep

import (
	"testing"
	"time"

	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/internal/sqlitetest"
)

// A recount of the hours sets dlq_activity's counts of the last 25 hours
// from the rows (a drifted count is corrected, an hour with no row left is
// zeroed and pruned) and leaves older hours alone.
func TestRecountOfTheHoursCorrectsTheLast25Hours(t *testing.T) {
	db := sqlitetest.New(t)
	now := fixedClock()
	h := now.UnixMilli() / dlq.HourMS
	insert(t, db, adminRow{Key: "a", FailedAt: now.Add(-2 * time.Hour).UnixMilli()})
	mustExec(t, db, `UPDATE dlq_activity SET n = 7 WHERE kind = 'failed' AND hour = ?`, h-2)
	mustExec(t, db, `INSERT INTO dlq_activity(kind, hour, n) VALUES ('failed', ?, 4), ('failed', ?, 9)`, h-5, h-30)
	if _, err := dlq.BatchOf(nil, db).Batch(ctx, recountStatements(now, false, true, false)...); err != nil {
		t.Fatal(err)
	}
	for hour, want := range map[int64]int64{h - 2: 1, h - 5: 0, h - 30: 9} {
		if n := count(t, db, `SELECT COALESCE(SUM(n), 0) FROM dlq_activity WHERE kind = 'failed' AND hour = ?`, hour); n != want {
			t.Errorf("hour now-%d: %d failures, want %d", h-hour, n, want)
		}
	}
}
