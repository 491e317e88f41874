package dlq

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/redrive/redrive/queue"
)

// CounterReplayed counts rows sent back to their queue (metrics.Counters).
const CounterReplayed = "dlq_replayed_total"

// Replay sends pending dead-lettered messages back to the queue they failed
// on (POST /admin/dlq/replay).
//
// A replay claims its rows with one conditional UPDATE ... RETURNING
// (pending -> replaying), so two overlapping replays can never claim, and
// therefore never send, the same row. It sends each claimed row's stored body
// with LineageField set to the row id (a repeat failure then updates that same
// row), then settles every claimed row in one statement: sent rows become
// replayed (replay_count+1, replayed_at), rows whose send failed go back to
// pending. If the worker dies between the send and the settle, the rows stay
// replaying until Rescue returns them to pending.
//
// Only rows whose raw body is a JSON object can be replayed (the lineage
// field must be added to it); other pending rows (poison) are never claimed
// and are reported as skipped with reason not_replayable.
type Replay struct {
	DB     *sql.DB
	Sender queue.Sender
	Log    *slog.Logger
	// Cursors signs the bulk form's continuation cursor.
	Cursors Cursors
	// BulkMax is the most rows one bulk request claims (DLQ_BULK_REPLAY_MAX).
	BulkMax int
	// Now is the clock; time.Now when nil.
	Now func() time.Time
}

func (r Replay) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// ReplayRequest is one replay.
type ReplayRequest struct {
	Selection
	// DelaySeconds postpones delivery, 0..MaxDelaySeconds.
	DelaySeconds int64
	// Cursor continues a bulk replay (next_cursor of the previous call); bulk only.
	Cursor string
	// Limit caps the rows a bulk call claims, 1..BulkMax; 0 means BulkMax. Bulk only.
	Limit int
}

// ReplayResult is the seed's replay response (§9) plus redrive's additions.
type ReplayResult struct {
	// RequestedCount is the number of ids named, or for a bulk call the
	// number of rows its page selected.
	RequestedCount int `json:"requested_count"`
	// ClaimedCount is the number of rows this call moved to replaying.
	ClaimedCount int `json:"claimed_count"`
	// ReplayedCount is the number of rows sent and marked replayed.
	ReplayedCount int `json:"replayed_count"`
	// FailedCount is the number of claimed rows whose send failed (back to pending).
	FailedCount int `json:"failed_count"`
	// QueuedTo is the queue the rows were sent to (their source_queue);
	// several are comma-separated; empty when nothing was claimed.
	QueuedTo string `json:"queued_to"`

	DelaySeconds int64   `json:"delay_seconds"`
	ReplayedIDs  []int64 `json:"replayed_ids"`
	FailedIDs    []int64 `json:"failed_ids"`
	// SkippedCount and Skipped explain named ids that were not claimed (ids form).
	SkippedCount int       `json:"skipped_count"`
	Skipped      []Skipped `json:"skipped"`
	// BulkProgress is present for bulk calls only.
	*BulkProgress
}

// Skipped is a named id a replay did not claim.
type Skipped struct {
	ID int64 `json:"id"`
	// Reason is not_found, not_pending (Status says what it is) or
	// not_replayable (its body is not a JSON object).
	Reason string `json:"reason"`
	Status string `json:"status,omitempty"`
}

// BulkProgress tells a bulk caller how to continue.
type BulkProgress struct {
	// NextCursor continues after the rows of this call; null when done.
	NextCursor *string `json:"next_cursor"`
	// HasMore is true when matching pending rows remain after NextCursor.
	HasMore bool `json:"has_more"`
}

// claimed is a row this replay owns (status replaying, replaying_at = claim time).
type claimed struct {
	id       int64
	source   string
	raw      string
	failedAt int64
}

// Run replays the selection. Bad input is an *InputError and changes nothing.
func (r Replay) Run(ctx context.Context, req ReplayRequest) (ReplayResult, error) {
	// Once rows are claimed the replay must finish (send, settle) even if
	// the client goes away.
	ctx = context.WithoutCancel(ctx)
	sel, pos, limit, err := r.validate(req)
	if err != nil {
		return ReplayResult{}, err
	}
	claimAt := r.now().UnixMilli()
	cond, args := sel.where(true, pos)
	var query string
	if sel.Filter == nil {
		query = `UPDATE dlq_messages SET status = 'replaying', replaying_at = ?, updated_at = ?
			WHERE ` + cond + ` RETURNING id, source_queue, raw_message, failed_at`
	} else {
		query = `UPDATE dlq_messages SET status = 'replaying', replaying_at = ?, updated_at = ?
			WHERE ` + newestFirst(cond) + ` RETURNING id, source_queue, raw_message, failed_at`
		args = append(args, int64(limit))
	}
	rows, err := r.DB.QueryContext(ctx, query, append([]any{claimAt, claimAt}, args...)...)
	if err != nil {
		return ReplayResult{}, fmt.Errorf("replay claim: %w", err)
	}
	var cs []claimed
	for rows.Next() {
		var c claimed
		var raw sql.NullString
		if err := rows.Scan(&c.id, &c.source, &raw, &c.failedAt); err != nil {
			rows.Close()
			return ReplayResult{}, fmt.Errorf("replay claim scan: %w", err)
		}
		c.raw = raw.String
		cs = append(cs, c)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return ReplayResult{}, fmt.Errorf("replay claim rows: %w", err)
	}
	// Newest failure first: the bulk order, and a stable order for sends.
	slices.SortFunc(cs, func(a, b claimed) int { return cmp.Or(cmp.Compare(b.failedAt, a.failedAt), cmp.Compare(b.id, a.id)) })

	res := ReplayResult{RequestedCount: len(sel.IDs), ClaimedCount: len(cs), DelaySeconds: req.DelaySeconds,
		ReplayedIDs: []int64{}, FailedIDs: []int64{}, Skipped: []Skipped{}}
	if sel.Filter != nil {
		res.RequestedCount = len(cs)
	}
	if len(cs) > 0 {
		if err := r.sendAndSettle(ctx, cs, claimAt, req.DelaySeconds, &res); err != nil {
			return res, err
		}
	}
	if sel.Filter == nil && len(cs) < len(sel.IDs) {
		if res.Skipped, err = r.skipped(ctx, sel.IDs, cs); err != nil {
			return res, err
		}
		res.SkippedCount = len(res.Skipped)
	}
	if sel.Filter != nil {
		if res.BulkProgress, err = r.progress(ctx, sel, cs, limit); err != nil {
			return res, err
		}
	}
	return res, nil
}

// DryRun reports what Run would claim for req now, changing nothing.
func (r Replay) DryRun(ctx context.Context, req ReplayRequest) (Preview, error) {
	sel, pos, _, err := r.validate(req)
	if err != nil {
		return Preview{}, err
	}
	return preview(ctx, r.DB, sel, true, pos)
}

// Check validates req (ids, delay, filter, limit, cursor) without touching
// anything: the error Run would return for bad input, or nil.
func (r Replay) Check(req ReplayRequest) error {
	_, _, _, err := r.validate(req)
	return err
}

func (r Replay) validate(req ReplayRequest) (Selection, *position, int, error) {
	sel, err := req.Selection.normalize(MaxReplayIDs)
	if err != nil {
		return sel, nil, 0, err
	}
	if req.DelaySeconds < 0 || req.DelaySeconds > MaxDelaySeconds {
		return sel, nil, 0, inputErr("INVALID_DELAY", "delay_seconds must be an integer in 0..%d", MaxDelaySeconds)
	}
	if sel.Filter == nil {
		if req.Cursor != "" || req.Limit != 0 {
			return sel, nil, 0, inputErr("INVALID_REQUEST", "cursor and limit apply to a bulk replay (filter) only")
		}
		return sel, nil, 0, nil
	}
	pageSize := max(r.BulkMax, 1)
	limit := req.Limit
	if limit == 0 {
		limit = pageSize
	}
	if limit < 1 || limit > pageSize {
		return sel, nil, 0, inputErr("INVALID_LIMIT", "limit must be an integer in 1..%d (DLQ_BULK_REPLAY_MAX)", pageSize)
	}
	var pos *position
	if req.Cursor != "" {
		p, err := r.Cursors.decode(req.Cursor, cursorReplay, sel.Filter.fingerprint())
		if err != nil {
			return sel, nil, 0, err
		}
		pos = &p
	}
	return sel, pos, limit, nil
}

// Limits of one SendBatch call (Cloudflare Queues: 100 messages, 256 KB).
const (
	sendBatchMessages = 100
	sendBatchBytes    = 250_000
)

// sendAndSettle sends the claimed rows to their source queues and settles them in one statement.
func (r Replay) sendAndSettle(ctx context.Context, cs []claimed, claimAt, delaySeconds int64, res *ReplayResult) error {
	byQueue := map[string][]claimed{}
	var queues []string
	for _, c := range cs {
		if _, ok := byQueue[c.source]; !ok {
			queues = append(queues, c.source)
		}
		byQueue[c.source] = append(byQueue[c.source], c)
	}
	slices.Sort(queues)
	res.QueuedTo = strings.Join(queues, ",")
	delay := time.Duration(delaySeconds) * time.Second
	var sent, failed []int64
	for _, q := range queues {
		var batch []queue.Outgoing
		var ids []int64
		size := 0
		flush := func() {
			if len(batch) == 0 {
				return
			}
			if err := r.Sender.SendBatch(ctx, q, batch); err != nil {
				r.Log.ErrorContext(ctx, "replay: send failed; rows go back to pending", "queue", q, "ids", ids, "error", err.Error())
				failed = append(failed, ids...)
			} else {
				sent = append(sent, ids...)
			}
			batch, ids, size = nil, nil, 0
		}
		for _, c := range byQueue[q] {
			body, err := withLineage(c.raw, c.id)
			if err != nil {
				r.Log.ErrorContext(ctx, "replay: body not replayable; row goes back to pending", "id", c.id, "error", err.Error())
				failed = append(failed, c.id)
				continue
			}
			if len(batch) == sendBatchMessages || (len(batch) > 0 && size+len(body) > sendBatchBytes) {
				flush()
			}
			batch, ids, size = append(batch, queue.Outgoing{Body: body, Delay: delay}), append(ids, c.id), size+len(body)
		}
		flush()
	}
	all := make([]int64, len(cs))
	for i, c := range cs {
		all[i] = c.id
	}
	settledAt := r.now().UnixMilli()
	sentJSON := idsJSON(sent)
	// The settled rows are counted from RETURNING: D1's changes count
	// also includes what triggers wrote (migrations/0009's counters).
	settled := 0
	rows, err := r.DB.QueryContext(ctx, settleSQL+` RETURNING id`, sentJSON, settledAt, idsJSON(all), claimAt)
	if err == nil {
		for rows.Next() {
			settled++
		}
		err = rows.Err()
		rows.Close()
	}
	if err != nil {
		// The sends happened; the rows stay replaying and Rescue returns them to pending.
		return fmt.Errorf("replay settle (%d sent, %d failed; rows stay replaying until rescued): %w", len(sent), len(failed), err)
	}
	if settled != len(cs) {
		r.Log.WarnContext(ctx, "replay: some claimed rows changed before settling", "claimed", len(cs), "settled", settled)
	}
	slices.Sort(sent)
	slices.Sort(failed)
	res.ReplayedIDs, res.FailedIDs = append([]int64{}, sent...), append([]int64{}, failed...)
	res.ReplayedCount, res.FailedCount = len(sent), len(failed)
	r.Log.InfoContext(ctx, "replay: done", "claimed", len(cs), "replayed", len(sent), "failed", len(failed), "queued_to", res.QueuedTo)
	return nil
}

// withLineage returns the stored JSON object with LineageField set to id.
// settleSQL ends a replay in one statement: sent rows (?1) become replayed
// (replay_count grows), the others claimed (?3) go back to pending. Only rows
// still held by this claim (?4) change; see idsJSON for +status.
const settleSQL = `UPDATE dlq_messages SET
		status = CASE WHEN id IN (SELECT value FROM json_each(?1)) THEN 'replayed' ELSE 'pending' END,
		replay_count = COALESCE(replay_count, 0) + (id IN (SELECT value FROM json_each(?1))),
		replayed_at = CASE WHEN id IN (SELECT value FROM json_each(?1)) THEN ?2 ELSE replayed_at END,
		replaying_at = NULL, updated_at = ?2
	WHERE id IN (SELECT value FROM json_each(?3)) AND +status = 'replaying' AND replaying_at = ?4`

func withLineage(raw string, id int64) (string, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal([]byte(raw), &obj); err != nil || obj == nil {
		return "", fmt.Errorf("raw message is not a JSON object")
	}
	obj[LineageField] = json.RawMessage(fmt.Sprint(id))
	b, err := json.Marshal(obj)
	if err != nil {
		return "", fmt.Errorf("encode replay body: %w", err)
	}
	return string(b), nil
}

// skipped explains the named ids that were not claimed (one read).
func (r Replay) skipped(ctx context.Context, ids []int64, cs []claimed) ([]Skipped, error) {
	got := map[int64]bool{}
	for _, c := range cs {
		got[c.id] = true
	}
	var rest []int64
	for _, id := range ids {
		if !got[id] {
			rest = append(rest, id)
		}
	}
	rows, err := r.DB.QueryContext(ctx, `SELECT id, status, `+replayableSQL+` FROM dlq_messages
		WHERE id IN (SELECT value FROM json_each(?))`, idsJSON(rest))
	if err != nil {
		return nil, fmt.Errorf("replay skipped: %w", err)
	}
	defer rows.Close()
	found := map[int64]Skipped{}
	for rows.Next() {
		var s Skipped
		var replayable bool
		if err := rows.Scan(&s.ID, &s.Status, &replayable); err != nil {
			return nil, fmt.Errorf("replay skipped scan: %w", err)
		}
		s.Reason = "not_pending"
		if s.Status == StatusPending && !replayable {
			s.Reason = "not_replayable"
		}
		found[s.ID] = s
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("replay skipped rows: %w", err)
	}
	out := make([]Skipped, 0, len(rest))
	for _, id := range rest {
		s, ok := found[id]
		if !ok {
			s = Skipped{ID: id, Reason: "not_found"}
		}
		out = append(out, s)
	}
	return out, nil
}

// progress returns the bulk continuation after the rows of this call.
func (r Replay) progress(ctx context.Context, sel Selection, cs []claimed, limit int) (*BulkProgress, error) {
	if len(cs) < limit {
		// The claim's subquery took every matching row that was left.
		return &BulkProgress{}, nil
	}
	last := cs[len(cs)-1]
	pos := position{Kind: cursorReplay, Filter: sel.Filter.fingerprint(), FailedAt: last.failedAt, ID: last.id}
	cond, args := sel.where(true, &pos)
	var more bool
	if err := r.DB.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM dlq_messages WHERE `+cond+`)`, args...).Scan(&more); err != nil {
		return nil, fmt.Errorf("replay progress: %w", err)
	}
	if !more {
		return &BulkProgress{}, nil
	}
	next := r.Cursors.encode(pos)
	return &BulkProgress{NextCursor: &next, HasMore: true}, nil
}
