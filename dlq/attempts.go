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
	// At is when the attempt failed. The record keeps the time of the
	// message's first recorded attempt (recorded_at): retention expires
	// records by it, and a time that stays put costs no index write per
	// attempt.
	At time.Time
}

// Attempts reads and writes message_attempts.
type Attempts struct {
	DB *sql.DB
}

// RecordSQL upserts one attempt record. recorded_at is set by the first
// attempt only: the record's later updates rewrite the row alone (1 row
// written), not its entry in idx_attempts_recorded_at too. A message's
// record costs 3 rows written when created (row, primary key, recorded_at),
// 1 per later attempt and 1 when the DLQ consumer removes it: 7 for the 4
// attempts of a message that ends in the DLQ (README "What it costs").
const RecordSQL = `INSERT INTO message_attempts(message_id, queue, attempt, error_class, error, recorded_at)
		VALUES (?, ?, ?, ?, ?, ?)
		ON CONFLICT(message_id) DO UPDATE SET queue = excluded.queue, attempt = excluded.attempt,
			error_class = excluded.error_class, error = excluded.error
			WHERE excluded.attempt >= message_attempts.attempt`

// Record upserts the attempt in one statement. An attempt never overwrites
// a record with a higher attempt number (late writes of an earlier attempt
// are ignored).
func (a Attempts) Record(ctx context.Context, at Attempt) error {
	_, err := a.DB.ExecContext(ctx, RecordSQL,
		at.MessageID, at.Queue, int64(at.Attempt), at.Class, text.Clip(at.Error, maxAttemptError), at.At.UnixMilli())
	if err != nil {
		return fmt.Errorf("record attempt of %s: %w", at.MessageID, err)
	}
	return nil
}
