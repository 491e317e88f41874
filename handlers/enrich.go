package handlers

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"unicode/utf8"

	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/enrichment"
)

// errNoRegistry answers when the API was built without a beer registry.
var errNoRegistry = &APIError{Status: http.StatusServiceUnavailable, Code: "NOT_CONFIGURED", Message: "enrichment is not configured"}

type enrichRequest struct {
	Beers []enrichment.Beer `json:"beers"`
}

// enrich registers up to 100 beers and enqueues those not enriched yet
// (POST /admin/enrich).
func (a *API) enrich(w http.ResponseWriter, r *http.Request) error {
	if a.Beers == nil {
		return errNoRegistry
	}
	var req enrichRequest
	if err := decodeJSON(w, r, &req); err != nil {
		return err
	}
	if err := enrichment.Validate(req.Beers); err != nil {
		return badRequest("INVALID_REQUEST", err.Error())
	}
	start := dlq.AuditStart{Action: dlq.ActionEnrich, Requester: a.requester(r)}
	res, err := a.auditLog().Run(r.Context(), start, dlq.AuditAround, func(ctx context.Context) (dlq.Audited, error) {
		res, err := a.Beers.Enqueue(ctx, req.Beers, a.Clock.Now())
		if errors.Is(err, enrichment.ErrQueueSend) {
			a.Log.ErrorContext(ctx, "enrich: queue send failed", "request_id", RequestID(ctx), "error", err.Error())
			return nil, &APIError{Status: http.StatusServiceUnavailable, Code: "QUEUE_UNAVAILABLE",
				Message: "the beers are registered but could not be enqueued; repeat the request"}
		}
		if err != nil {
			return nil, err
		}
		return res, nil
	})
	if err != nil {
		return err
	}
	respond(w, r, http.StatusOK, res)
	return nil
}

// beer shows one beer's enrichment state (GET /admin/beers/{id}).
func (a *API) beer(w http.ResponseWriter, r *http.Request) error {
	if a.Beers == nil {
		return errNoRegistry
	}
	id := r.PathValue("id")
	if id == "" || utf8.RuneCountInString(id) > enrichment.MaxBeerIDLen {
		return badRequest("INVALID_REQUEST", "beer id must be 1..128 characters")
	}
	s, err := a.Beers.Lookup(r.Context(), id)
	if errors.Is(err, enrichment.ErrBeerNotFound) {
		return &APIError{Status: http.StatusNotFound, Code: "NOT_FOUND", Message: "no beer with id " + strconv.Quote(id)}
	}
	if err != nil {
		return err
	}
	respond(w, r, http.StatusOK, s)
	return nil
}

// breakerResetData answers POST /admin/enrichment/breaker/reset.
type breakerResetData struct {
	// PreviousState is the breaker's state before the reset.
	PreviousState string `json:"previous_state"`
	// State is the state after it: closed.
	State string `json:"state"`
}

// AuditOutcome is ok.
func (breakerResetData) AuditOutcome() string { return dlq.OutcomeOK }

// AuditCounts are the state before the reset.
func (b breakerResetData) AuditCounts() any { return map[string]any{"previous_state": b.PreviousState} }

// breakerReset closes the provider's circuit breaker at once (POST
// /admin/enrichment/breaker/reset, audited as breaker_reset): an
// operator's way out when the breaker waits for a probe that cannot
// succeed yet, or after fixing the API key. The waiting beers go back to
// the queue on the catch-up's next run.
func (a *API) breakerReset(w http.ResponseWriter, r *http.Request) error {
	if err := decodeEmptyBody(w, r); err != nil {
		return err
	}
	start := dlq.AuditStart{Action: dlq.ActionBreakerReset, Requester: a.requester(r)}
	res, err := a.auditLog().Run(r.Context(), start, dlq.AuditAround, func(ctx context.Context) (dlq.Audited, error) {
		prev, err := (enrichment.Breaker{DB: a.DB}).Reset(ctx, a.Clock.Now())
		if err != nil {
			return nil, err
		}
		a.Log.WarnContext(ctx, "enrichment: circuit breaker reset by an operator", "request_id", RequestID(ctx), "previous_state", prev)
		return breakerResetData{PreviousState: prev, State: enrichment.BreakerClosed}, nil
	})
	if err != nil {
		return err
	}
	respond(w, r, http.StatusOK, res)
	return nil
}

// breakerData answers GET /admin/enrichment/breaker: the provider's circuit
// breaker as the console shows it.
type breakerData struct {
	// State is closed, open or half_open (closed when it was never used).
	State string `json:"state"`
	// Cause is why it is not closed: transient (Failures consecutive
	// transient failures) or auth (the provider refused the API key); null
	// while closed.
	Cause *string `json:"cause"`
	// Failures counts the consecutive transient failures.
	Failures int64 `json:"failures"`
	// Since is the row's last change (epoch ms): when it opened, went
	// half-open or closed; null when it was never used.
	Since *int64 `json:"since"`
	// OpenUntil is when an open breaker's cooldown ends and a probe may go
	// (epoch ms); null unless open.
	OpenUntil *int64 `json:"open_until"`
	// ProbeUntil is the lease of a half-open probe in flight (epoch ms).
	ProbeUntil *int64 `json:"probe_until"`
	// Reopens counts the consecutive failed probes.
	Reopens int64 `json:"reopens"`
	// ProbeDue: the cooldown (or a probe's lease) has ended; the next
	// catch-up run or queue call probes the provider.
	ProbeDue bool `json:"probe_due"`
}

// breakerShow serves GET /admin/enrichment/breaker: the breaker's row
// (enrichment_breaker, name 'provider', enrichment.Breaker's), one row read.
func (a *API) breakerShow(w http.ResponseWriter, r *http.Request) error {
	b, err := (enrichment.Breaker{DB: a.DB}).Read(r.Context())
	if err != nil {
		return err
	}
	orNull := func(v int64) *int64 {
		if v == 0 {
			return nil
		}
		return &v
	}
	d := breakerData{State: b.State, Failures: b.Failures, Since: orNull(b.UpdatedAt), OpenUntil: orNull(b.OpenUntil),
		ProbeUntil: orNull(b.ProbeUntil), Reopens: b.Reopens, ProbeDue: b.ProbeDue(a.Clock.Now())}
	if b.Cause != "" {
		d.Cause = &b.Cause
	}
	respond(w, r, http.StatusOK, d)
	return nil
}
