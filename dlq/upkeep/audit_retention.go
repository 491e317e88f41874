package upkeep

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/jobs"
	"github.com/redrive/redrive/metrics"
)

// CounterAuditExpired counts audit records AuditRetention deleted.
var CounterAuditExpired = metrics.Declare("audit_expired_total", "Admin audit records deleted after AUDIT_RETENTION_DAYS.")

// AuditRetentionJobName is the name AuditRetention records its runs under.
const AuditRetentionJobName = "audit_retention"

// AuditRetention deletes admin_audit records (see Audit) older than MaxAge,
// in bounded batches. Like Retention, a run that ends with records left
// says more, and the frequent cron continues it (jobs.WhileMore).
type AuditRetention struct {
	DB *sql.DB
	// Database is DB's binding (JobName); Runs the database of job_runs
	// (DB when nil), as for Retention.
	Database string
	Runs     *sql.DB
	// MaxAge is AUDIT_RETENTION_DAYS.
	MaxAge time.Duration
	// Limits bounds each run (batch size and wall-time budget).
	Limits jobs.Limits
}

// Name implements jobs.Job.
func (a *AuditRetention) Name() string { return dlq.JobName(AuditRetentionJobName, a.Database) }

// expireAudit is the audit records older than the cutoff, found through
// idx_admin_audit_at (see expiry).
var expireAudit = newExpiry("audit records", "admin_audit", "", "at", "id")

// Run deletes records older than now-MaxAge and counts them. Summary:
// expired (this run), more, expired_left (records still past the retention,
// counted up to ExpiredLeftCountMax when the budget ran out, else 0) and
// behind_since (see Retention.Run).
func (a *AuditRetention) Run(ctx context.Context, now time.Time) (map[string]any, error) {
	if a.MaxAge <= 0 {
		return nil, errors.New("audit retention: MaxAge must be positive")
	}
	var errs []error
	prev, err := lastBacklog(ctx, dlq.RunsDB(a.Runs, a.DB), a.Name())
	if err != nil {
		errs = append(errs, fmt.Errorf("audit retention: %w", err))
	}
	cutoff := now.Add(-a.MaxAge).UnixMilli()
	n, more, err := a.Limits.Start().Drain(ctx, expireAudit.step(a.DB, cutoff))
	var left any
	if err != nil {
		errs = append(errs, fmt.Errorf("audit retention: %w", err))
		more = true // unknown: let the next run look again soon
	} else if more {
		c, err := countUpTo(ctx, a.DB, "expired audit records", expireAudit.selectSQL, cutoff, ExpiredLeftCountMax)
		if err != nil {
			errs = append(errs, fmt.Errorf("audit retention: %w", err))
		} else {
			left, more = c, c > 0
		}
	} else {
		left = int64(0)
	}
	if cerr := (metrics.Counters{DB: a.DB}).Add(ctx, map[string]int64{CounterAuditExpired: n}); cerr != nil {
		errs = append(errs, fmt.Errorf("audit retention: %w", cerr))
	}
	return map[string]any{"expired": n, "more": more, "expired_left": left, "behind_since": prev.behindSince(now, more)}, errors.Join(errs...)
}
