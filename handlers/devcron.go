package handlers

import (
	"context"
	"net/http"
	"time"
)

type devCronRequest struct {
	// Cron is the expression whose jobs run (jobs.Frequent, jobs.Daily).
	Cron string `json:"cron"`
	// Time is the scheduled time in epoch ms (now when absent).
	Time *int64 `json:"time"`
}

// devCron runs the jobs of a cron expression at a chosen scheduled time, as
// the worker's scheduled entry does (API.DevCron). It exists only with
// DEV_ROUTES: with Workers Static Assets (the console), wrangler dev's
// /cdn-cgi/handler/scheduled no longer reaches the worker (its assets proxy
// does not pass scheduled events on), and /__scheduled (--test-scheduled)
// cannot set the time, which the tests of the daily jobs need. A job's
// failure is recorded and logged as in a scheduled run; the answer is 200
// either way, with ok false.
func (a *API) devCron(w http.ResponseWriter, r *http.Request) error {
	var req devCronRequest
	if err := decodeJSON(w, r, &req); err != nil {
		return err
	}
	if req.Cron == "" {
		return badRequest("INVALID_REQUEST", "cron is required")
	}
	at := a.Clock.Now()
	if req.Time != nil {
		at = time.UnixMilli(*req.Time)
	}
	err := a.DevCron(context.WithoutCancel(r.Context()), req.Cron, at)
	respond(w, r, http.StatusOK, map[string]any{"cron": req.Cron, "scheduled_time": at.UnixMilli(), "ok": err == nil})
	return nil
}
