package dlq

import (
	"context"
	"database/sql"
	"log/slog"
	"time"
)

// DefaultRetryBase is Capture.RetryBase's default (D1_RETRY_BASE_SECONDS):
// with the DLQ consumer's max_retries of 10 a message survives a D1 outage
// of SurvivableOutage(300 s, 10) ≈ 45 h.
const DefaultRetryBase = 300 * time.Second

// maxQueueDelay is Cloudflare Queues' limit on a retry or send delay (12 h).
const maxQueueDelay = 12 * time.Hour

// RetryDelay is the wait after delivery attempt n (1-based) of a message
// that could not be stored or processed because D1 is unavailable:
// min(12 h, base·2^(n-1)), whole seconds, at least 1 s. It doubles per
// attempt, so a consumer's few retries cover a long outage.
func RetryDelay(base time.Duration, attempt int) time.Duration {
	d := max(base.Truncate(time.Second), time.Second)
	for i := 1; i < attempt && d < maxQueueDelay; i++ {
		d *= 2
	}
	return min(d, maxQueueDelay)
}

// SurvivableOutage is how long D1 may stay unavailable without the DLQ
// consumer losing a message it could not store: the sum of the delays
// RetryDelay gives the first maxRetries deliveries (the last delivery,
// attempt maxRetries+1, comes that long after the first; if D1 is back by
// then the message is stored). The queue's retention must be longer.
func SurvivableOutage(base time.Duration, maxRetries int) time.Duration {
	var total time.Duration
	for n := 1; n <= maxRetries; n++ {
		total += RetryDelay(base, n)
	}
	return total
}

// retryUnavailable is the capture's answer to an unavailable D1: each
// message not stored yet is retried after RetryDelay of its attempt, never
// acked. Per message, so each one backs off on its own attempt count.
func (c *Capture) retryUnavailable(ctx context.Context, batch []*captured, cause error) {
	base := c.RetryBase
	if base <= 0 {
		base = DefaultRetryBase
	}
	n := 0
	for _, cm := range batch {
		if cm.outcome != "" || cm.retried {
			continue
		}
		delay := RetryDelay(base, cm.msg.Attempts())
		cm.retried = true
		cm.msg.Retry(delay)
		n++
		c.Log.WarnContext(ctx, "dlq: D1 unavailable; message retried later", "message_id", cm.msg.ID(),
			"attempt", cm.msg.Attempts(), "delay_s", int64(delay/time.Second))
	}
	c.Log.ErrorContext(ctx, "dlq: D1 unavailable; unstored messages retried with backoff", "messages", n, "error", cause.Error())
}

// probe tells whether the capture can write at all: it runs the store
// statement over an empty batch, which needs every table it and its
// triggers touch (dlq_messages, message_attempts, counters) and a writable
// database, and writes nothing. A failing probe means D1 is unavailable
// (down, refusing queries, or a table missing or renamed), not that the
// batch's content is at fault. q is the source queue whose store is probed.
func (c *Capture) probe(ctx context.Context, q string) error {
	return probeStore(ctx, c.store(q).DB)
}

func probeStore(ctx context.Context, db *sql.DB) error {
	if _, err := db.ExecContext(ctx, ensureSignaturesSQL, "[]"); err != nil {
		return err
	}
	// The tables the batch counts its new rows in (the counting statements
	// themselves must run only right after the batch's own mark).
	if _, err := db.ExecContext(ctx, `SELECT 1 FROM capture_mark, dlq_tally, dlq_activity, dlq_signatures WHERE 0`); err != nil {
		return err
	}
	rows, err := db.QueryContext(ctx, putSQL, "[]")
	if err != nil {
		return err
	}
	for rows.Next() {
	}
	if err := rows.Err(); err != nil {
		rows.Close()
		return err
	}
	return rows.Close()
}

// Unroutable returns the capture for batches from a queue that has no
// consumer (a consumer added to wrangler.jsonc but not wired in main.go):
// every message is stored as a DLQ row with source_queue = that queue,
// class `unroutable` and reason `unroutable: no consumer for queue <name>`,
// and acked only once stored; with D1 unavailable it is retried.
func Unroutable(db *sql.DB, log *slog.Logger, retryBase time.Duration) *Capture {
	return &Capture{DB: db, Log: log, RetryBase: retryBase, Cause: func(queueName string) (string, string) {
		return ClassUnroutable, ClassUnroutable + ": no consumer for queue " + queueName
	}}
}

// ClassUnroutable is the failure_class of messages from a queue without a consumer.
const ClassUnroutable = "unroutable"
