package enrichment

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/alerts"
	"github.com/redrive/redrive/alerts/alertstest"
	"github.com/redrive/redrive/internal/sqlitetest"
)

// The breaker's real transitions drive the condition: it fires once when
// the breaker opens (also while half-open) and resolves once when a probe closes it.
func TestBreakerOpenConditionFollowsTheBreaker(t *testing.T) {
	ctx := context.Background()
	db := sqlitetest.New(t)
	now := time.Date(2030, 6, 1, 10, 0, 0, 0, time.UTC)
	b := Breaker{DB: db, Threshold: 2, Cooldown: time.Minute, ProbeLease: 30 * time.Second}
	cond := BreakerOpenCondition(db)
	n := &alertstest.Slack{}
	alerts := &alerts.Engine{DB: db, Log: discard, Outbox: alertstest.Outbox(db, n), Reminder: time.Hour, Conditions: []alerts.Condition{cond}}
	check := func(at time.Time, want bool, detail string) {
		t.Helper()
		on, d, err := cond.Check(ctx, at)
		if err != nil || on != want || !strings.Contains(d, detail) {
			t.Fatalf("at %s: firing %v %q %v; want %v containing %q", at.Sub(now), on, d, err, want, detail)
		}
		if _, err := alerts.Run(ctx, at); err != nil {
			t.Fatal(err)
		}
	}
	check(now, false, "never opened")
	b.Failed(ctx, now)
	check(now, false, "closed")
	if opened, _, _ := b.Failed(ctx, now.Add(time.Second)); !opened {
		t.Fatal("breaker did not open")
	}
	check(now.Add(2*time.Second), true, "open since 2030-06-01T10:00:01Z after 2 consecutive transient failures; provider calls stopped until 2030-06-01T10:01:01Z")
	check(now.Add(2*time.Minute), true, "cooldown ended at 2030-06-01T10:01:01Z, the next catch-up run probes the provider")
	if adm, _ := b.Admit(ctx, now.Add(3*time.Minute)); !adm.Probe {
		t.Fatal("no probe")
	}
	check(now.Add(3*time.Minute), true, "half-open since 2030-06-01T10:03:00Z")
	b.Succeeded(ctx, now.Add(4*time.Minute))
	check(now.Add(4*time.Minute), false, "closed (since 2030-06-01T10:04:00Z)")
	check(now.Add(5*time.Minute), false, "closed")
	if got := n.Take(); len(got) != 2 || !strings.HasPrefix(got[0], "[redrive] FIRING enrichment_breaker_open: provider circuit breaker open") ||
		!strings.HasPrefix(got[1], "[redrive] RESOLVED enrichment_breaker_open after 3m58s") {
		t.Fatalf("notifications %q", got)
	}
}
