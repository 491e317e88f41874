package dlq

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/redrive/redrive/sqlbatch"
)

// TallyJobName is the name TallyCheck records its runs under.
const TallyJobName = "dlq_tally"

// activityKeep is how long dlq_activity keeps an hour: last_24h needs the
// hours of the last day; older hours are folded into the archive row (their
// capture events stay in dlq_captured_total) and deleted.
const activityKeep = 48 * time.Hour

// TallyCheck is the daily job that keeps dlq_tally and dlq_activity exact
// where no trigger can: retention deletes acknowledged and replayed rows
// without a trigger (one would double the rows it writes, and D1 would add
// the trigger's writes to the changes it reports), so after it the counts
// of those two statuses, and the hours of the last day, are counted again
// from the rows. It also drops counts that reached zero and folds hours
// older than two days into the archive. It runs after the retention jobs.
//
// What it reads grows with the acknowledged and replayed rows (one index
// entry each) and the rows of the last day: once a day. It writes a row per
// count it sets (a few dozen).
type TallyCheck struct {
	DB *sql.DB
	// Batch runs its statements together; a transaction on DB when nil.
	Batch sqlbatch.Runner
}

// Name implements handlers.Job.
func (j *TallyCheck) Name() string { return TallyJobName }

// Run recounts at now.
func (j *TallyCheck) Run(ctx context.Context, now time.Time) (map[string]any, error) {
	out, err := batchOf(j.Batch, j.DB).Batch(ctx, RecountStatements(now, false)...)
	if err != nil {
		return nil, fmt.Errorf("dlq tally: %w", err)
	}
	return map[string]any{"statements": len(out)}, nil
}

// RecountStatements are the statements that set dlq_tally and dlq_activity
// from the rows: the acknowledged and replayed counts and the hours from a
// day before now (all counts when full: after rows were changed or deleted
// in bulk by hand, as the bench does after seeding), then the pruning.
func RecountStatements(now time.Time, full bool) []sqlbatch.Stmt {
	from := now.Add(-25*time.Hour).UnixMilli() / hourMS
	keep := now.Add(-activityKeep).UnixMilli() / hourMS
	statuses := `'replayed', 'acknowledged'`
	if full {
		statuses = `'pending', 'replaying', 'replayed', 'acknowledged'`
		from = keep
	}
	return []sqlbatch.Stmt{
		{SQL: `UPDATE dlq_tally SET n = 0 WHERE status IN (` + statuses + `) AND n <> 0`},
		{SQL: `INSERT INTO dlq_tally(status, source_queue, brewer_key, n)
			SELECT status, source_queue, ` + brewerKeySQL("status") + `, COUNT(*) FROM dlq_messages
			WHERE status IN (` + statuses + `) GROUP BY 1, 2, 3
			ON CONFLICT(status, source_queue, brewer_key) DO UPDATE SET n = excluded.n`},
		{SQL: `DELETE FROM dlq_tally WHERE n = 0`},
		{SQL: `UPDATE dlq_activity SET n = 0 WHERE hour >= ? AND n <> 0`, Args: []any{from}},
		{SQL: `INSERT INTO dlq_activity(kind, hour, n, events)
			SELECT 'failed', CAST(failed_at AS INTEGER) / 3600000 AS h, COUNT(*), 0 FROM dlq_messages
			WHERE status IN ('pending', 'replaying', 'replayed', 'acknowledged') AND failed_at >= CAST(? AS INTEGER) * 3600000 GROUP BY h
			ON CONFLICT(kind, hour) DO UPDATE SET n = excluded.n`, Args: []any{from}},
		{SQL: `INSERT INTO dlq_activity(kind, hour, n, events)
			SELECT 'replayed', CAST(replayed_at AS INTEGER) / 3600000 AS h, COUNT(*), 0 FROM dlq_messages
			WHERE status = 'replayed' AND replayed_at >= CAST(? AS INTEGER) * 3600000 GROUP BY h
			ON CONFLICT(kind, hour) DO UPDATE SET n = excluded.n`, Args: []any{from}},
		{SQL: `INSERT INTO dlq_activity(kind, hour, n, events)
			SELECT 'acknowledged', CAST(acknowledged_at AS INTEGER) / 3600000 AS h, COUNT(*), 0 FROM dlq_messages
			WHERE status = 'acknowledged' AND acknowledged_at >= CAST(? AS INTEGER) * 3600000 GROUP BY h
			ON CONFLICT(kind, hour) DO UPDATE SET n = excluded.n`, Args: []any{from}},
		// Hours older than activityKeep: their capture events go to the
		// archive row (hour -1), then they are deleted.
		{SQL: `INSERT INTO dlq_activity(kind, hour, n, events)
			SELECT 'failed', -1, 0, SUM(events) FROM dlq_activity WHERE kind = 'failed' AND hour >= 0 AND hour < ? HAVING SUM(events) > 0
			ON CONFLICT(kind, hour) DO UPDATE SET events = events + excluded.events`, Args: []any{keep}},
		{SQL: `DELETE FROM dlq_activity WHERE hour >= 0 AND (hour < ? OR (n = 0 AND events = 0))`, Args: []any{keep}},
	}
}
