package resolve

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/queue"
)

// MaxEditedBody bounds an edited body (its compact JSON): Cloudflare
// Queues' message limit is 128 KB.
const MaxEditedBody = 128_000

// ErrRowNotFound: no dlq_messages row has the id.
var ErrRowNotFound = errors.New("no such dlq row")

// RowStateError: the row exists but cannot be replayed edited (not
// pending, or not a json row). The admin API answers 409 INVALID_STATE.
type RowStateError struct {
	ID          int64
	Status      string
	ContentType string
}

func (e *RowStateError) Error() string {
	if e.Status != dlq.StatusPending {
		return fmt.Sprintf("row %d is %s; only a pending row can be replayed edited", e.ID, e.Status)
	}
	return fmt.Sprintf("row %d has content type %s; only a json row can be replayed edited", e.ID, e.ContentType)
}

// EditedReplayRequest replays one pending json row with an edited body.
type EditedReplayRequest struct {
	ID int64
	// Body is the edited JSON value; it is sent compacted.
	Body json.RawMessage
	// Note says why (audited), 1..MaxNoteLength bytes.
	Note         string
	DelaySeconds int64
	Destination  string
}

// EditedReplayResult is the response of POST /admin/dlq/{id}/replay.
type EditedReplayResult struct {
	ID int64 `json:"id"`
	// Replayed is true when the edited body was sent (the row is replayed);
	// false when the send failed (the row is pending again).
	Replayed     bool   `json:"replayed"`
	QueuedTo     string `json:"queued_to"`
	DelaySeconds int64  `json:"delay_seconds"`
	// OriginalBodyHash is the lineage hash of the stored body (raw_message,
	// unchanged); EditedBodyHash that of the body sent, now the row's
	// body_hash, so a repeat failure of the edited message comes back to
	// this row.
	OriginalBodyHash string `json:"original_body_hash"`
	EditedBodyHash   string `json:"edited_body_hash"`

	// destination is the request's, for the audit entry.
	destination string
}

// AuditOutcome is ok when the edited body was sent, failed when not.
func (r EditedReplayResult) AuditOutcome() string {
	if !r.Replayed {
		return dlq.OutcomeFailed
	}
	return dlq.OutcomeOK
}

// AuditCounts are the counts of r's audit entry, with both body hashes.
func (r EditedReplayResult) AuditCounts() any {
	counts := map[string]any{"replayed": r.Replayed, "queued_to": r.QueuedTo, "delay_seconds": r.DelaySeconds,
		"original_body_hash": r.OriginalBodyHash, "edited_body_hash": r.EditedBodyHash}
	if r.destination != "" {
		counts["destination"] = r.destination
	}
	return counts
}

// CheckEdited validates req and returns the compact body.
func (r Replay) CheckEdited(req EditedReplayRequest) (string, error) {
	if req.ID < 1 || req.ID > dlq.MaxSafeInteger {
		return "", ErrRowNotFound
	}
	raw := bytes.TrimSpace(req.Body)
	if len(raw) == 0 || string(raw) == "null" {
		return "", dlq.InputErr("INVALID_REQUEST", "body is required: the edited JSON value to send (not null)")
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return "", dlq.InputErr("INVALID_REQUEST", "body must be a JSON value")
	}
	if buf.Len() > MaxEditedBody {
		return "", dlq.InputErr("INVALID_REQUEST", "body is %d bytes as compact JSON; at most %d", buf.Len(), MaxEditedBody)
	}
	if req.Note == "" || len(req.Note) > dlq.MaxNoteLength || !utf8.ValidString(req.Note) {
		return "", dlq.InputErr("INVALID_REQUEST", "note is required: 1..%d bytes saying why the body was edited", dlq.MaxNoteLength)
	}
	if req.DelaySeconds < 0 || req.DelaySeconds > dlq.MaxDelaySeconds {
		return "", dlq.InputErr("INVALID_DELAY", "delay_seconds must be an integer in 0..%d", dlq.MaxDelaySeconds)
	}
	if err := r.CheckDestination(req.Destination); err != nil {
		return "", err
	}
	return buf.String(), nil
}

// RunEdited claims the row if it is pending and json, sends the edited
// body (as json) to its source queue or req.Destination, and settles it
// like any replay (claim and sendAndSettle). raw_message is not changed;
// body_hash becomes the edited body's hash before the send (the lineage
// key of a repeat failure). A row that is not pending or not json is a
// *RowStateError, a missing one ErrRowNotFound; neither changes anything.
func (r Replay) RunEdited(ctx context.Context, req EditedReplayRequest) (EditedReplayResult, error) {
	ctx = context.WithoutCancel(ctx)
	body, err := r.CheckEdited(req)
	if err != nil {
		return EditedReplayResult{}, err
	}
	return r.runEdited(ctx, req, body)
}

// runEdited is RunEdited of a checked request (body from CheckEdited).
func (r Replay) runEdited(ctx context.Context, req EditedReplayRequest, body string) (EditedReplayResult, error) {
	res := EditedReplayResult{destination: req.Destination}
	cs, claimAt, err := r.claim(ctx, `id = ? AND status = 'pending' AND `+dlq.ContentTypeSQL+` = 'json'`, []any{req.ID})
	if err != nil {
		return res, err
	}
	if len(cs) == 0 {
		return res, r.notClaimed(ctx, req.ID)
	}
	c := &cs[0]
	res.ID, res.DelaySeconds, res.EditedBodyHash = req.ID, req.DelaySeconds, dlq.BodyHash(queue.JSON, body)
	if c.hash != "" && !c.wasEdited {
		res.OriginalBodyHash = c.hash
	} else if text, err := c.body(); err == nil {
		// body_hash is missing (captured before it existed) or an earlier
		// edit's (body_edited): hash the stored body.
		res.OriginalBodyHash = dlq.BodyHash(c.ct, text)
	}
	c.raw, c.encoding, c.ct, c.edited = body, "", queue.JSON, true
	delay := time.Duration(req.DelaySeconds) * time.Second
	var rr ReplayResult
	err = r.sendAndSettle(ctx, cs, claimAt, sendPlan{delay: func(int64) time.Duration { return delay }, destination: req.Destination}, &rr)
	res.Replayed, res.QueuedTo = rr.ReplayedCount == 1, rr.QueuedTo
	return res, err
}

// notClaimed says why a row was not claimed by RunEdited.
func (r Replay) notClaimed(ctx context.Context, id int64) error {
	var st RowStateError
	err := r.DB.QueryRowContext(ctx, `SELECT status, `+dlq.ContentTypeSQL+` FROM dlq_messages WHERE id = ?`, id).Scan(&st.Status, &st.ContentType)
	if errors.Is(err, sql.ErrNoRows) {
		return ErrRowNotFound
	}
	if err != nil {
		return fmt.Errorf("replay edited: %w", err)
	}
	st.ID = id
	return &st
}
