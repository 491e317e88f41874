package upkeep

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/sqlbatch"
)

// TallyJobName is the name TallyCheck records its runs under.
const TallyJobName = "dlq_tally"

// activityKeep is how long dlq_activity keeps an hour: last_24h needs the
// hours of the last day and the console's chart (TimeSeries) those of the
// last SeriesHours; older hours are folded into the archive row (their
// capture events stay in dlq_captured_total) and deleted.
const activityKeep = dlq.SeriesHours * time.Hour

// TallyCheck is the daily job that keeps dlq_tally, dlq_activity and the
// acknowledged and replayed counts of dlq_signatures exact
// where no trigger can: retention deletes acknowledged and replayed rows
// without a trigger (one would double the rows it writes, and D1 would add
// the trigger's writes to the changes it reports). So when retention has
// deleted rows since its last run (its counters dlq_retention_deleted_*
// grew), it counts those two statuses again from the rows; when the per-key
// cap evicted rows (which can be recent), it also counts the hours of the
// last day again (retention by age deletes only rows older than a day,
// which no hour last_24h reads holds). It always drops counts that reached
// zero and folds hours older than activityKeep (8 days) into the archive. It runs after
// the retention jobs.
//
// What it reads: a few rows when retention deleted nothing; otherwise about
// 3 per acknowledged or replayed row, and with cap evictions about 3 per row
// of the last 25 hours (docs/costs.md "What it costs"). It writes a row per count
// it sets (a few dozen).
type TallyCheck struct {
	DB *sql.DB
	// Database is DB's binding (JobName); Runs the database of job_runs,
	// where a run reads what the previous one saw (DB when nil; another
	// database costs a second statement, the same rows).
	Database string
	Runs     *sql.DB
	// Batch runs its statements together; a transaction on DB when nil.
	Batch sqlbatch.Runner
}

// Name implements jobs.Job.
func (j *TallyCheck) Name() string { return dlq.JobName(TallyJobName, j.Database) }

// tallySeenSQL reads retention's deletion counters and what the previous
// run of this job saw of them (its summary; -1 when it never ran).
const tallySeenSQL = `SELECT
	COALESCE((SELECT value FROM counters WHERE name = ?1), 0) + COALESCE((SELECT value FROM counters WHERE name = ?2), 0) AS deleted,
	COALESCE((SELECT value FROM counters WHERE name = ?2), 0) AS capped,
	COALESCE((SELECT CAST(last_summary ->> '$.retention_deleted' AS INTEGER) FROM job_runs WHERE job = ?3), -1) AS seen_deleted,
	COALESCE((SELECT CAST(last_summary ->> '$.retention_capped' AS INTEGER) FROM job_runs WHERE job = ?3), -1) AS seen_capped`

// tallyCountersSQL and tallyLastSeenSQL are tallySeenSQL's two halves, for
// a database whose job_runs is elsewhere.
const (
	tallyCountersSQL = `SELECT
	COALESCE((SELECT value FROM counters WHERE name = ?1), 0) + COALESCE((SELECT value FROM counters WHERE name = ?2), 0) AS deleted,
	COALESCE((SELECT value FROM counters WHERE name = ?2), 0) AS capped`
	tallyLastSeenSQL = `SELECT
	COALESCE((SELECT CAST(last_summary ->> '$.retention_deleted' AS INTEGER) FROM job_runs WHERE job = ?1), -1) AS seen_deleted,
	COALESCE((SELECT CAST(last_summary ->> '$.retention_capped' AS INTEGER) FROM job_runs WHERE job = ?1), -1) AS seen_capped`
)

// Run recounts at now what retention's deletions since the previous run
// made stale.
func (j *TallyCheck) Run(ctx context.Context, now time.Time) (map[string]any, error) {
	var deleted, capped, seenDeleted, seenCapped int64
	if j.Runs == nil || j.Runs == j.DB {
		if err := j.DB.QueryRowContext(ctx, tallySeenSQL, CounterRetentionAge, CounterRetentionCap, j.Name()).
			Scan(&deleted, &capped, &seenDeleted, &seenCapped); err != nil {
			return nil, fmt.Errorf("dlq tally: %w", err)
		}
	} else {
		// Retention's counters are in DB, this job's last summary in Runs.
		if err := j.DB.QueryRowContext(ctx, tallyCountersSQL, CounterRetentionAge, CounterRetentionCap).
			Scan(&deleted, &capped); err != nil {
			return nil, fmt.Errorf("dlq tally: %w", err)
		}
		if err := j.Runs.QueryRowContext(ctx, tallyLastSeenSQL, j.Name()).Scan(&seenDeleted, &seenCapped); err != nil {
			return nil, fmt.Errorf("dlq tally: %w", err)
		}
	}
	statuses, hours := deleted != seenDeleted, capped != seenCapped
	if _, err := dlq.BatchOf(j.Batch, j.DB).Batch(ctx, recountStatements(now, statuses, hours, false)...); err != nil {
		return nil, fmt.Errorf("dlq tally: %w", err)
	}
	return map[string]any{"retention_deleted": deleted, "retention_capped": capped,
		"recounted_statuses": statuses, "recounted_hours": hours}, nil
}

// RecountStatements are the statements that set all of dlq_tally and the
// last activityKeep of dlq_activity from the rows, then prune: after rows were
// changed or deleted in bulk by hand (the bench runs them after seeding).
func RecountStatements(now time.Time) []sqlbatch.Stmt {
	return recountStatements(now, true, true, true)
}

// signatureRecount counts the acknowledged and replayed rows of every
// signature again (every status when full): retention deletes those rows
// without a trigger, as for dlq_tally. It reads the rows it counts once.
func signatureRecount(full bool) []sqlbatch.Stmt {
	cols := []string{"replayed", "acknowledged"}
	if full {
		cols = []string{"pending", "replaying", "replayed", "acknowledged"}
	}
	var zero, nonzero, set, sums, in []string
	for _, c := range cols {
		zero = append(zero, c+" = 0")
		nonzero = append(nonzero, c+" <> 0")
		set = append(set, c+" = c."+c)
		sums = append(sums, "SUM(status = '"+c+"') AS "+c)
		in = append(in, "'"+c+"'")
	}
	return []sqlbatch.Stmt{
		{SQL: `UPDATE dlq_signatures SET ` + strings.Join(zero, ", ") + ` WHERE ` + strings.Join(nonzero, " OR ")},
		{SQL: `UPDATE dlq_signatures SET ` + strings.Join(set, ", ") + `
			FROM (SELECT signature AS sig, ` + strings.Join(sums, ", ") + ` FROM dlq_messages
				WHERE status IN (` + strings.Join(in, ", ") + `) AND signature IS NOT NULL GROUP BY signature) AS c
			WHERE dlq_signatures.signature = c.sig`},
	}
}

// recountStatements counts again: the acknowledged and replayed counts
// (statuses; every status when full), the hours from 25 hours before now
// (hours; all activityKeep when full), then prunes.
func recountStatements(now time.Time, statuses, hours, full bool) []sqlbatch.Stmt {
	from := now.Add(-25*time.Hour).UnixMilli() / dlq.HourMS
	keep := now.Add(-activityKeep).UnixMilli() / dlq.HourMS
	which := `'replayed', 'acknowledged'`
	if full {
		which = `'pending', 'replaying', 'replayed', 'acknowledged'`
		from = keep
	}
	var out []sqlbatch.Stmt
	if statuses {
		out = append(out,
			sqlbatch.Stmt{SQL: `UPDATE dlq_tally SET n = 0 WHERE status IN (` + which + `) AND n <> 0`},
			sqlbatch.Stmt{SQL: `INSERT INTO dlq_tally(status, source_queue, label_key, n)
				SELECT status, source_queue, ` + dlq.LabelKeySQL("status") + `, COUNT(*) FROM dlq_messages
				WHERE status IN (` + which + `) GROUP BY 1, 2, 3
				ON CONFLICT(status, source_queue, label_key) DO UPDATE SET n = excluded.n`})
		out = append(out, signatureRecount(full)...)
	}
	if hours {
		out = append(out,
			sqlbatch.Stmt{SQL: `UPDATE dlq_activity SET n = 0 WHERE hour >= ? AND n <> 0`, Args: []any{from}},
			sqlbatch.Stmt{SQL: `INSERT INTO dlq_activity(kind, hour, source_queue, n, events)
				SELECT 'failed', CAST(failed_at AS INTEGER) / 3600000 AS h, source_queue, COUNT(*), 0 FROM dlq_messages
				WHERE status IN ('pending', 'replaying', 'replayed', 'acknowledged') AND failed_at >= CAST(? AS INTEGER) * 3600000 GROUP BY h, source_queue
				ON CONFLICT(kind, hour, source_queue) DO UPDATE SET n = excluded.n`, Args: []any{from}},
			sqlbatch.Stmt{SQL: `INSERT INTO dlq_activity(kind, hour, source_queue, n, events)
				SELECT 'replayed', CAST(replayed_at AS INTEGER) / 3600000 AS h, source_queue, COUNT(*), 0 FROM dlq_messages
				WHERE status = 'replayed' AND replayed_at >= CAST(? AS INTEGER) * 3600000 GROUP BY h, source_queue
				ON CONFLICT(kind, hour, source_queue) DO UPDATE SET n = excluded.n`, Args: []any{from}},
			sqlbatch.Stmt{SQL: `INSERT INTO dlq_activity(kind, hour, source_queue, n, events)
				SELECT 'acknowledged', CAST(acknowledged_at AS INTEGER) / 3600000 AS h, source_queue, COUNT(*), 0 FROM dlq_messages
				WHERE status = 'acknowledged' AND acknowledged_at >= CAST(? AS INTEGER) * 3600000 GROUP BY h, source_queue
				ON CONFLICT(kind, hour, source_queue) DO UPDATE SET n = excluded.n`, Args: []any{from}})
	}
	return append(out,
		sqlbatch.Stmt{SQL: `DELETE FROM dlq_tally WHERE n = 0`},
		// Hours older than activityKeep: their capture events go to the
		// archive row (hour -1), then they are deleted.
		sqlbatch.Stmt{SQL: `INSERT INTO dlq_activity(kind, hour, source_queue, n, events)
			SELECT 'failed', -1, source_queue, 0, SUM(events) FROM dlq_activity WHERE kind = 'failed' AND hour >= 0 AND hour < ?
			GROUP BY source_queue HAVING SUM(events) <> 0
			ON CONFLICT(kind, hour, source_queue) DO UPDATE SET events = events + excluded.events`, Args: []any{keep}},
		sqlbatch.Stmt{SQL: `DELETE FROM dlq_activity WHERE hour >= 0 AND (hour < ? OR (n = 0 AND events = 0))`, Args: []any{keep}})
}
