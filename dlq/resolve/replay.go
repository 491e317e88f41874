package resolve

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/redrive/redrive/clock"
	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/internal/text"
	"github.com/redrive/redrive/metrics"
	"github.com/redrive/redrive/queue"
	"github.com/redrive/redrive/sqlbatch"
)

// CounterReplayed counts rows sent back to their queue (metrics.Counters).
var CounterReplayed = metrics.Declare("dlq_replayed_total", "DLQ rows sent back to their source queue by a replay (each send counts).")

// Replay sends pending dead-lettered messages back to the queue they failed
// on (POST /admin/dlq/replay).
//
// A replay claims its rows with one conditional UPDATE ... RETURNING
// (pending -> replaying), so two overlapping replays can never claim, and
// therefore never send, the same row. It sends each claimed row's stored body
// exactly as it was captured, with the content type it was sent with (a JSON
// object stays an object, text a string, bytes bytes; nothing is added), then
// settles every claimed row in one statement: sent rows become replayed
// (replay_count+1, replayed_at), rows whose send failed go back to pending.
// If the worker dies between the send and the settle, the rows stay
// replaying until Rescue returns them to pending.
//
// Lineage needs nothing in the body: claiming a row puts it in the lineage
// index (source_queue, body_hash), and a repeat failure of the replayed
// message, which has the same body, updates that row (see putSQL). Rows
// captured before body_hash existed get it, in one statement, before the send.
//
// v8 bodies (kept only as a lossy text) and JSON bodies whose text is not
// valid JSON cannot be sent as they were produced: they are never claimed
// and are reported as skipped with reason not_replayable.
type Replay struct {
	DB *sql.DB
	// Batch runs the claim and the settle with the statements that count
	// the rows they move (tally.go); a transaction on DB when nil.
	Batch  sqlbatch.Runner
	Sender queue.Sender
	Log    *slog.Logger
	// Cursors signs the bulk form's continuation cursor.
	Cursors dlq.Cursors
	// BulkMax is the most rows one bulk request claims (DLQ_BULK_REPLAY_MAX).
	BulkMax int
	// Now is the clock; time.Now when nil.
	Clock clock.Clock
	// Destinations are the queues a replay may be sent to instead of a
	// row's source_queue: those the worker has a producer binding for.
	Destinations []string
	// MissingProducers maps the main queue of each capture-only pipeline
	// to its absent producer binding: a replay to it (its destination, or
	// the source_queue of its filter) is PRODUCER_MISSING.
	MissingProducers map[string]string
	// Frozen are the queues whose rows in DB belong to a pipeline stored
	// in another database (Databases.Frozen): replay tasks skip them.
	Frozen []string
	// Pipelines are the configured pipelines (nil: the beer one).
	Pipelines dlq.Pipelines
}

// checkProducer refuses a replay sent to queue q when q's pipeline has no
// producer binding: PRODUCER_MISSING, naming the binding.
func (r Replay) checkProducer(q string) error {
	if binding, ok := r.MissingProducers[q]; ok && q != "" {
		return dlq.InputErr("PRODUCER_MISSING", "queue %s has no producer binding %s in this worker (wrangler.jsonc): its pipeline is capture-only", q, binding)
	}
	return nil
}

// checkTarget is checkProducer of where a filter's rows go: dest, else
// the filter's source queue (its pipeline's queue).
func (r Replay) checkTarget(dest string, f *dlq.Filter) error {
	if dest == "" && f != nil {
		dest = f.SourceQueue
	}
	return r.checkProducer(dest)
}

// CheckDestination accepts "" (each row's source_queue) or one of
// Destinations; a capture-only pipeline's queue is PRODUCER_MISSING,
// anything else INVALID_DESTINATION.
func (r Replay) CheckDestination(dest string) error {
	if err := r.checkProducer(dest); err != nil {
		return err
	}
	if dest == "" || slices.Contains(r.Destinations, dest) {
		return nil
	}
	return dlq.InputErr("INVALID_DESTINATION", "destination must be a queue this worker has a producer binding for (%s); got %q",
		strings.Join(r.Destinations, ", "), text.Clip(dest, 100))
}

// ReplayRequest is one replay.
type ReplayRequest struct {
	dlq.Selection
	// DelaySeconds postpones delivery, 0..MaxDelaySeconds.
	DelaySeconds int64
	// Destination, when set, is the queue every row is sent to instead of
	// its source_queue: one the worker has a producer binding for.
	Destination string
	// Cursor continues a bulk replay (next_cursor of the previous call); bulk only.
	Cursor string
	// Limit caps the rows a bulk call claims, 1..BulkMax; 0 means BulkMax. Bulk only.
	Limit int
}

// ReplayResult is the replay response (handlers/openapi.json).
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

	// destination is the request's, for the audit entry.
	destination string
}

// AuditOutcome is ReplayOutcome(r).
func (r ReplayResult) AuditOutcome() string { return ReplayOutcome(r) }

// AuditCounts are the counts of r's audit entry.
func (r ReplayResult) AuditCounts() any {
	counts := map[string]any{"requested_count": r.RequestedCount, "claimed_count": r.ClaimedCount,
		"replayed_count": r.ReplayedCount, "failed_count": r.FailedCount, "skipped_count": r.SkippedCount,
		"queued_to": r.QueuedTo, "delay_seconds": r.DelaySeconds}
	if r.destination != "" {
		counts["destination"] = r.destination
	}
	if r.BulkProgress != nil {
		counts["has_more"] = r.HasMore
	}
	return counts
}

// Skipped is a named id a replay did not claim.
type Skipped struct {
	ID int64 `json:"id"`
	// Reason is not_found, not_pending (Status says what it is) or
	// not_replayable (a v8 body, or a json body that is not valid JSON).
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
	encoding string
	ct       queue.ContentType
	hash     string // body_hash ("" when NULL: captured before migrations/0010)
	failedAt int64
	// wasEdited: body_hash is an edited body's (body_edited); edited: this
	// replay sends an edited body (ReplayEdited).
	wasEdited, edited bool
}

// claimReturning is what the claim returns of each row (claimedRow).
const claimReturning = ` RETURNING id, source_queue, raw_message, raw_encoding, ` + dlq.ContentTypeSQL + ` AS ct,
	COALESCE(body_hash, '') AS hash, failed_at, COALESCE(body_edited, 0) AS edited`

// claimedRow is one row of claimReturning as the batch returns it.
type claimedRow struct {
	ID          int64   `json:"id"`
	SourceQueue string  `json:"source_queue"`
	RawMessage  *string `json:"raw_message"`
	RawEncoding string  `json:"raw_encoding"`
	CT          string  `json:"ct"`
	Hash        string  `json:"hash"`
	Edited      int64   `json:"edited"`
	FailedAt    int64   `json:"failed_at"`
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
	return r.run(ctx, req, sel, pos, limit)
}

// run is Run of a validated request (sel, pos and limit from validate).
func (r Replay) run(ctx context.Context, req ReplayRequest, sel dlq.Selection, pos *dlq.Position, limit int) (ReplayResult, error) {
	cond, args := sel.Where(true, pos)
	if sel.Filter != nil {
		cond, args = dlq.NewestFirst(cond), append(args, int64(limit))
	}
	cs, claimAt, err := r.claim(ctx, cond, args)
	if err != nil {
		return ReplayResult{destination: req.Destination}, err
	}

	res := ReplayResult{RequestedCount: len(sel.IDs), ClaimedCount: len(cs), DelaySeconds: req.DelaySeconds,
		ReplayedIDs: []int64{}, FailedIDs: []int64{}, Skipped: []Skipped{}, destination: req.Destination}
	if sel.Filter != nil {
		res.RequestedCount = len(cs)
	}
	if len(cs) > 0 {
		delay := time.Duration(req.DelaySeconds) * time.Second
		plan := sendPlan{delay: func(int64) time.Duration { return delay }, destination: req.Destination}
		if err := r.sendAndSettle(ctx, cs, claimAt, plan, &res); err != nil {
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

// claim moves the pending rows of cond (pending -> replaying) in one batch
// with the statements that count them, and returns them newest failure
// first with the claim time. The one claim of every replay (ids, bulk, tasks).
func (r Replay) claim(ctx context.Context, cond string, args []any) ([]claimed, int64, error) {
	claimAt := r.Clock.Now().UnixMilli()
	// The claim and its counts (pending -> replaying) in one batch.
	out, err := dlq.BatchOf(r.Batch, r.DB).Batch(ctx, dlq.TallyMove(cond, args, `'replaying'`),
		dlq.SignatureMove(cond, args, `'replaying'`, dlq.StatusPending, dlq.StatusReplaying),
		sqlbatch.Stmt{SQL: `UPDATE dlq_messages SET status = 'replaying', replaying_at = ?, updated_at = ?, ` + dlq.SetTallied + `
			WHERE ` + cond + claimReturning, Args: append([]any{claimAt, claimAt}, args...)})
	if err != nil {
		return nil, 0, fmt.Errorf("replay claim: %w", err)
	}
	var rows []claimedRow
	if err := json.Unmarshal(out[len(out)-1], &rows); err != nil {
		return nil, 0, fmt.Errorf("replay claim rows: %w", err)
	}
	cs := make([]claimed, len(rows))
	for i, c := range rows {
		cs[i] = claimed{id: c.ID, source: c.SourceQueue, encoding: c.RawEncoding, ct: queue.ContentType(c.CT),
			hash: c.Hash, failedAt: c.FailedAt, wasEdited: c.Edited != 0}
		if c.RawMessage != nil {
			cs[i].raw = *c.RawMessage
		}
	}
	// Newest failure first: the bulk order, and a stable order for sends.
	slices.SortFunc(cs, func(a, b claimed) int { return cmp.Or(cmp.Compare(b.failedAt, a.failedAt), cmp.Compare(b.id, a.id)) })
	return cs, claimAt, nil
}

// DryRun reports what Run would claim for req now, changing nothing.
func (r Replay) DryRun(ctx context.Context, req ReplayRequest) (dlq.Preview, error) {
	sel, pos, _, err := r.validate(req)
	if err != nil {
		return dlq.Preview{}, err
	}
	return r.dryRun(ctx, sel, pos)
}

// dryRun is DryRun of a validated request.
func (r Replay) dryRun(ctx context.Context, sel dlq.Selection, pos *dlq.Position) (dlq.Preview, error) {
	return dlq.PreviewRows(ctx, r.DB, r.Pipelines, sel, true, pos)
}

// BulkLimit is the most rows one bulk request claims: BulkMax, at least 1.
func (r Replay) BulkLimit() int { return max(r.BulkMax, 1) }

// Check validates req (ids, delay, filter, limit, cursor) without touching
// anything: the error Run would return for bad input, or nil.
func (r Replay) Check(req ReplayRequest) error {
	_, _, _, err := r.validate(req)
	return err
}

func (r Replay) validate(req ReplayRequest) (dlq.Selection, *dlq.Position, int, error) {
	sel, err := req.Selection.Normalize(r.Pipelines, dlq.MaxReplayIDs)
	if err != nil {
		return sel, nil, 0, err
	}
	if err := r.CheckDestination(req.Destination); err != nil {
		return sel, nil, 0, err
	}
	if err := r.checkTarget(req.Destination, sel.Filter); err != nil {
		return sel, nil, 0, err
	}
	if req.DelaySeconds < 0 || req.DelaySeconds > dlq.MaxDelaySeconds {
		return sel, nil, 0, dlq.InputErr("INVALID_DELAY", "delay_seconds must be an integer in 0..%d", dlq.MaxDelaySeconds)
	}
	if sel.Filter == nil {
		if req.Cursor != "" || req.Limit != 0 {
			return sel, nil, 0, dlq.InputErr("INVALID_REQUEST", "cursor and limit apply to a bulk replay (filter) only")
		}
		return sel, nil, 0, nil
	}
	pageSize := r.BulkLimit()
	limit := req.Limit
	if limit == 0 {
		limit = pageSize
	}
	if err := dlq.CheckLimit(int64(limit), pageSize, "DLQ_BULK_REPLAY_MAX"); err != nil {
		return sel, nil, 0, err
	}
	var pos *dlq.Position
	if req.Cursor != "" {
		p, err := r.Cursors.Decode(req.Cursor, dlq.CursorReplay, sel.Filter.Fingerprint())
		if err != nil {
			return sel, nil, 0, err
		}
		pos = &p
	}
	return sel, pos, limit, nil
}

// sendPlan says how claimed rows are sent and what else their settle writes.
type sendPlan struct {
	// delay is the delivery delay of the next message sent, called once per
	// message in the order of sending, just before its sendBatch, with the
	// time of that send (ms): a queue counts a delay from the send.
	delay func(sendAt int64) time.Duration
	// destination, when set, replaces every row's source_queue (a queue the
	// worker has a producer binding for; checked before the claim).
	destination string
	// settle, when set, returns more statements for the settle's batch,
	// given the rows sent and when each was asked to be delivered (ms: its
	// send time plus its delay; same order).
	settle func(sent []int64, deliverAt []int64) []sqlbatch.Stmt
}

// sendAndSettle sends the claimed rows to their source queues (or the
// plan's destination) and settles them in one batch.
func (r Replay) sendAndSettle(ctx context.Context, cs []claimed, claimAt int64, plan sendPlan, res *ReplayResult) error {
	ob := r.group(ctx, cs, plan.destination)
	res.QueuedTo = strings.Join(ob.queues, ",")
	sent, deliverAt := r.send(ctx, &ob, plan.delay)
	return r.settle(ctx, cs, claimAt, plan, sent, ob.failed, deliverAt, res)
}

// outboxes is what sendAndSettle's group builds from the claimed rows: the
// messages for each destination queue, the body hashes to set before sending
// and the rows that cannot be sent at all.
type outboxes struct {
	byQueue map[string]*outbox
	queues  []string // the keys of byQueue, sorted
	hashes  []rowHash
	failed  []int64 // send appends to it
}

// group renders each claimed row's body and files it under its source queue
// (or destination, when set), in claim order. A row whose body cannot be
// rendered is logged and goes to failed. A row whose lineage key must become
// the hash of what is sent gets an entry in hashes. Reads and writes nothing
// in D1.
func (r Replay) group(ctx context.Context, cs []claimed, destination string) outboxes {
	o := outboxes{byQueue: map[string]*outbox{}}
	for _, c := range cs {
		dest := c.source
		if destination != "" {
			dest = destination
		}
		if _, ok := o.byQueue[dest]; !ok {
			o.queues = append(o.queues, dest)
			o.byQueue[dest] = &outbox{}
		}
		text, err := c.body()
		if err != nil {
			r.Log.ErrorContext(ctx, "replay: body cannot be sent as it was produced; row goes back to pending", "id", c.id, "error", err.Error())
			o.failed = append(o.failed, c.id)
			continue
		}
		if c.hash == "" || c.edited || c.wasEdited {
			// The lineage key becomes the hash of what is sent: for a row
			// captured before body_hash existed, one sent edited
			// (RunEdited), or one sent as stored after an edited replay.
			// (Otherwise body_hash is the stored body's, set by capture.)
			rh := rowHash{ID: c.id, Hash: dlq.BodyHash(c.ct, text)}
			if c.edited {
				rh.Edited = 1
			}
			o.hashes = append(o.hashes, rh)
		}
		ob := o.byQueue[dest]
		ob.msgs = append(ob.msgs, queue.Outgoing{Body: text, ContentType: c.ct})
		ob.ids = append(ob.ids, c.id)
	}
	slices.Sort(o.queues)
	return o
}

// send first sets the body hashes group asked for (one write per row), then
// sends each queue's messages in queue.Batches, each message delayed by
// delay(its batch's send time). It returns the ids sent and when each sent
// row was asked to be delivered (ms); rows of a failed SendBatch, or every
// row when the hashes could not be set, are logged and appended to o.failed.
func (r Replay) send(ctx context.Context, o *outboxes, delay func(sendAt int64) time.Duration) (sent []int64, deliverAt map[int64]int64) {
	deliverAt = map[int64]int64{}
	// Rows whose body_hash is not the hash of what is sent (captured before
	// body_hash existed, or an edited body) get it before their message is
	// sent, so that a repeat failure finds them. Without it nothing is sent.
	hashErr := r.setHashes(ctx, o.hashes)
	for _, q := range o.queues {
		ob := o.byQueue[q]
		if hashErr != nil {
			o.failed = append(o.failed, ob.ids...)
			continue
		}
		at := 0
		for _, batch := range queue.Batches(ob.msgs) {
			ids := ob.ids[at : at+len(batch)]
			at += len(batch)
			sendAt := r.Clock.Now().UnixMilli()
			for j := range batch {
				batch[j].Delay = delay(sendAt)
				deliverAt[ids[j]] = sendAt + batch[j].Delay.Milliseconds()
			}
			if err := r.Sender.SendBatch(ctx, q, batch); err != nil {
				r.Log.ErrorContext(ctx, "replay: send failed; rows go back to pending", "queue", q, "ids", ids, "error", err.Error())
				o.failed = append(o.failed, ids...)
			} else {
				sent = append(sent, ids...)
			}
		}
	}
	if hashErr != nil {
		r.Log.ErrorContext(ctx, "replay: could not set the body hash of rows captured before it existed; nothing sent, rows go back to pending",
			"rows", len(o.hashes), "error", hashErr.Error())
	}
	return sent, deliverAt
}

// settle returns every claimed row still claimed at claimAt to replayed
// (sent) or pending (the rest) in one batch, with the tallies, signature
// counts, activity and counters that go with it and plan.settle's
// statements. On success it fills res from sent and failed; if the batch
// fails the rows stay replaying (Rescue returns them to pending).
func (r Replay) settle(ctx context.Context, cs []claimed, claimAt int64, plan sendPlan, sent, failed []int64, deliverAt map[int64]int64, res *ReplayResult) error {
	all := make([]int64, len(cs))
	for i, c := range cs {
		all[i] = c.id
	}
	stmts, settleAt := settleStmts(all, sent, claimAt, r.Clock.Now().UnixMilli())
	if plan.settle != nil {
		ats := make([]int64, len(sent))
		for i, id := range sent {
			ats[i] = deliverAt[id]
		}
		stmts = append(stmts, plan.settle(sent, ats)...)
	}
	settled := 0
	out, err := dlq.BatchOf(r.Batch, r.DB).Batch(ctx, stmts...)
	if err == nil {
		var ids []struct{ ID int64 }
		if err = json.Unmarshal(out[settleAt], &ids); err == nil {
			settled = len(ids)
		}
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

// settleStmts returns the settle's statements for the claimed rows all (of
// which sent were sent) still claimed at claimAt, settled at settledAt, and
// the index of the settle itself, whose RETURNING id rows count the rows
// settled (D1's changes count also includes what triggers wrote).
func settleStmts(all, sent []int64, claimAt, settledAt int64) (stmts []sqlbatch.Stmt, settleAt int) {
	sentJSON := dlq.IDsJSON(sent)
	allJSON := dlq.IDsJSON(all)
	cond, args := settleCond, []any{allJSON, claimAt}
	sentCond, sentArgs := settleCond+` AND id IN (SELECT value FROM json_each(?))`, []any{allJSON, claimAt, sentJSON}
	stmts = []sqlbatch.Stmt{
		dlq.TallyMove(cond, args, `CASE WHEN id IN (SELECT value FROM json_each(`+quoteSQL(sentJSON)+`)) THEN 'replayed' ELSE 'pending' END`),
		settledSignatures(cond, args, sentJSON, len(sent) == len(all)),
		dlq.ActivityAdd(dlq.StatusReplayed, settledAt, sentCond, sentArgs),
		dlq.CounterAdd(CounterReplayed, sentCond, sentArgs),
		{SQL: settleSQL + ` RETURNING id`, Args: []any{sentJSON, settledAt, allJSON, claimAt}}}
	return stmts, len(stmts) - 1
}

// outbox is what one replay sends to one queue: messages and their row ids, in order.
type outbox struct {
	msgs []queue.Outgoing
	ids  []int64
}

// body returns the text form of the claimed row's body, to be sent with
// c.ct: the stored text, decoded when a text or JSON body was stored as
// base64; for bytes the stored base64 itself (the sender decodes it).
func (c claimed) body() (string, error) {
	switch c.ct {
	case queue.Text, queue.JSON:
		text := c.raw
		if c.encoding == "base64" {
			b, err := base64.StdEncoding.DecodeString(c.raw)
			if err != nil {
				return "", fmt.Errorf("stored body is not base64: %w", err)
			}
			text = string(b)
		}
		if c.ct == queue.JSON && !json.Valid([]byte(text)) {
			return "", fmt.Errorf("json body is not valid JSON")
		}
		return text, nil
	case queue.Bytes:
		if _, err := base64.StdEncoding.DecodeString(c.raw); err != nil {
			return "", fmt.Errorf("bytes body is not base64: %w", err)
		}
		return c.raw, nil
	default:
		return "", fmt.Errorf("content type %q cannot be sent", c.ct)
	}
}

// rowHash is a body hash to set on a claimed row.
type rowHash struct {
	ID     int64  `json:"id"`
	Hash   string `json:"h"`
	Edited int64  `json:"e,omitempty"`
}

// setHashSQL sets body_hash on claimed rows, in one statement.
const setHashSQL = `UPDATE dlq_messages SET body_hash = j.value ->> '$.h', body_edited = j.value ->> '$.e'
	FROM json_each(?) AS j WHERE dlq_messages.id = j.value ->> '$.id' AND +dlq_messages.status = 'replaying'`

// setHashes sets the body hash of claimed rows whose body_hash is not the
// hash of what is sent (nothing to do, and no statement, in the usual
// case). The hash is of the stored text (or of the edited body): a json row stored in another spelling than
// JSON.stringify's (whitespace, escapes), which new captures never are,
// comes back from the queue respelled and is then captured as a new row.
func (r Replay) setHashes(ctx context.Context, hs []rowHash) error {
	if len(hs) == 0 {
		return nil
	}
	js, err := json.Marshal(hs)
	if err != nil {
		return err
	}
	if _, err := r.DB.ExecContext(ctx, setHashSQL, string(js)); err != nil {
		return fmt.Errorf("replay body hash: %w", err)
	}
	return nil
}

// settleSQL ends a replay in one statement: sent rows (?1) become replayed
// (replay_count grows), the others claimed (?3) go back to pending. Only rows
// still held by this claim (?4) change; see IDsJSON for +status.
const settleSQL = `UPDATE dlq_messages SET
		status = CASE WHEN id IN (SELECT value FROM json_each(?1)) THEN 'replayed' ELSE 'pending' END,
		replay_count = COALESCE(replay_count, 0) + (id IN (SELECT value FROM json_each(?1))),
		replayed_at = CASE WHEN id IN (SELECT value FROM json_each(?1)) THEN ?2 ELSE replayed_at END,
		replaying_at = NULL, updated_at = ?2, ` + dlq.SetTallied + `
	WHERE id IN (SELECT value FROM json_each(?3)) AND +status = 'replaying' AND replaying_at = ?4`

// settleCond is settleSQL's condition with positional arguments (claimed
// ids, claim time), for the statements that count the rows it moves.
const settleCond = `id IN (SELECT value FROM json_each(?)) AND +status = 'replaying' AND replaying_at = ?`

// quoteSQL is s as an SQL string literal.
func quoteSQL(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

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
	rows, err := r.DB.QueryContext(ctx, `SELECT id, status, `+dlq.ReplayableSQL+` FROM dlq_messages
		WHERE id IN (SELECT value FROM json_each(?))`, dlq.IDsJSON(rest))
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
		if s.Status == dlq.StatusPending && !replayable {
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
func (r Replay) progress(ctx context.Context, sel dlq.Selection, cs []claimed, limit int) (*BulkProgress, error) {
	if len(cs) < limit {
		// The claim's subquery took every matching row that was left.
		return &BulkProgress{}, nil
	}
	last := cs[len(cs)-1]
	pos := dlq.Position{Kind: dlq.CursorReplay, Filter: sel.Filter.Fingerprint(), FailedAt: last.failedAt, ID: last.id}
	cond, args := sel.Where(true, &pos)
	var more bool
	if err := r.DB.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM dlq_messages WHERE `+cond+`)`, args...).Scan(&more); err != nil {
		return nil, fmt.Errorf("replay progress: %w", err)
	}
	if !more {
		return &BulkProgress{}, nil
	}
	next := r.Cursors.Encode(pos)
	return &BulkProgress{NextCursor: &next, HasMore: true}, nil
}

// settledSignatures moves the settled rows' signature counts: replaying to
// replayed, or back to pending for rows whose send failed (pending's
// counts, and their index entries, are written only when some failed).
func settledSignatures(cond string, args []any, sentJSON string, allSent bool) sqlbatch.Stmt {
	if allSent {
		return dlq.SignatureMove(cond, args, `'replayed'`, dlq.StatusReplaying, dlq.StatusReplayed)
	}
	return dlq.SignatureMove(cond, args, `CASE WHEN id IN (SELECT value FROM json_each(`+quoteSQL(sentJSON)+`)) THEN 'replayed' ELSE 'pending' END`,
		dlq.StatusPending, dlq.StatusReplaying, dlq.StatusReplayed)
}

// ReplayOutcome classifies a replay result.
func ReplayOutcome(r ReplayResult) string {
	switch {
	case r.FailedCount == 0:
		return dlq.OutcomeOK
	case r.ReplayedCount == 0:
		return dlq.OutcomeFailed
	default:
		return dlq.OutcomePartial
	}
}
