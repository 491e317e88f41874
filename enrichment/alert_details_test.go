package enrichment

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/internal/sqlitetest"
)

// The details of the breaker's alert conditions say what happens next, at
// each state of the breaker and on each side of the end of its cooldown
// (the cooldown has ended at exactly open_until).
func TestBreakerAlertDetailsSayWhatHappensNext(t *testing.T) {
	ctx := context.Background()
	db := sqlitetest.New(t)
	t0 := time.Date(2030, 6, 1, 10, 0, 0, 0, time.UTC)
	b := Breaker{DB: db, Threshold: 5, Cooldown: time.Minute, ProbeLease: 30 * time.Second}
	auth, open := AuthFailingCondition(db), BreakerOpenCondition(db)
	check := func(c interface {
		Check(context.Context, time.Time) (bool, string, error)
	}, at time.Time, want bool, detail string) {
		t.Helper()
		on, d, err := c.Check(ctx, at)
		if err != nil || on != want || !strings.HasSuffix(d, detail) {
			t.Errorf("at +%s: firing %v %q %v; want %v ending in %q", at.Sub(t0), on, d, err, want, detail)
		}
	}
	if opened, _, err := b.Trip(ctx, t0, CauseAuth); err != nil || !opened {
		t.Fatalf("trip: %v %v", opened, err)
	}
	check(auth, t0.Add(59*time.Second), true, "breaker open, last change 2030-06-01T10:00:00Z): provider calls stopped, "+
		"beers wait in D1 (none dead-lettered); fix the secret with `wrangler secret put ENRICHMENT_API_KEY`; next key probe at 2030-06-01T10:01:00Z")
	check(auth, t0.Add(time.Minute), true, "; the next catch-up run probes the key")
	check(auth, t0.Add(2*time.Minute), true, "; the next catch-up run probes the key")
	check(open, t0.Add(59*time.Second), true, "because the provider refused the API key (see enrichment_auth_failing); provider calls stopped until 2030-06-01T10:01:00Z")
	check(open, t0.Add(time.Minute), true, "; cooldown ended at 2030-06-01T10:01:00Z, the next catch-up run probes the provider")

	probeAt := t0.Add(2 * time.Minute)
	if adm := mustAdmit(t, b, probeAt); !adm.Probe {
		t.Fatalf("no probe: %+v", adm)
	}
	check(auth, probeAt, true, "(401/403; breaker half_open, last change 2030-06-01T10:02:00Z): provider calls stopped, "+
		"beers wait in D1 (none dead-lettered); fix the secret with `wrangler secret put ENRICHMENT_API_KEY`; a probe call is under way")
	check(open, probeAt, true, "provider circuit breaker half-open since 2030-06-01T10:02:00Z: one probe call decides (lease until 2030-06-01T10:02:30Z)")

	if _, err := b.Succeeded(ctx, probeAt.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	check(auth, probeAt.Add(time.Second), false, "provider accepts the API key")
	check(open, probeAt.Add(time.Second), false, "provider circuit breaker closed (since 2030-06-01T10:02:01Z)")
}
