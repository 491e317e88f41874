// Package metrics keeps redrive's durable counters and job-run records in D1
// (Go globals do not survive between calls) and renders them for /admin/metrics.
package metrics

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"
)

// Counters adds to named monotonic counters in the counters table.
type Counters struct {
	DB *sql.DB
}

// Add adds each delta (zero deltas are skipped) in one statement.
func (c Counters) Add(ctx context.Context, deltas map[string]int64) error {
	type kv struct {
		Name  string `json:"n"`
		Value int64  `json:"v"`
	}
	var rows []kv
	for n, v := range deltas {
		if v != 0 {
			rows = append(rows, kv{n, v})
		}
	}
	if len(rows) == 0 {
		return nil
	}
	js, err := json.Marshal(rows)
	if err != nil {
		return fmt.Errorf("counters: %w", err)
	}
	_, err = c.DB.ExecContext(ctx, `INSERT INTO counters(name, value)
		SELECT json_extract(value, '$.n'), json_extract(value, '$.v') FROM json_each(?) WHERE true
		ON CONFLICT(name) DO UPDATE SET value = value + excluded.value`, string(js))
	if err != nil {
		return fmt.Errorf("counters add: %w", err)
	}
	return nil
}

// CapturedTotal is the counter of captured DLQ messages (dlq.CounterCaptured).
// It is not a row of the counters table: it is the sum of dlq_activity's
// events (migrations/0012), so that a capture writes one row for its hour
// and its count together.
const CapturedTotal = "dlq_captured_total"

// countersSQL is every counter: the counters table and CapturedTotal.
const countersSQL = `SELECT name AS name, value AS value FROM counters
	UNION ALL SELECT '` + CapturedTotal + `', SUM(events) FROM dlq_activity WHERE kind = 'failed' HAVING COUNT(*) > 0`

// All returns every counter.
func (c Counters) All(ctx context.Context) (map[string]int64, error) {
	rows, err := c.DB.QueryContext(ctx, countersSQL)
	if err != nil {
		return nil, fmt.Errorf("counters read: %w", err)
	}
	defer rows.Close()
	out := map[string]int64{}
	for rows.Next() {
		var n string
		var v int64
		if err := rows.Scan(&n, &v); err != nil {
			return nil, fmt.Errorf("counters scan: %w", err)
		}
		out[n] = v
	}
	return out, rows.Err()
}

// JobRuns records the last run of each scheduled job (handlers.RunRecorder).
type JobRuns struct {
	DB *sql.DB
}

// RecordRun upserts the job's last run and bumps its run/failure totals.
func (j JobRuns) RecordRun(ctx context.Context, job string, startedAt time.Time, duration time.Duration, runErr error, summary map[string]any) error {
	ok, errText := int64(1), any(nil)
	if runErr != nil {
		ok, errText = 0, runErr.Error()
	}
	sum, err := json.Marshal(summary)
	if err != nil {
		sum = []byte(`{}`)
	}
	_, err = j.DB.ExecContext(ctx, `INSERT INTO job_runs(job, last_run_at, last_duration_ms, last_ok, last_error, last_summary, runs, failures)
		VALUES (?, ?, ?, ?, ?, ?, 1, 1 - ?)
		ON CONFLICT(job) DO UPDATE SET last_run_at = excluded.last_run_at, last_duration_ms = excluded.last_duration_ms,
			last_ok = excluded.last_ok, last_error = excluded.last_error, last_summary = excluded.last_summary,
			runs = runs + 1, failures = failures + excluded.failures`,
		job, startedAt.UnixMilli(), duration.Milliseconds(), ok, errText, string(sum), ok)
	if err != nil {
		return fmt.Errorf("record job run: %w", err)
	}
	return nil
}
