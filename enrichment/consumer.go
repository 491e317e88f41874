// Package enrichment is the main-queue work: the provider client, beer
// results, the retry policy and the circuit breaker.
package enrichment

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	"github.com/redrive/redrive/queue"
)

// Beer is the body of an enrichment message.
type Beer struct {
	BeerID   string `json:"beer_id"`
	BeerName string `json:"beer_name"`
	Brewer   string `json:"brewer"`
}

// Provider looks up a beer's ABV.
type Provider interface {
	LookupABV(ctx context.Context, b Beer) (abv *float64, err error)
}

// Consumer processes batches of the enrichment queue.
type Consumer struct {
	DB       *sql.DB
	Log      *slog.Logger
	Provider Provider
	// Now is the clock; time.Now when nil.
	Now func() time.Time
}

func (c *Consumer) now() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}

// ConsumeBatch looks each beer up and acks it, or records the failed attempt
// and retries it.
func (c *Consumer) ConsumeBatch(ctx context.Context, queueName string, msgs []queue.Message) error {
	for _, m := range msgs {
		body, _ := m.Body()
		var b Beer
		err := json.Unmarshal([]byte(body), &b)
		if err == nil {
			_, err = c.Provider.LookupABV(ctx, b)
		}
		if err == nil {
			m.Ack()
			continue
		}
		c.Log.WarnContext(ctx, "enrichment: attempt failed", "message_id", m.ID(), "attempt", m.Attempts(), "error", err.Error())
		if rerr := c.recordAttempt(ctx, queueName, m, err); rerr != nil {
			c.Log.ErrorContext(ctx, "enrichment: could not record attempt", "message_id", m.ID(), "error", rerr.Error())
		}
		m.Retry(0)
	}
	return nil
}

func (c *Consumer) recordAttempt(ctx context.Context, queueName string, m queue.Message, cause error) error {
	_, err := c.DB.ExecContext(ctx, `INSERT INTO message_attempts(message_id, queue, attempt, error_class, error, recorded_at)
		VALUES (?, ?, ?, 'transient', ?, ?)
		ON CONFLICT(message_id) DO UPDATE SET attempt = excluded.attempt, error_class = excluded.error_class,
			error = excluded.error, recorded_at = excluded.recorded_at`,
		m.ID(), queueName, int64(m.Attempts()), cause.Error(), c.now().UnixMilli())
	if err != nil {
		return fmt.Errorf("record attempt: %w", err)
	}
	return nil
}
