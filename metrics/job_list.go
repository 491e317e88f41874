package metrics

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
)

// maxJobs bounds the rows List reads: job_runs has one row per job name,
// a handful fixed by the code.
const maxJobs = 100

// JobStatus is one scheduled job's last run, for GET /admin/jobs
// (handlers/openapi.json).
type JobStatus struct {
	Job string `json:"job"`
	// LastRunAt is the scheduled time of the last run (epoch ms).
	LastRunAt      int64 `json:"last_run_at"`
	LastDurationMS int64 `json:"last_duration_ms"`
	// LastOK is false when the last run failed; LastError then says why.
	LastOK    bool    `json:"last_ok"`
	LastError *string `json:"last_error"`
	// LastSummary is the run's JSON summary (its counts), or null.
	LastSummary json.RawMessage `json:"last_summary"`
	Runs        int64           `json:"runs"`
	Failures    int64           `json:"failures"`
}

// JobList is the jobs response.
type JobList struct {
	// Jobs are sorted by name.
	Jobs []JobStatus `json:"jobs"`
}

// List returns every job's last run.
func (j JobRuns) List(ctx context.Context) (JobList, error) {
	rows, err := j.DB.QueryContext(ctx, `SELECT job, last_run_at, last_duration_ms, last_ok, last_error, last_summary, runs, failures
		FROM job_runs ORDER BY job LIMIT ?`, int64(maxJobs))
	if err != nil {
		return JobList{}, fmt.Errorf("job runs: %w", err)
	}
	defer rows.Close()
	out := JobList{Jobs: []JobStatus{}}
	for rows.Next() {
		var s JobStatus
		var summary sql.NullString
		if err := rows.Scan(&s.Job, &s.LastRunAt, &s.LastDurationMS, &s.LastOK, &s.LastError, &summary, &s.Runs, &s.Failures); err != nil {
			return JobList{}, fmt.Errorf("job runs scan: %w", err)
		}
		s.LastSummary = json.RawMessage("null")
		if summary.Valid && json.Valid([]byte(summary.String)) {
			s.LastSummary = json.RawMessage(summary.String)
		}
		out.Jobs = append(out.Jobs, s)
	}
	if err := rows.Err(); err != nil {
		return JobList{}, fmt.Errorf("job runs: %w", err)
	}
	return out, nil
}
