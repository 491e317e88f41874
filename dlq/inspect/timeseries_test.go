package inspect

import (
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/internal/sqlitetest"
)

// The capture triggers count every failure in its hour: new rows and
// replayed messages that failed again (a redelivery changes nothing); the
// series reads those buckets, zeros included, and never dlq_messages.
func TestTimeSeriesCountsFailuresPerHour(t *testing.T) {
	db := sqlitetest.New(t)
	now := fixedClock() // 1_750_000_000_000: 13:46:40 UTC
	hour := time.Hour.Milliseconds()
	current := now.UnixMilli() - now.UnixMilli()%hour
	ids := insert(t, db,
		adminRow{Key: "1", FailedAt: now.UnixMilli() - 1000},
		adminRow{Key: "2", FailedAt: current},
		adminRow{Key: "3", FailedAt: current - 2*hour + 5},
		adminRow{Key: "4", FailedAt: current - 2*hour + 7, Source: "other"},
		adminRow{Key: "5", FailedAt: current - (dlq.SeriesHours-1)*hour},  // first bucket
		adminRow{Key: "6", FailedAt: current - dlq.SeriesHours*hour},      // just before the window
		adminRow{Key: "7", FailedAt: current - (dlq.SeriesHours+48)*hour}, // long before
	)
	// Row 3 is replayed and fails again in the current hour: one more failure.
	if _, err := db.Exec(`UPDATE dlq_messages SET last_message_id = 'again', failed_at = ? WHERE id = ?`, now.UnixMilli(), ids[2]); err != nil {
		t.Fatal(err)
	}
	// Any other update of the row is no failure.
	if _, err := db.Exec(`UPDATE dlq_messages SET status = 'acknowledged', last_message_id = last_message_id WHERE id = ?`, ids[1]); err != nil {
		t.Fatal(err)
	}
	s, err := TimeSeries{DBs: dlq.Single(dlq.Store{DB: db}), Clock: fixedClock}.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Hourly) != dlq.SeriesHours || s.From != current-(dlq.SeriesHours-1)*hour || s.To != current+hour || s.BucketMS != hour {
		t.Fatalf("window: %d buckets from %d to %d", len(s.Hourly), s.From, s.To)
	}
	want := map[int]int64{dlq.SeriesHours - 1: 3, dlq.SeriesHours - 3: 2, 0: 1}
	for i, b := range s.Hourly {
		if b.Start != s.From+int64(i)*hour || b.Failures != want[i] {
			t.Errorf("bucket %d: %+v, want %d failures", i, b, want[i])
		}
	}
	if s.Total != 6 {
		t.Errorf("total %d, want 6", s.Total)
	}
}

// The series reads the buckets by primary key from the window's start:
// never dlq_messages, never more than the window.
func TestTimeSeriesPlanReadsTheWindowOnly(t *testing.T) {
	db := sqlitetest.New(t)
	for _, queue := range []any{nil, "orders"} {
		plan := strings.Join(sqlitetest.Plan(t, db, timeseriesSQL, int64(0), queue), "\n")
		if !strings.Contains(plan, "SEARCH dlq_activity USING PRIMARY KEY (kind=? AND hour>?)") || strings.Contains(plan, "dlq_messages") {
			t.Errorf("plan (queue %v):\n%s", queue, plan)
		}
	}
}
