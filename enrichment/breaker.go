package enrichment

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// Breaker states.
const (
	BreakerClosed   = "closed"
	BreakerOpen     = "open"
	BreakerHalfOpen = "half_open"
)

// breakerName is the enrichment_breaker row of the provider.
const breakerName = "provider"

// Why the breaker opened (enrichment_breaker.cause).
const (
	// CauseTransient: Threshold consecutive transient failures.
	CauseTransient = "transient"
	// CauseAuth: the provider refused the API key (401/403); opens at once.
	CauseAuth = "auth"
)

// Breaker is the provider's circuit breaker, kept in D1 (table
// enrichment_breaker) because every queue call runs in a fresh Go instance.
// After Threshold consecutive transient failures it opens for Cooldown, and
// an auth failure (Trip) opens it at once; then exactly one caller claims
// the half-open probe (one atomic UPDATE), and the probe's result closes it
// or opens it again. It records why it opened (cause) until it closes. Every change is one
// statement; transitions are returned so the caller can log and count them.
type Breaker struct {
	DB *sql.DB
	// Threshold is the number of consecutive transient failures that opens it.
	Threshold int
	// Cooldown is how long it stays open.
	Cooldown time.Duration
	// ProbeLease is how long a claimed probe blocks other probes; after it a
	// probe that never reported (its instance died) is given up and another
	// caller may probe. It should exceed the provider timeout.
	ProbeLease time.Duration
	// MaxCooldown caps the re-open period: a failed probe re-opens the
	// breaker for a random time in [max(Cooldown, c/2), c], c =
	// min(MaxCooldown, Cooldown·2^n) after the n-th consecutive failed probe
	// (always Cooldown when MaxCooldown is not above it).
	MaxCooldown time.Duration
	// Jitter is uniform in [0, 1): where in [c/2, c] a re-open ends.
	Jitter float64
}

// reopenSQL is the end of a re-open after a failed probe, for the row's
// reopens before it counts this one (SQL over enrichment_breaker): ?4 now,
// ?5 Cooldown, ?6 the cap, ?7 the jitter factor in [0.5, 1) (all ms but ?7).
const reopenSQL = `?4 + max(?5, CAST(min(?6, ?5 * (1 << min(reopens + 1, 30))) * ?7 AS INTEGER))`

// ReopenCap is the longest re-open after the n-th consecutive failed probe
// (n >= 1): min(MaxCooldown, Cooldown·2^n), never below Cooldown.
func (b Breaker) ReopenCap(n int) time.Duration {
	limit := max(b.MaxCooldown, b.Cooldown)
	c := b.Cooldown
	for i := 0; i < n && c < limit; i++ {
		c *= 2
	}
	return min(c, limit)
}

// reopenArgs are ?5, ?6 and ?7 of reopenSQL.
func (b Breaker) reopenArgs() []any {
	return []any{b.Cooldown.Milliseconds(), max(b.MaxCooldown, b.Cooldown).Milliseconds(), 0.5 + min(max(b.Jitter, 0), 0.999)/2}
}

// Admission is the breaker's answer to "may I call the provider now?".
type Admission struct {
	// Allowed: call the provider.
	Allowed bool
	// Probe: this call is the half-open probe (Allowed is true).
	Probe bool
	// RetryAt is when to come back when not allowed.
	RetryAt time.Time
	// Clean: the breaker was closed with no failures counted, so a success
	// has nothing to reset.
	Clean bool
	// Cause is why the breaker is open when not allowed (CauseTransient, CauseAuth).
	Cause string
}

// Admit decides whether one call may go to the provider. A closed breaker
// admits (one read). An open breaker whose cooldown has passed, or a
// half-open one whose probe lease expired, admits exactly one caller as the
// probe: the claim is a conditional UPDATE only one concurrent caller wins.
func (b Breaker) Admit(ctx context.Context, now time.Time) (Admission, error) {
	var state string
	var failures int64
	var openUntil, probeUntil sql.NullInt64
	var cause sql.NullString
	err := b.DB.QueryRowContext(ctx, `SELECT state, failures, open_until, probe_until, cause FROM enrichment_breaker WHERE name = ?`,
		breakerName).Scan(&state, &failures, &openUntil, &probeUntil, &cause)
	if errors.Is(err, sql.ErrNoRows) {
		return Admission{Allowed: true, Clean: true}, nil
	}
	if err != nil {
		return Admission{}, fmt.Errorf("breaker read: %w", err)
	}
	nowMS := now.UnixMilli()
	switch {
	case state == BreakerClosed:
		return Admission{Allowed: true, Clean: failures == 0}, nil
	case state == BreakerOpen && openUntil.Int64 > nowMS:
		return Admission{RetryAt: time.UnixMilli(openUntil.Int64), Cause: cause.String}, nil
	case state == BreakerHalfOpen && probeUntil.Int64 > nowMS:
		// A probe is in flight: come back when it has had time to decide.
		return Admission{RetryAt: time.UnixMilli(min(probeUntil.Int64, now.Add(b.Cooldown).UnixMilli())), Cause: cause.String}, nil
	}
	var claimed int
	err = b.DB.QueryRowContext(ctx, `UPDATE enrichment_breaker
		SET previous_state = state, state = 'half_open', probe_until = ?1, updated_at = ?2
		WHERE name = ?3 AND ((state = 'open' AND COALESCE(open_until, 0) <= ?2) OR (state = 'half_open' AND COALESCE(probe_until, 0) <= ?2))
		RETURNING 1`, now.Add(b.ProbeLease).UnixMilli(), nowMS, breakerName).Scan(&claimed)
	if errors.Is(err, sql.ErrNoRows) {
		// Another caller claimed the probe first.
		return Admission{RetryAt: now.Add(min(b.Cooldown, b.ProbeLease)), Cause: cause.String}, nil
	}
	if err != nil {
		return Admission{}, fmt.Errorf("breaker probe claim: %w", err)
	}
	return Admission{Allowed: true, Probe: true}, nil
}

// Succeeded records that the provider answered (anything but a transient
// failure): the failure count resets and an open or half-open breaker
// closes. closed reports that this call closed it.
func (b Breaker) Succeeded(ctx context.Context, now time.Time) (closed bool, err error) {
	var previous string
	err = b.DB.QueryRowContext(ctx, `UPDATE enrichment_breaker
		SET previous_state = state, state = 'closed', failures = 0, open_until = NULL, probe_until = NULL, cause = NULL, reopens = 0, updated_at = ?1
		WHERE name = ?2 AND (state <> 'closed' OR failures <> 0 OR reopens <> 0)
		RETURNING previous_state`, now.UnixMilli(), breakerName).Scan(&previous)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("breaker success: %w", err)
	}
	return previous != BreakerClosed, nil
}

// Failed records a transient failure. The breaker opens (for Cooldown from
// now) when the consecutive count reaches Threshold or when the failed call
// was made half-open; a breaker already open keeps its cooldown (late
// failures of calls admitted before it opened do not extend it). opened
// reports that this call opened it. A breaker that was open or half-open
// keeps its cause (a probe failing transiently says nothing about an auth
// problem being fixed); one opened here gets CauseTransient.
func (b Breaker) Failed(ctx context.Context, now time.Time) (opened bool, openUntil time.Time, err error) {
	var previous, state string
	var until sql.NullInt64
	err = b.DB.QueryRowContext(ctx, `INSERT INTO enrichment_breaker(name, state, previous_state, failures, open_until, cause, updated_at)
		VALUES (?1, CASE WHEN ?2 <= 1 THEN 'open' ELSE 'closed' END, 'closed', 1, CASE WHEN ?2 <= 1 THEN ?3 END,
			CASE WHEN ?2 <= 1 THEN 'transient' END, ?4)
		ON CONFLICT(name) DO UPDATE SET
			previous_state = state,
			failures = failures + 1,
			state = CASE WHEN state IN ('open', 'half_open') OR failures + 1 >= ?2 THEN 'open' ELSE 'closed' END,
			open_until = CASE WHEN state = 'open' THEN open_until
				WHEN state = 'half_open' THEN `+reopenSQL+`
				WHEN failures + 1 >= ?2 THEN ?3 END,
			reopens = reopens + (state = 'half_open'),
			cause = CASE WHEN state IN ('open', 'half_open') THEN COALESCE(cause, 'transient')
				WHEN failures + 1 >= ?2 THEN 'transient' END,
			probe_until = NULL,
			updated_at = ?4
		RETURNING previous_state, state, open_until`,
		append([]any{breakerName, int64(b.Threshold), now.Add(b.Cooldown).UnixMilli(), now.UnixMilli()}, b.reopenArgs()...)...).Scan(&previous, &state, &until)
	if err != nil {
		return false, time.Time{}, fmt.Errorf("breaker failure: %w", err)
	}
	if state != BreakerOpen {
		return false, time.Time{}, nil
	}
	return previous != BreakerOpen, time.UnixMilli(until.Int64), nil
}

// Trip opens the breaker at once for cause (CauseAuth: the provider refused
// the API key, so every call would fail the same way and spend quota for
// nothing). A closed or half-open breaker opens for Cooldown from now; one
// already open keeps its cooldown (a late failure of a call admitted before
// it opened does not extend it) and takes the new cause. The consecutive
// failure count is left alone (it counts transient failures). opened
// reports that this call opened it; openUntil is when the cooldown ends.
func (b Breaker) Trip(ctx context.Context, now time.Time, cause string) (opened bool, openUntil time.Time, err error) {
	var previous string
	var until int64
	err = b.DB.QueryRowContext(ctx, `INSERT INTO enrichment_breaker(name, state, previous_state, failures, open_until, cause, updated_at)
		VALUES (?1, 'open', 'closed', 0, ?2, ?3, ?4)
		ON CONFLICT(name) DO UPDATE SET
			previous_state = state,
			state = 'open',
			open_until = CASE WHEN state = 'open' THEN COALESCE(open_until, ?2)
				WHEN state = 'half_open' THEN `+reopenSQL+` ELSE ?2 END,
			reopens = reopens + (state = 'half_open'),
			cause = ?3,
			probe_until = NULL,
			updated_at = ?4
		RETURNING previous_state, open_until`,
		append([]any{breakerName, now.Add(b.Cooldown).UnixMilli(), cause, now.UnixMilli()}, b.reopenArgs()...)...).Scan(&previous, &until)
	if err != nil {
		return false, time.Time{}, fmt.Errorf("breaker trip: %w", err)
	}
	return previous != BreakerOpen, time.UnixMilli(until), nil
}

// ReopenAfterKeyProbe re-opens the breaker after the catch-up's own probe
// of the API key (CatchUp.KeyProbe) failed: refused again, or no answer.
// It changes the row only while the breaker is still open for cause with
// the open_until the caller read (observed, epoch ms), so a probe a
// consumer claimed meanwhile, a reset or a close is never overwritten; the
// re-open grows as after a failed half-open probe (reopenSQL, reopens + 1).
// One statement, one row written; updated is false when the breaker had
// changed.
func (b Breaker) ReopenAfterKeyProbe(ctx context.Context, now time.Time, observed int64, cause string) (updated bool, openUntil time.Time, err error) {
	var until int64
	err = b.DB.QueryRowContext(ctx, `UPDATE enrichment_breaker
		SET previous_state = state, open_until = `+reopenSQL+`, reopens = reopens + 1, updated_at = ?4
		WHERE name = ?1 AND state = 'open' AND open_until = ?2 AND cause = ?3
		RETURNING open_until`,
		append([]any{breakerName, observed, cause, now.UnixMilli()}, b.reopenArgs()...)...).Scan(&until)
	if errors.Is(err, sql.ErrNoRows) {
		return false, time.Time{}, nil
	}
	if err != nil {
		return false, time.Time{}, fmt.Errorf("breaker re-open after the key probe: %w", err)
	}
	return true, time.UnixMilli(until), nil
}

// Reset closes the breaker at once, whatever its state and cause: an
// operator's decision (POST /admin/enrichment/breaker/reset), for instance
// after fixing the API key. The failure count and the re-open growth start
// again; waiting beers go back to the queue on the catch-up's next run.
// previous is the state it had ("closed" also when it never had a row).
func (b Breaker) Reset(ctx context.Context, now time.Time) (previous string, err error) {
	err = b.DB.QueryRowContext(ctx, `UPDATE enrichment_breaker
		SET previous_state = state, state = 'closed', failures = 0, open_until = NULL, probe_until = NULL, cause = NULL, reopens = 0, updated_at = ?1
		WHERE name = ?2
		RETURNING previous_state`, now.UnixMilli(), breakerName).Scan(&previous)
	if errors.Is(err, sql.ErrNoRows) {
		return BreakerClosed, nil
	}
	if err != nil {
		return "", fmt.Errorf("breaker reset: %w", err)
	}
	return previous, nil
}

// BreakerState is the breaker as the catch-up and the API read it.
type BreakerState struct {
	State string `json:"state"`
	// Cause is why it is open (CauseTransient, CauseAuth); "" when closed.
	Cause string `json:"cause"`
	// OpenUntil is when an open breaker admits its next probe (epoch ms; 0: closed).
	OpenUntil int64 `json:"open_until"`
	// ProbeUntil is the lease of a half-open probe (epoch ms; 0: none).
	ProbeUntil int64 `json:"probe_until"`
	// Reopens counts the consecutive failed probes.
	Reopens int64 `json:"reopens"`
	// Failures counts the consecutive transient failures.
	Failures int64 `json:"failures"`
	// UpdatedAt is the row's last change (epoch ms; 0: the breaker was
	// never used and has no row).
	UpdatedAt int64 `json:"updated_at"`
}

// Read returns the breaker's state (closed, UpdatedAt 0, when it has no
// row); one row read. The catch-up, the alert conditions and GET
// /admin/enrichment/breaker all read it here.
func (b Breaker) Read(ctx context.Context) (BreakerState, error) {
	var s BreakerState
	var cause sql.NullString
	var openUntil, probeUntil sql.NullInt64
	err := b.DB.QueryRowContext(ctx, `SELECT state, cause, open_until, probe_until, reopens, failures, updated_at
		FROM enrichment_breaker WHERE name = ?`,
		breakerName).Scan(&s.State, &cause, &openUntil, &probeUntil, &s.Reopens, &s.Failures, &s.UpdatedAt)
	if errors.Is(err, sql.ErrNoRows) {
		return BreakerState{State: BreakerClosed}, nil
	}
	if err != nil {
		return s, fmt.Errorf("breaker read: %w", err)
	}
	s.Cause, s.OpenUntil, s.ProbeUntil = cause.String, openUntil.Int64, probeUntil.Int64
	return s, nil
}

// ProbeDue reports whether an open breaker would admit a probe at now.
func (s BreakerState) ProbeDue(now time.Time) bool {
	n := now.UnixMilli()
	return (s.State == BreakerOpen && s.OpenUntil <= n) || (s.State == BreakerHalfOpen && s.ProbeUntil <= n)
}
