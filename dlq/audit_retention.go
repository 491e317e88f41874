package dlq

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/redrive/redrive/metrics"
)

// CounterAuditExpired counts audit records AuditRetention deleted.
const CounterAuditExpired = "audit_expired_total"

// AuditRetention deletes admin_audit records (see Audit) older than MaxAge,
// in bounded batches.
type AuditRetention struct {
	DB *sql.DB
	// MaxAge is AUDIT_RETENTION_DAYS.
	MaxAge time.Duration
	// Limits bounds each run (batch size and wall-time budget).
	Limits Limits
}

// Name implements handlers.Job.
func (a *AuditRetention) Name() string { return "audit_retention" }

// auditRetentionSQL deletes up to ?2 records older than ?1 (epoch ms),
// found through idx_admin_audit_at.
const auditRetentionSQL = `DELETE FROM admin_audit WHERE id IN (SELECT id FROM admin_audit WHERE at < ?1 LIMIT ?2)`

// Run deletes records older than now-MaxAge and counts them.
func (a *AuditRetention) Run(ctx context.Context, now time.Time) (map[string]any, error) {
	if a.MaxAge <= 0 {
		return nil, errors.New("audit retention: MaxAge must be positive")
	}
	cutoff := now.Add(-a.MaxAge).UnixMilli()
	n, more, err := a.Limits.start().drain(ctx, func(ctx context.Context, limit int) (int64, error) {
		return exec(ctx, a.DB, "audit retention", auditRetentionSQL, cutoff, limit)
	})
	if cerr := (metrics.Counters{DB: a.DB}).Add(ctx, map[string]int64{CounterAuditExpired: n}); cerr != nil {
		err = errors.Join(err, fmt.Errorf("audit retention: %w", cerr))
	}
	return map[string]any{"expired": n, "more": more}, err
}
