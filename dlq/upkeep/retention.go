package upkeep

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"time"

	"github.com/redrive/redrive/config"
	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/jobs"
	"github.com/redrive/redrive/metrics"
)

// RetentionJobName is the name Retention records its runs under in job_runs
// (the dlq_cap_evicting alert reads its last summary).
const RetentionJobName = "dlq_retention"

// Counters Retention adds to.
var (
	CounterRetentionAge = metrics.Declare("dlq_retention_deleted_age_total",
		"DLQ rows deleted by retention because their acknowledge/replay is older than DLQ_RETENTION_DAYS.")
	CounterRetentionCap = metrics.Declare("dlq_retention_deleted_cap_total",
		"DLQ rows deleted by retention over the per-key cap DLQ_MAX_ROWS_PER_KEY.")
	CounterAttemptsExpired = metrics.Declare("attempts_expired_total",
		"message_attempts records deleted after ATTEMPT_RETENTION_DAYS.")
)

// Retention deletes what no one needs any more, in bounded batches (River's
// JobCleaner is the model). Its rules, in order:
//
//   - age: `acknowledged` and `replayed` DLQ rows whose action is older than
//     their pipeline's retention (MaxAge for queues no pipeline names). Rows
//     past the longest retention go whatever their queue; each shorter
//     retention deletes its pipelines' rows in the window between the two
//     (see expireWindows). The age counts from the action (acknowledged_at, replayed_at),
//     not from the failure: a row that failed long ago and was dismissed today
//     stays for the whole retention; rows without the action time (written
//     before it was recorded) fall back to failed_at;
//   - cap: per key (row_key), only the MaxRowsPerKey newest (failed_at, then id)
//     `acknowledged`/`replayed` rows are kept; older ones are evicted. A
//     beer can only go over the cap when one of its rows becomes terminal,
//     so each run looks only at the beers whose rows became terminal since
//     the previous run (see trimOverCap), not at every terminal row;
//   - attempts: message_attempts records older than AttemptMaxAge (the DLQ
//     consumer removes the ones it uses; what is left belongs to messages
//     that succeeded later).
//
// `pending` and `replaying` rows are never deleted: they need an operator
// (or the rescue job). Every statement is idempotent, so overlapping or
// repeated runs are harmless. What a run reads grows with what it deletes
// and with what changed since the previous run, never with the backlog
// (see expiry and trimOverCap; the plans are pinned by plan_test.go).
type Retention struct {
	DB  *sql.DB
	Log *slog.Logger
	// Database is DB's binding: a database other than the shared one
	// names the job dlq_retention:<binding> (JobName).
	Database string
	// Runs is the database of job_runs, where a run reads its previous
	// summary (the shared one); DB when nil.
	Runs *sql.DB
	// MaxAge is DLQ_RETENTION_DAYS: the retention of the rows of queues
	// no pipeline names, and of pipelines without retention_days.
	MaxAge time.Duration
	// Pipelines are the configured pipelines: each one's Retention
	// (retention_days) applies to the rows whose source_queue is its Queue.
	Pipelines []config.Pipeline
	// MaxRowsPerKey is DLQ_MAX_ROWS_PER_KEY.
	MaxRowsPerKey int
	// AttemptMaxAge is ATTEMPT_RETENTION_DAYS.
	AttemptMaxAge time.Duration
	// Limits bounds each run (batch size and wall-time budget).
	Limits jobs.Limits
	// Moving, when set, returns the queues of DB's pipelines whose rows
	// still lie in another database (a move into DB under way,
	// Databases.Elsewhere). While there are any, a run deletes nothing and
	// keeps its positions (summary waiting_for_moves): a copy deleted here
	// before its original is released would come back, as it was, with
	// the original's next import.
	Moving func(ctx context.Context) ([]string, error)
}

// Name implements jobs.Job.
func (r *Retention) Name() string { return dlq.JobName(RetentionJobName, r.Database) }

// waiting is the summary of a run that waits for moves into DB to end
// (see Moving): prev's positions, nothing deleted.
func (r *Retention) waiting(ctx context.Context, prev backlog, queues []string) map[string]any {
	r.Log.WarnContext(ctx, "dlq: retention waits until the moves into this database end (import, then release)",
		"database", r.Database, "queues", queues)
	return map[string]any{
		"deleted_age": 0, "deleted_cap": 0, "attempts_expired": 0,
		"more": false, "expired_left": nil, "behind_since": nil,
		"cycle_deleted_cap": 0, "cap_keys": []string{},
		"cap_scanned_to": prev.CapScannedTo, "cap_max_rows": prev.CapMaxRows,
		"age_scanned_to": prev.AgeScannedTo, "rescan_seq": prev.RescanSeq,
		"waiting_for_moves": queues,
	}
}

func (r *Retention) validate() error {
	if r.MaxAge <= 0 || r.MaxRowsPerKey <= 0 || r.AttemptMaxAge <= 0 {
		return errors.New("retention: MaxAge, MaxRowsPerKey and AttemptMaxAge must be positive")
	}
	return nil
}

// Run applies the three rules at now. Counts go to the counters table; the
// summary lists them and whether the budget ran out with rows left (more),
// and carries what the next run needs (see backlog): when more, the frequent
// cron runs the job again (jobs.WhileMore) until a run finishes.
//
// Summary: deleted_age, deleted_cap, attempts_expired (this run); more;
// expired_left (DLQ rows still past the longest retention, counted up to
// ExpiredLeftCountMax when the age rule ran out of budget, else 0);
// behind_since (scheduled time of the first run of an unfinished stretch,
// null once a run finishes); cycle_deleted_cap and cap_keys (evictions of
// the cycle and up to ten of the queues and keys they evicted from, as
// queue:key (capKey): a run that continues an
// unfinished one adds to them); cap_scanned_to and cap_max_rows (where the
// cap rule continues); age_scanned_to (where each shorter retention's
// window continues); rescan_seq (the newest rescan applied, rescanFrom).
func (r *Retention) Run(ctx context.Context, now time.Time) (map[string]any, error) {
	if err := r.validate(); err != nil {
		return nil, err
	}
	var errs []error
	prev, err := lastBacklog(ctx, dlq.RunsDB(r.Runs, r.DB), r.Name())
	if err != nil {
		errs = append(errs, fmt.Errorf("retention: %w", err))
	}
	if r.Moving != nil && err == nil {
		moving, err := r.Moving(ctx)
		if err != nil {
			return nil, fmt.Errorf("retention: %w", err)
		}
		if len(moving) > 0 {
			return r.waiting(ctx, prev, moving), nil
		}
	}
	rescanSeq, err := r.rescanFrom(ctx, &prev)
	if err != nil {
		errs = append(errs, err)
	}
	res, ruleErrs := r.applyRules(ctx, now, prev)
	errs = append(errs, ruleErrs...)

	sum := r.summary(now, prev, res, rescanSeq)
	if err := (metrics.Counters{DB: r.DB}).Add(ctx, map[string]int64{
		CounterRetentionAge: res.age, CounterRetentionCap: res.capped, CounterAttemptsExpired: res.attempts,
	}); err != nil {
		errs = append(errs, fmt.Errorf("retention: %w", err))
	}
	if res.capped > 0 {
		r.Log.WarnContext(ctx, "dlq: per-key cap evicted rows", "rows", res.capped, "max_rows_per_key", r.MaxRowsPerKey, "keys", sum["cap_keys"])
	}
	if res.more {
		r.Log.WarnContext(ctx, "dlq: retention budget spent with rows left; the frequent cron continues", "budget_ms", r.Limits.Budget.Milliseconds(),
			"expired_left", res.expiredLeft, "behind_since", sum["behind_since"])
	}
	return sum, errors.Join(errs...)
}

// ruleResults is what one run's three rules did: the rows each deleted,
// whether rows are left (more), and where the next run continues.
type ruleResults struct {
	age, capped, attempts int64
	// expiredLeft is the summary's expired_left (see Run).
	expiredLeft any
	more        bool
	// capScannedTo is where the cap rule continues (cap_scanned_to).
	capScannedTo int64
	// ageScannedTo is where each shorter retention's window continues
	// (age_scanned_to).
	ageScannedTo map[string]int64
	// keys are the queues and keys this run evicted from (capKey).
	keys map[string]bool
}

// applyRules starts the run's budget and applies the age, cap and attempts
// rules at now, continuing from prev, in that order. It returns what they
// did and the errors they met, in the order met; a rule that failed counts
// as having rows left.
func (r *Retention) applyRules(ctx context.Context, now time.Time, prev backlog) (ruleResults, []error) {
	var errs []error
	var res ruleResults
	b := r.Limits.Start()

	cutoff := now.Add(-r.longest()).UnixMilli()
	age, expiredLeft, moreAge, err := r.expireByAge(ctx, b, cutoff)
	if err != nil {
		errs = append(errs, err)
	}
	res.expiredLeft = expiredLeft

	windowed, windowsTo, moreWindows, err := r.expireWindows(ctx, b, now, cutoff, prev.AgeScannedTo)
	if err != nil {
		errs = append(errs, err)
	}
	res.age, res.ageScannedTo = age+windowed, windowsTo

	res.keys = map[string]bool{}
	from := r.capScanFrom(prev, now, cutoff)
	capped, scannedTo, moreCap, err := r.trimOverCap(ctx, b, from, now.UnixMilli(), res.keys)
	if err != nil {
		errs = append(errs, err)
		moreCap = true
	}
	res.capped, res.capScannedTo = capped, scannedTo

	attemptCutoff := now.Add(-r.AttemptMaxAge).UnixMilli()
	attempts, moreAttempts, err := b.Drain(ctx, expireAttempts.step(r.DB, attemptCutoff))
	if err != nil {
		errs = append(errs, err)
		moreAttempts = true
	}
	res.attempts = attempts

	res.more = moreAge || moreWindows || moreCap || moreAttempts
	return res, errs
}

// expireByAge applies the age rule past the longest retention (cutoff):
// it deletes expired acknowledged and replayed rows, then those without an
// action time, under the budget. It returns the rows deleted, expired_left
// (the expired rows still there, counted up to ExpiredLeftCountMax when the
// budget ran out, else 0; nil when unknown), and whether rows are left
// (true when unknown).
func (r *Retention) expireByAge(ctx context.Context, b *jobs.Budget, cutoff int64) (age int64, expiredLeft any, more bool, err error) {
	age, more, err = b.Drain(ctx, steps(
		expireAcknowledged.step(r.DB, cutoff),
		expireReplayed.step(r.DB, cutoff),
		func(ctx context.Context, limit int) (int64, error) {
			return exec(ctx, r.DB, "delete by age", deleteByAgeUntimedSQL, cutoff, limit)
		}))
	if err != nil {
		return age, nil, true, err // unknown: let the next run look again soon
	}
	if !more {
		return age, int64(0), false, nil
	}
	n, err := countUpTo(ctx, r.DB, "expired DLQ rows", expiredRowsSelect, cutoff, ExpiredLeftCountMax)
	if err != nil {
		return age, nil, true, fmt.Errorf("retention: %w", err)
	}
	return age, n, n > 0, nil
}

// summary is the run's summary (see Run) from what the rules did (res):
// a run that continues an unfinished cycle (prev.More) adds the cycle's
// earlier evictions and their keys to cycle_deleted_cap and cap_keys.
func (r *Retention) summary(now time.Time, prev backlog, res ruleResults, rescanSeq int64) map[string]any {
	cycleCap := res.capped
	if prev.More { // this run continues an unfinished cycle
		cycleCap += prev.CycleDeletedCap
		for _, k := range prev.CapKeys {
			res.keys[k] = true
		}
	}
	capKeys := sortedKeys(res.keys, 10)
	return map[string]any{
		"deleted_age": res.age, "deleted_cap": res.capped, "attempts_expired": res.attempts,
		"more": res.more, "expired_left": res.expiredLeft, "behind_since": prev.behindSince(now, res.more),
		"cycle_deleted_cap": cycleCap, "cap_keys": capKeys,
		"cap_scanned_to": res.capScannedTo, "cap_max_rows": r.MaxRowsPerKey,
		"age_scanned_to": res.ageScannedTo, "rescan_seq": rescanSeq,
	}
}

// The age rule's records: terminal rows by their action time, through
// idx_dlq_status_acknowledged_at and idx_dlq_status_replayed_at (see expiry).
var (
	expireAcknowledged = newExpiry("acknowledged DLQ rows", "dlq_messages", "status = 'acknowledged'", "acknowledged_at", "id")
	expireReplayed     = newExpiry("replayed DLQ rows", "dlq_messages", "status = 'replayed'", "replayed_at", "id")
	expireAttempts     = newExpiry("attempt records", "message_attempts", "", "recorded_at", "rowid")
)

// deleteByAgeUntimedSQL deletes up to ?2 terminal rows without an action
// time (none are written any more) whose failure is older than ?1. They are
// found in the same indexes (acknowledged_at IS NULL); +failed_at keeps
// idx_dlq_status_failed, which would visit every row of the status, out of
// the plan.
const deleteByAgeUntimedSQL = `DELETE FROM dlq_messages WHERE id IN (
	SELECT id FROM dlq_messages WHERE status = 'acknowledged' AND acknowledged_at IS NULL AND +failed_at < ?1
	UNION ALL SELECT id FROM dlq_messages WHERE status = 'replayed' AND replayed_at IS NULL AND +failed_at < ?1
	LIMIT ?2)`

// expiredRowsSelect is one row per DLQ row the age rule would delete at ?1,
// for the bounded count of what is left.
var expiredRowsSelect = expireAcknowledged.selectSQL + ` UNION ALL ` + expireReplayed.selectSQL + `
	UNION ALL SELECT 1 FROM dlq_messages WHERE status = 'acknowledged' AND acknowledged_at IS NULL AND +failed_at < ?1
	UNION ALL SELECT 1 FROM dlq_messages WHERE status = 'replayed' AND replayed_at IS NULL AND +failed_at < ?1`

// capRescan is how far before the previous run's position the cap rule
// looks again: an acknowledge or a replay computes its action time before
// its statement commits, so a row can become visible a little after a run
// scanned past its time. Beers seen twice are ranked twice, harmlessly.
const capRescan = 5 * time.Minute

// capScanFrom is the action time after which the cap rule looks for rows
// that became terminal: where the previous run stopped (less capRescan; a
// position after now, left by a run scheduled later, counts as now), but
// never before the age cutoff (older rows are the age rule's), and from the
// cutoff when there is no previous position or DLQ_MAX_ROWS_PER_KEY changed
// since (every beer is then checked again).
func (r *Retention) capScanFrom(prev backlog, now time.Time, cutoff int64) int64 {
	from := cutoff - 1
	if prev.CapScannedTo != nil && prev.CapMaxRows == r.MaxRowsPerKey {
		from = max(from, min(*prev.CapScannedTo, now.UnixMilli())-capRescan.Milliseconds())
	}
	return from
}

// capChunkSQL finds the end of the next chunk of rows that became terminal
// after ?1: the action time of the ?2-th of them, in action-time order
// (a merge of the two covering indexes, reading ?2 entries), and how many
// there are up to it. Rows sharing that time all belong to the chunk, so
// a chunk can outgrow ?2 by the rows of one millisecond (one bulk action at
// most); every chunk ends later than it starts, so the scan always advances.
const capChunkSQL = `SELECT MAX(t), COUNT(*) FROM (
	SELECT acknowledged_at AS t FROM dlq_messages WHERE status = 'acknowledged' AND acknowledged_at > ?1
	UNION ALL SELECT replayed_at FROM dlq_messages WHERE status = 'replayed' AND replayed_at > ?1
	ORDER BY 1 LIMIT ?2)`

// capDeleteSQL deletes up to ?4 terminal rows ranked beyond ?3 within
// their queue and key (source_queue, row_key; newest failed_at, then id,
// first), among the keys that have a row that became terminal in
// (?1, ?2]: order 42 and ticket 42 have a cap each, and so have each
// queue's poison rows (__unparseable__). Those keys are found through the
// status indexes, their rows through idx_dlq_beer_id (the queue read from
// the row); a bounded count (up to ?3 + 1 rows each) keeps the keys under
// the cap out of the ranking. What it reads grows with the chunk and the
// rows of its keys (about one read per row in workerd when none is over
// the cap, a quarter of what ranking them all read), never with the table.
const capDeleteSQL = `DELETE FROM dlq_messages WHERE id IN (
	SELECT id FROM (
		SELECT d.id, ROW_NUMBER() OVER (PARTITION BY d.source_queue, d.row_key ORDER BY d.failed_at DESC, d.id DESC) AS rn
		FROM (
			SELECT source_queue AS q, row_key AS k FROM (
				SELECT source_queue, row_key FROM dlq_messages WHERE status = 'acknowledged' AND acknowledged_at > ?1 AND acknowledged_at <= ?2
				UNION SELECT source_queue, row_key FROM dlq_messages WHERE status = 'replayed' AND replayed_at > ?1 AND replayed_at <= ?2) AS changed
			WHERE (SELECT COUNT(*) FROM (SELECT 1 FROM dlq_messages AS c
				WHERE c.row_key = changed.row_key AND +c.source_queue = changed.source_queue
					AND +c.status IN ('acknowledged', 'replayed') LIMIT ?3 + 1)) > ?3) AS over
		JOIN dlq_messages AS d ON d.row_key = over.k AND +d.source_queue = over.q
		WHERE +d.status IN ('acknowledged', 'replayed')
	) WHERE rn > ?3 LIMIT ?4)
	RETURNING source_queue, row_key`

// trimOverCap applies the cap rule to the beers whose rows became terminal
// after from, chunk by chunk in action-time order, each chunk's evictions in
// batches of the batch size, under the run's budget (the first chunk always
// runs). It returns the rows deleted, the action time up to which every
// beer was checked (now, when the scan reached the last terminal row; at
// most now), and whether it stopped with rows left to look at. Beers whose
// only terminal rows lack an action time (none are written any more) are
// not looked at; they age out.
func (r *Retention) trimOverCap(ctx context.Context, b *jobs.Budget, from, now int64, keys map[string]bool) (deleted, scannedTo int64, more bool, err error) {
	size := r.Limits.Chunk()
	for first := true; ; first = false {
		if !first && b.Spent() {
			return deleted, min(from, now), true, nil
		}
		var end sql.NullInt64
		var n int64
		if err := r.DB.QueryRowContext(ctx, capChunkSQL, from, size).Scan(&end, &n); err != nil {
			return deleted, min(from, now), false, fmt.Errorf("retention: cap chunk: %w", err)
		}
		if n == 0 || !end.Valid {
			return deleted, now, false, nil
		}
		for {
			d, err := r.deleteOverCap(ctx, from, end.Int64, size, keys)
			deleted += d
			if err != nil {
				return deleted, min(from, now), false, err
			}
			if d < int64(size) {
				break
			}
			if b.Spent() { // this chunk is looked at again by the next run
				return deleted, min(from, now), true, nil
			}
		}
		from = end.Int64
		if n < int64(size) {
			return deleted, now, false, nil
		}
	}
}

// deleteOverCap deletes up to limit terminal rows ranked beyond
// MaxRowsPerKey within the queues and keys of the chunk (from, to], and
// adds each queue and key it evicted from to keys (capKey).
func (r *Retention) deleteOverCap(ctx context.Context, from, to int64, limit int, keys map[string]bool) (int64, error) {
	rows, err := r.DB.QueryContext(ctx, capDeleteSQL, from, to, r.MaxRowsPerKey, limit)
	if err != nil {
		return 0, fmt.Errorf("retention: delete over cap: %w", err)
	}
	defer rows.Close()
	var n int64
	for rows.Next() {
		var q, k string
		if err := rows.Scan(&q, &k); err != nil {
			return n, fmt.Errorf("retention: delete over cap: %w", err)
		}
		keys[capKey(q, k)] = true
		n++
	}
	if err := rows.Err(); err != nil {
		return n, fmt.Errorf("retention: delete over cap: %w", err)
	}
	return n, nil
}

// capKey names a key the cap evicted from in the summary's cap_keys and
// the dlq_cap_evicting alert: its queue, a colon, the key (queue names
// have no colon; a key may).
func capKey(queue, key string) string { return queue + ":" + key }

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
