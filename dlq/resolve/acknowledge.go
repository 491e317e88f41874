package resolve

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/redrive/redrive/clock"
	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/metrics"
	"github.com/redrive/redrive/sqlbatch"
)

// CounterAcknowledged counts rows moved to acknowledged (metrics.Counters).
var CounterAcknowledged = metrics.Declare("dlq_acknowledged_total", "DLQ rows acknowledged (set aside without a replay).")

// Acknowledge dismisses pending dead-lettered messages without replaying them
// (POST /admin/dlq/acknowledge): pending -> acknowledged in one statement,
// sent in one batch with its admin_audit row and the statements that count
// the rows it moves (tally.go), so the change, its record and its counts
// commit together in one round trip. Rows in any other status are left
// alone. The ids travel as one JSON parameter, so 100 ids bind a handful of
// parameters, far below D1's limit of 100.
type Acknowledge struct {
	DB *sql.DB
	// Batch sends the audit row and the change together.
	Batch sqlbatch.Runner
	// BulkMax is the most rows one bulk call acknowledges (DLQ_BULK_ACKNOWLEDGE_MAX).
	BulkMax int
	// Now is the clock; time.Now when nil.
	Clock clock.Clock
	// Pipelines are the configured pipelines (nil: the beer one).
	Pipelines dlq.Pipelines
}

// AcknowledgeRequest is one acknowledge.
type AcknowledgeRequest struct {
	dlq.Selection
	// Note is stored in acknowledged_note (optional, up to MaxNoteLength bytes).
	Note string
	// By is who asked, for the audit row.
	By dlq.Requester
}

// AcknowledgeResult is the acknowledge response (handlers/openapi.json).
type AcknowledgeResult struct {
	// AcknowledgedCount is the number of rows moved to acknowledged.
	AcknowledgedCount int64 `json:"acknowledged_count"`
	// RequestedCount is the number of ids named (0 for a filter).
	RequestedCount int `json:"requested_count"`
	// AcknowledgedIDs lists the rows moved: always in the ids form ([] when
	// none moved, as replayed_ids), absent in the bulk form.
	AcknowledgedIDs []int64 `json:"acknowledged_ids,omitzero"`
	// HasMore (bulk only) is true when matching pending rows remain: call again.
	HasMore *bool `json:"has_more,omitempty"`
}

// AuditOutcome is ok: the rows named were acknowledged (or were not pending).
func (AcknowledgeResult) AuditOutcome() string { return dlq.OutcomeOK }

// AuditCounts is nil: an acknowledge writes its entry, with its counts,
// in the batch of its change (Run).
func (AcknowledgeResult) AuditCounts() any { return nil }

// Check validates req without touching anything: the error Run would return
// for bad input, or nil.
func (a Acknowledge) Check(req AcknowledgeRequest) error {
	_, err := a.validate(req)
	return err
}

func (a Acknowledge) validate(req AcknowledgeRequest) (dlq.Selection, error) {
	if len(req.Note) > dlq.MaxNoteLength {
		return req.Selection, dlq.InputErr("INVALID_REQUEST", "note is longer than %d bytes", dlq.MaxNoteLength)
	}
	return req.Selection.Normalize(a.Pipelines, dlq.MaxAcknowledgeIDs)
}

// Run acknowledges the selection's pending rows and records the request in
// admin_audit (outcome ok), all in one batch: if it fails, nothing changed
// and nothing was recorded. A bulk call (filter) moves at most BulkMax rows,
// newest failure first; HasMore says whether to call again (rows it moved
// no longer match, so no cursor is needed).
func (a Acknowledge) Run(ctx context.Context, req AcknowledgeRequest) (AcknowledgeResult, error) {
	sel, err := a.validate(req)
	if err != nil {
		return AcknowledgeResult{}, err
	}
	return a.run(ctx, req, sel)
}

// run is Run of a validated request (sel from validate).
func (a Acknowledge) run(ctx context.Context, req AcknowledgeRequest, sel dlq.Selection) (AcknowledgeResult, error) {
	now := a.Clock.Now()
	var note any
	if req.Note != "" {
		note = req.Note
	}
	u := ackUpdate{
		now:    now,
		audit:  dlq.AuditStart{Action: dlq.ActionAcknowledge, Requester: req.By, IDs: sel.IDs, Filter: sel.Filter, Note: req.Note},
		set:    `UPDATE dlq_messages SET status = 'acknowledged', acknowledged_at = ?, acknowledged_note = ?, updated_at = ?, ` + dlq.SetTallied + ` WHERE `,
		params: []any{now.UnixMilli(), note, now.UnixMilli()},
	}
	u.cond, u.args = sel.Where(false, nil)
	if sel.Filter == nil {
		return a.byIDs(ctx, sel.IDs, u)
	}
	return a.bulk(ctx, u)
}

// ackUpdate is what both forms of Run share: the audit entry, the UPDATE's
// SET part with its parameters, and the selection's condition.
type ackUpdate struct {
	now    time.Time
	audit  dlq.AuditStart
	set    string
	params []any
	cond   string
	args   []any
}

// byIDs acknowledges the named rows that are pending, in one batch with the
// audit row, which counts the rows the update is about to move. Counts are
// computed in SQL, never bound: D1 binds JS numbers as REAL, and json_object
// would write 100 as 100.0.
func (a Acknowledge) byIDs(ctx context.Context, ids []int64, u ackUpdate) (AcknowledgeResult, error) {
	record := dlq.FinishedAuditStmt(u.audit, u.now.UnixMilli(), dlq.OutcomeOK, nil,
		`json_object('requested_count', json_array_length(?), 'acknowledged_count', (SELECT COUNT(*) FROM dlq_messages WHERE `+u.cond+`))`,
		append([]any{dlq.IDsJSON(ids)}, u.args...)...)
	stmts := append(append([]sqlbatch.Stmt{record}, a.bookkeeping(u.now, u.cond, u.args)...),
		sqlbatch.Stmt{SQL: u.set + u.cond + ` RETURNING id`, Args: append(u.params, u.args...)})
	out, err := dlq.BatchOf(a.Batch, a.DB).Batch(ctx, stmts...)
	if err != nil {
		return AcknowledgeResult{}, fmt.Errorf("acknowledge: %w", err)
	}
	var moved []struct{ ID int64 }
	if err := json.Unmarshal(out[len(out)-1], &moved); err != nil {
		return AcknowledgeResult{}, fmt.Errorf("acknowledge rows: %w", err)
	}
	res := AcknowledgeResult{RequestedCount: len(ids), AcknowledgedIDs: make([]int64, len(moved))}
	for i, m := range moved {
		res.AcknowledgedIDs[i] = m.ID
	}
	slices.Sort(res.AcknowledgedIDs)
	res.AcknowledgedCount = int64(len(res.AcknowledgedIDs))
	return res, nil
}

// bulk acknowledges one page of the filter's rows, newest failure first, in
// one batch with the audit row. The audit row counts the matching rows up to
// one more than the page, which gives both the page's count and has_more.
func (a Acknowledge) bulk(ctx context.Context, u ackUpdate) (AcknowledgeResult, error) {
	page := int64(max(a.BulkMax, 1))
	record := dlq.FinishedAuditStmt(u.audit, u.now.UnixMilli(), dlq.OutcomeOK, nil,
		`(SELECT json_object('requested_count', 0, 'acknowledged_count', n - more, 'has_more', json(IIF(more, 'true', 'false')))
			FROM (SELECT n, n > ? AS more FROM (SELECT COUNT(*) AS n FROM (SELECT 1 FROM dlq_messages WHERE `+u.cond+` LIMIT ? + 1))))`,
		append([]any{page}, append(u.args, page)...)...)
	pageCond, pageArgs := dlq.NewestFirst(u.cond), append(append([]any(nil), u.args...), page)
	stmts := append(append([]sqlbatch.Stmt{record}, a.bookkeeping(u.now, pageCond, pageArgs)...),
		sqlbatch.Stmt{SQL: u.set + pageCond, Args: append(u.params, pageArgs...)})
	out, err := dlq.BatchOf(a.Batch, a.DB).Batch(ctx, stmts...)
	if err != nil {
		return AcknowledgeResult{}, fmt.Errorf("bulk acknowledge: %w", err)
	}
	var counts []struct{ Counts string }
	var res AcknowledgeResult
	if err := json.Unmarshal(out[0], &counts); err != nil || len(counts) != 1 {
		return AcknowledgeResult{}, fmt.Errorf("bulk acknowledge counts: %s (%v)", out[0], err)
	}
	if err := json.Unmarshal([]byte(counts[0].Counts), &res); err != nil || res.HasMore == nil {
		return AcknowledgeResult{}, fmt.Errorf("bulk acknowledge counts: %s (%v)", counts[0].Counts, err)
	}
	return res, nil
}

// bookkeeping returns the statements that count the rows matching cond,
// about to be acknowledged at now, in dlq_tally, dlq_activity and the
// acknowledged counter (see tally.go); they run before the UPDATE.
func (a Acknowledge) bookkeeping(now time.Time, cond string, args []any) []sqlbatch.Stmt {
	return []sqlbatch.Stmt{
		dlq.TallyMove(cond, args, `'acknowledged'`),
		dlq.SignatureMove(cond, args, `'acknowledged'`, dlq.StatusPending, dlq.StatusAcknowledged),
		dlq.ActivityAdd(dlq.StatusAcknowledged, now.UnixMilli(), cond, args),
		dlq.CounterAdd(CounterAcknowledged, cond, args),
	}
}

// DryRun reports what Run would acknowledge now, changing nothing.
func (a Acknowledge) DryRun(ctx context.Context, req AcknowledgeRequest) (dlq.Preview, error) {
	sel, err := a.validate(req)
	if err != nil {
		return dlq.Preview{}, err
	}
	return dlq.PreviewRows(ctx, a.DB, a.Pipelines, sel, false, nil)
}
