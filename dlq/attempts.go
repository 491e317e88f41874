package dlq

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
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
		at.MessageID, at.Queue, int64(at.Attempt), at.Class, shorten(at.Error, maxAttemptError), at.At.UnixMilli())
	if err != nil {
		return fmt.Errorf("record attempt of %s: %w", at.MessageID, err)
	}
	return nil
}

// Lookup returns the records of the given message ids (one statement);
// ids without a record are absent from the map.
func (a Attempts) Lookup(ctx context.Context, messageIDs []string) (map[string]Attempt, error) {
	out := map[string]Attempt{}
	if len(messageIDs) == 0 {
		return out, nil
	}
	js, err := json.Marshal(messageIDs)
	if err != nil {
		return nil, fmt.Errorf("attempts lookup encode: %w", err)
	}
	rows, err := a.DB.QueryContext(ctx, `SELECT message_id, queue, attempt, error_class, error, recorded_at
		FROM message_attempts WHERE message_id IN (SELECT value FROM json_each(?))`, string(js))
	if err != nil {
		return nil, fmt.Errorf("attempts lookup: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var at Attempt
		var n, ms int64
		if err := rows.Scan(&at.MessageID, &at.Queue, &n, &at.Class, &at.Error, &ms); err != nil {
			return nil, fmt.Errorf("attempts lookup scan: %w", err)
		}
		at.Attempt, at.At = int(n), time.UnixMilli(ms)
		out[at.MessageID] = at
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("attempts lookup: %w", err)
	}
	return out, nil
}

// Remove deletes the records of the given message ids (one statement).
func (a Attempts) Remove(ctx context.Context, messageIDs []string) error {
	if len(messageIDs) == 0 {
		return nil
	}
	js, err := json.Marshal(messageIDs)
	if err != nil {
		return fmt.Errorf("attempts remove encode: %w", err)
	}
	if _, err := a.DB.ExecContext(ctx, `DELETE FROM message_attempts WHERE message_id IN (SELECT value FROM json_each(?))`, string(js)); err != nil {
		return fmt.Errorf("attempts remove: %w", err)
	}
	return nil
}
