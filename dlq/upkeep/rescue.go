package upkeep

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/jobs"
	"github.com/redrive/redrive/metrics"
)

// CounterRescued counts rows Rescue returned to pending.
var CounterRescued = metrics.Declare("dlq_rescued_total", "DLQ rows returned from replaying to pending by the rescue job.")

// Rescue returns rows stuck in `replaying` (a replay that died between its
// send and its final update) to `pending`, so nothing is lost (River's
// JobRescuer is the model). The message may have been sent before the replay
// died: a rescued row can then be replayed twice (at least once, never lost).
// A replay's final update must therefore be conditional on the row still
// being `replaying` with its own replaying_at.
type Rescue struct {
	DB  *sql.DB
	Log *slog.Logger
	// Database is DB's binding (JobName).
	Database string
	// StuckAfter is how long a row may stay `replaying` (DLQ_REPLAY_STUCK_MINUTES).
	StuckAfter time.Duration
	// Limits bounds each run (batch size and wall-time budget).
	Limits jobs.Limits
	// Frozen are the queues whose rows in DB move to their pipeline's
	// database (Databases.Frozen): left as they are, so that the copy an
	// export made stays what DB holds; their copy is rescued there.
	Frozen []string
}

// Name implements jobs.Job.
func (r *Rescue) Name() string { return dlq.JobName("dlq_rescue", r.Database) }

// Run moves rows claimed at or before now-StuckAfter back to pending, one
// conditional statement per batch, logs the ids it rescued and counts them.
func (r *Rescue) Run(ctx context.Context, now time.Time) (map[string]any, error) {
	if r.StuckAfter <= 0 {
		return nil, errors.New("rescue: StuckAfter must be positive")
	}
	cutoff := now.Add(-r.StuckAfter).UnixMilli()
	n, more, err := r.Limits.Start().Drain(ctx, func(ctx context.Context, limit int) (int64, error) {
		return r.rescueBatch(ctx, now, cutoff, limit)
	})
	sum := map[string]any{"rescued": n, "more": more}
	if cerr := (metrics.Counters{DB: r.DB}).Add(ctx, map[string]int64{CounterRescued: n}); cerr != nil {
		err = errors.Join(err, fmt.Errorf("rescue: %w", cerr))
	}
	return sum, err
}

func (r *Rescue) rescueBatch(ctx context.Context, now time.Time, cutoff int64, limit int) (int64, error) {
	rows, err := r.DB.QueryContext(ctx, `UPDATE dlq_messages SET status = 'pending', replaying_at = NULL, updated_at = ?
		WHERE status = 'replaying' AND id IN (
			SELECT id FROM dlq_messages WHERE status = 'replaying' AND COALESCE(replaying_at, 0) <= ?
				AND +source_queue NOT IN (SELECT value FROM json_each(?)) LIMIT ?)
		RETURNING id, message_id`, now.UnixMilli(), cutoff, dlq.JSONList(r.Frozen), limit)
	if err != nil {
		return 0, fmt.Errorf("rescue: %w", err)
	}
	defer rows.Close()
	var n int64
	for rows.Next() {
		var id int64
		var msgID string
		if err := rows.Scan(&id, &msgID); err != nil {
			return n, fmt.Errorf("rescue: %w", err)
		}
		n++
		r.Log.WarnContext(ctx, "dlq: rescued row stuck in replaying", "id", id, "message_id", msgID, "stuck_after_ms", r.StuckAfter.Milliseconds())
	}
	if err := rows.Err(); err != nil {
		return n, fmt.Errorf("rescue: %w", err)
	}
	return n, nil
}
