package enrichment

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/internal/sqlitetest"
)

// beerStore's writes report success as nil and a failed statement as an
// error naming the beer (the consumer logs it and goes on).
func TestBeerStoreWritesReportTheirErrors(t *testing.T) {
	ctx := context.Background()
	db := sqlitetest.New(t)
	now := catchUpNow
	s := beerStore{DB: db}
	seedBeers(t, db, beerRow{id: "b1", status: "queued"}, beerRow{id: "b2", status: "queued"}, beerRow{id: "b3", status: "queued"})
	if sp, err := s.attempted(ctx, "b1", "m1", "transient: status 503", now.Add(time.Minute), 4, false, now); err != nil ||
		sp != (spent{n: 1, key: "m1", found: true}) {
		t.Fatalf("attempted: %+v %v", sp, err)
	}
	if err := s.park(ctx, "b2", StatusPending, ClassQuota, "quota: spent", now.Add(time.Hour), now); err != nil {
		t.Fatalf("park: %v", err)
	}
	if err := s.answered(ctx, "b3", Verdict{Outcome: Enriched, ABV: 5}, "llm:m", now); err != nil {
		t.Fatalf("answered: %v", err)
	}
	b1, b2, b3 := beerOf(t, db, "b1"), beerOf(t, db, "b2"), beerOf(t, db, "b3")
	if b1.Status != StatusQueued || b1.Attempts != 1 || *b1.NextAttemptAt != now.Add(time.Minute).UnixMilli() ||
		b2.Status != StatusPending || b2.Attempts != 0 || *b2.NextAttemptAt != now.Add(time.Hour).UnixMilli() ||
		b3.Status != StatusEnriched || *b3.ABV != 5 {
		t.Fatalf("rows %+v %+v %+v", b1, b2, b3)
	}

	if _, err := db.Exec(`DROP TABLE beers`); err != nil {
		t.Fatal(err)
	}
	_, aerr := s.attempted(ctx, "b1", "m1", "x", now, 4, false, now)
	for name, err := range map[string]error{
		"failed":    s.failed(ctx, "b1", "x", now),
		"attempted": aerr,
		"park":      s.park(ctx, "b2", StatusWaiting, ClassBreakerOpen, "x", now, now),
		"answered":  s.answered(ctx, "b3", Verdict{Outcome: NotFound}, "llm:m", now),
	} {
		if err == nil || !strings.Contains(err.Error(), "beer b") || !strings.Contains(err.Error(), "no such table") {
			t.Errorf("%s without a beers table: %v", name, err)
		}
	}
}
