package inspect

import (
	"testing"
	"time"

	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/internal/sqlitetest"
)

// A page that holds exactly the last rows says there is no more (no cursor
// to an empty page), and a bounded total of exactly ListCountMax matches is
// exact.
func TestListLastFullPageAndTheCountBound(t *testing.T) {
	db := sqlitetest.New(t)
	generate(t, db, "lf", ListCountMax, 1, 1_700_000_000_000)
	l := List{DBs: dlq.Single(dlq.Store{DB: db}), Cursors: dlq.NewCursors("s")}
	cursor, pages, rows := "", 0, 0
	for {
		p, err := l.Page(ctx, ListParams{Filter: dlq.Filter{Q: "lf-"}, Limit: 100, Cursor: cursor})
		if err != nil {
			t.Fatal(err)
		}
		pages++
		rows += len(decoded(t, p))
		if p.TotalCount != ListCountMax || !p.TotalCountExact {
			t.Fatalf("page %d: total %d exact %v, want %d exact", pages, p.TotalCount, p.TotalCountExact, ListCountMax)
		}
		if !p.HasMore {
			if p.NextCursor != nil {
				t.Fatal("the last page has a cursor")
			}
			break
		}
		if pages > 10 {
			t.Fatal("more than 10 pages of 100 for 1000 rows")
		}
		cursor = *p.NextCursor
	}
	if pages != 10 || rows != ListCountMax {
		t.Fatalf("%d rows in %d pages, want %d in 10", rows, pages, ListCountMax)
	}
}

// The detail's id range starts at 1: the first row reads back.
func TestDetailOfTheFirstID(t *testing.T) {
	db := sqlitetest.New(t)
	ids := insert(t, db, adminRow{Key: "first", FailedAt: 1})
	if ids[0] != 1 {
		t.Fatalf("first id %d", ids[0])
	}
	if _, err := (Detail{DB: db}).Read(ctx, 1); err != nil {
		t.Fatalf("detail of id 1: %v", err)
	}
}

// An audit page that holds exactly the last entries has no more.
func TestAuditLastFullPage(t *testing.T) {
	db := sqlitetest.New(t)
	a := dlq.Audit{DB: db, Cursors: dlq.NewCursors("s"), Clock: fixedClock}
	for i := 0; i < 3; i++ {
		if err := a.Record(ctx, dlq.AuditStart{Action: dlq.ActionReplay, Requester: dlq.Requester{RequestID: "r", KeyFingerprint: "fp"}, DryRun: true,
			IDs: []int64{int64(i + 1)}}, dlq.OutcomeOK, nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	p, err := a.Page(ctx, dlq.AuditParams{Limit: 3})
	if err != nil || len(p.Entries) != 3 || p.HasMore || p.NextCursor != nil {
		t.Fatalf("3 entries, limit 3: %d entries, has_more %v, cursor %v (%v)", len(p.Entries), p.HasMore, p.NextCursor, err)
	}
}

// A failure in an hour after the clock's (a clock behind the capturing
// worker's) is outside the window, not counted in its last hour.
func TestTimeSeriesLeavesOutHoursAfterNow(t *testing.T) {
	db := sqlitetest.New(t)
	now := fixedClock()
	insert(t, db, adminRow{Key: "now", FailedAt: now.UnixMilli()}, adminRow{Key: "later", FailedAt: now.Add(time.Hour).UnixMilli()})
	s, err := TimeSeries{DBs: dlq.Single(dlq.Store{DB: db}), Clock: fixedClock}.Read(ctx)
	if err != nil || s.Total != 1 || s.Hourly[dlq.SeriesHours-1].Failures != 1 {
		t.Fatalf("total %d, last hour %+v (%v)", s.Total, s.Hourly[dlq.SeriesHours-1], err)
	}
}
