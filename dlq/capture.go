// Package dlq is the dead-letter domain: capture of dead-lettered messages,
// listing, stats, replay, acknowledge, retention and alerts.
package dlq

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"time"

	"github.com/redrive/redrive/queue"
)

// Capture is the consumer of a dead-letter queue: it stores every message of
// a batch in dlq_messages and acks each one only after the store succeeded.
type Capture struct {
	DB  *sql.DB
	Log *slog.Logger
	// SourceQueue maps a DLQ name to the queue its messages failed on.
	SourceQueue map[string]string
	// Now is the clock; time.Now when nil.
	Now func() time.Time
}

func (c *Capture) now() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}

// ConsumeBatch stores the batch in one statement, then acks every message.
// When the statement fails the error is returned and the runtime retries the batch.
func (c *Capture) ConsumeBatch(ctx context.Context, queueName string, msgs []queue.Message) error {
	source := c.SourceQueue[queueName]
	if source == "" {
		source = queueName
	}
	now := c.now()
	fs := make([]Failure, len(msgs))
	for i, m := range msgs {
		body, binary := m.Body()
		fs[i] = Failure{MessageID: m.ID(), SourceQueue: source, Body: body, Binary: binary,
			Attempts: m.Attempts(), Class: "unknown", Reason: "no attempt record", FailedAt: now}
	}
	if err := (Store{DB: c.DB}).Put(ctx, fs); err != nil {
		return fmt.Errorf("capture: %w", err)
	}
	for _, m := range msgs {
		m.Ack()
	}
	c.Log.InfoContext(ctx, "dlq: captured batch", "queue", queueName, "source_queue", source, "messages", len(msgs))
	return nil
}
