package enrichment

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// Attempt classes recorded in message_attempts.error_class.
const (
	ClassTransient   = "transient"
	ClassRateLimited = "rate_limited"
	ClassPermanent   = "permanent"
	ClassBreakerOpen = "breaker_open"
	ClassQuota       = "quota"
	ClassConfig      = "config"
)

// attemptLog records the last failed attempt of a message before it is
// retried, for the DLQ consumer's failure_count and failure_reason.
//
// TODO(capture merge): replace with dlq.Attempts{DB}.Record; this is the only
// place that writes message_attempts.
type attemptLog struct{ DB *sql.DB }

// record upserts the message's attempt row in one statement.
func (l attemptLog) record(ctx context.Context, messageID, queueName string, attempt int, class, errText string, now time.Time) error {
	_, err := l.DB.ExecContext(ctx, `INSERT INTO message_attempts(message_id, queue, attempt, error_class, error, recorded_at)
		VALUES (?1, ?2, ?3, ?4, ?5, ?6)
		ON CONFLICT(message_id) DO UPDATE SET queue = excluded.queue, attempt = excluded.attempt,
			error_class = excluded.error_class, error = excluded.error, recorded_at = excluded.recorded_at`,
		messageID, queueName, int64(attempt), class, errText, now.UnixMilli())
	if err != nil {
		return fmt.Errorf("record attempt %d of %s: %w", attempt, messageID, err)
	}
	return nil
}
