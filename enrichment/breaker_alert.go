package enrichment

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/redrive/redrive/alerts"
)

// BreakerCondition is an alert condition on the provider's circuit breaker
// (an alerts.Condition for the alerts job). Both enrichment alerts are one
// of these, reading the same breaker row:
//   - BreakerOpenCondition, enrichment_breaker_open: fires while the breaker
//     is not closed, whatever opened it: open (provider calls stopped) or
//     half-open (one probe decides). A breaker whose cooldown ended stays
//     open until a probe (sent by the catch-up) succeeds, so it resolves
//     only once a call has.
//   - AuthFailingCondition, enrichment_auth_failing: fires while the breaker
//     is not closed because the provider refused the API key (a 401 or 403
//     opens it at once with cause auth, Breaker.Trip). Waiting beers stay
//     parked in D1, none is dead-lettered, and the quota of the refused
//     calls is given back; the catch-up probes the key itself (KeyProbe).
//     It resolves when a probe succeeds (the breaker closes) after
//     ENRICHMENT_API_KEY was fixed.
type BreakerCondition struct {
	DB *sql.DB
	// Auth restricts the condition to the auth cause (enrichment_auth_failing).
	Auth bool
}

// BreakerOpenCondition is the condition enrichment_breaker_open.
func BreakerOpenCondition(db *sql.DB) BreakerCondition { return BreakerCondition{DB: db} }

// AuthFailingCondition is the condition enrichment_auth_failing.
func AuthFailingCondition(db *sql.DB) BreakerCondition { return BreakerCondition{DB: db, Auth: true} }

var _ alerts.Condition = BreakerCondition{}

// Name implements alerts.Condition.
func (c BreakerCondition) Name() string {
	if c.Auth {
		return "enrichment_auth_failing"
	}
	return "enrichment_breaker_open"
}

// Check implements alerts.Condition; the detail says since when, why and
// what happens next.
func (c BreakerCondition) Check(ctx context.Context, now time.Time) (bool, string, error) {
	b, err := (Breaker{DB: c.DB}).Read(ctx)
	if err != nil {
		return false, "", fmt.Errorf("breaker state: %w", err)
	}
	if b.UpdatedAt == 0 { // no row
		if c.Auth {
			return false, "provider accepts the API key (breaker never opened)", nil
		}
		return false, "provider circuit breaker closed (never opened)", nil
	}
	if c.Auth {
		return authDetail(b, now)
	}
	return openDetail(b, now)
}

// authDetail is enrichment_auth_failing's verdict on the breaker.
func authDetail(b BreakerState, now time.Time) (bool, string, error) {
	if b.State == BreakerClosed || b.Cause != CauseAuth {
		return false, "provider accepts the API key", nil
	}
	next := "a probe call is under way"
	if b.State == BreakerOpen {
		next = "next key probe at " + time.UnixMilli(b.OpenUntil).UTC().Format(time.RFC3339)
		if b.OpenUntil <= now.UnixMilli() {
			next = "the next catch-up run probes the key"
		}
	}
	return true, fmt.Sprintf("the provider refuses ENRICHMENT_API_KEY (401/403; breaker %s, last change %s): provider calls stopped, "+
		"beers wait in D1 (none dead-lettered); fix the secret with `wrangler secret put ENRICHMENT_API_KEY`; %s",
		b.State, time.UnixMilli(b.UpdatedAt).UTC().Format(time.RFC3339), next), nil
}

// openDetail is enrichment_breaker_open's verdict on the breaker.
func openDetail(b BreakerState, now time.Time) (bool, string, error) {
	since := time.UnixMilli(b.UpdatedAt).UTC().Format(time.RFC3339)
	switch b.State {
	case BreakerClosed:
		return false, fmt.Sprintf("provider circuit breaker closed (since %s)", since), nil
	case BreakerHalfOpen:
		return true, fmt.Sprintf("provider circuit breaker half-open since %s: one probe call decides (lease until %s)",
			since, time.UnixMilli(b.ProbeUntil).UTC().Format(time.RFC3339)), nil
	default:
		until := time.UnixMilli(b.OpenUntil).UTC().Format(time.RFC3339)
		next := "provider calls stopped until " + until
		if b.OpenUntil <= now.UnixMilli() {
			next = "cooldown ended at " + until + ", the next catch-up run probes the provider"
		}
		why := fmt.Sprintf("after %d consecutive transient failures", b.Failures)
		if b.Cause == CauseAuth {
			why = "because the provider refused the API key (see enrichment_auth_failing)"
		}
		return true, fmt.Sprintf("provider circuit breaker %s since %s %s; %s", b.State, since, why, next), nil
	}
}

// Kind implements alerts.Described: enrichment_breaker_open is
// enrichment.breaker_opened and _closed; enrichment_auth_failing an
// alert.firing and alert.resolved of its own.
func (c BreakerCondition) Kind() alerts.Kind {
	if c.Auth {
		return alerts.Kind{Fire: alerts.AlertFiring, Resolve: alerts.AlertResolved, Severity: "critical"}
	}
	return alerts.Kind{Fire: alerts.BreakerOpened, Resolve: alerts.BreakerClosed, Pipeline: "beers", Severity: "error"}
}
