package upkeep

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/redrive/redrive/alerts"
	"github.com/redrive/redrive/config"
	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/dlq/resolve"
)

// PendingHigh fires while more than Threshold DLQ rows are `pending`
// (ALERT_PENDING_THRESHOLD).
type PendingHigh struct {
	DB        *sql.DB
	Threshold int64
	// Pipeline and Queue, when set, make it the alert of one pipeline
	// (dlq_pending_high:<Pipeline>) over the rows of Queue; Exclude, when
	// set, leaves the rows of those queues out (the beer pipeline's alert
	// beside other pipelines: PipelineAlerts).
	Pipeline, Queue string
	Exclude         []string
}

// Name implements Condition.
func (c PendingHigh) Name() string {
	if c.Pipeline != "" {
		return "dlq_pending_high:" + c.Pipeline
	}
	return "dlq_pending_high"
}

// countBeyond is how far past a threshold an alert's count goes on counting
// for its detail: enough to tell a few rows over from a flood, without
// reading the flood (each row counted is a row read, every 5 minutes).
const countBeyond = 100

// pendingHighSQL counts pending rows up to ?: a range of idx_dlq_status_failed
// that stops there, whatever the backlog.
const pendingHighSQL = `SELECT COUNT(*) FROM (SELECT 1 FROM dlq_messages WHERE status = 'pending' LIMIT ?)`

// Check implements Condition. It reads at most Threshold + 101 index entries.
func (c PendingHigh) Check(ctx context.Context, _ time.Time) (bool, string, error) {
	if c.Queue != "" || len(c.Exclude) > 0 {
		return c.checkPipeline(ctx)
	}
	var n int64
	bound := c.Threshold + 1 + countBeyond
	if err := c.DB.QueryRowContext(ctx, pendingHighSQL, bound).Scan(&n); err != nil {
		return false, "", fmt.Errorf("count pending: %w", err)
	}
	return n > c.Threshold, fmt.Sprintf("%s DLQ rows pending (threshold %d)", atLeast(n, bound), c.Threshold), nil
}

// atLeast is n, or "at least n" when counting stopped at bound.
func atLeast(n, bound int64) string {
	if n >= bound {
		return fmt.Sprintf("at least %d", n)
	}
	return fmt.Sprint(n)
}

// OldestPending fires while the oldest `pending` DLQ row failed more than
// MaxAge ago (ALERT_OLDEST_HOURS).
type OldestPending struct {
	DB     *sql.DB
	MaxAge time.Duration
	// Pipeline, Queue and Exclude: as PendingHigh's
	// (dlq_oldest_pending:<Pipeline>).
	Pipeline, Queue string
	Exclude         []string
}

// Name implements Condition.
func (c OldestPending) Name() string {
	if c.Pipeline != "" {
		return "dlq_oldest_pending:" + c.Pipeline
	}
	return "dlq_oldest_pending"
}

// Check implements Condition.
func (c OldestPending) Check(ctx context.Context, now time.Time) (bool, string, error) {
	if c.Queue != "" || len(c.Exclude) > 0 {
		return c.checkPipeline(ctx, now)
	}
	var oldest sql.NullInt64
	if err := c.DB.QueryRowContext(ctx, `SELECT MIN(failed_at) FROM dlq_messages WHERE status = 'pending'`).Scan(&oldest); err != nil {
		return false, "", fmt.Errorf("oldest pending: %w", err)
	}
	if !oldest.Valid {
		return false, fmt.Sprintf("no pending DLQ rows (threshold %s)", c.MaxAge), nil
	}
	age := now.Sub(time.UnixMilli(oldest.Int64))
	return age > c.MaxAge, fmt.Sprintf("oldest pending DLQ row failed %s ago at %s (threshold %s)",
		age.Round(time.Second), alerts.Stamp(oldest.Int64), c.MaxAge), nil
}

// RepeatFailures fires while `pending` DLQ rows have been replayed more than
// MaxReplays times (replay_count > 2 as shipped; docs/operations.md "Alerts"): replaying them
// does not help.
type RepeatFailures struct {
	DB         *sql.DB
	MaxReplays int64
	// Database is DB's binding (JobName names the alert).
	Database string
}

// Name implements Condition.
func (c RepeatFailures) Name() string { return dlq.JobName("dlq_repeat_failures", c.Database) }

// repeatFailuresSQL names the (at most five) pending rows replayed more
// than ?1 times most often, and counts them up to ?2, through
// idx_dlq_pending_replay_count (only pending rows replayed before are in
// it) from its end (most replays): the count reads the ?2 entries replayed
// most and keeps those over ?1, the names read the five rows replayed most
// and keep those over ?1 (rows over ?1 come first in that order). So it
// reads at most ?2 index entries and five rows, whatever the backlog. (With
// "replay_count > ?1" in the ranges instead, SQLite keeps the range the
// partial index needs, "replay_count > 0", and tests ?1 on each entry:
// when fewer than ?2 rows were over ?1 it read every pending row replayed
// at all, 70,000 rows a run in workerd at 100,000 rows.)
const repeatFailuresSQL = `SELECT
	(SELECT COUNT(*) FROM (SELECT replay_count FROM dlq_messages INDEXED BY idx_dlq_pending_replay_count
		WHERE status = 'pending' AND replay_count > 0 ORDER BY replay_count DESC LIMIT ?2) WHERE replay_count > ?1) AS total,
	(SELECT json_group_array(json_array(row_key, replay_count)) FROM (
		SELECT row_key, replay_count FROM dlq_messages INDEXED BY idx_dlq_pending_replay_count
		WHERE status = 'pending' AND replay_count > 0 ORDER BY replay_count DESC, id DESC LIMIT 5) WHERE replay_count > ?1) AS top`

// Check implements Condition; the detail names up to five beer ids (most
// replays first, then the newest rows).
func (c RepeatFailures) Check(ctx context.Context, _ time.Time) (bool, string, error) {
	var total int64
	var top string
	bound := int64(countBeyond)
	if err := c.DB.QueryRowContext(ctx, repeatFailuresSQL, c.MaxReplays, bound).Scan(&total, &top); err != nil {
		return false, "", fmt.Errorf("repeat failures: %w", err)
	}
	var rows [][2]json.RawMessage
	if err := json.Unmarshal([]byte(top), &rows); err != nil {
		return false, "", fmt.Errorf("repeat failures: %w", err)
	}
	var ids []string
	for _, r := range rows {
		var beer string
		var replays int64
		if json.Unmarshal(r[0], &beer) != nil || json.Unmarshal(r[1], &replays) != nil {
			return false, "", fmt.Errorf("repeat failures: row %s", top)
		}
		ids = append(ids, fmt.Sprintf("%s (%d replays)", beer, replays))
	}
	if total == 0 {
		return false, fmt.Sprintf("no pending DLQ rows replayed more than %d times", c.MaxReplays), nil
	}
	return true, fmt.Sprintf("%s pending DLQ rows replayed more than %d times: %s", atLeast(total, bound), c.MaxReplays, strings.Join(ids, ", ")), nil
}

// CapEvicting fires while the last retention cycle evicted rows over the
// per-key cap (DLQ_MAX_ROWS_PER_KEY): some beer keeps failing and its oldest
// history is being lost. A cycle is the daily run and the runs of the
// frequent cron that continue it while it has rows left (their evictions
// add up in cycle_deleted_cap), so a catch-up run that evicts nothing does
// not hide what the daily run did. It resolves after a cycle that evicts none.
type CapEvicting struct {
	// DB is the database of job_runs (the shared one).
	DB *sql.DB
	// Database is the binding whose retention job it reads
	// (JobName(RetentionJobName, Database)); JobName names the alert.
	Database string
}

// Name implements Condition.
func (c CapEvicting) Name() string { return dlq.JobName("dlq_cap_evicting", c.Database) }

// Check implements Condition; it reads the retention job's last summary.
func (c CapEvicting) Check(ctx context.Context, _ time.Time) (bool, string, error) {
	var at sql.NullInt64
	var evicted sql.NullInt64
	var keys sql.NullString
	err := c.DB.QueryRowContext(ctx, `SELECT last_run_at, COALESCE(last_summary ->> '$.cycle_deleted_cap', last_summary ->> '$.deleted_cap'),
		last_summary ->> '$.cap_keys' FROM job_runs WHERE job = ?`, dlq.JobName(RetentionJobName, c.Database)).Scan(&at, &evicted, &keys)
	if err == sql.ErrNoRows {
		return false, "retention has not run yet", nil
	}
	if err != nil {
		return false, "", fmt.Errorf("cap evicting: %w", err)
	}
	if evicted.Int64 <= 0 {
		return false, fmt.Sprintf("the retention cycle up to the run at %s evicted no rows over the per-key cap", alerts.Stamp(at.Int64)), nil
	}
	return true, fmt.Sprintf("the retention cycle up to the run at %s evicted %d rows over the per-key cap; queue:key %s",
		alerts.Stamp(at.Int64), evicted.Int64, keys.String), nil
}

// RetentionBehindName is the retention_behind alert's name.
const RetentionBehindName = "retention_behind"

// RetentionBehind fires while a retention job (dlq_retention,
// audit_retention) has been behind for longer than After
// (RETENTION_BEHIND_ALERT_MINUTES): every run since behind_since (the
// scheduled time of the first run that ended with expired rows left) ended
// with rows left, although the frequent cron continues the job every few
// minutes. Expired rows are then piling up faster than retention deletes
// them. Exactly After is not yet behind. It resolves once a run finishes.
// One job_runs row read per job.
type RetentionBehind struct {
	// DB is the database of job_runs (the shared one).
	DB    *sql.DB
	After time.Duration
	// Database is the binding whose retention jobs it reads (their
	// JobName); JobName names the alert.
	Database string
}

// Name implements Condition.
func (c RetentionBehind) Name() string { return dlq.JobName(RetentionBehindName, c.Database) }

// retentionBehindSQL reads the retention jobs' backlog state by primary key.
const retentionBehindSQL = `SELECT job, last_run_at, CAST(last_summary ->> '$.behind_since' AS INTEGER),
	CAST(last_summary ->> '$.expired_left' AS INTEGER) FROM job_runs WHERE job IN (?1, ?2) ORDER BY job`

// Check implements Condition; the detail names each job that is behind,
// since when, and how many expired rows its last run left (counted up to
// ExpiredLeftCountMax).
func (c RetentionBehind) Check(ctx context.Context, now time.Time) (bool, string, error) {
	rows, err := c.DB.QueryContext(ctx, retentionBehindSQL, dlq.JobName(RetentionJobName, c.Database), dlq.JobName(AuditRetentionJobName, c.Database))
	if err != nil {
		return false, "", fmt.Errorf("retention behind: %w", err)
	}
	defer rows.Close()
	var behind, catching []string
	for rows.Next() {
		var job string
		var at int64
		var since, left sql.NullInt64
		if err := rows.Scan(&job, &at, &since, &left); err != nil {
			return false, "", fmt.Errorf("retention behind: %w", err)
		}
		if !since.Valid {
			continue
		}
		d := now.Sub(time.UnixMilli(since.Int64))
		leftText := "an unknown number of"
		if left.Valid {
			leftText = fmt.Sprint(left.Int64)
			if left.Int64 >= ExpiredLeftCountMax {
				leftText = fmt.Sprintf("at least %d", left.Int64)
			}
		}
		line := fmt.Sprintf("%s has had expired rows left since %s (%s; threshold %s): %s left after its run at %s",
			job, alerts.Stamp(since.Int64), d.Round(time.Second), c.After, leftText, alerts.Stamp(at))
		if d > c.After {
			behind = append(behind, line)
		} else {
			catching = append(catching, line)
		}
	}
	if err := rows.Err(); err != nil {
		return false, "", fmt.Errorf("retention behind: %w", err)
	}
	if len(behind) > 0 {
		return true, strings.Join(behind, "; "), nil
	}
	if len(catching) > 0 {
		return false, "catching up: " + strings.Join(catching, "; "), nil
	}
	return false, "every retention job's last run finished", nil
}

// ReplayCanaryFailed fires while a replay task whose canary failed is
// paused (docs/admin-api.md "Canary"): its detail names the tasks, their canary
// ratios and the failure reasons. It resolves when the task is resumed or
// cancelled. One read of replay_tasks (a handful of rows).
type ReplayCanaryFailed struct {
	DB *sql.DB
	// Database is DB's binding (JobName names the alert).
	Database string
}

// ReplayCanaryFailedName is the alert's name.
const ReplayCanaryFailedName = "replay_canary_failed"

// Name implements Condition.
func (c ReplayCanaryFailed) Name() string { return dlq.JobName(ReplayCanaryFailedName, c.Database) }

// Check implements Condition.
func (c ReplayCanaryFailed) Check(ctx context.Context, _ time.Time) (bool, string, error) {
	rows, err := c.DB.QueryContext(ctx, `SELECT id, canary, canary_result FROM replay_tasks
		WHERE state = 'paused' AND canary_result ->> '$.passed' = 0 ORDER BY id DESC LIMIT 5`)
	if err != nil {
		return false, "", fmt.Errorf("replay canaries: %w", err)
	}
	defer rows.Close()
	var parts []string
	for rows.Next() {
		var id int64
		var cj, rj string
		if err := rows.Scan(&id, &cj, &rj); err != nil {
			return false, "", fmt.Errorf("replay canaries: %w", err)
		}
		var can resolve.Canary
		var res resolve.CanaryResult
		_ = json.Unmarshal([]byte(cj), &can)
		_ = json.Unmarshal([]byte(rj), &res)
		parts = append(parts, fmt.Sprintf("replay task %d paused: canary %d/%d succeeded (ratio %.2f < %.2f), %d failed again: %s",
			id, res.Succeeded, res.Sent, res.Ratio, can.MinSuccessRatio, res.FailedAgain, strings.Join(res.Reasons, "; ")))
	}
	if err := rows.Err(); err != nil {
		return false, "", fmt.Errorf("replay canaries: %w", err)
	}
	if len(parts) == 0 {
		return false, "no replay task paused by its canary", nil
	}
	return true, strings.Join(parts, " | "), nil
}

// backlogKind is the events of a pipeline's backlog alerts.
func backlogKind(pipeline string) alerts.Kind {
	if pipeline == "" {
		pipeline = config.BeerPipeline().Name
	}
	return alerts.Kind{Fire: alerts.BacklogHigh, Resolve: alerts.BacklogRecovered, Pipeline: pipeline, Severity: "warning"}
}

// Kind implements alerts.Described: pipeline.backlog_high and _recovered.
func (c PendingHigh) Kind() alerts.Kind { return backlogKind(c.Pipeline) }

// Kind implements alerts.Described: pipeline.backlog_high and _recovered.
func (c OldestPending) Kind() alerts.Kind { return backlogKind(c.Pipeline) }
