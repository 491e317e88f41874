package dlq

import (
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/internal/sqlitetest"
)

// The capture triggers count every failure in its hour: new rows and
// replayed messages that failed again (a redelivery changes nothing); the
// series reads those buckets, zeros included, and never dlq_messages.
func TestTimeSeriesCountsFailuresPerHour(t *testing.T) {
	db := sqlitetest.New(t)
	now := clock() // 1_750_000_000_000: 13:46:40 UTC
	hour := time.Hour.Milliseconds()
	current := now.UnixMilli() - now.UnixMilli()%hour
	ids := insert(t, db,
		adminRow{beerID: "1", failedAt: now.UnixMilli() - 1000},
		adminRow{beerID: "2", failedAt: current},
		adminRow{beerID: "3", failedAt: current - 2*hour + 5},
		adminRow{beerID: "4", failedAt: current - 2*hour + 7, source: "other"},
		adminRow{beerID: "5", failedAt: current - (SeriesHours-1)*hour},  // first bucket
		adminRow{beerID: "6", failedAt: current - SeriesHours*hour},      // just before the window
		adminRow{beerID: "7", failedAt: current - (SeriesHours+48)*hour}, // long before
	)
	// Row 3 is replayed and fails again in the current hour: one more failure.
	if _, err := db.Exec(`UPDATE dlq_messages SET last_message_id = 'again', failed_at = ? WHERE id = ?`, now.UnixMilli(), ids[2]); err != nil {
		t.Fatal(err)
	}
	// Any other update of the row is no failure.
	if _, err := db.Exec(`UPDATE dlq_messages SET status = 'acknowledged', last_message_id = last_message_id WHERE id = ?`, ids[1]); err != nil {
		t.Fatal(err)
	}
	s, err := TimeSeries{DB: db, Now: clock}.Read(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Hourly) != SeriesHours || s.From != current-(SeriesHours-1)*hour || s.To != current+hour || s.BucketMS != hour {
		t.Fatalf("window: %d buckets from %d to %d", len(s.Hourly), s.From, s.To)
	}
	want := map[int]int64{SeriesHours - 1: 3, SeriesHours - 3: 2, 0: 1}
	for i, b := range s.Hourly {
		if b.Start != s.From+int64(i)*hour || b.Failures != want[i] {
			t.Errorf("bucket %d: %+v, want %d failures", i, b, want[i])
		}
	}
	if s.Total != 6 {
		t.Errorf("total %d, want 6", s.Total)
	}
	if len(s.BySourceQueue) != 2 || s.BySourceQueue[0] != (QueueFailures{"beer-enrichment", 5}) || s.BySourceQueue[1] != (QueueFailures{"other", 1}) {
		t.Errorf("by source queue: %+v", s.BySourceQueue)
	}

	other, err := TimeSeries{DB: db, Now: clock}.Read(ctx, "other")
	if err != nil {
		t.Fatal(err)
	}
	if other.Total != 1 || other.Hourly[SeriesHours-3].Failures != 1 || other.SourceQueue != "other" {
		t.Errorf("source_queue=other: total %d", other.Total)
	}
	if _, err := (TimeSeries{DB: db}).Read(ctx, strings.Repeat("q", MaxFilterText+1)); err == nil {
		t.Error("an over-long source_queue is accepted")
	}
}

// A new bucket deletes the ones older than 14 days: the table stays small
// without a job of its own, and an upsert into an existing bucket deletes nothing.
func TestFailuresHourlyPrunesOldBuckets(t *testing.T) {
	db := sqlitetest.New(t)
	day := 24 * time.Hour.Milliseconds()
	base := clock().UnixMilli()
	insert(t, db, adminRow{beerID: "old", failedAt: base - 20*day}, adminRow{beerID: "kept", failedAt: base - 13*day})
	if n := count(t, db, `SELECT COUNT(*) FROM dlq_failures_hourly`); n != 2 {
		t.Fatalf("%d buckets before", n)
	}
	insert(t, db, adminRow{beerID: "new", failedAt: base})
	if n := count(t, db, `SELECT COUNT(*) FROM dlq_failures_hourly WHERE hour < ?`, base-14*day); n != 0 {
		t.Errorf("%d buckets older than 14 days kept", n)
	}
	if n := count(t, db, `SELECT COALESCE(SUM(failures), 0) FROM dlq_failures_hourly`); n != 2 {
		t.Errorf("%d failures left, want 2 (13 days old and new)", n)
	}
}

// The series reads the buckets by primary key from the window's start:
// never dlq_messages, never more than the window.
func TestTimeSeriesPlanReadsTheWindowOnly(t *testing.T) {
	db := sqlitetest.New(t)
	plan := strings.Join(sqlitetest.Plan(t, db, timeseriesSQL, int64(0), ""), "\n")
	if !strings.Contains(plan, "SEARCH dlq_failures_hourly USING PRIMARY KEY (hour>?)") || strings.Contains(plan, "dlq_messages") {
		t.Errorf("plan:\n%s", plan)
	}
}
