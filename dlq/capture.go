// Package dlq is the dead-letter domain: capture of dead-lettered messages,
// listing, stats, replay, acknowledge, retention and alerts.
package dlq

import (
	"context"
	"database/sql"
	"encoding/json"
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

type captureRow struct {
	MessageID string `json:"message_id"`
	BeerID    string `json:"beer_id"`
	BeerName  any    `json:"beer_name"`
	Brewer    any    `json:"brewer"`
	Attempts  int    `json:"attempts"`
	Raw       string `json:"raw"`
}

// ConsumeBatch stores the batch in one statement, then acks every message.
// When the statement fails the error is returned and the runtime retries the batch.
func (c *Capture) ConsumeBatch(ctx context.Context, queueName string, msgs []queue.Message) error {
	source := c.SourceQueue[queueName]
	if source == "" {
		source = queueName
	}
	rows := make([]captureRow, len(msgs))
	for i, m := range msgs {
		body, _ := m.Body()
		var b struct {
			BeerID   string `json:"beer_id"`
			BeerName any    `json:"beer_name"`
			Brewer   any    `json:"brewer"`
		}
		_ = json.Unmarshal([]byte(body), &b)
		if b.BeerID == "" {
			b.BeerID = "__unparseable__"
		}
		rows[i] = captureRow{MessageID: m.ID(), BeerID: b.BeerID, BeerName: b.BeerName, Brewer: b.Brewer, Attempts: m.Attempts(), Raw: body}
	}
	js, err := json.Marshal(rows)
	if err != nil {
		return fmt.Errorf("capture encode: %w", err)
	}
	now := c.now().UnixMilli()
	_, err = c.DB.ExecContext(ctx, `INSERT INTO dlq_messages(message_id, beer_id, beer_name, brewer, failed_at, failure_count,
			source_queue, raw_message, last_message_id, first_failed_at, updated_at)
		SELECT json_extract(value, '$.message_id'), json_extract(value, '$.beer_id'), json_extract(value, '$.beer_name'),
			json_extract(value, '$.brewer'), ?1, json_extract(value, '$.attempts'), ?2, json_extract(value, '$.raw'),
			json_extract(value, '$.message_id'), ?1, ?1
		FROM json_each(?3) WHERE true
		ON CONFLICT(message_id) DO NOTHING`, now, source, string(js))
	if err != nil {
		return fmt.Errorf("capture store %d messages: %w", len(msgs), err)
	}
	for _, m := range msgs {
		m.Ack()
	}
	c.Log.InfoContext(ctx, "dlq: captured batch", "queue", queueName, "source_queue", source, "messages", len(msgs))
	return nil
}
