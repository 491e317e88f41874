package incidents

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"
	"unicode/utf8"

	"github.com/redrive/redrive/alerts"
	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/sqlbatch"
)

// Change is a status change of a group (POST
// /admin/dlq/groups/{signature}/status).
type Change struct {
	// Status is the new status (Statuses).
	Status string `json:"status"`
	// Until is when a snooze ends (epoch ms): required with snoozed, in
	// the future and at most MaxSnooze ahead; not allowed otherwise.
	Until *int64 `json:"until,omitempty"`
	// Owner and Note replace the group's when given ("" clears).
	Owner *string `json:"owner,omitempty"`
	Note  *string `json:"note,omitempty"`
}

// Bounds of a Change.
const (
	MaxSnooze = 30 * 24 * time.Hour
	MaxOwner  = 100
	MaxNote   = 1000
)

// Incident is a group's incident state (on GET /admin/dlq/groups and the
// status change's answer).
type Incident struct {
	Signature string `json:"signature"`
	// Status is open, acknowledged, resolved, ignored or snoozed.
	Status string `json:"status"`
	// Occurrence counts the group's openings (a reopen adds one).
	Occurrence int64 `json:"occurrence"`
	// Since is when the status last changed (null: never since it was first seen).
	Since        *int64  `json:"since"`
	ResolvedAt   *int64  `json:"resolved_at"`
	SnoozedUntil *int64  `json:"snoozed_until"`
	Owner        *string `json:"owner"`
	Note         *string `json:"note"`
}

// Changed is the answer to a status change: the incident after it, and
// the event it recorded (null: none, for open and snoozed, or a change to
// the status the group had).
type Changed struct {
	Incident Incident `json:"incident"`
	EventID  *string  `json:"event_id"`
	queue    string
}

// AuditOutcome implements dlq.Audited.
func (Changed) AuditOutcome() string { return dlq.OutcomeOK }

// AuditCounts implements dlq.Audited.
func (c Changed) AuditCounts() any {
	return map[string]any{"signature": c.Incident.Signature, "status": c.Incident.Status}
}

// Groups changes groups' statuses.
type Groups struct {
	DBs    dlq.Databases
	Outbox *alerts.Outbox
	Audit  dlq.Audit
}

// ErrGroupNotFound: no group has the signature (or not one the requester reaches).
var ErrGroupNotFound = errors.New("group not found")

// Check validates c at now.
func (c Change) Check(now time.Time) error {
	if !ValidStatus(c.Status) {
		return dlq.InputErr("INVALID_STATUS", "status must be one of open, acknowledged, resolved, ignored, snoozed")
	}
	switch {
	case c.Status == Snoozed && c.Until == nil:
		return dlq.InputErr("INVALID_UNTIL", "until (epoch ms) is required to snooze")
	case c.Status != Snoozed && c.Until != nil:
		return dlq.InputErr("INVALID_UNTIL", "until goes only with status snoozed")
	case c.Until != nil && (*c.Until <= now.UnixMilli() || *c.Until > now.Add(MaxSnooze).UnixMilli()):
		return dlq.InputErr("INVALID_UNTIL", "until must be in the future and at most %d days ahead", int(MaxSnooze.Hours()/24))
	}
	for _, f := range []struct {
		name string
		v    *string
		max  int
	}{{"owner", c.Owner, MaxOwner}, {"note", c.Note, MaxNote}} {
		if f.v == nil {
			continue
		}
		if len(*f.v) > f.max || !utf8.ValidString(*f.v) || hasControl(*f.v) {
			return dlq.InputErr("INVALID_REQUEST", "%s must be UTF-8 text of at most %d bytes without control characters", f.name, f.max)
		}
	}
	return nil
}

func hasControl(s string) bool {
	for _, r := range s {
		if r < 0x20 && r != '\t' || r == 0x7f {
			return true
		}
	}
	return false
}

// Set changes group sig's status as c asks, audited as group_status
// (by who asked) with its event, and returns the incident after it.
func (g Groups) Set(ctx context.Context, sig string, c Change, by dlq.Requester, now time.Time) (Changed, error) {
	if err := c.Check(now); err != nil {
		return Changed{}, err
	}
	if !dlq.ValidSignatureKey(sig) {
		return Changed{}, ErrGroupNotFound
	}
	db, gr, err := g.find(ctx, sig, by.Scope)
	if err != nil {
		return Changed{}, err
	}
	start := dlq.AuditStart{Action: dlq.ActionGroupStatus, Requester: by, Queue: gr.Queue, Note: c.Status + " " + sig}
	res, err := g.Audit.Run(ctx, start, dlq.AuditAround, func(ctx context.Context) (dlq.Audited, error) {
		return g.apply(ctx, db, gr, c, now)
	})
	if err != nil {
		return Changed{}, err
	}
	return res.(Changed), nil
}

// find reads the group from the databases by's scope reaches.
func (g Groups) find(ctx context.Context, sig string, scope dlq.Scope) (dlq.Database, group, error) {
	for _, d := range g.DBs.All {
		var gr group
		err := d.DB.QueryRowContext(ctx, `SELECT `+groupColumns+` FROM dlq_signatures WHERE signature = ?`, sig).Scan(
			&gr.Signature, &gr.Class, &gr.Text, &gr.Queue, &gr.Incident, &gr.Seq, &gr.Pending, &gr.Total, &gr.Samples, &gr.Owner, &gr.Note)
		if errors.Is(err, sql.ErrNoRows) {
			continue
		}
		if err != nil {
			return dlq.Database{}, group{}, fmt.Errorf("read group: %w", err)
		}
		if !scope.ReachesQueue(g.DBs.Pipelines(), gr.Queue) {
			return dlq.Database{}, group{}, ErrGroupNotFound
		}
		return d, gr, nil
	}
	return dlq.Database{}, group{}, ErrGroupNotFound
}

// eventOf is the event type a change to status tells ("" for none).
func eventOf(status string) string {
	switch status {
	case Acknowledged:
		return alerts.GroupAcknowledged
	case Resolved:
		return alerts.GroupResolved
	case Ignored:
		return alerts.GroupIgnored
	}
	return ""
}

// apply makes the change, guarded by the state read (a group changed
// meanwhile is 409 CONFLICT), committed with its event
// (alerts.Outbox.Commit; a conflict in the outbox's database tells nothing).
func (g Groups) apply(ctx context.Context, db dlq.Database, gr group, c Change, now time.Time) (Changed, error) {
	t := now.UnixMilli()
	var until any
	if c.Until != nil {
		until = *c.Until
	}
	owner, note := optional(c.Owner), optional(c.Note)
	change := sqlbatch.Stmt{SQL: `UPDATE dlq_signatures SET incident = ?1, incident_at = ?2, snoozed_until = ?3,
			resolved_at = CASE WHEN ?1 = 'resolved' THEN ?2 ELSE resolved_at END,
			owner = CASE WHEN ?4 THEN NULLIF(?5, '') ELSE owner END, note = CASE WHEN ?6 THEN NULLIF(?7, '') ELSE note END,
			announced_at = COALESCE(announced_at, ?2)
		WHERE signature = ?8 AND incident = ?9 AND incident_seq = ?10
		RETURNING signature`,
		Args: []any{c.Status, t, until, owner.flag(), owner.v, note.flag(), note.v, gr.Signature, gr.Incident, gr.Seq}}
	out := Changed{queue: gr.Queue}
	var evs []alerts.Keyed
	if typ := eventOf(c.Status); typ != "" && c.Status != gr.Incident {
		after := gr
		if c.Owner != nil {
			after.Owner = *c.Owner
		}
		if c.Note != nil {
			after.Note = *c.Note
		}
		ev := event(after, typ, gr.Seq, alerts.Timestamp(now), g.DBs.Pipelines(), "")
		evs = append(evs, ev)
		out.EventID = &ev.ID
	}
	res, err := g.Outbox.Commit(ctx, db.Name, dlq.BatchOf(db.Batch, db.DB), []sqlbatch.Stmt{change}, evs, now, changedNow)
	if err != nil {
		return out, fmt.Errorf("change group: %w", err)
	}
	var rows []json.RawMessage
	_ = json.Unmarshal(res[0], &rows)
	if len(rows) == 0 {
		return out, &dlq.InputError{Code: "CONFLICT", Message: "the group changed meanwhile; read it again", Status: http.StatusConflict}
	}
	inc, err := Read(ctx, db.DB, gr.Signature)
	out.Incident = inc
	return out, err
}

type opt struct {
	set bool
	v   string
}

func (o opt) flag() int64 {
	if o.set {
		return 1
	}
	return 0
}

func optional(s *string) opt {
	if s == nil {
		return opt{}
	}
	return opt{set: true, v: *s}
}

// Read reads group sig's incident from db.
func Read(ctx context.Context, db *sql.DB, sig string) (Incident, error) {
	var in Incident
	err := db.QueryRowContext(ctx, `SELECT signature, incident, incident_seq, incident_at, resolved_at, snoozed_until, owner, note
		FROM dlq_signatures WHERE signature = ?`, sig).Scan(&in.Signature, &in.Status, &in.Occurrence, &in.Since, &in.ResolvedAt,
		&in.SnoozedUntil, &in.Owner, &in.Note)
	if errors.Is(err, sql.ErrNoRows) {
		return in, ErrGroupNotFound
	}
	if err != nil {
		return in, fmt.Errorf("read group: %w", err)
	}
	return in, nil
}
