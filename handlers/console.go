package handlers

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/redrive/redrive/alerts"
	"github.com/redrive/redrive/dlq/inspect"
	"github.com/redrive/redrive/internal/text"
	"github.com/redrive/redrive/metrics"
)

// Routes the operator console (console/) needs beyond the list, stats,
// actions and audit log. Each reads a bounded number of rows, whatever
// the backlog (handlers/openapi.json states the bound of each).

// dlqDetail serves GET /admin/dlq/{id}: one row with its body, lineage and
// the audit entries (among the newest inspect.AuditWindow) that touched it. An id
// that is not a row's (or not a positive integer) is a 404.
func (a *API) dlqDetail(w http.ResponseWriter, r *http.Request) error {
	raw := r.PathValue("id")
	id, err := strconv.ParseInt(raw, 10, 64)
	if err == nil {
		var d inspect.MessageDetail
		if d, err = inspect.ReadDetail(r.Context(), a.databases(), id, scopeOf(r)); err == nil {
			respond(w, r, http.StatusOK, d)
			return nil
		}
	}
	if errors.Is(err, strconv.ErrSyntax) || errors.Is(err, strconv.ErrRange) {
		// GET /admin/dlq/replay matches this route before the mux can say
		// that /admin/dlq/replay is a POST route: say it here, as it would.
		if allow := a.otherMethods(r.URL.Path); allow != "" {
			w.Header().Set("Allow", allow)
			return &APIError{Status: http.StatusMethodNotAllowed, Code: "METHOD_NOT_ALLOWED",
				Message: text.Clip(r.Method, maxEcho) + " is not allowed on " + quote(r.URL.EscapedPath())}
		}
	}
	if errors.Is(err, inspect.ErrMessageNotFound) || errors.Is(err, strconv.ErrSyntax) || errors.Is(err, strconv.ErrRange) {
		return &APIError{Status: http.StatusNotFound, Code: "NOT_FOUND", Message: "no DLQ row with id " + quote(raw)}
	}
	return err
}

// otherMethods lists the methods of the routes whose pattern is exactly
// path (a literal path, such as POST /admin/dlq/replay), comma-separated.
func (a *API) otherMethods(path string) string {
	var methods []string
	for _, rt := range a.routeTable() {
		if m, p, _ := strings.Cut(rt.pattern, " "); p == path {
			methods = append(methods, m)
		}
	}
	return strings.Join(methods, ", ")
}

// dlqTimeseries serves GET /admin/dlq/timeseries: failures per hour over
// the last dlq.SeriesHours hours, of every pipeline or of ?pipeline=.
func (a *API) dlqTimeseries(w http.ResponseWriter, r *http.Request) error {
	pipeline, err := scopedPipeline(r)
	if err != nil {
		return err
	}
	s, err := inspect.TimeSeries{DBs: a.databases(), Clock: a.Clock, Pipeline: pipeline}.Read(r.Context())
	if err != nil {
		return err
	}
	respond(w, r, http.StatusOK, s)
	return nil
}

// alertsList serves GET /admin/alerts: every alert's state.
func (a *API) alertsList(w http.ResponseWriter, r *http.Request) error {
	l, err := alerts.AlertStates{DB: a.DB}.List(r.Context())
	if err != nil {
		return err
	}
	respond(w, r, http.StatusOK, l)
	return nil
}

// jobsList serves GET /admin/jobs: each scheduled job's last run.
func (a *API) jobsList(w http.ResponseWriter, r *http.Request) error {
	l, err := metrics.JobRuns{DB: a.DB}.List(r.Context())
	if err != nil {
		return err
	}
	respond(w, r, http.StatusOK, l)
	return nil
}

// QueueDepth is one queue of GET /admin/queues: its backlog as Cloudflare
// Queues reports it (null, and Available false, when it cannot be read).
type QueueDepth struct {
	Queue     string `json:"queue"`
	Available bool   `json:"available"`
	// BacklogCount is the number of messages waiting to be delivered.
	BacklogCount *int64 `json:"backlog_count"`
	BacklogBytes *int64 `json:"backlog_bytes"`
	// OldestMessageAt is when the oldest waiting message was sent (Unix ms).
	OldestMessageAt *int64 `json:"oldest_message_at"`
}

// QueueList is GET /admin/queues' answer.
type QueueList struct {
	Queues []QueueDepth `json:"queues"`
}

// backlogWait bounds the wait for one queue's backlog: the local runtime's
// queue broker may answer only after the batch it is delivering.
var backlogWait = 2 * time.Second

// queuesList serves GET /admin/queues: the backlog of each queue the worker
// has a producer binding for (no D1 read). A queue whose figures do not
// come within backlogWait is unavailable.
func (a *API) queuesList(w http.ResponseWriter, r *http.Request) error {
	out := QueueList{Queues: []QueueDepth{}}
	for _, name := range a.ReplayDestinations {
		d := QueueDepth{Queue: name}
		if a.Backlogs != nil {
			ctx, cancel := context.WithTimeout(r.Context(), backlogWait)
			b, err := a.Backlogs.Backlog(ctx, name)
			cancel()
			if err != nil {
				a.Log.WarnContext(r.Context(), "queue backlog unavailable", "queue", name, "request_id", RequestID(r.Context()), "error", err.Error())
			} else {
				d.Available = true
				d.BacklogCount, d.BacklogBytes = &b.Count, &b.Bytes
				if b.OldestAt > 0 {
					d.OldestMessageAt = &b.OldestAt
				}
			}
		}
		out.Queues = append(out.Queues, d)
	}
	respond(w, r, http.StatusOK, out)
	return nil
}
