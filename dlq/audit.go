package dlq

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"github.com/redrive/redrive/clock"
	"github.com/redrive/redrive/sqlbatch"
)

// ActionReplayEdited is the audit action of an edited replay (POST /admin/dlq/{id}/replay).
const ActionReplayEdited = "replay_edited"

// Task actions (the admin API's POST .../{id}/pause, resume, cancel).
const (
	TaskPause  = "pause"
	TaskResume = "resume"
	TaskCancel = "cancel"
)

// Audit actions.
const (
	ActionReplay      = "replay"
	ActionAcknowledge = "acknowledge"
	// ActionReplayTask creates a replay task; its pause, resume and cancel
	// are recorded as replay_task_pause, replay_task_resume, replay_task_cancel.
	ActionReplayTask = "replay_task"
	// ActionBreakerReset closes the enrichment provider's circuit breaker
	// (POST /admin/enrichment/breaker/reset).
	ActionBreakerReset = "breaker_reset"
	// ActionImport writes exported rows into a pipeline's database (POST
	// /admin/dlq/import), recorded there; ActionRelease deletes moved rows
	// from the database they came from (POST /admin/dlq/release), recorded
	// in that database; ActionEnrich registers and enqueues beers (POST
	// /admin/enrich).
	ActionImport  = "import"
	ActionRelease = "release"
	ActionEnrich  = "enrich"
	// ActionKeyCreate and ActionKeyRevoke create and revoke a named API key
	// (POST /admin/keys, POST /admin/keys/{id}/revoke).
	ActionKeyCreate = "key_create"
	ActionKeyRevoke = "key_revoke"
	// ActionGroupStatus changes a failure group's incident status
	// (dlq/incidents).
	ActionGroupStatus = "group_status"
)

// auditActions are the actions GET /admin/audit filters by.
var auditActions = []string{ActionReplay, ActionAcknowledge, ActionReplayEdited, ActionReplayTask,
	ActionReplayTask + "_" + TaskPause, ActionReplayTask + "_" + TaskResume, ActionReplayTask + "_" + TaskCancel, ActionBreakerReset,
	ActionImport, ActionRelease, ActionEnrich, ActionKeyCreate, ActionKeyRevoke, ActionGroupStatus}

// Audit outcomes.
const (
	// OutcomeStarted is written before the action runs; a row left in it means
	// the worker died mid-action (or the final write failed).
	OutcomeStarted = "started"
	// OutcomeOK: everything claimed was done (including "nothing matched").
	OutcomeOK = "ok"
	// OutcomePartial: some claimed rows could not be sent (back to pending).
	OutcomePartial = "partial"
	// OutcomeFailed: no claimed row could be sent.
	OutcomeFailed = "failed"
	// OutcomeError: an internal error ended the request (500).
	OutcomeError = "error"
)

// Audit is the admin_audit log: every replay and acknowledge request (dry
// runs too) is recorded, so no action is ever unrecorded. Rejected input
// (4xx) is not an action and is not logged. An action that is one batch of
// statements (acknowledge) writes its finished row in that batch (Entry); a
// replay, which sends to a queue between statements, is written before it
// acts (Begin) and completed after (Finish); a dry run changes nothing and
// is recorded once it has answered (Record).
type Audit struct {
	// DB is where entries are written (Begin, Record, Finish).
	DB *sql.DB
	// DBs, when set with more than one database, are the databases Page
	// reads and merges (each keeps its pipelines' entries).
	DBs     Databases
	Cursors Cursors
	// Now is the clock; time.Now when nil.
	Clock clock.Clock
	// Log says when Run could not record an action (slog.Default when nil).
	Log *slog.Logger
}

// AuditStart describes an action about to run.
type AuditStart struct {
	Action string
	Requester
	DryRun bool
	// IDs (ids form) or Filter (bulk form).
	IDs    []int64
	Filter *Filter
	Note   string
	// Queue is the one source queue the action concerns ("": several or
	// unknown); a scoped credential's audit list shows the entries of its
	// pipelines' queues (AuditParams.Queues).
	Queue string
}

// queue is the source_queue column of s: Queue, else its filter's queue.
func (s AuditStart) queue() any {
	q := s.Queue
	if q == "" && s.Filter != nil {
		q = s.Filter.SourceQueue
	}
	return NullIfEmpty(q)
}

// values are the columns every audit row starts with, in auditColumns' order.
func (s AuditStart) values(at int64) []any {
	var ids, filter, note any
	if s.IDs != nil {
		ids = IDsJSON(s.IDs)
	}
	if s.Filter != nil {
		js, _ := json.Marshal(s.Filter)
		filter = string(js)
	}
	if s.Note != "" {
		note = s.Note
	}
	dry := int64(0)
	if s.DryRun {
		dry = 1
	}
	return []any{at, s.Action, s.RequestID, s.KeyFingerprint, dry, ids, filter, note, NullIfEmpty(s.Principal), s.queue()}
}

const auditColumns = `at, action, request_id, key_fingerprint, dry_run, ids, filter, note, principal, source_queue`

// Begin records the start of an action and returns its audit id.
func (a Audit) Begin(ctx context.Context, s AuditStart) (int64, error) {
	var id int64
	err := a.DB.QueryRowContext(ctx, `INSERT INTO admin_audit(`+auditColumns+`, outcome)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'started') RETURNING id`, s.values(a.Clock.Now().UnixMilli())...).Scan(&id)
	if err != nil {
		return 0, fmt.Errorf("audit begin: %w", err)
	}
	return id, nil
}

// AuditError is what an audit entry records about an action that ended in
// an error: the error code the response carried and a short message for
// operators. It never holds the error's own text (D1's or Go's): that goes
// to the worker's log line with the same request id.
type AuditError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// column is e as the error column stores it: JSON text, or NULL.
func (e *AuditError) column() any {
	if e == nil {
		return nil
	}
	js, _ := json.Marshal(e)
	return string(js)
}

// auditErrorOf reads the error column of the entry made by request
// requestID. A value that is not an AuditError (entries written before
// errors had codes held the error's text) is not shown.
func AuditErrorOf(col sql.NullString, requestID string) *AuditError {
	if !col.Valid {
		return nil
	}
	var e AuditError
	if err := json.Unmarshal([]byte(col.String), &e); err != nil || e.Code == "" {
		return &AuditError{Code: "INTERNAL_ERROR", Message: "see the worker log for request " + requestID}
	}
	return &e
}

// FinishedAuditStmt returns the statement that writes s's finished audit row at
// once: its outcome, error (nil for none), and as counts the JSON object that countsSQL
// (an SQL expression taking countsArgs) evaluates to; the statement returns
// the counts. Sent in the same batch as an action, before it, the row and
// the action commit together and the counts see the rows about to change.
func FinishedAuditStmt(s AuditStart, at int64, outcome string, e *AuditError, countsSQL string, countsArgs ...any) sqlbatch.Stmt {
	args := append(s.values(at), outcome, e.column(), at)
	return sqlbatch.Stmt{SQL: `INSERT INTO admin_audit(` + auditColumns + `, outcome, error, finished_at, counts)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ` + countsSQL + `) RETURNING counts`, Args: append(args, countsArgs...)}
}

// Record writes s's finished audit row in one statement: for dry runs,
// which change nothing, and for actions that failed without changing anything.
func (a Audit) Record(ctx context.Context, s AuditStart, outcome string, counts any, e *AuditError) error {
	cs, err := countsJSON(counts)
	if err != nil {
		return err
	}
	st := FinishedAuditStmt(s, a.Clock.Now().UnixMilli(), outcome, e, "?", cs)
	if _, err := a.DB.ExecContext(ctx, st.SQL, st.Args...); err != nil {
		return fmt.Errorf("audit record: %w", err)
	}
	return nil
}

func countsJSON(counts any) (any, error) {
	if counts == nil {
		return nil, nil
	}
	js, err := json.Marshal(counts)
	if err != nil {
		return nil, fmt.Errorf("audit counts: %w", err)
	}
	return string(js), nil
}

// Finish records the outcome, the counts (any JSON-encodable value) and the
// error (nil for none) of action id.
func (a Audit) Finish(ctx context.Context, id int64, outcome string, counts any, e *AuditError) error {
	cs, err := countsJSON(counts)
	if err != nil {
		return err
	}
	_, err = a.DB.ExecContext(ctx, `UPDATE admin_audit SET outcome = ?, counts = ?, error = ?, finished_at = ? WHERE id = ?`,
		outcome, cs, e.column(), a.Clock.Now().UnixMilli(), id)
	if err != nil {
		return fmt.Errorf("audit finish: %w", err)
	}
	return nil
}

// AuditEntry is one admin_audit row.
type AuditEntry struct {
	ID             int64  `json:"id"`
	At             int64  `json:"at"`
	Action         string `json:"action"`
	RequestID      string `json:"request_id"`
	KeyFingerprint string `json:"key_fingerprint"`
	// Principal names who acted (null: entries before principals).
	Principal *string `json:"principal"`
	DryRun    bool    `json:"dry_run"`
	// IDs is the JSON array of requested ids, or null.
	IDs json.RawMessage `json:"ids"`
	// Filter is the JSON filter object of a bulk action, or null.
	Filter json.RawMessage `json:"filter"`
	Note   *string         `json:"note"`
	// Counts is the JSON object of the response's counts, or null while started.
	Counts  json.RawMessage `json:"counts"`
	Outcome string          `json:"outcome"`
	// Error is set when the outcome is error.
	Error      *AuditError `json:"error"`
	FinishedAt *int64      `json:"finished_at"`
}

// AuditParams are GET /admin/audit's inputs.
type AuditParams struct {
	// Action filters to replay or acknowledge ("" for both).
	Action string
	// Principal keeps the entries of one principal ("key:<name>",
	// "access:<email>", "admin"; "" for every one).
	Principal string
	// Queues, when not nil, keeps the entries that concern one of these
	// source queues (a scoped credential's: dlq.Scope.Queues).
	Queues []string
	// Limit is 1..MaxListLimit; 0 means DefaultListLimit.
	Limit  int
	Cursor string
}

// AuditPage is one page of the audit log, newest first.
type AuditPage struct {
	Entries    []AuditEntry `json:"entries"`
	Limit      int          `json:"limit"`
	NextCursor *string      `json:"next_cursor"`
	HasMore    bool         `json:"has_more"`
}

// Page lists audit entries newest first (id DESC) with cursor pagination.
func (a Audit) Page(ctx context.Context, p AuditParams) (AuditPage, error) {
	if p.Action != "" && !slices.Contains(auditActions, p.Action) {
		return AuditPage{}, InputErr("INVALID_FILTER", "action must be one of %s; got %q", strings.Join(auditActions, ", "), p.Action)
	}
	if p.Limit == 0 {
		p.Limit = DefaultListLimit
	}
	if err := CheckLimit(int64(p.Limit), MaxListLimit, ""); err != nil {
		return AuditPage{}, err
	}
	if len(p.Principal) > MaxFilterText {
		return AuditPage{}, InputErr("INVALID_FILTER", "principal is longer than %d bytes", MaxFilterText)
	}
	fp := "action=" + p.Action + "\x00principal=" + p.Principal
	if p.Queues != nil {
		fp += "\x00queues=" + JSONList(p.Queues)
	}
	if a.DBs.Many() {
		return a.pageMerged(ctx, p, fp)
	}
	var after int64
	if p.Cursor != "" {
		pos, err := a.Cursors.Decode(p.Cursor, CursorAudit, fp)
		if err != nil {
			return AuditPage{}, err
		}
		after = pos.ID
	}
	entries, err := ReadAudit(ctx, DBOf(a.DBs, a.DB, "", ""), p, after)
	if err != nil {
		return AuditPage{}, err
	}
	out := AuditPage{Entries: entries, Limit: p.Limit}
	if len(out.Entries) > p.Limit {
		out.Entries = out.Entries[:p.Limit]
		next := a.Cursors.Encode(Position{Kind: CursorAudit, Filter: fp, ID: out.Entries[p.Limit-1].ID})
		out.NextCursor, out.HasMore = &next, true
	}
	return out, nil
}

// readAudit reads at most p.Limit + 1 entries of db, newest first, with
// ids below after (0: from the newest).
func ReadAudit(ctx context.Context, db *sql.DB, p AuditParams, after int64) ([]AuditEntry, error) {
	cond, args := "1 = 1", []any{}
	if p.Action != "" {
		cond, args = "action = ?", append(args, p.Action)
	}
	if p.Principal != "" {
		cond, args = cond+" AND principal = ?", append(args, p.Principal)
	}
	if p.Queues != nil {
		cond, args = cond+" AND source_queue IN (SELECT value FROM json_each(?))", append(args, JSONList(p.Queues))
	}
	if after != 0 {
		cond, args = cond+" AND id < ?", append(args, after)
	}
	rows, err := db.QueryContext(ctx, `SELECT id, at, action, request_id, key_fingerprint, dry_run, ids, filter, note,
			counts, outcome, error, finished_at, principal
		FROM admin_audit WHERE `+cond+` ORDER BY id DESC LIMIT ?`, append(args, int64(p.Limit+1))...)
	if err != nil {
		return nil, fmt.Errorf("audit list: %w", err)
	}
	defer rows.Close()
	entries := []AuditEntry{}
	for rows.Next() {
		var e AuditEntry
		var ids, filter, counts, errText sql.NullString
		if err := rows.Scan(&e.ID, &e.At, &e.Action, &e.RequestID, &e.KeyFingerprint, &e.DryRun, &ids, &filter, &e.Note,
			&counts, &e.Outcome, &errText, &e.FinishedAt, &e.Principal); err != nil {
			return nil, fmt.Errorf("audit scan: %w", err)
		}
		e.IDs, e.Filter, e.Counts = RawJSON(ids), RawJSON(filter), RawJSON(counts)
		e.Error = AuditErrorOf(errText, e.RequestID)
		entries = append(entries, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("audit rows: %w", err)
	}
	return entries, nil
}

// rawJSON passes stored JSON text through (null when absent or not JSON).
func RawJSON(s sql.NullString) json.RawMessage {
	if !s.Valid || !json.Valid([]byte(s.String)) {
		return json.RawMessage("null")
	}
	return json.RawMessage(s.String)
}
