package dlq

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"time"

	"github.com/redrive/redrive/metrics"
)

// RetentionJobName is the name Retention records its runs under in job_runs
// (the dlq_cap_evicting alert reads its last summary).
const RetentionJobName = "dlq_retention"

// Counter names Retention adds to (metrics.Counters).
const (
	CounterRetentionAge    = "dlq_retention_deleted_age_total"
	CounterRetentionCap    = "dlq_retention_deleted_cap_total"
	CounterAttemptsExpired = "attempts_expired_total"
)

// Retention deletes what no one needs any more, in bounded batches (River's
// JobCleaner is the model). Its rules, in order:
//
//   - age: `acknowledged` and `replayed` DLQ rows whose action is older than
//     MaxAge. The age counts from the action (acknowledged_at, replayed_at),
//     not from the failure: a row that failed long ago and was dismissed today
//     stays for the whole retention; rows without the action time (written
//     before it was recorded) fall back to failed_at;
//   - cap: per beer_id, only the MaxRowsPerKey newest (failed_at, then id)
//     `acknowledged`/`replayed` rows are kept; older ones are evicted;
//   - attempts: message_attempts records older than AttemptMaxAge (the DLQ
//     consumer removes the ones it uses; what is left belongs to messages
//     that succeeded later).
//
// `pending` and `replaying` rows are never deleted: they need an operator
// (or the rescue job). Every statement is idempotent, so overlapping or
// repeated runs are harmless.
type Retention struct {
	DB  *sql.DB
	Log *slog.Logger
	// MaxAge is DLQ_RETENTION_DAYS.
	MaxAge time.Duration
	// MaxRowsPerKey is DLQ_MAX_ROWS_PER_KEY.
	MaxRowsPerKey int
	// AttemptMaxAge is ATTEMPT_RETENTION_DAYS.
	AttemptMaxAge time.Duration
	// Limits bounds each run (batch size and wall-time budget).
	Limits Limits
}

// Name implements handlers.Job.
func (r *Retention) Name() string { return RetentionJobName }

func (r *Retention) validate() error {
	if r.MaxAge <= 0 || r.MaxRowsPerKey <= 0 || r.AttemptMaxAge <= 0 {
		return errors.New("retention: MaxAge, MaxRowsPerKey and AttemptMaxAge must be positive")
	}
	return nil
}

// Run applies the three rules at now. Counts go to the counters table; the
// summary lists them, up to ten beer ids the cap evicted from, and whether
// the budget ran out with rows left (more).
func (r *Retention) Run(ctx context.Context, now time.Time) (map[string]any, error) {
	if err := r.validate(); err != nil {
		return nil, err
	}
	b := r.Limits.start()
	sum := map[string]any{}
	var errs []error

	cutoff := now.Add(-r.MaxAge).UnixMilli()
	age, moreAge, err := b.drain(ctx, func(ctx context.Context, limit int) (int64, error) {
		return r.deleteByAge(ctx, cutoff, limit)
	})
	if err != nil {
		errs = append(errs, err)
	}

	keys := map[string]bool{}
	capped, moreCap, err := b.drain(ctx, func(ctx context.Context, limit int) (int64, error) {
		return r.deleteOverCap(ctx, limit, keys)
	})
	if err != nil {
		errs = append(errs, err)
	}

	attemptCutoff := now.Add(-r.AttemptMaxAge).UnixMilli()
	attempts, moreAttempts, err := b.drain(ctx, func(ctx context.Context, limit int) (int64, error) {
		return exec(ctx, r.DB, "expire attempts", `DELETE FROM message_attempts WHERE message_id IN (
			SELECT message_id FROM message_attempts WHERE recorded_at < ? LIMIT ?)`, attemptCutoff, limit)
	})
	if err != nil {
		errs = append(errs, err)
	}

	capKeys := sortedKeys(keys, 10)
	sum["deleted_age"], sum["deleted_cap"], sum["attempts_expired"] = age, capped, attempts
	sum["cap_keys"], sum["more"] = capKeys, moreAge || moreCap || moreAttempts
	if err := (metrics.Counters{DB: r.DB}).Add(ctx, map[string]int64{
		CounterRetentionAge: age, CounterRetentionCap: capped, CounterAttemptsExpired: attempts,
	}); err != nil {
		errs = append(errs, fmt.Errorf("retention: %w", err))
	}
	if capped > 0 {
		r.Log.WarnContext(ctx, "dlq: per-key cap evicted rows", "rows", capped, "max_rows_per_key", r.MaxRowsPerKey, "beer_ids", capKeys)
	}
	if sum["more"] == true {
		r.Log.WarnContext(ctx, "dlq: retention budget spent with rows left; the next run continues", "budget_ms", r.Limits.Budget.Milliseconds())
	}
	return sum, errors.Join(errs...)
}

// deleteByAgeSQL deletes up to ?2 terminal rows that expired before ?1.
// Each branch of the UNION reads the index of its status and action time
// (idx_dlq_status_acknowledged_at, idx_dlq_status_replayed_at). Rows without
// an action time (none are written any more) age from failed_at, and
// +failed_at keeps idx_dlq_status_failed, which would visit every row of the
// status, out of the plan.
const deleteByAgeSQL = `DELETE FROM dlq_messages WHERE id IN (
	SELECT id FROM dlq_messages WHERE status = 'acknowledged' AND acknowledged_at < ?1
	UNION ALL SELECT id FROM dlq_messages WHERE status = 'acknowledged' AND acknowledged_at IS NULL AND +failed_at < ?1
	UNION ALL SELECT id FROM dlq_messages WHERE status = 'replayed' AND replayed_at < ?1
	UNION ALL SELECT id FROM dlq_messages WHERE status = 'replayed' AND replayed_at IS NULL AND +failed_at < ?1
	LIMIT ?2)`

// deleteByAge deletes up to limit expired terminal rows.
func (r *Retention) deleteByAge(ctx context.Context, cutoff int64, limit int) (int64, error) {
	return exec(ctx, r.DB, "delete by age", deleteByAgeSQL, cutoff, limit)
}

// deleteOverCap deletes up to limit terminal rows ranked beyond MaxRowsPerKey
// within their beer_id, and adds the beer ids it evicted from to keys. Only
// keys over the cap are ranked.
func (r *Retention) deleteOverCap(ctx context.Context, limit int, keys map[string]bool) (int64, error) {
	rows, err := r.DB.QueryContext(ctx, `DELETE FROM dlq_messages WHERE id IN (
		SELECT id FROM (
			SELECT id, ROW_NUMBER() OVER (PARTITION BY beer_id ORDER BY failed_at DESC, id DESC) AS rn
			FROM dlq_messages
			WHERE status IN ('acknowledged', 'replayed') AND beer_id IN (
				SELECT beer_id FROM dlq_messages WHERE status IN ('acknowledged', 'replayed')
				GROUP BY beer_id HAVING COUNT(*) > ?)
		) WHERE rn > ? LIMIT ?)
		RETURNING beer_id`, r.MaxRowsPerKey, r.MaxRowsPerKey, limit)
	if err != nil {
		return 0, fmt.Errorf("retention: delete over cap: %w", err)
	}
	defer rows.Close()
	var n int64
	for rows.Next() {
		var k string
		if err := rows.Scan(&k); err != nil {
			return n, fmt.Errorf("retention: delete over cap: %w", err)
		}
		keys[k] = true
		n++
	}
	if err := rows.Err(); err != nil {
		return n, fmt.Errorf("retention: delete over cap: %w", err)
	}
	return n, nil
}

// exec runs one statement and returns the rows it changed.
func exec(ctx context.Context, db *sql.DB, what, query string, args ...any) (int64, error) {
	res, err := db.ExecContext(ctx, query, args...)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", what, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("%s: rows affected: %w", what, err)
	}
	return n, nil
}

func sortedKeys(m map[string]bool, max int) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	if len(out) > max {
		out = out[:max]
	}
	return out
}
