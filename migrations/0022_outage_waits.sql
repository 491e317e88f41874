-- 0022: outages cost little while they last (issue 28).
-- beers.attempts now counts the real attempts of the beer's current message
-- (its episode), across every deferral and copy; a new episode (a replay or
-- registration of a failed beer) starts it again at 0. attempt_key is the
-- message id under which the episode's attempts are recorded
-- (message_attempts), so its history survives deferrals. A beer whose work
-- waits for the provider (breaker open, key refused, key missing) is
-- `waiting`: parked here, not cycling on the queue, until the catch-up job
-- sends it back (the breaker closed) or picks it as the breaker's probe;
-- `waiting` says why, `waits` counts its consecutive deferrals.
ALTER TABLE beers ADD COLUMN attempt_key TEXT;
ALTER TABLE beers ADD COLUMN waiting TEXT;
ALTER TABLE beers ADD COLUMN waits INTEGER NOT NULL DEFAULT 0;
-- enrichment_breaker.reopens: consecutive failed probes since it last
-- closed; each re-open lasts longer (min(cap, cooldown·2^reopens), jittered).
ALTER TABLE enrichment_breaker ADD COLUMN reopens INTEGER NOT NULL DEFAULT 0;
