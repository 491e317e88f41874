package enrichment

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"github.com/redrive/redrive/alerts"
	"time"
)

// BreakerOpenCondition is the alert condition "the provider's circuit breaker
// is open" (a alerts.Condition for the alerts job). It fires while the breaker
// is not closed: open (provider calls stopped) or half-open (one probe
// decides). A breaker whose cooldown ended stays open until a message probes
// the provider, so the alert resolves only once a call has succeeded.
type BreakerOpenCondition struct {
	DB *sql.DB
}

var _ alerts.Condition = BreakerOpenCondition{}

// Name implements alerts.Condition.
func (BreakerOpenCondition) Name() string { return "enrichment_breaker_open" }

// Check implements alerts.Condition; the detail says since when and until when.
func (c BreakerOpenCondition) Check(ctx context.Context, now time.Time) (bool, string, error) {
	var state string
	var failures, updated int64
	var openUntil, probeUntil sql.NullInt64
	var cause sql.NullString
	err := c.DB.QueryRowContext(ctx, `SELECT state, failures, open_until, probe_until, updated_at, cause FROM enrichment_breaker WHERE name = ?`,
		breakerName).Scan(&state, &failures, &openUntil, &probeUntil, &updated, &cause)
	if errors.Is(err, sql.ErrNoRows) {
		return false, "provider circuit breaker closed (never opened)", nil
	}
	if err != nil {
		return false, "", fmt.Errorf("breaker state: %w", err)
	}
	since := time.UnixMilli(updated).UTC().Format(time.RFC3339)
	switch state {
	case BreakerClosed:
		return false, fmt.Sprintf("provider circuit breaker closed (since %s)", since), nil
	case BreakerHalfOpen:
		return true, fmt.Sprintf("provider circuit breaker half-open since %s: one probe call decides (lease until %s)",
			since, time.UnixMilli(probeUntil.Int64).UTC().Format(time.RFC3339)), nil
	default:
		until := time.UnixMilli(openUntil.Int64).UTC().Format(time.RFC3339)
		next := "provider calls stopped until " + until
		if openUntil.Int64 <= now.UnixMilli() {
			next = "cooldown ended at " + until + ", the next message probes the provider"
		}
		why := fmt.Sprintf("after %d consecutive transient failures", failures)
		if cause.String == CauseAuth {
			why = "because the provider refused the API key (see enrichment_auth_failing)"
		}
		return true, fmt.Sprintf("provider circuit breaker %s since %s %s; %s", state, since, why, next), nil
	}
}
