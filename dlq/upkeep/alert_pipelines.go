package upkeep

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"github.com/redrive/redrive/alerts"
	"github.com/redrive/redrive/config"
)

// PipelineAlerts are the pending-high and oldest-pending alerts of the
// configured pipelines (their thresholds: config.Pipeline). The beer
// pipeline's keep their names (dlq_pending_high, dlq_oldest_pending) and
// cover every queue no other pipeline names (the beer queue, and queues
// routed to redrive by wrangler.jsonc only), as before pipelines; with
// the beer pipeline alone they are exactly today's. Each other pipeline
// has dlq_pending_high:<name> and dlq_oldest_pending:<name> over its queue.
// pending and oldest are the global thresholds, for the beer alerts when
// PIPELINES leaves the beer pipeline out.
func PipelineAlerts(db *sql.DB, ps []config.Pipeline, pending int64, oldest time.Duration) []alerts.Condition {
	var others []string
	for _, p := range ps {
		if !p.IsBeer() {
			others = append(others, p.Queue)
		}
	}
	beers := []alerts.Condition{PendingHigh{DB: db, Threshold: pending, Exclude: others}, OldestPending{DB: db, MaxAge: oldest, Exclude: others}}
	var out []alerts.Condition
	for _, p := range ps {
		if p.IsBeer() {
			beers = []alerts.Condition{PendingHigh{DB: db, Threshold: p.AlertPendingThreshold, Exclude: others},
				OldestPending{DB: db, MaxAge: p.AlertOldestPending, Exclude: others}}
			continue
		}
		out = append(out, PendingHigh{DB: db, Threshold: p.AlertPendingThreshold, Pipeline: p.Name, Queue: p.Queue},
			OldestPending{DB: db, MaxAge: p.AlertOldestPending, Pipeline: p.Name, Queue: p.Queue})
	}
	return append(beers, out...)
}

// tallyRowsMax bounds the dlq_tally rows one pipeline's pending count
// reads (a row per label-2 value of its pending rows): past it the count
// is a lower bound ("at least").
const tallyRowsMax = 1000

// pipelineCond is the source_queue condition of a pipeline alert (?1):
// its queue, or every queue but Exclude (a JSON list).
func pipelineCond(queue string, exclude []string) (string, any) {
	if queue != "" {
		return "source_queue = ?1", queue
	}
	js, _ := json.Marshal(exclude)
	if exclude == nil {
		js = []byte("[]")
	}
	return "source_queue NOT IN (SELECT value FROM json_each(?1))", string(js)
}

// checkPipeline is PendingHigh.Check for a pipeline (or the beer alerts
// with exclusions): the pending rows kept in dlq_tally for its queues, at
// most tallyRowsMax tally rows read.
func (c PendingHigh) checkPipeline(ctx context.Context) (bool, string, error) {
	cond, arg := pipelineCond(c.Queue, c.Exclude)
	var n, rows int64
	if err := c.DB.QueryRowContext(ctx, `SELECT COALESCE(SUM(n), 0), COUNT(*) FROM (SELECT n FROM dlq_tally
		WHERE status = 'pending' AND `+cond+` LIMIT ?2)`, arg, int64(tallyRowsMax)).Scan(&n, &rows); err != nil {
		return false, "", fmt.Errorf("count pending: %w", err)
	}
	count := fmt.Sprint(n)
	if rows >= tallyRowsMax {
		count = "at least " + count
	}
	return n > c.Threshold, fmt.Sprintf("%s DLQ rows pending%s (threshold %d)", count, c.of(), c.Threshold), nil
}

func (c PendingHigh) of() string {
	if c.Pipeline != "" {
		return " in pipeline " + c.Pipeline
	}
	return ""
}

// oldestScanMax bounds the oldest pending rows a pipeline's oldest-pending
// check looks through for its first one (idx_dlq_status_failed from its
// start): past it, the pipeline's oldest row is newer than the
// oldestScanMax-th oldest pending row of all.
const oldestScanMax = 100

// checkPipeline is OldestPending.Check for a pipeline: nothing when dlq_tally
// has no pending row of its queues (a row or two read), else the first of
// its rows among the oldestScanMax oldest pending rows (read lazily: it
// stops at the first), else the oldestScanMax-th oldest pending row bounds
// its age from above.
func (c OldestPending) checkPipeline(ctx context.Context, now time.Time) (bool, string, error) {
	cond, arg := pipelineCond(c.Queue, c.Exclude)
	// NULL: no pending row (the scan is not run); -1: none among the
	// oldestScanMax oldest; else its oldest failed_at.
	var first sql.NullInt64
	if err := c.DB.QueryRowContext(ctx, `SELECT CASE WHEN EXISTS (SELECT 1 FROM dlq_tally WHERE status = 'pending' AND `+cond+` AND n > 0)
		THEN COALESCE((SELECT failed_at FROM (SELECT failed_at, source_queue FROM dlq_messages WHERE status = 'pending'
			ORDER BY failed_at LIMIT ?2) WHERE `+cond+` LIMIT 1), -1) END`, arg, int64(oldestScanMax)).Scan(&first); err != nil {
		return false, "", fmt.Errorf("oldest pending: %w", err)
	}
	of := ""
	if c.Pipeline != "" {
		of = " of pipeline " + c.Pipeline
	}
	if !first.Valid {
		return false, fmt.Sprintf("no pending DLQ rows%s (threshold %s)", of, c.MaxAge), nil
	}
	oldest := sql.NullInt64{Int64: first.Int64, Valid: first.Int64 >= 0}
	if oldest.Valid {
		age := now.Sub(time.UnixMilli(oldest.Int64))
		return age > c.MaxAge, fmt.Sprintf("oldest pending DLQ row%s failed %s ago at %s (threshold %s)",
			of, age.Round(time.Second), alerts.Stamp(oldest.Int64), c.MaxAge), nil
	}
	var bound sql.NullInt64
	if err := c.DB.QueryRowContext(ctx, `SELECT failed_at FROM dlq_messages WHERE status = 'pending' ORDER BY failed_at LIMIT 1 OFFSET ?`,
		int64(oldestScanMax-1)).Scan(&bound); err != nil && err != sql.ErrNoRows {
		return false, "", fmt.Errorf("oldest pending: %w", err)
	}
	age := now.Sub(time.UnixMilli(bound.Int64))
	if bound.Valid && age <= c.MaxAge {
		return false, fmt.Sprintf("oldest pending DLQ row%s failed less than %s ago (threshold %s)", of, age.Round(time.Second), c.MaxAge), nil
	}
	return false, fmt.Sprintf("oldest pending DLQ row%s is not among the %d oldest pending rows, which failed more than %s ago: not checked further (threshold %s)",
		of, oldestScanMax, age.Round(time.Second), c.MaxAge), nil
}
