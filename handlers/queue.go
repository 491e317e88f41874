package handlers

import (
	"context"
	"fmt"
	"log/slog"
	"runtime/debug"

	"github.com/redrive/redrive/queue"
)

// BatchConsumer handles one delivered batch. It acks or retries each message
// itself; an error it returns retries every message it did not settle.
type BatchConsumer interface {
	ConsumeBatch(ctx context.Context, queueName string, msgs []queue.Message) error
}

// QueueRouter sends each batch to the consumer registered for its queue.
// Batches from any other queue are acked with a warning: redrive cannot
// process them, and retrying would only move them to a DLQ for nothing.
type QueueRouter struct {
	Consumers map[string]BatchConsumer
	Log       *slog.Logger
}

// Consume routes one batch. A panicking consumer is recovered and reported
// as an error (so the runtime retries the batch) instead of killing the
// instance together with every other message in flight.
func (q *QueueRouter) Consume(ctx context.Context, queueName string, msgs []queue.Message) (err error) {
	c, ok := q.Consumers[queueName]
	if !ok {
		q.Log.WarnContext(ctx, "queue: no consumer for queue; acking", "queue", queueName, "messages", len(msgs))
		for _, m := range msgs {
			q.Log.WarnContext(ctx, "queue: acked unroutable message", "queue", queueName, "message_id", m.ID())
			m.Ack()
		}
		return nil
	}
	defer func() {
		if p := recover(); p != nil {
			q.Log.ErrorContext(ctx, "queue: consumer panicked", "queue", queueName, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			err = fmt.Errorf("consumer for %s panicked: %v", queueName, p)
		}
	}()
	return c.ConsumeBatch(ctx, queueName, msgs)
}
