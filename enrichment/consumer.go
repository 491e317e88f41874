// Package enrichment is the main-queue work: beers as the source of truth,
// the provider client, the classification of its answers, the retry policy
// (backoff, Retry-After), the circuit breaker and the daily quota.
package enrichment

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"time"
	"unicode/utf8"

	"github.com/redrive/redrive/clock"
	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/metrics"
	"github.com/redrive/redrive/queue"
	"github.com/redrive/redrive/sqlbatch"
)

// Counters of the consumer, added once per batch.
var (
	CounterEnriched       = metrics.Declare("enrichment_enriched_total", "Beers enriched with an ABV from the provider.")
	CounterNotFound       = metrics.Declare("enrichment_not_found_total", "Beers the provider did not know (status not_found).")
	CounterRetried        = metrics.Declare("enrichment_retried_total", "Messages handed back to the queue for another attempt (transient or rate-limited failures).")
	CounterPermanent      = metrics.Declare("enrichment_permanent_total", "Messages that failed permanently and went to the DLQ without further attempts.")
	CounterProviderCalls  = metrics.Declare("enrichment_provider_calls_total", "Calls made to the enrichment provider.")
	CounterStale          = metrics.Declare("enrichment_stale_total", "Messages acknowledged without a call because their beer was already enriched or newer.")
	CounterPoison         = metrics.Declare("enrichment_poison_total", "Messages on the main queue whose body was not a usable beer (sent to the DLQ as poison).")
	CounterQuotaRefused   = metrics.Declare("enrichment_quota_refused_total", "Provider calls not made because ENRICHMENT_DAILY_CALL_QUOTA was used up.")
	CounterConfigErrors   = metrics.Declare("enrichment_config_errors_total", "Messages deferred because the enrichment configuration is invalid.")
	CounterBreakerOpened  = metrics.Declare("enrichment_breaker_opened_total", "Times the provider's circuit breaker opened.")
	CounterBreakerProbes  = metrics.Declare("enrichment_breaker_half_opened_total", "Probe calls let through by the half-open breaker.")
	CounterBreakerClosed  = metrics.Declare("enrichment_breaker_closed_total", "Times the provider's circuit breaker closed again after a successful probe.")
	CounterBreakerBlocked = metrics.Declare("enrichment_breaker_rejected_total", "Messages not sent to the provider because the breaker was open.")
	// CounterDeferred counts messages deferred without spending an attempt:
	// parked in D1 (auth, config, quota, breaker open, batch out of time) or
	// sent again as a fresh copy (D1 unavailable).
	CounterDeferred      = metrics.Declare("enrichment_deferred_total", "Messages deferred without spending an attempt: the beer parked in D1 (auth, config, quota, breaker open, batch out of time) or a fresh copy sent (D1 unavailable).")
	CounterAuthFailures  = metrics.Declare("enrichment_auth_failures_total", "Provider calls refused with 401 or 403 (the key is wrong or revoked).")
	CounterD1Unavailable = metrics.Declare("enrichment_d1_unavailable_total", "Messages deferred because D1 could not be used.")
)

// Policy is the consumer's reliability policy (see config.Config for the vars).
type Policy struct {
	// Backoff spaces retries after transient failures (and 429s without Retry-After).
	Backoff Backoff
	// MaxAttempts is the main consumer's max_retries + 1: a failure on this
	// attempt is the last one (the queue moves the message to the DLQ) and
	// marks the beer failed.
	MaxAttempts int
	// BreakerThreshold consecutive transient failures open the breaker ...
	BreakerThreshold int
	// ... for BreakerCooldown.
	BreakerCooldown time.Duration
	// DailyLimit is the number of provider calls per UTC day.
	DailyLimit int64
	// BreakerMaxCooldown (ENRICHMENT_BREAKER_MAX_COOLDOWN_SECONDS) caps the
	// breaker's re-open period while probes keep failing (Breaker.MaxCooldown).
	BreakerMaxCooldown time.Duration
	// D1RetryBase (D1_RETRY_BASE_SECONDS) spaces the deferrals of a message
	// that failed because D1 is unavailable: its fresh copy waits about twice
	// as long as the message had (its age), at least the base, at most 12 h
	// (dlq.DefaultRetryBase when 0).
	D1RetryBase time.Duration
}

// BatchWallLimit is the queue consumer's wall-time limit: decisions of a
// batch still running after it are never applied.
const BatchWallLimit = 15 * time.Minute

// batchCallWindow is how long after a batch starts a provider call may
// still be started: no later than batchCallWindow minus the provider
// timeout, so the last call ends by batchCallWindow (12 min) whatever
// ENRICHMENT_TIMEOUT_MS is (at most MaxProviderTimeout), leaving 3 minutes
// for the batch's bookkeeping before BatchWallLimit. A message whose call
// could not start in time is parked (pending, due now) for the catch-up.
const batchCallWindow = 12 * time.Minute

// MaxProviderTimeout is the largest ENRICHMENT_TIMEOUT_MS allowed (config).
const MaxProviderTimeout = 120 * time.Second

// Consumer processes batches of the enrichment queue. For each message:
// malformed → DLQ row (poison) and ack; beer already enriched or not_found →
// ack without a call; no API key → deferred (config error); breaker open →
// deferred until it closes; quota spent → deferred until the UTC day
// resets; otherwise one provider call, classified by Classify: an answer is
// stored and acked, a 429 or transient failure is recorded and retried (an
// attempt spent), a 401/403 opens the breaker and defers the message (auth),
// a permanent failure is stored in the DLQ and acked. D1 unavailable →
// deferred. Messages of one batch for the same beer are settled by the
// first one's outcome (one call at most per beer and batch).
//
// Attempts are the beer's: beers.attempts counts the real attempts of its
// current message (its episode) across every deferral and copy, and the
// attempt that spends the last of MaxAttempts stores the message in the
// DLQ itself (with the episode's whole history, recorded under the
// beer's attempt_key) and acks it.
//
// Deferring is for failures that are not the message's fault, and spends
// no attempt. The work is parked in D1 and the message acked: the beer
// becomes `waiting` (breaker open, key refused or missing) until the
// catch-up sends it back once the breaker is closed (or picks it as the
// breaker's probe), or `pending` due at the quota's reset (or at once when
// the batch ran out of time). A waiting message so costs one beer update
// however long the outage lasts. When D1 itself is unavailable nothing can
// be parked: a fresh copy of the message (same body and content type) is
// sent to the same queue with a delay about twice the message's age, and
// the original is acked only once that send succeeded; if the send fails
// the message is retried instead: never lost.
type Consumer struct {
	DB *sql.DB
	// Pipelines are the configured pipelines: a failure stored here is
	// read through its queue's (nil: the beer pipeline alone).
	Pipelines dlq.Pipelines
	Log       *slog.Logger
	Provider  ChatProvider
	Policy    Policy
	// Sender sends the fresh copies of deferred messages (to the queue they
	// came from: the ENRICHMENT_QUEUE binding). Nil: they are retried instead.
	Sender queue.Sender
	// Now is the clock; time.Now when nil.
	Clock clock.Clock
	// Rand returns uniform values in [0, 1) for jitter; rand.Float64 when nil.
	Rand func() float64
	// Version is the worker version stamped on each failed attempt and on
	// the DLQ rows this consumer stores (version.Info.Stamp).
	Version string
	// Batch runs a DLQ store's statements in one round trip (D1's batch()
	// in the worker); nil: a transaction on DB (native tests).
	Batch sqlbatch.Runner
}

// store is the DLQ store of permanent and poison failures.
func (c *Consumer) store() dlq.Store {
	return dlq.Store{DB: c.DB, Batch: c.Batch, Pipelines: c.Pipelines}
}

func (c *Consumer) rnd() float64 {
	if c.Rand != nil {
		return c.Rand()
	}
	return rand.Float64()
}

func (c *Consumer) backoff(attempt int) time.Duration {
	return c.Policy.Backoff.Delay(attempt, c.rnd())
}

// Breaker is the consumer's circuit breaker. A probe's lease outlasts the
// provider timeout, so a probe still waiting for its answer is not doubled.
func (c *Consumer) Breaker() Breaker {
	return Breaker{DB: c.DB, Threshold: c.Policy.BreakerThreshold, Cooldown: c.Policy.BreakerCooldown,
		ProbeLease: c.Provider.Timeout + 10*time.Second, MaxCooldown: c.Policy.BreakerMaxCooldown, Jitter: c.rnd()}
}

// Quota is the consumer's daily quota.
func (c *Consumer) Quota() Quota { return Quota{DB: c.DB, Limit: c.Policy.DailyLimit} }

// delivery is one parsed message.
type delivery struct {
	m    queue.Message
	body string
	ct   queue.ContentType // how body was sent; stored with a DLQ row for replay
	beer Beer
	log  *slog.Logger
	// status and took describe the provider call of this delivery, for its
	// history entry (0: no response, no call).
	status int
	took   time.Duration
	// tb is the beer as track found it (nil when D1 was unavailable).
	tb *tracked
}

// key is the message id the beer's episode records its attempts under.
func (d delivery) key() string {
	if d.tb != nil && d.tb.key != "" {
		return d.tb.key
	}
	return d.m.ID()
}

// tally counts what a batch did, for one counters statement.
type tally map[string]int64

// batchRun is one batch in progress.
type batchRun struct {
	queue string
	// start is when the batch began (its call window counts from it).
	start time.Time
	beers map[string]*tracked // beer_id -> state
	t     tally
	// deferred are the messages to hand back to the queue as fresh copies,
	// sent together (one SendBatch per 100) when the batch ends.
	deferred []deferral
}

// deferral is one message waiting for its fresh copy to be sent.
type deferral struct {
	d      delivery
	class  string
	reason string
	delay  time.Duration
	now    time.Time
}

// ConsumeBatch processes every message and settles each one itself (ack,
// retry, or ack after its deferred copy was sent), then adds the batch's
// counters in one statement. When the batch's beers cannot be read because
// D1 is unavailable, every message is deferred (no attempt spent); when D1
// answers but the statement failed, the error is returned and the runtime
// retries the messages not settled.
func (c *Consumer) ConsumeBatch(ctx context.Context, queueName string, msgs []queue.Message) error {
	b := &batchRun{queue: queueName, t: tally{}, start: c.Clock.Now()}
	defer c.addCounters(ctx, b.t)
	var ds, dups []delivery
	seen := map[string]bool{}
	for _, m := range msgs {
		body, ct := m.Body()
		beer, problem := parseMessage(body, ct)
		if problem != "" {
			c.poison(ctx, queueName, m, body, ct, problem, b.t)
			continue
		}
		d := delivery{m: m, body: body, ct: ct, beer: beer,
			log: c.Log.With("message_id", m.ID(), "beer_id", beer.BeerID, "attempt", m.Attempts())}
		// Later messages for the same beer are settled by the first one's
		// outcome (a catch-up re-send beside a late message, a replay
		// beside the original): one call, one quota unit, one breaker
		// verdict per beer and batch.
		if seen[beer.BeerID] {
			dups = append(dups, d)
			continue
		}
		seen[beer.BeerID] = true
		ds = append(ds, d)
	}
	in := make([]trackIn, len(ds))
	for i, d := range ds {
		in[i] = trackIn{Beer: d.beer, MessageID: d.m.ID()}
	}
	beers, err := beerStore{c.DB}.track(ctx, in, c.Clock.Now())
	if err != nil {
		if perr := c.probe(ctx); perr == nil {
			c.Log.ErrorContext(ctx, "enrichment: cannot read the batch's beers; retrying it", "queue", queueName, "messages", len(ds), "error", err.Error())
			return fmt.Errorf("enrichment batch: %w", err)
		}
		c.Log.ErrorContext(ctx, "enrichment: D1 unavailable; deferring the batch (no attempt spent)", "queue", queueName,
			"messages", len(ds), "error", err.Error())
		now := c.Clock.Now()
		for _, d := range ds {
			c.deferD1(ctx, b, d, err, now)
		}
		c.sendDeferred(ctx, b)
		c.settleDuplicates(ctx, b, dups)
		return nil
	}
	b.beers = beers
	for _, d := range ds {
		if d.tb = beers[d.beer.BeerID]; d.tb == nil {
			d.tb = &tracked{status: StatusQueued}
		}
		c.process(ctx, b, d)
	}
	c.sendDeferred(ctx, b)
	c.settleDuplicates(ctx, b, dups)
	return nil
}

// settleDuplicates acks the later messages of a batch for a beer whose
// first message was settled: that one's outcome (an answer stored, a retry
// on the queue, a parked beer, a copy sent, a DLQ row) carries the beer's
// work, so a duplicate adds nothing but a second call.
func (c *Consumer) settleDuplicates(ctx context.Context, b *batchRun, dups []delivery) {
	for _, d := range dups {
		d.m.Ack()
		b.t[CounterStale]++
		d.log.InfoContext(ctx, "enrichment: another message of the batch for the same beer settled it; acked without a provider call")
	}
}

// parseMessage reads a message body; problem is non-empty for poison.
func parseMessage(body string, ct queue.ContentType) (Beer, string) {
	switch ct {
	case queue.Bytes:
		return Beer{}, "binary body; expected JSON {beer_id, beer_name, brewer}"
	case queue.V8:
		return Beer{}, "body is a value JSON cannot represent; expected JSON {beer_id, beer_name, brewer}"
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal([]byte(body), &raw); err != nil || raw == nil {
		return Beer{}, "body is not a JSON object"
	}
	var b Beer
	if err := json.Unmarshal([]byte(body), &b); err != nil {
		return Beer{}, "body has fields of the wrong type: " + shorten(err.Error(), "")
	}
	if b.BeerID == "" {
		return Beer{}, "body has no beer_id"
	}
	if utf8.RuneCountInString(b.BeerID) > MaxBeerIDLen {
		return Beer{}, "beer_id is too long"
	}
	return b, ""
}

// process runs the policy for one well-formed message in three steps:
// admit (is a call due and allowed?), call (one provider call, classified),
// settle (ack, retry, defer or store, as the answer says).
func (c *Consumer) process(ctx context.Context, b *batchRun, d delivery) {
	adm, ok := c.admit(ctx, b, d)
	if !ok {
		return
	}
	d.log = adm.log // with the quota the call takes
	v, after := c.call(ctx, b, d, adm)
	c.settle(ctx, b, d, adm, v, after)
}

// admission is what admit decided for a message that may call the provider.
type admission struct {
	Admission
	breaker Breaker
	now     time.Time
	// log is the message's logger with quota_used (the day's calls,
	// this one included).
	log *slog.Logger
}

// admit settles the message itself (false) when no call is due or allowed:
// the beer is already done (ack), or there is no API key, the breaker is
// open or the day's quota is spent (deferred), or D1 failed. Otherwise the
// breaker admitted the call and a quota unit is reserved for it.
func (c *Consumer) admit(ctx context.Context, b *batchRun, d delivery) (admission, bool) {
	t := b.t
	now, ok := c.callDue(ctx, b, d)
	if !ok {
		return admission{}, false
	}
	breaker := c.Breaker()
	adm, err := breaker.Admit(ctx, now)
	if err != nil {
		c.internal(ctx, b, d, err, now)
		return admission{}, false
	}
	if !adm.Allowed {
		c.deferForBreaker(ctx, b, d, adm, now)
		return admission{}, false
	}
	if adm.Probe {
		t[CounterBreakerProbes]++
		d.log.WarnContext(ctx, "enrichment: circuit breaker half-open; this call probes the provider")
	}
	// The quota is reserved after the breaker admits, so a call the breaker
	// refuses spends nothing. (A probe refused here keeps its lease until it
	// expires: with the day's budget spent, nothing could call anyway.)
	ok, used, err := c.Quota().Reserve(ctx, now)
	if err != nil {
		c.internal(ctx, b, d, err, now)
		return admission{}, false
	}
	if !ok {
		c.deferForQuota(ctx, b, d, now)
		return admission{}, false
	}
	return admission{Admission: adm, breaker: breaker, now: now, log: d.log.With("quota_used", used)}, true
}

// callDue runs the checks that come before the breaker and returns the
// time the message is handled at, or settles the message itself (false):
// the beer is already done (ack), its attempts are spent (stored or
// retried), there is no API key, or the batch's call window has no room
// for the call (deferred).
func (c *Consumer) callDue(ctx context.Context, b *batchRun, d delivery) (time.Time, bool) {
	t := b.t
	if st := d.tb.status; Done(st) {
		d.m.Ack()
		t[CounterStale]++
		d.log.InfoContext(ctx, "enrichment: beer already done; acked without a provider call", "status", st)
		return time.Time{}, false
	}
	now := c.Clock.Now()
	if d.tb.attempts >= c.Policy.MaxAttempts {
		// Its attempts are spent (the store of its last one failed and the
		// message was retried): store it now, without another call.
		if !c.deadLetter(ctx, b, d, ClassTransient, "attempts exhausted", d.tb.attempts, false, now) {
			d.m.Retry(queueDelay(c.backoff(d.tb.attempts)))
			t[CounterRetried]++
		}
		return time.Time{}, false
	}
	if !c.Provider.Configured() {
		t[CounterConfigErrors]++
		d.log.ErrorContext(ctx, "enrichment: ENRICHMENT_API_KEY is not set; message deferred (set the secret with wrangler secret put)", "class", ClassConfig)
		// Nothing changes until an operator sets the secret: the beer
		// waits, and the catch-up sends it once the key is set.
		c.deferMessage(ctx, b, d, ClassConfig, "ENRICHMENT_API_KEY is not set", StatusWaiting, now, now)
		return time.Time{}, false
	}
	if now.Add(c.Provider.Timeout).After(b.start.Add(batchCallWindow)) {
		// The call could end past the batch's call window: park it for the
		// catch-up (due at once) so the batch settles in time.
		c.deferMessage(ctx, b, d, ClassDeadline, "the batch ran out of time before this call", StatusPending, now, now)
		return time.Time{}, false
	}
	return now, true
}

// deferForBreaker counts a call the breaker refused and parks the
// message's work: the beer waits, and the reason names the breaker's cause
// and the time before which the provider is not called.
func (c *Consumer) deferForBreaker(ctx context.Context, b *batchRun, d delivery, adm Admission, now time.Time) {
	b.t[CounterBreakerBlocked]++
	cause := ""
	if adm.Cause != "" {
		cause = " (" + adm.Cause + ")"
	}
	c.deferMessage(ctx, b, d, ClassBreakerOpen,
		"circuit breaker open"+cause+"; provider not called before "+adm.RetryAt.UTC().Format(time.RFC3339), StatusWaiting, now, now)
}

// deferForQuota counts a call the day's spent quota refused and parks the
// message's work: the beer is pending, due after the quota's reset.
func (c *Consumer) deferForQuota(ctx context.Context, b *batchRun, d delivery, now time.Time) {
	reset := ResetAt(now)
	b.t[CounterQuotaRefused]++
	// Due after the reset, spread over its first QuotaSpread so the
	// waiting beers do not all come back at midnight together.
	due := reset.Add(time.Duration(c.rnd() * float64(QuotaSpread)))
	c.deferMessage(ctx, b, d, ClassQuota,
		fmt.Sprintf("daily limit of %d provider calls reached; resets at %s", c.Policy.DailyLimit, reset.Format(time.RFC3339)),
		StatusPending, due, now)
}

// call makes the one provider call and classifies its answer (secrets
// redacted); it returns the verdict and the time the answer came.
func (c *Consumer) call(ctx context.Context, b *batchRun, d delivery, adm admission) (Verdict, time.Time) {
	b.t[CounterProviderCalls]++
	resp, callErr := c.Provider.Ask(ctx, d.beer)
	after := c.Clock.Now()
	v := Classify(resp, callErr, after, c.Provider.APIKey)
	if callErr == nil {
		v.Status = resp.Status
	}
	v.Duration = after.Sub(adm.now)
	d.log.InfoContext(ctx, "enrichment: provider answered", "outcome", string(v.Outcome), "status", resp.Status,
		"duration_ms", after.Sub(adm.now).Milliseconds(), "reason", v.Reason)
	return v, after
}

// settle records the answer in the breaker and acts on it: an answer is
// stored and acked; 429 and transient failures retry (spending an
// attempt); auth failures defer; anything else is a permanent DLQ row.
func (c *Consumer) settle(ctx context.Context, b *batchRun, d delivery, adm admission, v Verdict, after time.Time) {
	t := b.t
	d.status, d.took = v.Status, v.Duration
	openUntil := c.recordBreaker(ctx, adm.breaker, adm.Admission, v, after, d, t)
	switch v.Outcome {
	case Enriched, NotFound:
		if err := (beerStore{c.DB}).answered(ctx, d.beer.BeerID, v, c.Provider.Source(), after); err != nil {
			c.internal(ctx, b, d, err, after)
			return
		}
		d.m.Ack()
		if v.Outcome == Enriched {
			t[CounterEnriched]++
		} else {
			t[CounterNotFound]++
		}
	case RateLimited:
		c.retry(ctx, b, d, ClassRateLimited, v.Reason, v.RetryAfter, after)
	case Transient:
		c.retry(ctx, b, d, ClassTransient, v.Reason, 0, after)
	case Auth:
		c.authFailed(ctx, b, d, v.Reason, adm.now, after, openUntil)
	default:
		c.permanent(ctx, b, d, v.Reason, after)
	}
}

// authFailed handles a 401/403: the provider refuses the API key, which is
// no fault of the message. The call's quota is given back (it did no work),
// the breaker is already open (recordBreaker tripped it, cause auth: the
// other messages wait without calling), and the message is deferred until
// the breaker's probe. No DLQ row; the enrichment_auth_failing alert fires.
func (c *Consumer) authFailed(ctx context.Context, b *batchRun, d delivery, reason string, reservedAt, now, openUntil time.Time) {
	b.t[CounterAuthFailures]++
	if err := c.Quota().Release(ctx, reservedAt); err != nil {
		d.log.ErrorContext(ctx, "enrichment: could not give back the quota of a refused call", "error", err.Error())
	}
	d.log.ErrorContext(ctx, "enrichment: the provider refused the API key; breaker open, quota given back, message deferred (check ENRICHMENT_API_KEY)",
		"class", ClassAuth, "reason", reason, "open_until", openUntil.UTC().Format(time.RFC3339))
	c.deferMessage(ctx, b, d, ClassAuth, reason, StatusWaiting, now, now)
}

// recordBreaker feeds the call's outcome to the breaker: a transient failure
// counts towards opening it; an auth failure opens it at once (and the end
// of its cooldown is returned); any other answer resets the count and closes it.
func (c *Consumer) recordBreaker(ctx context.Context, b Breaker, adm Admission, v Verdict, now time.Time, d delivery, t tally) (openUntil time.Time) {
	if v.Outcome == Auth {
		opened, until, err := b.Trip(ctx, now, CauseAuth)
		if err != nil {
			d.log.ErrorContext(ctx, "enrichment: could not open the breaker after an auth failure", "error", err.Error())
			return time.Time{}
		}
		if opened {
			t[CounterBreakerOpened]++
			d.log.WarnContext(ctx, "enrichment: circuit breaker opened", "open_until", until.UTC().Format(time.RFC3339),
				"after_probe", adm.Probe, "cause", CauseAuth)
		}
		return until
	}
	if v.Outcome == Transient {
		opened, until, err := b.Failed(ctx, now)
		if err != nil {
			d.log.ErrorContext(ctx, "enrichment: could not record the failure in the breaker", "error", err.Error())
			return
		}
		if opened {
			t[CounterBreakerOpened]++
			d.log.WarnContext(ctx, "enrichment: circuit breaker opened", "open_until", until.UTC().Format(time.RFC3339),
				"after_probe", adm.Probe, "threshold", b.Threshold, "cause", CauseTransient)
		}
		return time.Time{}
	}
	if adm.Clean && !adm.Probe {
		return time.Time{} // closed with nothing counted: nothing to reset
	}
	closed, err := b.Succeeded(ctx, now)
	if err != nil {
		d.log.ErrorContext(ctx, "enrichment: could not record the success in the breaker", "error", err.Error())
		return time.Time{}
	}
	if closed {
		t[CounterBreakerClosed]++
		d.log.InfoContext(ctx, "enrichment: circuit breaker closed", "after_probe", adm.Probe)
	}
	return time.Time{}
}

// retry records a failed attempt (the beer's count, then message_attempts
// under the episode's key) and asks the queue to redeliver after delay (0:
// the backoff of the episode's attempt number). The record comes first so
// that a message the queue moves to the DLQ carries the reason. The attempt
// that spends the episode's last one (MaxAttempts, counted across every
// deferral and copy, or the queue's own last attempt) is stored in the DLQ
// here and acked instead (deadLetter).
func (c *Consumer) retry(ctx context.Context, b *batchRun, d delivery, class, reason string, delay time.Duration, now time.Time) {
	t := b.t
	lastByQueue := d.m.Attempts() >= c.Policy.MaxAttempts
	n := d.m.Attempts()
	if d.tb != nil {
		n = d.tb.attempts + 1
	}
	if delay <= 0 {
		delay = c.backoff(n)
	}
	delay = queueDelay(delay)
	sp, err := (beerStore{c.DB}).attempted(ctx, d.beer.BeerID, d.key(), class+": "+reason, now.Add(delay), c.Policy.MaxAttempts, lastByQueue, now)
	if err != nil {
		d.log.ErrorContext(ctx, "enrichment: could not record the failure on the beer", "error", err.Error())
	}
	if !sp.found {
		sp = spent{n: n, key: d.key(), last: lastByQueue || n >= c.Policy.MaxAttempts}
	}
	if sp.last && c.deadLetter(ctx, b, d, class, reason, sp.n, true, now) {
		return
	}
	rec := dlq.Attempt{MessageID: sp.key, Queue: b.queue, Attempt: sp.n, Class: class, Error: reason, At: now,
		Status: d.status, Duration: d.took, Version: c.Version}
	if err := (dlq.Attempts{DB: c.DB}).Record(ctx, rec); err != nil {
		d.log.ErrorContext(ctx, "enrichment: could not record the attempt", "error", err.Error())
	}
	d.m.Retry(delay)
	t[CounterRetried]++
	if sp.last {
		d.log.ErrorContext(ctx, "enrichment: last attempt failed and could not be stored; the queue moves the message to the DLQ",
			"class", class, "reason", reason)
		return
	}
	d.log.WarnContext(ctx, "enrichment: attempt failed; retrying", "class", class, "reason", reason, "attempt_n", sp.n, "delay_s", int64(delay/time.Second))
}

// deadLetter stores the message in the DLQ after the episode's last
// attempt (attempt n, which this delivery made and which failed with class
// and reason when attempted; else it only found the attempts spent) and
// acks it: the row
// is keyed by the episode's attempt key, so it carries the history of
// every earlier attempt, whichever copy of the message made them, and
// failure_count is n. It reports false, having done nothing else, when
// the store failed (the caller then retries the message).
func (c *Consumer) deadLetter(ctx context.Context, b *batchRun, d delivery, class, reason string, n int, attempted bool, now time.Time) bool {
	key := d.key()
	f := dlq.Failure{MessageID: key, SourceQueue: b.queue, Body: d.body, ContentType: d.ct, Attempts: n,
		Class: class, Reason: class + ": " + reason, FailedAt: now, Version: c.Version}
	if attempted {
		// This delivery's attempt, after the recorded ones.
		f.Attempt = &dlq.Attempt{MessageID: key, Queue: b.queue, Attempt: n, Class: class, Error: reason,
			At: now, Status: d.status, Duration: d.took, Version: c.Version}
	}
	if err := c.store().Put(ctx, []dlq.Failure{f}); err != nil {
		d.log.ErrorContext(ctx, "enrichment: could not store the message after its last attempt", "error", err.Error())
		return false
	}
	if _, err := c.DB.ExecContext(ctx, `UPDATE beers SET status = 'failed', next_attempt_at = NULL, waiting = NULL, updated_at = ?2
		WHERE beer_id = ?1 AND status NOT IN ('enriched', 'not_found', 'failed')`, d.beer.BeerID, now.UnixMilli()); err != nil {
		d.log.ErrorContext(ctx, "enrichment: could not mark the beer failed", "error", err.Error())
	}
	d.m.Ack()
	b.t[CounterRetried]++
	d.log.ErrorContext(ctx, "enrichment: last attempt failed; stored in the DLQ with its history and acked",
		"class", class, "reason", reason, "attempts", n, "dlq_message_id", key)
	return true
}

// internal handles a D1 failure in the middle of a message. When the probe
// finds D1 unavailable the message is deferred (no attempt spent);
// otherwise the statement failed for this message and it is retried with
// backoff like a transient failure.
func (c *Consumer) internal(ctx context.Context, b *batchRun, d delivery, err error, now time.Time) {
	if perr := c.probe(ctx); perr != nil {
		d.log.ErrorContext(ctx, "enrichment: D1 unavailable; deferring the message (no attempt spent)", "error", err.Error(), "probe_error", perr.Error())
		c.deferD1(ctx, b, d, err, now)
		return
	}
	d.log.ErrorContext(ctx, "enrichment: internal error; retrying", "error", err.Error())
	c.retry(ctx, b, d, ClassTransient, "internal: "+shorten(err.Error(), c.Provider.APIKey), 0, now)
}

// probe tells an unavailable D1 (down, refusing queries, a table missing or
// renamed) from a statement that failed for its content: one read that
// needs every table the consumer writes on a message's behalf.
func (c *Consumer) probe(ctx context.Context) error {
	var n int64
	return c.DB.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM beers) + EXISTS (SELECT 1 FROM enrichment_breaker)
		+ EXISTS (SELECT 1 FROM enrichment_quota) + EXISTS (SELECT 1 FROM message_attempts)`).Scan(&n)
}

// deferD1 defers a message because D1 is unavailable: nothing can be
// parked or counted, so a fresh copy goes back to the queue (sendDeferred),
// delayed by D1Delay of the message's age: consecutive copies wait about
// twice as long each time.
func (c *Consumer) deferD1(ctx context.Context, b *batchRun, d delivery, err error, now time.Time) {
	base := c.Policy.D1RetryBase
	if base <= 0 {
		base = dlq.DefaultRetryBase
	}
	b.t[CounterD1Unavailable]++
	delay := D1Delay(base, now.Sub(d.m.Timestamp()), c.rnd())
	b.deferred = append(b.deferred, deferral{d: d, class: ClassD1Unavailable, reason: "D1 unavailable: " + shorten(err.Error(), c.Provider.APIKey),
		delay: queueDelay(delay), now: now})
}

// D1Delay is the delay of the copy of a message deferred because D1 is
// unavailable, from the message's age (now minus the time it, or its
// latest copy, was sent: about the previous delay) and rnd uniform in
// [0, 1): c = min(12 h, max(base, 2·age)), delay uniform in [3c/4, c]. So
// each copy waits 1.5 to 2 times as long as the one before, from base up to
// Queues' 12 h limit.
func D1Delay(base, age time.Duration, rnd float64) time.Duration {
	c := min(MaxDelay, max(base, 2*max(age, 0)))
	return c - time.Duration(float64(c/4)*min(max(rnd, 0), 1))
}

// QuotaSpread is how long after the quota's reset the beers it made wait
// come back (each at a random time in it).
const QuotaSpread = 15 * time.Minute

// deferMessage defers a message that failed through no fault of its own
// (see Consumer), spending no attempt: the beer is parked in D1 (status
// StatusWaiting, for the catch-up to release; or StatusPending, due at
// due) with one more consecutive deferral, and the message is acked. A
// waiting beer's next_attempt_at orders the breaker's probes (WaitOrder:
// later each time it waits again, so the probe rotates). If D1 fails the
// message goes the way of any D1 failure (internal).
func (c *Consumer) deferMessage(ctx context.Context, b *batchRun, d delivery, class, reason, status string, due, now time.Time) {
	waits := 1
	if d.tb != nil {
		waits = d.tb.waits + 1
	}
	if status == StatusWaiting {
		due = now.Add(c.WaitOrder(waits))
	}
	if err := (beerStore{c.DB}).park(ctx, d.beer.BeerID, status, class, class+": "+reason, due, now); err != nil {
		c.internal(ctx, b, d, err, now)
		return
	}
	d.m.Ack()
	b.t[CounterDeferred]++
	d.log.WarnContext(ctx, "enrichment: deferred; the beer waits in D1 (no attempt spent)",
		"class", class, "reason", reason, "status", status, "waits", waits)
}

// WaitOrder is how far back a beer goes in the order of the breaker's
// probes after its n-th consecutive deferral: uniform in [c/2, c], c =
// min(max cooldown, cooldown·2^(n-1)) (Breaker.ReopenCap).
func (c *Consumer) WaitOrder(n int) time.Duration {
	cp := c.Breaker().ReopenCap(n - 1)
	return cp/2 + time.Duration(c.rnd()*float64(cp/2))
}

// sendDeferred sends the fresh copies of the batch's deferred messages to
// the queue they came from (same body and content type, delayed; one
// SendBatch per 100) and acks each original only after its copy was sent.
// When a send fails, its messages are retried instead (Retry with the same
// delay): never lost.
func (c *Consumer) sendDeferred(ctx context.Context, b *batchRun) {
	if len(b.deferred) == 0 {
		return
	}
	out := make([]queue.Outgoing, len(b.deferred))
	for i, df := range b.deferred {
		out[i] = queue.Outgoing{Body: df.d.body, ContentType: df.d.ct, Delay: df.delay}
	}
	start := 0
	for _, group := range queue.Batches(out) {
		dfs := b.deferred[start : start+len(group)]
		start += len(group)
		err := errors.New("no queue sender configured")
		if c.Sender != nil {
			err = c.Sender.SendBatch(ctx, b.queue, group)
		}
		for _, df := range dfs {
			if err != nil {
				df.d.log.ErrorContext(ctx, "enrichment: could not send the deferred copy; retrying the message instead",
					"class", df.class, "error", err.Error())
				df.d.m.Retry(df.delay)
				b.t[CounterRetried]++
				continue
			}
			df.d.m.Ack()
			b.t[CounterDeferred]++
			df.d.log.WarnContext(ctx, "enrichment: deferred; a fresh copy waits on the queue (no attempt spent)",
				"class", df.class, "reason", df.reason, "delay_s", int64(df.delay/time.Second))
		}
	}
}

// permanent stores the message in dlq_messages at once and acks it: retrying
// cannot help. When the store fails the message is retried instead (never lost).
func (c *Consumer) permanent(ctx context.Context, b *batchRun, d delivery, reason string, now time.Time) {
	t := b.t
	n, key := d.m.Attempts(), d.key()
	if d.tb != nil {
		n = d.tb.attempts + 1
	}
	f := dlq.Failure{MessageID: key, SourceQueue: b.queue, Body: d.body, ContentType: d.ct, Attempts: n,
		Class: ClassPermanent, Reason: ClassPermanent + ": " + reason, FailedAt: now, Version: c.Version,
		Attempt: &dlq.Attempt{MessageID: key, Queue: b.queue, Attempt: n, Class: ClassPermanent, Error: reason,
			At: now, Status: d.status, Duration: d.took, Version: c.Version}}
	if err := c.store().Put(ctx, []dlq.Failure{f}); err != nil {
		d.log.ErrorContext(ctx, "enrichment: could not store the permanent failure; retrying instead", "error", err.Error())
		c.retry(ctx, b, d, ClassPermanent, reason, 0, now)
		return
	}
	if err := (beerStore{c.DB}).failed(ctx, d.beer.BeerID, f.Reason, now); err != nil {
		d.log.ErrorContext(ctx, "enrichment: could not record the failure on the beer", "error", err.Error())
	}
	d.m.Ack()
	t[CounterPermanent]++
	d.log.ErrorContext(ctx, "enrichment: permanent failure stored in the DLQ; acked", "reason", reason)
}

// poison stores a malformed message in dlq_messages and acks it.
func (c *Consumer) poison(ctx context.Context, queueName string, m queue.Message, body string, ct queue.ContentType, problem string, t tally) {
	log := c.Log.With("message_id", m.ID(), "attempt", m.Attempts())
	f := dlq.Failure{MessageID: m.ID(), SourceQueue: queueName, Body: body, ContentType: ct, Attempts: m.Attempts(),
		Class: "poison", Reason: "poison: " + problem, FailedAt: c.Clock.Now(), Version: c.Version}
	if err := c.store().Put(ctx, []dlq.Failure{f}); err != nil {
		log.ErrorContext(ctx, "enrichment: could not store a poison message; retrying it", "error", err.Error())
		m.Retry(queueDelay(c.backoff(m.Attempts())))
		t[CounterRetried]++
		return
	}
	m.Ack()
	t[CounterPoison]++
	log.ErrorContext(ctx, "enrichment: malformed message stored in the DLQ; acked", "problem", problem)
}

func (c *Consumer) addCounters(ctx context.Context, t tally) {
	if err := (metrics.Counters{DB: c.DB}).Add(ctx, t); err != nil {
		c.Log.ErrorContext(ctx, "enrichment: could not add counters", "error", err.Error())
	}
}
