package handlers

import (
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/redrive/redrive/dlq"
)

// Failure reports from consumers outside redrive (POST /admin/attempts): a
// worker that consumes a pipeline's main queue itself (consumer external)
// reports each failed attempt of a message before it retries it, so that
// the row captured from the DLQ carries the same attempt history, failure
// reason and signature as the beer consumer's rows. docs/pipelines.md shows
// the call through a service binding and over HTTP, and
// clients/js/redrive-report.mjs makes it for JavaScript consumers.

// maxReportMessageID bounds a reported message id (bytes); Queues' ids are
// 32 hex digits.
const maxReportMessageID = 128

// maxReportAttempt bounds a reported attempt number (Queues' max_retries is
// at most 100; a message redelivered after a crash may count a few more).
const maxReportAttempt = 10000

// attemptsBody is the body of POST /admin/attempts.
type attemptsBody struct {
	// Attempts are the failed attempts, 1..dlq.MaxReportAttempts.
	Attempts []reportedAttempt `json:"attempts"`
}

// reportedAttempt is one failed attempt as a consumer reports it.
type reportedAttempt struct {
	// Queue is the main queue of a pipeline whose consumer is external.
	Queue string `json:"queue"`
	// MessageID is the queue message's id (it keeps it in the DLQ).
	MessageID string `json:"message_id"`
	// Attempt is the message's attempts count on that delivery (from 1).
	Attempt int `json:"attempt"`
	// Error is the failure's text, at most dlq.MaxReportError bytes.
	Error string `json:"error"`
	// Class is one of dlq.ReportClasses; unknown when absent.
	Class *string `json:"class"`
}

// attemptsData answers POST /admin/attempts.
type attemptsData struct {
	// Recorded is how many attempts were recorded.
	Recorded int `json:"recorded"`
}

// attempts records failed attempts reported by an external consumer (POST
// /admin/attempts, REPORT_TOKEN or the admin pair): every entry checked,
// then all written with one batch (dlq.Attempts.RecordAll: one upsert per
// entry). Not audited: like the beer consumer's own attempt records, these
// are data, one per failed delivery, not an operator's action.
func (a *API) attempts(w http.ResponseWriter, r *http.Request) error {
	var body attemptsBody
	if err := decodeJSON(w, r, &body); err != nil {
		return err
	}
	ats, err := a.reportedAttempts(body)
	if err != nil {
		return err
	}
	scope, ps := scopeOf(r), a.databases().Pipelines()
	for i, at := range ats {
		if !scope.ReachesQueue(ps, at.Queue) {
			return &APIError{Status: http.StatusForbidden, Code: "FORBIDDEN",
				Message: fmt.Sprintf("attempts[%d].queue %s is not a queue of this credential's pipelines", i, quote(at.Queue))}
		}
	}
	if err := a.databases().RecordAttempts(r.Context(), ats); err != nil {
		return err
	}
	respond(w, r, http.StatusAccepted, attemptsData{Recorded: len(ats)})
	return nil
}

// reportedAttempts checks a report and returns its attempts, stamped now.
func (a *API) reportedAttempts(body attemptsBody) ([]dlq.Attempt, error) {
	if n := len(body.Attempts); n == 0 || n > dlq.MaxReportAttempts {
		return nil, badRequest("INVALID_REQUEST", fmt.Sprintf("attempts must hold 1..%d entries (got %d)", dlq.MaxReportAttempts, n))
	}
	now := a.Clock.Now()
	out := make([]dlq.Attempt, len(body.Attempts))
	for i, e := range body.Attempts {
		at := func(field string) string { return fmt.Sprintf("attempts[%d].%s", i, field) }
		switch {
		case e.Queue == "":
			return nil, badRequest("INVALID_REQUEST", at("queue")+" is required")
		case a.ReportQueues == nil || !a.ReportQueues(e.Queue):
			return nil, badRequest("UNKNOWN_QUEUE", fmt.Sprintf("%s %s is not the main queue of a pipeline whose consumer is external",
				at("queue"), quote(e.Queue)))
		case e.MessageID == "" || len(e.MessageID) > maxReportMessageID || strings.ContainsFunc(e.MessageID, isControl):
			return nil, badRequest("INVALID_REQUEST", fmt.Sprintf("%s must be 1..%d bytes without control characters", at("message_id"), maxReportMessageID))
		case e.Attempt < 1 || e.Attempt > maxReportAttempt:
			return nil, badRequest("INVALID_REQUEST", fmt.Sprintf("%s must be an integer in 1..%d", at("attempt"), maxReportAttempt))
		case e.Error == "" || len(e.Error) > dlq.MaxReportError:
			return nil, badRequest("INVALID_REQUEST", fmt.Sprintf("%s must be 1..%d bytes (got %d)", at("error"), dlq.MaxReportError, len(e.Error)))
		case e.Class != nil && !slices.Contains(dlq.ReportClasses, *e.Class):
			return nil, badRequest("INVALID_REQUEST", fmt.Sprintf("%s must be one of %s", at("class"), strings.Join(dlq.ReportClasses, ", ")))
		}
		class := "unknown"
		if e.Class != nil {
			class = *e.Class
		}
		out[i] = dlq.Attempt{MessageID: e.MessageID, Queue: e.Queue, Attempt: e.Attempt, Class: class, Error: e.Error, At: now}
	}
	return out, nil
}

// isControl reports whether r is a control character.
func isControl(r rune) bool { return r < 0x20 || r == 0x7f }
