package dlq

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
)

// Selection is what a replay or acknowledge acts on: the rows named by IDs,
// or (bulk) the rows matching Filter. Either way only pending rows move.
type Selection struct {
	// IDs names dlq_messages rows (the original worker's form).
	IDs []int64
	// Filter selects rows like the list does (bulk form); status must be pending or empty.
	Filter *Filter
}

// Normalize checks that exactly one form is used and validates it.
func (s Selection) Normalize(ps Pipelines, maxIDs int) (Selection, error) {
	switch {
	case s.IDs != nil && s.Filter != nil:
		return s, InputErr("INVALID_REQUEST", "give either ids or filter, not both")
	case s.Filter != nil:
		f, err := s.Filter.NormalizePending(ps)
		if err != nil {
			return s, err
		}
		s.Filter = &f
		return s, nil
	default:
		return s, ValidateIDs(s.IDs, maxIDs)
	}
}

// Where is the SQL condition for the selection's pending rows (replayable
// ones only when replay is set), after pos when non-nil. In the ids form,
// +status keeps the status indexes out of the plan: the ids are looked up by
// primary key instead of visiting every pending row (see IDsJSON).
func (s Selection) Where(replay bool, pos *Position) (string, []any) {
	var cond string
	var args []any
	if s.Filter != nil {
		cond, args = s.Filter.Where() // status = 'pending' (normalizePending)
	} else {
		cond, args = `+status = 'pending' AND id IN (SELECT value FROM json_each(?))`, []any{IDsJSON(s.IDs)}
	}
	if replay {
		cond += " AND " + ReplayableSQL
	}
	if pos != nil {
		cond += ` AND failed_at <= ? AND (failed_at < ? OR id < ?)`
		args = append(args, pos.FailedAt, pos.FailedAt, pos.ID)
	}
	return cond, args
}

// NewestFirst is the condition of a bulk action's page: the pending rows of
// cond (a Filter's), at most ? of them (the last parameter), newest failure
// first. The page's ids drive the outer statement (+status, see IDsJSON).
func NewestFirst(cond string) string {
	return `+status = 'pending' AND id IN (SELECT id FROM dlq_messages WHERE ` + cond + `
		ORDER BY failed_at DESC, id DESC LIMIT ?)`
}

// Preview is a dry run's answer: what the action would act on now. Nothing changes.
type Preview struct {
	DryRun bool `json:"dry_run"`
	// RequestedCount is the number of ids named (ids form; 0 for a filter).
	RequestedCount int `json:"requested_count"`
	// MatchedCount is the number of rows the action would move.
	MatchedCount int64 `json:"matched_count"`
	// NotReplayableCount (replay only) counts pending rows of the selection
	// whose body cannot be sent as it was produced (a v8 body, a json body
	// that is not valid JSON): replay skips them (acknowledge them instead).
	NotReplayableCount int64 `json:"not_replayable_count"`
	// Sample is up to previewSample matching rows, newest failure first.
	Sample []Message `json:"sample"`
	// ByFailureReason counts matching rows per failure_reason (the previewReasons largest groups).
	ByFailureReason []ReasonCount `json:"by_failure_reason"`
}

// AuditOutcome is ok: a dry run changes nothing.
func (p Preview) AuditOutcome() string { return OutcomeOK }

// AuditCounts are the counts of a dry run's audit entry.
func (p Preview) AuditCounts() any {
	return map[string]any{"requested_count": p.RequestedCount, "matched_count": p.MatchedCount,
		"not_replayable_count": p.NotReplayableCount}
}

const (
	previewSample  = 10
	previewReasons = 25
)

// PreviewRows runs the dry run of an action over sel in one statement. The
// per-reason groups are computed once (a CTE used several times is
// materialized); for a replay that is the one pass that checks bodies.
func PreviewRows(ctx context.Context, db *sql.DB, ps Pipelines, sel Selection, replay bool, pos *Position) (Preview, error) {
	base, baseArgs := sel.Where(false, pos)
	cond, args := sel.Where(replay, pos)
	ok := "1"
	if replay {
		ok = ReplayableSQL
	}
	query := `WITH g AS (SELECT failure_reason, COUNT(*) AS total, SUM(` + ok + `) AS ok FROM dlq_messages
			WHERE ` + base + ` GROUP BY failure_reason)
		SELECT (SELECT COALESCE(SUM(ok), 0) FROM g),
			(SELECT COALESCE(SUM(total) - SUM(ok), 0) FROM g),
			(SELECT json_group_array(json_object('failure_reason', failure_reason, 'count', ok)) FROM (
				SELECT failure_reason, ok FROM g WHERE ok > 0 ORDER BY ok DESC, failure_reason LIMIT ?)),
			` + MessagesJSON(ps, cond, false)
	var all []any
	all = append(all, baseArgs...)
	all = append(all, int64(previewReasons))
	all = append(all, args...)
	all = append(all, int64(previewSample))
	out := Preview{DryRun: true, RequestedCount: len(sel.IDs)}
	var reasons, sample string
	if err := db.QueryRowContext(ctx, query, all...).Scan(&out.MatchedCount, &out.NotReplayableCount, &reasons, &sample); err != nil {
		return Preview{}, fmt.Errorf("dry run: %w", err)
	}
	var err error
	if out.Sample, err = DecodeMessages(sample); err != nil {
		return Preview{}, fmt.Errorf("dry run: %w", err)
	}
	if err := json.Unmarshal([]byte(reasons), &out.ByFailureReason); err != nil {
		return Preview{}, fmt.Errorf("dry run reasons: %w", err)
	}
	SortReasons(out.ByFailureReason)
	return out, nil
}
