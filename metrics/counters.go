// Package metrics keeps redrive's durable counters and job-run records in D1
// (Go globals do not survive between calls) and renders them for /admin/metrics.
package metrics

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
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

var _ = Declare(CapturedTotal, "Messages written to dlq_messages: new rows and repeat failures of replayed messages (the sum of dlq_activity's hourly capture events).")

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

// JobRuns records the last run of each scheduled job (jobs.RunRecorder).
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

// LastSummary decodes job's last recorded summary into v and reports
// whether there was one. One primary-key lookup (one row read in D1). A
// summary that is not a JSON object (a panicked run records null) leaves v
// as it was and counts as none.
func (j JobRuns) LastSummary(ctx context.Context, job string, v any) (bool, error) {
	var sum sql.NullString
	err := j.DB.QueryRowContext(ctx, `SELECT last_summary FROM job_runs WHERE job = ?`, job).Scan(&sum)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("last run of %s: %w", job, err)
	}
	if !sum.Valid || !strings.HasPrefix(strings.TrimSpace(sum.String), "{") || json.Unmarshal([]byte(sum.String), v) != nil {
		return false, nil
	}
	return true, nil
}

// lastMoreSQL reads whether a job's last run ended with work left: one
// primary-key lookup in job_runs (one row read in D1). A summary that is
// not JSON (RecordRun never writes one) says nothing.
const lastMoreSQL = `SELECT CASE WHEN json_valid(last_summary) THEN COALESCE(last_summary ->> '$.more', 0) = 1 ELSE 0 END
	FROM job_runs WHERE job = ?`

// LastMore reports whether job's last recorded run ended with work left
// ("more": true in its summary); false when it never ran.
func (j JobRuns) LastMore(ctx context.Context, job string) (bool, error) {
	var more bool
	err := j.DB.QueryRowContext(ctx, lastMoreSQL, job).Scan(&more)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("last run of %s: %w", job, err)
	}
	return more, nil
}
