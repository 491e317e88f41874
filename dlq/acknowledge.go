package dlq

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"time"
)

// CounterAcknowledged counts rows moved to acknowledged (metrics.Counters).
const CounterAcknowledged = "dlq_acknowledged_total"

// Acknowledge dismisses pending dead-lettered messages without replaying them
// (POST /admin/dlq/acknowledge): pending -> acknowledged in one statement.
// Rows in any other status are left alone. The ids travel as one JSON
// parameter, so 100 ids bind 4 parameters, far below D1's limit of 100.
type Acknowledge struct {
	DB *sql.DB
	// BulkMax is the most rows one bulk call acknowledges (DLQ_BULK_ACKNOWLEDGE_MAX).
	BulkMax int
	// Now is the clock; time.Now when nil.
	Now func() time.Time
}

// AcknowledgeRequest is one acknowledge.
type AcknowledgeRequest struct {
	Selection
	// Note is stored in acknowledged_note (optional, up to MaxNoteLength bytes).
	Note string
}

// AcknowledgeResult is the seed's acknowledge response (§9) plus additions.
type AcknowledgeResult struct {
	// AcknowledgedCount is the number of rows moved to acknowledged.
	AcknowledgedCount int64 `json:"acknowledged_count"`
	// RequestedCount is the number of ids named (0 for a filter).
	RequestedCount int `json:"requested_count"`
	// AcknowledgedIDs lists the rows moved (ids form only).
	AcknowledgedIDs []int64 `json:"acknowledged_ids,omitempty"`
	// HasMore (bulk only) is true when matching pending rows remain: call again.
	HasMore *bool `json:"has_more,omitempty"`
}

// Check validates req without touching anything: the error Run would return
// for bad input, or nil.
func (a Acknowledge) Check(req AcknowledgeRequest) error {
	_, err := a.validate(req)
	return err
}

func (a Acknowledge) validate(req AcknowledgeRequest) (Selection, error) {
	if len(req.Note) > MaxNoteLength {
		return req.Selection, inputErr("INVALID_REQUEST", "note is longer than %d bytes", MaxNoteLength)
	}
	return req.Selection.normalize(MaxAcknowledgeIDs)
}

// Run acknowledges the selection's pending rows. A bulk call (filter) moves
// at most BulkMax rows, newest failure first; HasMore says whether to call
// again (rows it moved no longer match, so no cursor is needed).
func (a Acknowledge) Run(ctx context.Context, req AcknowledgeRequest) (AcknowledgeResult, error) {
	sel, err := a.validate(req)
	if err != nil {
		return AcknowledgeResult{}, err
	}
	now := time.Now()
	if a.Now != nil {
		now = a.Now()
	}
	var note any
	if req.Note != "" {
		note = req.Note
	}
	set := `UPDATE dlq_messages SET status = 'acknowledged', acknowledged_at = ?, acknowledged_note = ?, updated_at = ? `
	cond, args := sel.where(false, nil)
	params := append([]any{now.UnixMilli(), note, now.UnixMilli()}, args...)
	if sel.Filter == nil {
		rows, err := a.DB.QueryContext(ctx, set+`WHERE `+cond+` RETURNING id`, params...)
		if err != nil {
			return AcknowledgeResult{}, fmt.Errorf("acknowledge: %w", err)
		}
		defer rows.Close()
		res := AcknowledgeResult{RequestedCount: len(sel.IDs), AcknowledgedIDs: []int64{}}
		for rows.Next() {
			var id int64
			if err := rows.Scan(&id); err != nil {
				return AcknowledgeResult{}, fmt.Errorf("acknowledge scan: %w", err)
			}
			res.AcknowledgedIDs = append(res.AcknowledgedIDs, id)
		}
		if err := rows.Err(); err != nil {
			return AcknowledgeResult{}, fmt.Errorf("acknowledge rows: %w", err)
		}
		slices.Sort(res.AcknowledgedIDs)
		res.AcknowledgedCount = int64(len(res.AcknowledgedIDs))
		return res, nil
	}
	pageSize := max(a.BulkMax, 1)
	out, err := a.DB.ExecContext(ctx, set+`WHERE `+newestFirst(cond), append(params, int64(pageSize))...)
	if err != nil {
		return AcknowledgeResult{}, fmt.Errorf("bulk acknowledge: %w", err)
	}
	n, err := out.RowsAffected()
	if err != nil {
		return AcknowledgeResult{}, fmt.Errorf("bulk acknowledge count: %w", err)
	}
	more := false
	if n == int64(pageSize) {
		if err := a.DB.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM dlq_messages WHERE `+cond+`)`, args...).Scan(&more); err != nil {
			return AcknowledgeResult{}, fmt.Errorf("bulk acknowledge progress: %w", err)
		}
	}
	return AcknowledgeResult{AcknowledgedCount: n, HasMore: &more}, nil
}

// DryRun reports what Run would acknowledge now, changing nothing.
func (a Acknowledge) DryRun(ctx context.Context, req AcknowledgeRequest) (Preview, error) {
	sel, err := a.validate(req)
	if err != nil {
		return Preview{}, err
	}
	return preview(ctx, a.DB, sel, false, nil)
}
