package enrichment

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"github.com/redrive/redrive/alerts"
	"time"
)

// AuthFailingCondition is the alert condition "the provider refuses our API
// key" (a alerts.Condition for the alerts job). A 401 or 403 from the provider
// opens the circuit breaker at once with cause auth (Breaker.Trip); the
// condition fires while the breaker is open or half-open for that cause.
// Messages meanwhile wait on the queue (deferred, no attempt spent, no DLQ
// row) and the quota of the refused calls is given back. It resolves when a
// probe call succeeds (the breaker closes): after ENRICHMENT_API_KEY was
// fixed, within one breaker cooldown.
type AuthFailingCondition struct {
	DB *sql.DB
}

var _ alerts.Condition = AuthFailingCondition{}

// Name implements alerts.Condition.
func (AuthFailingCondition) Name() string { return "enrichment_auth_failing" }

// Check implements alerts.Condition.
func (c AuthFailingCondition) Check(ctx context.Context, now time.Time) (bool, string, error) {
	var state string
	var updated int64
	var openUntil sql.NullInt64
	var cause sql.NullString
	err := c.DB.QueryRowContext(ctx, `SELECT state, open_until, updated_at, cause FROM enrichment_breaker WHERE name = ?`,
		breakerName).Scan(&state, &openUntil, &updated, &cause)
	if errors.Is(err, sql.ErrNoRows) {
		return false, "provider accepts the API key (breaker never opened)", nil
	}
	if err != nil {
		return false, "", fmt.Errorf("breaker state: %w", err)
	}
	if state == BreakerClosed || cause.String != CauseAuth {
		return false, "provider accepts the API key", nil
	}
	next := "a probe call is under way"
	if state == BreakerOpen {
		next = "next probe at " + time.UnixMilli(openUntil.Int64).UTC().Format(time.RFC3339)
		if openUntil.Int64 <= now.UnixMilli() {
			next = "the next message probes the provider"
		}
	}
	return true, fmt.Sprintf("the provider refuses ENRICHMENT_API_KEY (401/403; breaker %s, last change %s): provider calls stopped, "+
		"messages wait on the queue (none dead-lettered); fix the secret with `wrangler secret put ENRICHMENT_API_KEY`; %s",
		state, time.UnixMilli(updated).UTC().Format(time.RFC3339), next), nil
}
