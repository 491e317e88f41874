package enrichment

import (
	"context"
	"time"
)

// KeyProbeBeer is the one question the catch-up's key probe asks the
// provider (KeyProbe). It is no beer of the table: whether the provider
// accepts the API key does not depend on the beer, and a fixed question
// cannot be held back by a bad beer.
var KeyProbeBeer = Beer{BeerName: "Guinness Draught", Brewer: "Guinness"}

// KeyProbe is the breaker's probe while it is open because the provider
// refused the API key (cause auth): the catch-up asks the provider
// KeyProbeBeer itself, at the time a half-open probe would be due, instead
// of sending a waiting beer round the queue. A refused key (401/403) or no
// answer re-opens the breaker, growing as after any failed probe
// (Breaker.ReopenAfterKeyProbe: one row written, no queue operation, no
// beer touched, no quota: a refused call does no work). Any other answer
// means the key is accepted: the breaker closes, the call is counted in
// the day's quota, and the same catch-up run releases every waiting beer.
// So a lone beer waiting under a revoked key costs one row written per
// probe, shared by all the waiting beers (docs/operations.md "Outages").
type KeyProbe struct {
	// Provider is the consumer's provider (URL, model, key, timeout).
	Provider ChatProvider
	// Breaker is the consumer's breaker settings (cooldown, cap, jitter).
	Breaker Breaker
	// Quota is the daily budget the accepted call is counted in.
	Quota Quota
}

// keyProbes reports whether the key probe is this run's probe: it is set,
// and the breaker is open for an auth failure. (Run reads the breaker only
// when the key is set.) Then no waiting beer goes back as the probe, and
// the run probes the key when the breaker is due by the wall clock.
func (run *catchUpRun) keyProbes() bool {
	s := run.breaker
	return run.c.KeyProbe != nil && s.State == BreakerOpen && s.Cause == CauseAuth
}

// clock is the wall clock (Clock, or time.Now).
func (c *CatchUp) clock() time.Time {
	if c.Clock != nil {
		return c.Clock()
	}
	return time.Now()
}

// keyProbe asks the provider KeyProbeBeer and records the verdict in the
// breaker; it returns what happened for the run's summary. When the key is
// accepted the run's breaker is closed, so the run releases the waiting
// beers.
func (run *catchUpRun) keyProbe(ctx context.Context) (string, error) {
	kp, log := run.c.KeyProbe, run.c.Log
	resp, callErr := kp.Provider.Ask(ctx, KeyProbeBeer)
	after := run.c.clock()
	v := Classify(resp, callErr, after, kp.Provider.APIKey)
	reason := v.Reason
	b := kp.Breaker
	b.DB = run.c.DB
	switch v.Outcome {
	case Auth, Transient:
		updated, until, err := b.ReopenAfterKeyProbe(ctx, after, run.breaker.OpenUntil, CauseAuth)
		if err != nil {
			return "", err
		}
		if !updated {
			log.InfoContext(ctx, "catch-up: key probe failed; the breaker changed meanwhile and is left as it is", "reason", reason)
			return "changed", nil
		}
		log.WarnContext(ctx, "catch-up: key probe failed; breaker open for longer (check ENRICHMENT_API_KEY)",
			"outcome", string(v.Outcome), "reason", reason, "open_until", until.UTC().Format(time.RFC3339))
		if v.Outcome == Auth {
			return "refused", nil
		}
		return "failed", nil
	}
	if _, err := b.Succeeded(ctx, after); err != nil {
		return "", err
	}
	if _, _, err := (Quota{DB: run.c.DB, Limit: kp.Quota.Limit}).Reserve(ctx, after); err != nil {
		log.ErrorContext(ctx, "catch-up: could not count the key probe's call in the quota", "error", err.Error())
	}
	log.InfoContext(ctx, "catch-up: key probe accepted; circuit breaker closed, waiting beers released", "outcome", string(v.Outcome))
	run.breaker = BreakerState{State: BreakerClosed}
	return "accepted", nil
}
