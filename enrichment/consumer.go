// Package enrichment is the main-queue work: beers as the source of truth,
// the provider client, the classification of its answers, the retry policy
// (backoff, Retry-After), the circuit breaker and the daily quota.
package enrichment

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"time"
	"unicode/utf8"

	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/metrics"
	"github.com/redrive/redrive/queue"
)

// Counter names (metrics.Counters), added once per batch.
const (
	CounterEnriched       = "enrichment_enriched_total"
	CounterNotFound       = "enrichment_not_found_total"
	CounterRetried        = "enrichment_retried_total"
	CounterPermanent      = "enrichment_permanent_total"
	CounterProviderCalls  = "enrichment_provider_calls_total"
	CounterStale          = "enrichment_stale_total"
	CounterPoison         = "enrichment_poison_total"
	CounterQuotaRefused   = "enrichment_quota_refused_total"
	CounterConfigErrors   = "enrichment_config_errors_total"
	CounterBreakerOpened  = "enrichment_breaker_opened_total"
	CounterBreakerProbes  = "enrichment_breaker_half_opened_total"
	CounterBreakerClosed  = "enrichment_breaker_closed_total"
	CounterBreakerBlocked = "enrichment_breaker_rejected_total"
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
}

// Consumer processes batches of the enrichment queue. For each message:
// malformed → DLQ row (poison) and ack; beer already enriched or not_found →
// ack without a call; no API key → retried (config error); breaker open →
// retried after the cooldown; quota spent → retried after the UTC day resets;
// otherwise one provider call, classified by Classify: an answer is stored
// and acked, a 429 or transient failure is recorded and retried, a permanent
// failure is stored in the DLQ and acked.
type Consumer struct {
	DB       *sql.DB
	Log      *slog.Logger
	Provider ChatProvider
	Policy   Policy
	// Now is the clock; time.Now when nil.
	Now func() time.Time
	// Rand returns uniform values in [0, 1) for jitter; rand.Float64 when nil.
	Rand func() float64
}

func (c *Consumer) now() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}

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
}

// tally counts what a batch did, for one counters statement.
type tally map[string]int64

// ConsumeBatch processes every message and settles each one itself (ack or
// retry), then adds the batch's counters in one statement. It returns an
// error only when the beers of the batch cannot be read at all; the runtime
// then retries the messages it did not settle.
func (c *Consumer) ConsumeBatch(ctx context.Context, queueName string, msgs []queue.Message) error {
	t := tally{}
	defer c.addCounters(ctx, t)
	var ds []delivery
	for _, m := range msgs {
		body, ct := m.Body()
		b, problem := parseMessage(body, ct)
		if problem != "" {
			c.poison(ctx, queueName, m, body, ct, problem, t)
			continue
		}
		ds = append(ds, delivery{m: m, body: body, ct: ct, beer: b,
			log: c.Log.With("message_id", m.ID(), "beer_id", b.BeerID, "attempt", m.Attempts())})
	}
	beers := make([]Beer, len(ds))
	for i, d := range ds {
		beers[i] = d.beer
	}
	status, err := beerStore{c.DB}.track(ctx, beers, c.now())
	if err != nil {
		c.Log.ErrorContext(ctx, "enrichment: cannot read the batch's beers; retrying it", "queue", queueName, "messages", len(ds), "error", err.Error())
		return fmt.Errorf("enrichment batch: %w", err)
	}
	for _, d := range ds {
		c.process(ctx, queueName, d, status, t)
	}
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

// process runs the policy for one well-formed message.
func (c *Consumer) process(ctx context.Context, queueName string, d delivery, status map[string]string, t tally) {
	if st := status[d.beer.BeerID]; Done(st) {
		d.m.Ack()
		t[CounterStale]++
		d.log.InfoContext(ctx, "enrichment: beer already done; acked without a provider call", "status", st)
		return
	}
	now := c.now()
	if !c.Provider.Configured() {
		t[CounterConfigErrors]++
		d.log.ErrorContext(ctx, "enrichment: ENRICHMENT_API_KEY is not set; message retried (set the secret with wrangler secret put)", "class", ClassConfig)
		c.retry(ctx, queueName, d, ClassConfig, "ENRICHMENT_API_KEY is not set", c.backoff(d.m.Attempts()), now, t)
		return
	}
	breaker := c.Breaker()
	adm, err := breaker.Admit(ctx, now)
	if err != nil {
		c.internal(ctx, queueName, d, err, now, t)
		return
	}
	if !adm.Allowed {
		t[CounterBreakerBlocked]++
		c.retry(ctx, queueName, d, ClassBreakerOpen,
			"circuit breaker open; provider not called until "+adm.RetryAt.UTC().Format(time.RFC3339), adm.RetryAt.Sub(now), now, t)
		return
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
		c.internal(ctx, queueName, d, err, now, t)
		return
	}
	if !ok {
		reset := ResetAt(now)
		t[CounterQuotaRefused]++
		c.retry(ctx, queueName, d, ClassQuota,
			fmt.Sprintf("daily limit of %d provider calls reached; resets at %s", c.Policy.DailyLimit, reset.Format(time.RFC3339)),
			reset.Sub(now), now, t)
		return
	}

	t[CounterProviderCalls]++
	resp, callErr := c.Provider.Ask(ctx, d.beer)
	after := c.now()
	v := Classify(resp, callErr, after)
	v.Reason = c.Provider.redact(v.Reason)
	d.log.InfoContext(ctx, "enrichment: provider answered", "outcome", string(v.Outcome), "status", resp.Status,
		"duration_ms", after.Sub(now).Milliseconds(), "quota_used", used, "reason", v.Reason)
	c.recordBreaker(ctx, breaker, adm, v, after, d, t)

	switch v.Outcome {
	case Enriched, NotFound:
		if err := (beerStore{c.DB}).answered(ctx, d.beer.BeerID, v, c.Provider.Source(), after); err != nil {
			c.internal(ctx, queueName, d, err, after, t)
			return
		}
		d.m.Ack()
		if v.Outcome == Enriched {
			t[CounterEnriched]++
			status[d.beer.BeerID] = StatusEnriched
		} else {
			t[CounterNotFound]++
			status[d.beer.BeerID] = StatusNotFound
		}
	case RateLimited:
		delay := v.RetryAfter
		if delay == 0 {
			delay = c.backoff(d.m.Attempts())
		}
		c.retry(ctx, queueName, d, ClassRateLimited, v.Reason, delay, after, t)
	case Transient:
		c.retry(ctx, queueName, d, ClassTransient, v.Reason, c.backoff(d.m.Attempts()), after, t)
	default:
		c.permanent(ctx, queueName, d, v.Reason, after, t)
	}
}

// recordBreaker feeds the call's outcome to the breaker: a transient failure
// counts towards opening it; any answer resets the count and closes it.
func (c *Consumer) recordBreaker(ctx context.Context, b Breaker, adm Admission, v Verdict, now time.Time, d delivery, t tally) {
	if v.Outcome == Transient {
		opened, until, err := b.Failed(ctx, now)
		if err != nil {
			d.log.ErrorContext(ctx, "enrichment: could not record the failure in the breaker", "error", err.Error())
			return
		}
		if opened {
			t[CounterBreakerOpened]++
			d.log.WarnContext(ctx, "enrichment: circuit breaker opened", "open_until", until.UTC().Format(time.RFC3339),
				"after_probe", adm.Probe, "threshold", b.Threshold)
		}
		return
	}
	if adm.Clean && !adm.Probe {
		return // closed with nothing counted: nothing to reset
	}
	closed, err := b.Succeeded(ctx, now)
	if err != nil {
		d.log.ErrorContext(ctx, "enrichment: could not record the success in the breaker", "error", err.Error())
		return
	}
	if closed {
		t[CounterBreakerClosed]++
		d.log.InfoContext(ctx, "enrichment: circuit breaker closed", "after_probe", adm.Probe)
	}
}

// retry records the failed attempt (message_attempts, then the beer), then
// asks the queue to redeliver after delay. The record comes first so that a
// message that moves to the DLQ after its last attempt carries the reason.
func (c *Consumer) retry(ctx context.Context, queueName string, d delivery, class, reason string, delay time.Duration, now time.Time, t tally) {
	delay = queueDelay(delay)
	attempt := d.m.Attempts()
	last := attempt >= c.Policy.MaxAttempts
	rec := dlq.Attempt{MessageID: d.m.ID(), Queue: queueName, Attempt: attempt, Class: class, Error: reason, At: now}
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

// internal handles a D1 failure in the middle of a message: retried with backoff.
func (c *Consumer) internal(ctx context.Context, queueName string, d delivery, err error, now time.Time, t tally) {
	d.log.ErrorContext(ctx, "enrichment: internal error; retrying", "error", err.Error())
	c.retry(ctx, queueName, d, ClassTransient, "internal: "+shorten(err.Error()), c.backoff(d.m.Attempts()), now, t)
}

// permanent stores the message in dlq_messages at once and acks it: retrying
// cannot help. When the store fails the message is retried instead (never lost).
func (c *Consumer) permanent(ctx context.Context, queueName string, d delivery, reason string, now time.Time, t tally) {
	f := dlq.Failure{MessageID: d.m.ID(), SourceQueue: queueName, Body: d.body, ContentType: d.ct, Attempts: d.m.Attempts(),
		Class: ClassPermanent, Reason: ClassPermanent + ": " + reason, FailedAt: now}
	if err := (dlq.Store{DB: c.DB}).Put(ctx, []dlq.Failure{f}); err != nil {
		d.log.ErrorContext(ctx, "enrichment: could not store the permanent failure; retrying instead", "error", err.Error())
		c.retry(ctx, queueName, d, ClassPermanent, reason, c.backoff(d.m.Attempts()), now, t)
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
		Class: "poison", Reason: "poison: " + problem, FailedAt: c.now()}
	if err := (dlq.Store{DB: c.DB}).Put(ctx, []dlq.Failure{f}); err != nil {
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
