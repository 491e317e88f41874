package relocation

import (
	"context"

	"github.com/redrive/redrive/dlq"
)

// Audited runs the import of rows and records it as import in the
// database the lines go to (that of the first line's queue; Run refuses
// lines of several databases), from audit, whose DB is taken when there
// is no line.
func (im Import) Audited(ctx context.Context, rows []ImportRow, audit dlq.Audit, by dlq.Requester) (dlq.Audited, error) {
	if len(rows) > 0 {
		audit.DB = im.DBs.OfQueue(rows[0].SourceQueue).DB
	}
	start := dlq.AuditStart{Action: dlq.ActionImport, Requester: by}
	return audit.Run(ctx, start, dlq.AuditAround, func(ctx context.Context) (dlq.Audited, error) {
		res, err := im.Run(ctx, rows)
		if err != nil {
			return nil, err
		}
		return res, nil
	})
}

// AuditOutcome is ok.
func (ImportResult) AuditOutcome() string { return dlq.OutcomeOK }

// AuditCounts are the database and what became of the lines.
func (r ImportResult) AuditCounts() any {
	return map[string]any{"database": r.Database, "lines": r.Lines,
		"imported": r.Imported, "merged": r.Merged, "skipped": r.Skipped}
}

// Audited runs the release p asks for and records it as release in the
// database the rows are deleted from (audit's DB when p names no bound
// database: Run refuses it).
func (rl Release) Audited(ctx context.Context, p ReleaseParams, audit dlq.Audit, by dlq.Requester) (dlq.Audited, error) {
	if d, err := rl.DBs.Named(p.Database); err == nil {
		audit.DB = d.DB
	}
	start := dlq.AuditStart{Action: dlq.ActionRelease, Requester: by}
	return audit.Run(ctx, start, dlq.AuditAround, func(ctx context.Context) (dlq.Audited, error) {
		res, err := rl.Run(ctx, p)
		if err != nil {
			return nil, err
		}
		res.params = p
		return res, nil
	})
}

// AuditOutcome is ok.
func (ReleaseResult) AuditOutcome() string { return dlq.OutcomeOK }

// AuditCounts are the window asked for and what became of its rows.
func (r ReleaseResult) AuditCounts() any {
	return map[string]any{"pipeline": r.Pipeline, "database": r.Database, "into": r.Into,
		"after": r.params.After, "limit": r.params.Limit, "next_after": r.NextAfter, "scanned": r.Scanned, "released": r.Released,
		"not_imported": r.NotImported, "changed": r.Changed, "remaining": r.Remaining}
}
