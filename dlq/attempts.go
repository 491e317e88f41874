package dlq

import (
	"context"
	"database/sql"
	"fmt"
	"github.com/redrive/redrive/internal/text"
	"time"
)

// maxAttemptError caps the error text kept per attempt (bytes).
const maxAttemptError = 500

// Attempt is the latest failed attempt of a message on its source queue.
// A consumer records it before calling Retry; the DLQ consumer reads it for
// failure_count and failure_reason, then removes it.
type Attempt struct {
	// MessageID is the queue message id (kept when the message moves to the DLQ).
	MessageID string
	// Queue is the queue the attempt ran on (beer-enrichment).
	Queue string
	// Attempt is the attempt number on that queue (message Attempts, from 1).
	Attempt int
	// Class is transient | rate_limited | permanent | breaker_open | quota | config.
	Class string
	// Error is a short text of the error (no secrets); cut to 500 bytes.
	Error string
	// At is when the attempt failed.
	At time.Time
}

// Attempts reads and writes message_attempts.
type Attempts struct {
	DB *sql.DB
}

// Record upserts the attempt in one statement. An attempt never overwrites
// a record with a higher attempt number (late writes of an earlier attempt
// are ignored).
func (a Attempts) Record(ctx context.Context, at Attempt) error {
	_, err := a.DB.ExecContext(ctx, `INSERT INTO message_attempts(message_id, queue, attempt, error_class, error, recorded_at)
		VALUES (?, ?, ?, ?, ?, ?)
		ON CONFLICT(message_id) DO UPDATE SET queue = excluded.queue, attempt = excluded.attempt,
			error_class = excluded.error_class, error = excluded.error, recorded_at = excluded.recorded_at
			WHERE excluded.attempt >= message_attempts.attempt`,
		at.MessageID, at.Queue, int64(at.Attempt), at.Class, text.Clip(at.Error, maxAttemptError), at.At.UnixMilli())
	if err != nil {
		return fmt.Errorf("record attempt of %s: %w", at.MessageID, err)
	}
	return nil
}
