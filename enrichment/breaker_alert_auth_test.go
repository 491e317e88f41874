package enrichment

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/alerts"
	"github.com/redrive/redrive/alerts/alertstest"
)

// enrichment_auth_failing follows the consumer: it fires once the provider
// refused the key (breaker open, cause auth), keeps firing while a probe is
// refused again or fails transiently, resolves once a probe succeeds; a
// breaker opened by transient failures alone does not fire it.
func TestAuthFailingConditionFiresAndResolves(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	cond := AuthFailingCondition(f.db)
	n := &alertstest.Slack{}
	var texts []string
	alerts := &alerts.Engine{DB: f.db, Log: discard, Outbox: alertstest.Outbox(f.db, n), Reminder: time.Hour,
		Conditions: []alerts.Condition{cond, BreakerOpenCondition(f.db)}}
	check := func(want bool, detail string) {
		t.Helper()
		on, d, err := cond.Check(ctx, f.now)
		if err != nil || on != want || !strings.Contains(d, detail) {
			t.Fatalf("firing %v %q %v; want %v containing %q", on, d, err, want, detail)
		}
		if _, err := alerts.Run(ctx, f.now); err != nil {
			t.Fatal(err)
		}
	}
	check(false, "never opened")

	f.provider.status(http.StatusUnauthorized, `{"error":"bad key"}`)
	f.consume(t, msg("k1", "kb1", "Key", 1))
	check(true, "the provider refuses ENRICHMENT_API_KEY (401/403; breaker open")
	texts = append(texts, n.Take()...)
	if !strings.Contains(texts[0], "FIRING enrichment_auth_failing") || !strings.Contains(strings.Join(texts, "\n"),
		"FIRING enrichment_breaker_open: provider circuit breaker open since 2030-06-01T10:00:00Z because the provider refused the API key") {
		t.Fatalf("notifications %q", texts)
	}

	// The probe after the cooldown fails transiently: still firing (auth not proven fixed).
	f.now = f.now.Add(time.Minute)
	f.provider.status(http.StatusBadGateway, `{}`)
	f.consume(t, msg("k1-copy", "kb1", "Key", 1))
	check(true, "breaker open")

	// The probe after that succeeds: resolved, and the beer enriched.
	f.now = f.now.Add(time.Minute)
	f.provider.set(func(w http.ResponseWriter, _ *http.Request) { w.Write(answer("4.4")) })
	f.consume(t, msg("k1-copy2", "kb1", "Key", 1))
	check(false, "accepts the API key")
	if s := f.beer(t, "kb1"); s.Status != StatusEnriched {
		t.Fatalf("beer %+v", s)
	}
	var auth []string
	for _, x := range append(texts, n.Take()...) {
		if strings.Contains(x, "FIRING enrichment_auth_failing:") || strings.Contains(x, "RESOLVED enrichment_auth_failing ") {
			auth = append(auth, x)
		}
	}
	if len(auth) != 2 || !strings.HasPrefix(auth[1], "[redrive] RESOLVED enrichment_auth_failing") {
		t.Fatalf("auth notifications %q", auth)
	}

	// Transient failures alone open the breaker without this alert.
	f.c.Policy.BreakerThreshold = 1
	f.now = f.now.Add(time.Minute)
	f.provider.status(http.StatusServiceUnavailable, `{}`)
	f.consume(t, msg("t1", "tb1", "Flaky", 1))
	if st, _ := breakerState(t, f.c.Breaker()); st != BreakerOpen {
		t.Fatalf("breaker %s", st)
	}
	check(false, "accepts the API key")
}
