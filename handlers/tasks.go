package handlers

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/dlq/resolve"
)

// The replay task routes (docs/admin-api.md "Replay tasks"): create, list, get, pause,
// resume, cancel. Every action is audited (dlq.Audit) like a replay.

type taskBody struct {
	Filter        json.RawMessage `json:"filter"`
	RatePerMinute json.RawMessage `json:"rate_per_minute"`
	DelaySeconds  json.RawMessage `json:"delay_seconds"`
	Destination   string          `json:"destination"`
	Canary        json.RawMessage `json:"canary"`
}

// jsonCanary parses the canary field strictly (nil when absent or null).
func jsonCanary(raw json.RawMessage) (*resolve.Canary, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var c struct {
		Size            json.RawMessage `json:"size"`
		MinSuccessRatio *float64        `json:"min_success_ratio"`
		ObserveMinutes  json.RawMessage `json:"observe_minutes"`
	}
	bad := badRequest("INVALID_CANARY", fmt.Sprintf("canary must be {size: 1..%d, min_success_ratio: 0..1, observe_minutes: 1..%d}",
		resolve.MaxCanarySize, resolve.MaxCanaryObserve))
	if err := decodeStrictAt(raw, &c, "canary"); err != nil {
		var apiErr *APIError
		if errors.As(err, &apiErr) {
			return nil, badRequest("INVALID_CANARY", apiErr.Message)
		}
		return nil, err
	}
	size, ok1, err1 := jsonInt(c.Size, "INVALID_CANARY", bad.Message)
	obs, ok2, err2 := jsonInt(c.ObserveMinutes, "INVALID_CANARY", bad.Message)
	if err := errors.Join(err1, err2); err != nil || !ok1 || !ok2 || c.MinSuccessRatio == nil {
		return nil, bad
	}
	return &resolve.Canary{Size: size, MinSuccessRatio: *c.MinSuccessRatio, ObserveMinutes: obs}, nil
}

// taskCreate serves POST /admin/dlq/replay-tasks: 202 with the new task.
func (a *API) taskCreate(w http.ResponseWriter, r *http.Request) error {
	var body taskBody
	if err := decodeJSON(w, r, &body); err != nil {
		return err
	}
	f, err := jsonFilter(body.Filter)
	if err != nil {
		return err
	}
	if f == nil {
		f = &dlq.Filter{}
	}
	req := resolve.TaskRequest{Filter: *f, Destination: body.Destination}
	if req.Canary, err = jsonCanary(body.Canary); err != nil {
		return err
	}
	rate, given, err := jsonInt(body.RatePerMinute, "INVALID_RATE", fmt.Sprintf("rate_per_minute must be an integer in 1..%d", resolve.MaxTaskRate))
	if err != nil {
		return err
	}
	if !given {
		return badRequest("INVALID_RATE", fmt.Sprintf("rate_per_minute is required: an integer in 1..%d", resolve.MaxTaskRate))
	}
	req.RatePerMinute = rate
	if req.DelaySeconds, _, err = jsonInt(body.DelaySeconds, "INVALID_DELAY",
		fmt.Sprintf("delay_seconds must be an integer in 0..%d", dlq.MaxDelaySeconds)); err != nil {
		return err
	}
	res, err := a.actions().CreateTask(r.Context(), req, a.requester(r))
	if err != nil {
		return err
	}
	respond(w, r, http.StatusAccepted, res)
	return nil
}

// taskList serves GET /admin/dlq/replay-tasks: the newest tasks first.
func (a *API) taskList(w http.ResponseWriter, r *http.Request) error {
	q, limit, err := pageQuery(r)
	if err != nil {
		return err
	}
	if limit == 0 {
		limit = dlq.DefaultListLimit
	}
	tasks, err := a.actions().Tasks(r.Context(), limit, q["pipeline"], scopeOf(r))
	if err != nil {
		return err
	}
	respond(w, r, http.StatusOK, map[string]any{"tasks": tasks})
	return nil
}

// taskID reads the {id} of a task route; not a positive integer: 404.
func taskID(r *http.Request) (int64, error) {
	raw := r.PathValue("id")
	id, err := strconv.ParseInt(raw, 10, 64)
	if err != nil || id < 1 {
		return 0, taskNotFound(raw)
	}
	return id, nil
}

func taskNotFound(raw string) *APIError {
	return &APIError{Status: http.StatusNotFound, Code: "NOT_FOUND", Message: "no replay task with id " + quote(raw)}
}

// taskError turns the task service's errors into envelopes.
func taskError(err error, raw string) error {
	var se *resolve.TaskStateError
	switch {
	case errors.Is(err, resolve.ErrTaskNotFound):
		return taskNotFound(raw)
	case errors.As(err, &se):
		return &APIError{Status: http.StatusConflict, Code: "INVALID_STATE", Message: se.Error()}
	}
	return err
}

// taskGet serves GET /admin/dlq/replay-tasks/{id}.
func (a *API) taskGet(w http.ResponseWriter, r *http.Request) error {
	id, err := taskID(r)
	if err != nil {
		return err
	}
	t, err := a.actions().Task(r.Context(), id, scopeOf(r))
	if err != nil {
		return taskError(err, r.PathValue("id"))
	}
	respond(w, r, http.StatusOK, t)
	return nil
}

// taskAction serves POST /admin/dlq/replay-tasks/{id}/pause, resume and cancel.
func (a *API) taskAction(action string) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		id, err := taskID(r)
		if err != nil {
			return err
		}
		t, err := a.actions().ActOnTask(r.Context(), id, action, a.requester(r))
		if err != nil {
			return taskError(err, r.PathValue("id"))
		}
		respond(w, r, http.StatusOK, t)
		return nil
	}
}
