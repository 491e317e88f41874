package dlq

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/redrive/redrive/clock"
	"github.com/redrive/redrive/internal/text"
	"github.com/redrive/redrive/metrics"
	"github.com/redrive/redrive/queue"
	"github.com/redrive/redrive/sqlbatch"
)

// Counters of the capture (metrics.Declare): CounterDuplicates is added once
// per batch, CounterPoison by dlq_messages' triggers (migrations/0012),
// CounterCaptured through dlq_activity's events (the store's batch, and the
// triggers for repeat failures).
var (
	// CounterCaptured counts messages written to dlq_messages: new rows and
	// repeat failures of replayed messages (lineage updates).
	CounterCaptured   = metrics.CapturedTotal
	CounterDuplicates = metrics.Declare("dlq_duplicates_total",
		"DLQ redeliveries absorbed without any change (the message was already stored).")
	CounterPoison = metrics.Declare("dlq_poison_total",
		"Captured DLQ messages whose body had no usable key (stored as poison), unstorable ones included.")
)

// maxBatchBytes bounds the JSON parameter of one store statement, under
// D1's 1 MB limit for a string value. A batch of ordinary messages is far
// below it (one statement); a batch of near-128 KB bodies is split.
const maxBatchBytes = 900_000

// DefaultUnstorableAfter is Capture.UnstorableAfter's default.
const DefaultUnstorableAfter = 3

// maxReason caps failure_reason (bytes).
const maxReason = 1000

// Capture is the consumer of a dead-letter queue: it stores every message of
// a batch in dlq_messages and acks each one only after the store succeeded.
//
// Per batch it runs ONE D1 batch (Store.Save, one round trip, all or
// nothing): its INSERT joins each message's attempt record for the true
// attempt count and reason, triggers on dlq_messages count poison rows and
// remove the attempt records used, and the batch's last statements count
// its new rows in dlq_tally, dlq_activity and dlq_signatures, one row
// written per group (repeat failures are counted by the update triggers).
// The INSERT's RETURNING tells new rows, repeat failures and duplicates
// apart; only a batch with duplicates pays a second statement, to count them.
//
// When the store statement fails, one probe (the store statement over an
// empty batch: it needs every table the store writes) tells an unavailable
// D1 from a failure tied to the batch's content. D1 unavailable: every
// message not stored yet is retried after RetryDelay(RetryBase, attempt),
// which doubles per delivery up to 12 h, so the consumer's max_retries
// cover a long outage (SurvivableOutage). Content: each message is stored
// alone, so one bad message cannot hold back its neighbours. A message that
// fails even alone is retried; from its UnstorableAfter-th DLQ delivery on
// it is stored as a minimal poison row instead (body as base64, reason
// `unstorable: <error>`), so it is never dropped when the DLQ's own retries
// run out. Only if that fails too is it retried again.
type Capture struct {
	DB  *sql.DB
	Log *slog.Logger
	// SourceQueue maps a DLQ name to the queue its messages failed on.
	SourceQueue map[string]string
	// UnstorableAfter is the DLQ delivery attempt from which a message that
	// cannot be stored even alone is stored as a minimal poison row
	// (DefaultUnstorableAfter when 0).
	UnstorableAfter int
	// RetryBase is D1_RETRY_BASE_SECONDS: a message that cannot be stored
	// because D1 is unavailable is retried after min(12 h, RetryBase·2^(n-1))
	// on its n-th delivery (DefaultRetryBase when 0).
	RetryBase time.Duration
	// Cause, when set, gives every message of a batch the same failure
	// class and reason instead of those of its attempt record (Unroutable
	// uses it for queues without a consumer).
	Cause func(queueName string) (class, reason string)
	// Clock is the time of capture.
	Clock clock.Clock
	// Batch runs each store's statements in one round trip (D1's batch()
	// in the worker); nil: a transaction on DB (native tests).
	Batch sqlbatch.Runner
	// Version is the worker version stamped on rows whose attempts name
	// none (version.Info.Stamp).
	Version string
	// Stores gives the store of each source queue's rows; nil: Store{DB,
	// Batch} for every queue. DB keeps the capture's counters (duplicates).
	Stores Stores
}

// store is the Store of source queue q's rows.
func (c *Capture) store(q string) Store {
	if c.Stores == nil {
		return Store{DB: c.DB, Batch: c.Batch}
	}
	return c.Stores.Of(q)
}

// captured is the state of one message of a batch.
type captured struct {
	msg     queue.Message
	failure Failure
	// enc is failure encoded for the store statements (encErr: why not),
	// once encoding asked for it (the failure is final by then).
	enc     *encoded
	encErr  error
	poison  bool
	problem string  // why the body is poison
	outcome Outcome // "" while not stored
	retried bool
}

// ConsumeBatch stores the batch (see Capture) and acks each stored message;
// every other message is retried. It settles each message itself and
// returns nil.
func (c *Capture) ConsumeBatch(ctx context.Context, queueName string, msgs []queue.Message) error {
	if len(msgs) == 0 {
		return nil
	}
	start := time.Now()
	source := c.SourceQueue[queueName]
	if source == "" {
		source = queueName
	}
	now := c.Clock.Now()
	batch := make([]*captured, len(msgs))
	for i, m := range msgs {
		batch[i] = c.prepare(m, source, now)
	}
	if c.Cause != nil {
		class, reason := c.Cause(queueName)
		for _, cm := range batch {
			cm.failure.Class, cm.failure.Reason = class, text.Clip(reason, maxReason)
		}
	}

	var unavailable error
	for _, chunk := range chunks(batch, maxBatchBytes) {
		if unavailable = c.storeChunk(ctx, chunk); unavailable != nil {
			break
		}
	}
	if unavailable != nil {
		c.retryUnavailable(ctx, batch, unavailable)
	}
	c.finish(ctx, queueName, source, batch, start)
	return nil
}

// prepare builds the failure to store for one message: attempts and reason
// from its attempt record when there is one, poison classification from its body.
func (c *Capture) prepare(m queue.Message, source string, now time.Time) *captured {
	text, ct := m.Body()
	// Class and Reason stay empty: the store statement takes them (and the
	// true attempt count) from the message's attempt record.
	f := Failure{MessageID: m.ID(), SourceQueue: source, Body: text, ContentType: ct, Attempts: m.Attempts(), FailedAt: now, Version: c.Version}
	b := parseBody(text, ct == queue.Bytes, c.store(source).Pipelines.shapeOf(source))
	f.parsed = &b
	cm := &captured{msg: m, failure: f}
	if b.Problem != "" {
		cm.poison, cm.problem = true, b.Problem
	}
	return cm
}

// encoding is the message's failure encoded for the store statements,
// encoded on the first call (chunks sizes the batch with it, the store
// sends it).
func (cm *captured) encoding() (encoded, error) {
	if cm.enc == nil && cm.encErr == nil {
		e, err := encodeFailure(cm.failure, nil) // parsed by prepare
		cm.enc, cm.encErr = &e, err
	}
	if cm.encErr != nil {
		return encoded{}, cm.encErr
	}
	return *cm.enc, nil
}

// storeChunk stores messages in one statement, falling back to one by one
// when the statement fails while D1 answers. It returns an error only when
// D1 is unavailable (the chunk's messages stay unsettled).
func (c *Capture) storeChunk(ctx context.Context, chunk []*captured) error {
	fs, encs := make([]Failure, len(chunk)), make([]encoded, len(chunk))
	var err error
	for i, cm := range chunk {
		var encErr error
		fs[i] = cm.failure
		if encs[i], encErr = cm.encoding(); encErr != nil {
			err = fmt.Errorf("dlq store encode: %w", encErr)
		}
	}
	var outcomes map[string]Outcome
	if err == nil {
		outcomes, err = c.save(ctx, chunk[0].failure.SourceQueue, fs, encs)
	}
	if err == nil {
		for _, cm := range chunk {
			c.settleStored(cm, outcomes[cm.msg.ID()])
		}
		return nil
	}
	if errors.Is(err, errLookAside) {
		c.Log.ErrorContext(ctx, "dlq: a database holding rows of the queue is unavailable; batch will be retried", "messages", len(chunk), "error", err.Error())
		return err
	}
	if perr := c.probe(ctx, chunk[0].failure.SourceQueue); perr != nil {
		c.Log.ErrorContext(ctx, "dlq: D1 unavailable; batch will be retried", "messages", len(chunk), "error", err.Error(), "probe_error", perr.Error())
		return fmt.Errorf("%w (probe: %v)", err, perr)
	}
	c.Log.WarnContext(ctx, "dlq: batch store failed while D1 answers; storing messages one by one", "messages", len(chunk), "error", err.Error())
	for _, cm := range chunk {
		if len(chunk) > 1 {
			outcomes, err = c.saveOne(ctx, cm.failure)
			if err == nil {
				c.settleStored(cm, outcomes[cm.msg.ID()])
				continue
			}
		}
		c.storeAlone(ctx, cm, err)
	}
	return nil
}

// storeAlone handles a message whose store failed on its own: retry, or from
// its UnstorableAfter-th delivery on, store it as a minimal poison row.
func (c *Capture) storeAlone(ctx context.Context, cm *captured, cause error) {
	after := c.UnstorableAfter
	if after <= 0 {
		after = DefaultUnstorableAfter
	}
	m := cm.msg
	if errors.Is(cause, errLookAside) {
		c.retryUnavailable(ctx, []*captured{cm}, cause)
		return
	}
	if m.Attempts() >= after {
		// Body (as base64), content type and body hash are kept: the row can
		// be replayed like any other. Nothing is read from the body.
		f := cm.failure
		f.asBase64 = true
		f.parsed = &body{Problem: "unstorable"}
		f.Class = "poison"
		f.Reason = text.Clip("unstorable: "+cause.Error(), maxReason)
		outcomes, err := c.saveOne(ctx, f)
		if err == nil {
			cm.poison, cm.failure = true, f
			c.Log.WarnContext(ctx, "dlq: message could not be stored; kept as a minimal poison row", "message_id", m.ID(), "attempt", m.Attempts(), "error", cause.Error())
			c.settleStored(cm, outcomes[m.ID()])
			return
		}
		cause = fmt.Errorf("%v; minimal row: %w", cause, err)
	}
	if perr := c.probe(ctx, cm.failure.SourceQueue); perr != nil {
		// D1 went away during the one-by-one stores: back off as for an
		// unavailable D1 instead of spending the retries at retry_delay.
		c.retryUnavailable(ctx, []*captured{cm}, fmt.Errorf("%w (probe: %v)", cause, perr))
		return
	}
	c.Log.WarnContext(ctx, "dlq: message could not be stored; retrying it", "message_id", m.ID(), "attempt", m.Attempts(), "error", cause.Error())
	cm.retried = true
	m.Retry(0)
}

// settleStored acks a message whose store statement succeeded.
func (c *Capture) settleStored(cm *captured, o Outcome) {
	if o == "" {
		o = OutcomeDuplicate
	}
	cm.outcome = o
	cm.msg.Ack()
}

// finish removes the attempt records of stored messages and adds the
// counters (best effort: both only lose bookkeeping if they fail, and
// retrying the batch for them would count its messages as duplicates).
func (c *Capture) finish(ctx context.Context, queueName, source string, batch []*captured, start time.Time) {
	var newRows, repeats, dups, poison, retried, pending int64
	for _, cm := range batch {
		switch cm.outcome {
		case OutcomeNew, OutcomeRepeat:
			if cm.outcome == OutcomeNew {
				newRows++
			} else {
				repeats++
				c.Log.InfoContext(ctx, "dlq: replayed message failed again; row back to pending", "message_id", cm.msg.ID())
			}
			if cm.poison {
				poison++
				c.Log.WarnContext(ctx, "dlq: poison message stored", "message_id", cm.msg.ID(), "problem", cm.problem)
			}
		case OutcomeDuplicate:
			dups++
		default:
			if cm.retried {
				retried++
			} else {
				pending++
			}
		}
	}
	// Captured and poison rows are counted (and their attempt records
	// removed) by triggers inside the store statement; duplicates, which
	// write nothing, cost a statement only when there are some.
	if dups > 0 {
		if err := (metrics.Counters{DB: c.DB}).Add(ctx, map[string]int64{CounterDuplicates: dups}); err != nil {
			c.Log.WarnContext(ctx, "dlq: could not count duplicates", "error", err.Error())
		}
	}
	// D1 rows read and written by the batch's statements (metrics.Meter).
	c.Log.InfoContext(ctx, "dlq: captured batch", append([]any{"queue", queueName, "source_queue", source, "messages", len(batch),
		"new", newRows, "repeats", repeats, "duplicates", dups, "poison", poison, "retried", retried, "unsettled", pending,
		"duration_ms", time.Since(start).Milliseconds()}, metrics.OperationOf(ctx).LogAttrs()...)...)
}

// chunks splits a batch so that each store statement's JSON parameter stays
// under limit bytes (one chunk for any ordinary batch).
func chunks(batch []*captured, limit int) [][]*captured {
	var out [][]*captured
	var cur []*captured
	size := 0
	for _, cm := range batch {
		n := encodedSize(cm)
		if len(cur) > 0 && size+n > limit {
			out = append(out, cur)
			cur, size = nil, 0
		}
		cur = append(cur, cm)
		size += n
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}

// encodedSize is the size of cm's failure in the store statement's JSON
// parameter, as an array of its own (the brackets included).
func encodedSize(cm *captured) int {
	e, err := cm.encoding()
	if err != nil {
		return len(cm.failure.Body) + 1024
	}
	return len(e.put) + 2
}
