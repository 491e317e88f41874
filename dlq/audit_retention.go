package dlq

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"regexp"
	"time"

	"github.com/redrive/redrive/metrics"
)

// CounterAuditExpired counts audit records AuditRetention deleted.
const CounterAuditExpired = "audit_expired_total"

var identifier = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// AuditRetention deletes admin audit records older than MaxAge, in bounded
// batches. The table and its time column (epoch ms) are named here rather
// than assumed, since the audit log is defined by the admin API.
type AuditRetention struct {
	DB *sql.DB
	// Table is the audit table (admin_audit).
	Table string
	// TimeColumn is its creation-time column in epoch ms (created_at).
	TimeColumn string
	// MaxAge is AUDIT_RETENTION_DAYS.
	MaxAge time.Duration
	// Limits bounds each run (batch size and wall-time budget).
	Limits Limits
}

// Name implements handlers.Job.
func (a *AuditRetention) Name() string { return "audit_retention" }

// Run deletes records older than now-MaxAge and counts them.
func (a *AuditRetention) Run(ctx context.Context, now time.Time) (map[string]any, error) {
	if !identifier.MatchString(a.Table) || !identifier.MatchString(a.TimeColumn) {
		return nil, fmt.Errorf("audit retention: invalid table %q or column %q", a.Table, a.TimeColumn)
	}
	if a.MaxAge <= 0 {
		return nil, errors.New("audit retention: MaxAge must be positive")
	}
	// The names are checked identifiers, never input.
	query := fmt.Sprintf(`DELETE FROM %[1]s WHERE rowid IN (SELECT rowid FROM %[1]s WHERE %[2]s < ? LIMIT ?)`, a.Table, a.TimeColumn)
	cutoff := now.Add(-a.MaxAge).UnixMilli()
	n, more, err := a.Limits.start().drain(ctx, func(ctx context.Context, limit int) (int64, error) {
		return exec(ctx, a.DB, "audit retention", query, cutoff, limit)
	})
	if cerr := (metrics.Counters{DB: a.DB}).Add(ctx, map[string]int64{CounterAuditExpired: n}); cerr != nil {
		err = errors.Join(err, fmt.Errorf("audit retention: %w", cerr))
	}
	return map[string]any{"expired": n, "more": more}, err
}
