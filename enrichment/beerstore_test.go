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
	if err := s.failed(ctx, "b1", "transient: status 503", now.Add(time.Minute), now); err != nil {
		t.Fatalf("failed: %v", err)
	}
	if err := s.deferred(ctx, "b2", "quota: spent", now.Add(time.Hour), now); err != nil {
		t.Fatalf("deferred: %v", err)
	}
	if err := s.answered(ctx, "b3", Verdict{Outcome: Enriched, ABV: 5}, "llm:m", now); err != nil {
		t.Fatalf("answered: %v", err)
	}
	b1, b2, b3 := beerOf(t, db, "b1"), beerOf(t, db, "b2"), beerOf(t, db, "b3")
	if b1.Status != StatusQueued || b1.Attempts != 1 || *b1.NextAttemptAt != now.Add(time.Minute).UnixMilli() ||
		b2.Status != StatusQueued || b2.Attempts != 0 || *b2.NextAttemptAt != now.Add(time.Hour).UnixMilli() ||
		b3.Status != StatusEnriched || *b3.ABV != 5 {
		t.Fatalf("rows %+v %+v %+v", b1, b2, b3)
	}

	if _, err := db.Exec(`DROP TABLE beers`); err != nil {
		t.Fatal(err)
	}
	for name, err := range map[string]error{
		"failed":   s.failed(ctx, "b1", "x", time.Time{}, now),
		"deferred": s.deferred(ctx, "b2", "x", now, now),
		"answered": s.answered(ctx, "b3", Verdict{Outcome: NotFound}, "llm:m", now),
	} {
		if err == nil || !strings.Contains(err.Error(), "beer b") || !strings.Contains(err.Error(), "no such table") {
			t.Errorf("%s without a beers table: %v", name, err)
		}
	}
}
