package upkeep

import (
	"context"
	"database/sql"
	"time"

	"github.com/redrive/redrive/metrics"
)

// backlog is what a retention job carries from one run to the next in its
// job_runs summary (read back with one primary-key lookup at the start of
// a run). A run that ends with work left ("more") is continued by the
// frequent cron (jobs.WhileMore) until a run finishes; behind_since is
// the scheduled time of the first run of that stretch, which the
// retention_behind alert compares with RETENTION_BEHIND_ALERT_MINUTES.
type backlog struct {
	More        bool   `json:"more"`
	BehindSince *int64 `json:"behind_since"`

	// Retention's cap rule (dlq_retention only): beers are checked when
	// their rows became terminal after CapScannedTo, under CapMaxRows; the
	// evictions of the cycle (a run that did not continue an unfinished
	// one, and the runs that continue it) add up for dlq_cap_evicting.
	CapScannedTo    *int64   `json:"cap_scanned_to"`
	CapMaxRows      int      `json:"cap_max_rows"`
	CycleDeletedCap int64    `json:"cycle_deleted_cap"`
	CapKeys         []string `json:"cap_keys"`

	// Retention's age rule per pipeline (dlq_retention only): for each
	// retention shorter than the longest (ageGroup.key), the action time
	// below which its window was done.
	AgeScannedTo map[string]int64 `json:"age_scanned_to"`

	// RescanSeq is the newest retention_rescans row a run applied
	// (dlq_retention only; rescanFrom).
	RescanSeq int64 `json:"rescan_seq"`
}

// lastBacklog reads job's last summary; the zero backlog when it never ran
// or its summary says nothing of it.
func lastBacklog(ctx context.Context, db *sql.DB, job string) (backlog, error) {
	var b backlog
	_, err := metrics.JobRuns{DB: db}.LastSummary(ctx, job, &b)
	return b, err
}

// behindSince is the behind_since of a run at now: nil when it finished,
// the previous run's when it continues an unfinished stretch, else now.
func (prev backlog) behindSince(now time.Time, more bool) any {
	switch {
	case !more:
		return nil
	case prev.More && prev.BehindSince != nil:
		return *prev.BehindSince
	default:
		return now.UnixMilli()
	}
}
