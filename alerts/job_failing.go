package alerts

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/redrive/redrive/internal/text"
)

// JobFailing fires while the last run of any scheduled job failed.
type JobFailing struct {
	DB *sql.DB
}

// Name implements Condition.
func (JobFailing) Name() string { return "job_failing" }

// Check implements Condition; the detail lists each failing job and its error.
func (c JobFailing) Check(ctx context.Context, _ time.Time) (bool, string, error) {
	rows, err := c.DB.QueryContext(ctx, `SELECT job, last_run_at, COALESCE(last_error, '') FROM job_runs WHERE last_ok = 0 ORDER BY job`)
	if err != nil {
		return false, "", fmt.Errorf("failing jobs: %w", err)
	}
	defer rows.Close()
	var failing []string
	for rows.Next() {
		var job, msg string
		var at int64
		if err := rows.Scan(&job, &at, &msg); err != nil {
			return false, "", fmt.Errorf("failing jobs: %w", err)
		}
		failing = append(failing, fmt.Sprintf("%s failed at %s: %s", job, Stamp(at), text.Clip(msg, 200)))
	}
	if err := rows.Err(); err != nil {
		return false, "", fmt.Errorf("failing jobs: %w", err)
	}
	if len(failing) == 0 {
		return false, "every job's last run succeeded", nil
	}
	return true, strings.Join(failing, "; "), nil
}
