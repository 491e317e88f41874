// Package consume routes each delivered queue batch to the consumer of its
// queue (consume.Router): it is to queue batches what jobs.CronRouter is
// to crons. A queue without a consumer goes to Unroutable, a panicking
// consumer becomes an error (the batch is retried), and D1 usage is
// metered per queue.
package consume

import (
	"context"
	"fmt"
	"log/slog"
	"runtime/debug"

	"github.com/redrive/redrive/metrics"
	"github.com/redrive/redrive/queue"
)

// Consumer handles one delivered batch. It acks or retries each message
// itself; an error it returns retries every message it did not settle.
type Consumer interface {
	ConsumeBatch(ctx context.Context, queueName string, msgs []queue.Message) error
}

// Router sends each batch to the consumer registered for its queue.
// A batch from any other queue (a consumer added to wrangler.jsonc but not
// wired in main.go) goes to Unroutable, which stores its messages as DLQ
// rows (dlq.Unroutable) and acks only what it stored; without Unroutable the
// messages are retried, never acked.
type Router struct {
	Consumers map[string]Consumer
	// Unroutable consumes batches of queues without a consumer (nil: retried).
	Unroutable Consumer
	Log        *slog.Logger
	// Meter counts D1's rows read and written per queue (each batch is an
	// operation named "queue <name>") and is flushed after each batch; nil:
	// nothing is counted.
	Meter *metrics.Meter
}

// Consume routes one batch. A panicking consumer is recovered and reported
// as an error (so the runtime retries the batch) instead of killing the
// instance together with every other message in flight.
func (q *Router) Consume(ctx context.Context, queueName string, msgs []queue.Message) (err error) {
	ctx, _ = metrics.Start(ctx, metrics.QueueOp(queueName))
	defer q.Meter.Flush(ctx) // a nil Meter counts nothing
	c, ok := q.Consumers[queueName]
	if !ok {
		if q.Unroutable == nil {
			q.Log.ErrorContext(ctx, "queue: no consumer for queue and nowhere to store its messages; retrying them",
				"queue", queueName, "messages", len(msgs))
			for _, m := range msgs {
				m.Retry(0)
			}
			return nil
		}
		q.Log.WarnContext(ctx, "queue: no consumer for queue; storing its messages as DLQ rows", "queue", queueName, "messages", len(msgs))
		c = q.Unroutable
	}
	defer func() {
		if p := recover(); p != nil {
			q.Log.ErrorContext(ctx, "queue: consumer panicked", "queue", queueName, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			err = fmt.Errorf("consumer for %s panicked: %v", queueName, p)
		}
	}()
	return c.ConsumeBatch(ctx, queueName, msgs)
}
