package dlq

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"time"
)

// Rescue returns rows stuck in `replaying` (a replay that died between its
// send and its final update) to `pending`, so nothing is lost.
type Rescue struct {
	DB  *sql.DB
	Log *slog.Logger
	// StuckAfter is how long a row may stay `replaying` (DLQ_REPLAY_STUCK_MINUTES).
	StuckAfter time.Duration
}

// Name implements handlers.Job.
func (r *Rescue) Name() string { return "dlq_rescue" }

// Run moves every row claimed before now-StuckAfter back to pending in one statement.
func (r *Rescue) Run(ctx context.Context, now time.Time) (map[string]any, error) {
	cutoff := now.Add(-r.StuckAfter).UnixMilli()
	res, err := r.DB.ExecContext(ctx, `UPDATE dlq_messages SET status = 'pending', replaying_at = NULL, updated_at = ?
		WHERE status = 'replaying' AND COALESCE(replaying_at, 0) <= ?`, now.UnixMilli(), cutoff)
	if err != nil {
		return nil, fmt.Errorf("rescue: %w", err)
	}
	n, _ := res.RowsAffected()
	if n > 0 {
		r.Log.WarnContext(ctx, "dlq: rescued rows stuck in replaying", "rows", n)
	}
	return map[string]any{"rescued": n}, nil
}
