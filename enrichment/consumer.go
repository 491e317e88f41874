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
	"github.com/redrive/redrive/clock"
	"log/slog"
	"math/rand/v2"
	"time"
	"unicode/utf8"

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
	// CounterDeferred counts messages handed back to the queue as a fresh
	// copy (no attempt spent): auth, config, quota, breaker open, D1 unavailable.
	CounterDeferred      = metrics.Declare("enrichment_deferred_total", "Messages handed back as a fresh copy without spending an attempt (auth, config, quota, breaker open, D1 unavailable).")
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
	// D1RetryBase (D1_RETRY_BASE_SECONDS) spaces the deferrals of a message
	// that failed because D1 is unavailable: min(12 h, base·2^(n-1)) on its
	// n-th delivery (dlq.DefaultRetryBase when 0).
	D1RetryBase time.Duration
}

// Consumer processes batches of the enrichment queue. For each message:
// malformed → DLQ row (poison) and ack; beer already enriched or not_found →
// ack without a call; no API key → deferred (config error); breaker open →
// deferred until the cooldown ends; quota spent → deferred until the UTC day
// resets; otherwise one provider call, classified by Classify: an answer is
// stored and acked, a 429 or transient failure is recorded and retried (an
// attempt spent), a 401/403 opens the breaker and defers the message (auth),
// a permanent failure is stored in the DLQ and acked. D1 unavailable →
// deferred.
//
// Deferring is for failures that are not the message's fault: a fresh copy
// of the message (same body and content type) is sent to the same queue
// with the wait as its delay, and the original is acked only once that send
// succeeded. The copy starts again at attempt 1, so however long the
// provider, the key, the quota or D1 keep it waiting, it never reaches the
// DLQ for it. The beer stays `queued` with its retry due (next_attempt_at,
// as after a failed attempt) but no attempt counted, so the catch-up sees a
// message on its way and does not send another. If the send fails the
// message is retried instead (an attempt spent): never lost.
type Consumer struct {
	DB       *sql.DB
	Log      *slog.Logger
	Provider ChatProvider
	Policy   Policy
	// Sender sends the fresh copies of deferred messages (to the queue they
	// came from: the ENRICHMENT_QUEUE binding). Nil: they are retried instead.
	Sender queue.Sender
	// Now is the clock; time.Now when nil.
	Clock clock.Clock
	// Rand returns uniform values in [0, 1) for jitter; rand.Float64 when nil.
	Rand func() float64
	// Version is the worker version stamped on each failed attempt and on
	// the DLQ rows this consumer stores (dlq.Version.Stamp).
	Version string
	// Batch runs a DLQ store's statements in one round trip (D1's batch()
	// in the worker); nil: a transaction on DB (native tests).
	Batch sqlbatch.Runner
}

// store is the DLQ store of permanent and poison failures.
func (c *Consumer) store() dlq.Store { return dlq.Store{DB: c.DB, Batch: c.Batch} }

func (c *Consumer) backoff(attempt int) time.Duration {
	rnd := rand.Float64
	if c.Rand != nil {
		rnd = c.Rand
	}
	return c.Policy.Backoff.Delay(attempt, rnd())
}

// Breaker is the consumer's circuit breaker. A probe's lease outlasts the
// provider timeout, so a probe still waiting for its answer is not doubled.
func (c *Consumer) Breaker() Breaker {
	return Breaker{DB: c.DB, Threshold: c.Policy.BreakerThreshold, Cooldown: c.Policy.BreakerCooldown,
		ProbeLease: c.Provider.Timeout + 10*time.Second}
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
}

// tally counts what a batch did, for one counters statement.
type tally map[string]int64

// batchRun is one batch in progress.
type batchRun struct {
	queue  string
	status map[string]string // beer_id -> status
	t      tally
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
	b := &batchRun{queue: queueName, t: tally{}}
	defer c.addCounters(ctx, b.t)
	var ds []delivery
	for _, m := range msgs {
		body, ct := m.Body()
		beer, problem := parseMessage(body, ct)
		if problem != "" {
			c.poison(ctx, queueName, m, body, ct, problem, b.t)
			continue
		}
		ds = append(ds, delivery{m: m, body: body, ct: ct, beer: beer,
			log: c.Log.With("message_id", m.ID(), "beer_id", beer.BeerID, "attempt", m.Attempts())})
	}
	beers := make([]Beer, len(ds))
	for i, d := range ds {
		beers[i] = d.beer
	}
	status, err := beerStore{c.DB}.track(ctx, beers, c.Clock.Now())
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
		return nil
	}
	b.status = status
	for _, d := range ds {
		c.process(ctx, b, d)
	}
	c.sendDeferred(ctx, b)
	return nil
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
		return Beer{}, "body has fields of the wrong type: " + shorten(err.Error())
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
	v, after := c.call(ctx, b, d, adm)
	c.settle(ctx, b, d, adm, v, after)
}

// admission is what admit decided for a message that may call the provider.
type admission struct {
	Admission
	breaker Breaker
	now     time.Time
}

// admit settles the message itself (false) when no call is due or allowed:
// the beer is already done (ack), or there is no API key, the breaker is
// open or the day's quota is spent (deferred), or D1 failed. Otherwise the
// breaker admitted the call and a quota unit is reserved for it.
func (c *Consumer) admit(ctx context.Context, b *batchRun, d delivery) (admission, bool) {
	t := b.t
	if st := b.status[d.beer.BeerID]; Done(st) {
		d.m.Ack()
		t[CounterStale]++
		d.log.InfoContext(ctx, "enrichment: beer already done; acked without a provider call", "status", st)
		return admission{}, false
	}
	now := c.Clock.Now()
	if !c.Provider.Configured() {
		t[CounterConfigErrors]++
		d.log.ErrorContext(ctx, "enrichment: ENRICHMENT_API_KEY is not set; message deferred (set the secret with wrangler secret put)", "class", ClassConfig)
		// Nothing changes until an operator sets the secret: wait the
		// backoff's cap rather than cycling the message every few seconds.
		c.deferMessage(ctx, b, d, ClassConfig, "ENRICHMENT_API_KEY is not set", c.Policy.Backoff.Max, now, true)
		return admission{}, false
	}
	breaker := c.Breaker()
	adm, err := breaker.Admit(ctx, now)
	if err != nil {
		c.internal(ctx, b, d, err, now)
		return admission{}, false
	}
	if !adm.Allowed {
		t[CounterBreakerBlocked]++
		cause := ""
		if adm.Cause != "" {
			cause = " (" + adm.Cause + ")"
		}
		c.deferMessage(ctx, b, d, ClassBreakerOpen,
			"circuit breaker open"+cause+"; provider not called until "+adm.RetryAt.UTC().Format(time.RFC3339), adm.RetryAt.Sub(now), now, true)
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
		reset := ResetAt(now)
		t[CounterQuotaRefused]++
		c.deferMessage(ctx, b, d, ClassQuota,
			fmt.Sprintf("daily limit of %d provider calls reached; resets at %s", c.Policy.DailyLimit, reset.Format(time.RFC3339)),
			reset.Sub(now), now, true)
		return admission{}, false
	}
	d.log = d.log.With("quota_used", used)
	return admission{Admission: adm, breaker: breaker, now: now}, true
}

// call makes the one provider call and classifies its answer (secrets
// redacted); it returns the verdict and the time the answer came.
func (c *Consumer) call(ctx context.Context, b *batchRun, d delivery, adm admission) (Verdict, time.Time) {
	b.t[CounterProviderCalls]++
	resp, callErr := c.Provider.Ask(ctx, d.beer)
	after := c.Clock.Now()
	v := Classify(resp, callErr, after)
	v.Reason = c.Provider.redact(v.Reason)
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
			b.status[d.beer.BeerID] = StatusEnriched
		} else {
			t[CounterNotFound]++
			b.status[d.beer.BeerID] = StatusNotFound
		}
	case RateLimited:
		delay := v.RetryAfter
		if delay == 0 {
			delay = c.backoff(d.m.Attempts())
		}
		c.retry(ctx, b, d, ClassRateLimited, v.Reason, delay, after)
	case Transient:
		c.retry(ctx, b, d, ClassTransient, v.Reason, c.backoff(d.m.Attempts()), after)
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
	delay := c.Policy.BreakerCooldown
	if !openUntil.IsZero() {
		delay = openUntil.Sub(now)
	}
	d.log.ErrorContext(ctx, "enrichment: the provider refused the API key; breaker open, quota given back, message deferred (check ENRICHMENT_API_KEY)",
		"class", ClassAuth, "reason", reason)
	c.deferMessage(ctx, b, d, ClassAuth, reason, delay, now, true)
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

// retry records the failed attempt (message_attempts, then the beer), then
// asks the queue to redeliver after delay. The record comes first so that a
// message that moves to the DLQ after its last attempt carries the reason.
func (c *Consumer) retry(ctx context.Context, b *batchRun, d delivery, class, reason string, delay time.Duration, now time.Time) {
	t := b.t
	delay = queueDelay(delay)
	attempt := d.m.Attempts()
	last := attempt >= c.Policy.MaxAttempts
	rec := dlq.Attempt{MessageID: d.m.ID(), Queue: b.queue, Attempt: attempt, Class: class, Error: reason, At: now,
		Status: d.status, Duration: d.took, Version: c.Version}
	if err := (dlq.Attempts{DB: c.DB}).Record(ctx, rec); err != nil {
		d.log.ErrorContext(ctx, "enrichment: could not record the attempt", "error", err.Error())
	}
	next := now.Add(delay)
	if last {
		next = time.Time{}
	}
	if err := (beerStore{c.DB}).failed(ctx, d.beer.BeerID, class+": "+reason, next, now); err != nil {
		d.log.ErrorContext(ctx, "enrichment: could not record the failure on the beer", "error", err.Error())
	}
	d.m.Retry(delay)
	t[CounterRetried]++
	if last {
		d.log.ErrorContext(ctx, "enrichment: last attempt failed; the queue moves the message to the DLQ",
			"class", class, "reason", reason)
		return
	}
	d.log.WarnContext(ctx, "enrichment: attempt failed; retrying", "class", class, "reason", reason, "delay_s", int64(delay/time.Second))
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
	c.retry(ctx, b, d, ClassTransient, "internal: "+shorten(err.Error()), c.backoff(d.m.Attempts()), now)
}

// probe tells an unavailable D1 (down, refusing queries, a table missing or
// renamed) from a statement that failed for its content: one read that
// needs every table the consumer writes on a message's behalf.
func (c *Consumer) probe(ctx context.Context) error {
	var n int64
	return c.DB.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM beers) + EXISTS (SELECT 1 FROM enrichment_breaker)
		+ EXISTS (SELECT 1 FROM enrichment_quota) + EXISTS (SELECT 1 FROM message_attempts)`).Scan(&n)
}

// deferD1 defers a message because D1 is unavailable, for RetryDelay of its
// attempt (a fresh copy is at attempt 1: D1RetryBase). The beer's
// bookkeeping is skipped: it would fail too.
func (c *Consumer) deferD1(ctx context.Context, b *batchRun, d delivery, err error, now time.Time) {
	base := c.Policy.D1RetryBase
	if base <= 0 {
		base = dlq.DefaultRetryBase
	}
	b.t[CounterD1Unavailable]++
	c.deferMessage(ctx, b, d, ClassD1Unavailable, "D1 unavailable: "+shorten(err.Error()), dlq.RetryDelay(base, d.m.Attempts()), now, false)
}

// deferMessage defers a message that failed through no fault of its own
// (see Consumer): the beer is recorded as queued with its retry due at
// now+delay (when book), and the message joins the batch's deferrals, whose
// fresh copies sendDeferred sends before acking the originals.
func (c *Consumer) deferMessage(ctx context.Context, b *batchRun, d delivery, class, reason string, delay time.Duration, now time.Time, book bool) {
	delay = queueDelay(delay)
	if book {
		if err := (beerStore{c.DB}).deferred(ctx, d.beer.BeerID, class+": "+reason, now.Add(delay), now); err != nil {
			d.log.ErrorContext(ctx, "enrichment: could not record the deferral on the beer", "error", err.Error())
		}
	}
	b.deferred = append(b.deferred, deferral{d: d, class: class, reason: reason, delay: delay, now: now})
}

// sendDeferred sends the fresh copies of the batch's deferred messages to
// the queue they came from (same body and content type, delayed; one
// SendBatch per 100) and acks each original only after its copy was sent.
// When a send fails, its messages are retried instead (Retry with the same
// delay, spending an attempt): never lost.
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
				df.d.log.ErrorContext(ctx, "enrichment: could not send the deferred copy; retrying the message instead (an attempt spent)",
					"class", df.class, "error", err.Error())
				c.retry(ctx, b, df.d, df.class, df.reason, df.delay, df.now)
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
	f := dlq.Failure{MessageID: d.m.ID(), SourceQueue: b.queue, Body: d.body, ContentType: d.ct, Attempts: d.m.Attempts(),
		Class: ClassPermanent, Reason: ClassPermanent + ": " + reason, FailedAt: now, Version: c.Version,
		Attempt: &dlq.Attempt{MessageID: d.m.ID(), Queue: b.queue, Attempt: d.m.Attempts(), Class: ClassPermanent, Error: reason,
			At: now, Status: d.status, Duration: d.took, Version: c.Version}}
	if err := c.store().Put(ctx, []dlq.Failure{f}); err != nil {
		d.log.ErrorContext(ctx, "enrichment: could not store the permanent failure; retrying instead", "error", err.Error())
		c.retry(ctx, b, d, ClassPermanent, reason, c.backoff(d.m.Attempts()), now)
		return
	}
	if err := (beerStore{c.DB}).failed(ctx, d.beer.BeerID, f.Reason, time.Time{}, now); err != nil {
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
