package handlers

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/redrive/redrive/access"
	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/dlq/inspect"
	"github.com/redrive/redrive/dlq/resolve"
)

// The DLQ admin routes (handlers/openapi.json describes each). Inputs
// are parsed here; the dlq services validate their meaning. Every rejected
// input is a 400 envelope and changes nothing.

// databases are the databases of the DLQ rows (a.DBs, or a.DB alone).
func (a *API) databases() dlq.Databases {
	if len(a.DBs.All) == 0 {
		return dlq.Single(dlq.Store{DB: a.DB, Batch: a.Batch})
	}
	return a.DBs
}

func (a *API) cursors() dlq.Cursors { return dlq.NewCursors(a.Auth.AdminSecret) }

func (a *API) replayService() resolve.Replay {
	return resolve.Replay{DB: a.DB, Batch: a.Batch, Sender: a.Sender, Log: a.Log, Cursors: a.cursors(), BulkMax: a.BulkReplayMax, Clock: a.Clock,
		Destinations: a.ReplayDestinations, MissingProducers: a.MissingProducers, Pipelines: a.databases().Pipelines()}
}

func (a *API) acknowledgeService() resolve.Acknowledge {
	return resolve.Acknowledge{DB: a.DB, Batch: a.Batch, BulkMax: a.BulkAcknowledgeMax, Clock: a.Clock,
		Pipelines: a.databases().Pipelines()}
}

func (a *API) auditLog() dlq.Audit {
	return dlq.Audit{DB: a.DB, DBs: a.databases(), Cursors: a.cursors(), Clock: a.Clock, Log: a.Log}
}

// actions are the DLQ row and replay task actions: each chooses its
// database and records itself in the audit log.
func (a *API) actions() resolve.Actions {
	return resolve.Actions{DBs: a.databases(), Replay: a.replayService(), Acknowledge: a.acknowledgeService(), Audit: a.auditLog()}
}

// pageQuery is the prologue of every paged listing: its query parameters
// (queryValues) and its limit (absent: 0, the service default).
func pageQuery(r *http.Request) (map[string]string, int, error) {
	q := queryValues(r)
	limit, err := queryLimit(q)
	return q, limit, err
}

// queryLimit parses limit (absent: 0, the service default).
func queryLimit(q map[string]string) (int, error) {
	raw, ok := q["limit"]
	if !ok {
		return 0, nil
	}
	n, err := strconv.ParseInt(raw, 10, 64)
	if err != nil {
		n = 0 // not an integer: outside the range too
	}
	return int(n), dlq.CheckLimit(n, dlq.MaxListLimit, "")
}

func queryBool(q map[string]string, name string) (bool, error) {
	switch q[name] {
	case "", "false", "0":
		return false, nil
	case "true", "1":
		return true, nil
	}
	return false, badRequest("INVALID_REQUEST", name+" must be true or false")
}

func queryMillis(q map[string]string, name string) (*int64, error) {
	raw, ok := q[name]
	if !ok {
		return nil, nil
	}
	n, err := strconv.ParseInt(raw, 10, 64)
	if err != nil {
		return nil, badRequest("INVALID_FILTER", name+" must be epoch milliseconds (an integer)")
	}
	return &n, nil
}

// parseListParams reads the list's query parameters (GET /admin/dlq and
// GET /admin/dlq/export).
func parseListParams(q map[string]string) (inspect.ListParams, error) {
	p := inspect.ListParams{Cursor: q["cursor"], Filter: dlq.Filter{Status: q["status"], Key: q["beer_id"],
		SourceQueue: q["source_queue"], Pipeline: q["pipeline"], Q: q["q"], Signature: q["signature"], Version: q["version"], VersionNot: q["version_not"]}}
	var err error
	if p.Limit, err = queryLimit(q); err != nil {
		return p, err
	}
	if p.IncludeRaw, err = queryBool(q, "include_raw"); err != nil {
		return p, err
	}
	if p.Filter.FailedAfter, err = queryMillis(q, "failed_after"); err != nil {
		return p, err
	}
	if p.Filter.FailedBefore, err = queryMillis(q, "failed_before"); err != nil {
		return p, err
	}
	return p, nil
}

// listParams are the list's query parameters of r, its filter limited to
// the principal's scope.
func (a *API) listParams(r *http.Request) (inspect.ListParams, error) {
	p, err := parseListParams(queryValues(r))
	if err != nil {
		return p, err
	}
	p.Filter, err = scopeOf(r).Filter(a.databases().Pipelines(), p.Filter)
	return p, err
}

// dlqList serves GET /admin/dlq.
func (a *API) dlqList(w http.ResponseWriter, r *http.Request) error {
	p, err := a.listParams(r)
	if err != nil {
		return err
	}
	if p.IncludeRaw {
		if err := need(r, access.ReadBody); err != nil {
			return err
		}
	}
	page, err := inspect.List{DBs: a.databases(), Cursors: a.cursors()}.Page(r.Context(), p)
	if err != nil {
		return err
	}
	respond(w, r, http.StatusOK, page)
	return nil
}

// dlqGroups serves GET /admin/dlq/groups.
func (a *API) dlqGroups(w http.ResponseWriter, r *http.Request) error {
	q, limit, err := pageQuery(r)
	if err != nil {
		return err
	}
	pipeline, err := scopeOf(r).Pipeline(q["pipeline"])
	if err != nil {
		return err
	}
	p := inspect.GroupsParams{Cursor: q["cursor"], Class: q["class"], Version: q["version"], Sort: q["sort"], Pipeline: pipeline, Limit: limit,
		Incident: q["incident"]}
	page, err := inspect.Groups{DBs: a.databases(), Cursors: a.cursors()}.Page(r.Context(), p)
	if err != nil {
		return err
	}
	respond(w, r, http.StatusOK, page)
	return nil
}

// dlqStats serves GET /admin/dlq/stats.
func (a *API) dlqStats(w http.ResponseWriter, r *http.Request) error {
	pipeline, err := scopedPipeline(r)
	if err != nil {
		return err
	}
	rep, err := inspect.Stats{DBs: a.databases(), Clock: a.Clock, Pipeline: pipeline}.Report(r.Context())
	if err != nil {
		return err
	}
	v := a.Running
	if v.Build == "" {
		v.Build = a.Version
	}
	rep.CurrentVersion = &inspect.CurrentVersion{Stamp: v.Stamp(), ID: v.ID, Tag: v.Tag, Timestamp: v.Timestamp, Build: v.Build}
	respond(w, r, http.StatusOK, rep)
	return nil
}

// isIntLiteral reports whether b is a JSON integer written without fraction or exponent.
func isIntLiteral(b []byte) bool {
	if len(b) > 0 && b[0] == '-' {
		b = b[1:]
	}
	if len(b) == 0 || (b[0] == '0' && len(b) > 1) {
		return false
	}
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// jsonInt parses an optional JSON integer field; absent or null is (0, false).
func jsonInt(raw json.RawMessage, code, msg string) (int64, bool, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return 0, false, nil
	}
	n, err := strconv.ParseInt(string(raw), 10, 64)
	if !isIntLiteral(raw) || err != nil {
		return 0, false, badRequest(code, msg)
	}
	return n, true, nil
}

// jsonIDs parses the ids field: an array of JSON integers (nil when absent or null).
func jsonIDs(raw json.RawMessage) ([]int64, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var items []json.RawMessage
	if raw[0] != '[' || json.Unmarshal(raw, &items) != nil {
		return nil, badRequest("INVALID_REQUEST", "ids must be an array of integers")
	}
	ids := make([]int64, len(items))
	for i, it := range items {
		n, ok, err := jsonInt(it, "INVALID_REQUEST", fmt.Sprintf("ids[%d] must be an integer", i))
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, badRequest("INVALID_REQUEST", fmt.Sprintf("ids[%d] must be an integer", i))
		}
		ids[i] = n
	}
	return ids, nil
}

// jsonFilter parses the filter field strictly (nil when absent or null).
// Its keys were checked for duplicates with the whole body.
func jsonFilter(raw json.RawMessage) (*dlq.Filter, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var f dlq.Filter
	if err := decodeStrictAt(raw, &f, "filter"); err != nil {
		var apiErr *APIError
		if errors.As(err, &apiErr) {
			return nil, badRequest("INVALID_FILTER", apiErr.Message)
		}
		return nil, err
	}
	return &f, nil
}

// selection reads ids or filter; neither is the original worker's "ids array required".
func selection(ids, filter json.RawMessage) (dlq.Selection, error) {
	var sel dlq.Selection
	var err error
	if sel.IDs, err = jsonIDs(ids); err != nil {
		return sel, err
	}
	if sel.Filter, err = jsonFilter(filter); err != nil {
		return sel, err
	}
	if sel.IDs == nil && sel.Filter == nil {
		return sel, badRequest("INVALID_REQUEST", "ids array required (or a filter object for a bulk action)")
	}
	return sel, nil
}

type replayBody struct {
	IDs          json.RawMessage `json:"ids"`
	DelaySeconds json.RawMessage `json:"delay_seconds"`
	Filter       json.RawMessage `json:"filter"`
	DryRun       bool            `json:"dry_run"`
	Cursor       string          `json:"cursor"`
	Limit        json.RawMessage `json:"limit"`
	Destination  string          `json:"destination"`
}

// dlqReplay serves POST /admin/dlq/replay: {ids, delay_seconds}, or
// {filter, cursor, limit, delay_seconds} for a bulk page; dry_run: true
// reports what would be replayed without changing anything.
func (a *API) dlqReplay(w http.ResponseWriter, r *http.Request) error {
	var body replayBody
	if err := decodeJSON(w, r, &body); err != nil {
		return err
	}
	sel, err := selection(body.IDs, body.Filter)
	if err != nil {
		return err
	}
	req := resolve.ReplayRequest{Selection: sel, Cursor: body.Cursor, Destination: body.Destination}
	if req.DelaySeconds, _, err = jsonInt(body.DelaySeconds, "INVALID_DELAY",
		fmt.Sprintf("delay_seconds must be an integer in 0..%d", dlq.MaxDelaySeconds)); err != nil {
		return err
	}
	limit, given, err := jsonInt(body.Limit, "INVALID_LIMIT", "limit must be an integer")
	if err != nil {
		return err
	}
	if given {
		if err := dlq.CheckLimit(limit, a.replayService().BulkLimit(), "DLQ_BULK_REPLAY_MAX"); err != nil {
			return err
		}
	}
	req.Limit = int(limit)
	res, err := a.actions().ReplayRows(r.Context(), req, a.requester(r), body.DryRun)
	if err != nil {
		return err
	}
	respond(w, r, http.StatusOK, res)
	return nil
}

type acknowledgeBody struct {
	IDs    json.RawMessage `json:"ids"`
	Filter json.RawMessage `json:"filter"`
	DryRun bool            `json:"dry_run"`
	Note   string          `json:"note"`
}

// dlqAcknowledge serves POST /admin/dlq/acknowledge: {ids, note}, or
// {filter, note} for a bulk page; dry_run: true changes nothing.
func (a *API) dlqAcknowledge(w http.ResponseWriter, r *http.Request) error {
	var body acknowledgeBody
	if err := decodeJSON(w, r, &body); err != nil {
		return err
	}
	sel, err := selection(body.IDs, body.Filter)
	if err != nil {
		return err
	}
	req := resolve.AcknowledgeRequest{Selection: sel, Note: body.Note, By: a.requester(r)}
	res, err := a.actions().AcknowledgeRows(r.Context(), req, body.DryRun)
	if err != nil {
		return err
	}
	respond(w, r, http.StatusOK, res)
	return nil
}

func (a *API) requester(r *http.Request) dlq.Requester {
	p := principalOf(r)
	key := r.Header.Get("X-API-Key")
	if token, ok := bearerToken(r.Header.Get("Authorization")); ok && !p.Pair {
		key = token // a named key or REPORT_TOKEN: its own fingerprint
	} else if strings.HasPrefix(p.Name, "access:") {
		key = p.Name // an Access identity: its name's
	}
	return dlq.Requester{RequestID: RequestID(r.Context()), KeyFingerprint: a.Auth.KeyFingerprint(key), Principal: p.Name,
		Scope: scopeOf(r)}
}

// auditList serves GET /admin/audit: the audit log, newest first.
func (a *API) auditList(w http.ResponseWriter, r *http.Request) error {
	q, limit, err := pageQuery(r)
	if err != nil {
		return err
	}
	p := dlq.AuditParams{Action: q["action"], Principal: q["principal"], Cursor: q["cursor"], Limit: limit,
		Queues: scopeOf(r).Queues(a.databases().Pipelines())}
	page, err := a.auditLog().Page(r.Context(), p)
	if err != nil {
		return err
	}
	respond(w, r, http.StatusOK, page)
	return nil
}

type editedReplayBody struct {
	Body         json.RawMessage `json:"body"`
	Note         string          `json:"note"`
	DelaySeconds json.RawMessage `json:"delay_seconds"`
	Destination  string          `json:"destination"`
}

// rowNotFound is the 404 of a DLQ row route.
func rowNotFound(raw string) *APIError {
	return &APIError{Status: http.StatusNotFound, Code: "NOT_FOUND", Message: "no DLQ message with id " + quote(raw)}
}

// dlqReplayEdited serves POST /admin/dlq/{id}/replay: {body, note,
// delay_seconds?, destination?} sends the edited JSON value in place of a
// pending json row's body (raw_message is kept); audited with both body
// hashes and the note.
func (a *API) dlqReplayEdited(w http.ResponseWriter, r *http.Request) error {
	raw := r.PathValue("id")
	id, err := strconv.ParseInt(raw, 10, 64)
	if err != nil || id < 1 {
		return rowNotFound(raw)
	}
	var body editedReplayBody
	if err := decodeJSON(w, r, &body); err != nil {
		return err
	}
	req := resolve.EditedReplayRequest{ID: id, Body: body.Body, Note: body.Note, Destination: body.Destination}
	if req.DelaySeconds, _, err = jsonInt(body.DelaySeconds, "INVALID_DELAY",
		fmt.Sprintf("delay_seconds must be an integer in 0..%d", dlq.MaxDelaySeconds)); err != nil {
		return err
	}
	res, err := a.actions().ReplayEdited(r.Context(), req, a.requester(r))
	var se *resolve.RowStateError
	switch {
	case errors.Is(err, resolve.ErrRowNotFound):
		return rowNotFound(raw)
	case errors.As(err, &se):
		return &APIError{Status: http.StatusConflict, Code: "INVALID_STATE", Message: se.Error()}
	case err != nil:
		return err
	}
	respond(w, r, http.StatusOK, res)
	return nil
}
