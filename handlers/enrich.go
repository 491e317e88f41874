package handlers

import (
	"errors"
	"net/http"
	"strconv"
	"unicode/utf8"

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
	res, err := a.Beers.Enqueue(r.Context(), req.Beers, a.Clock.Now())
	if errors.Is(err, enrichment.ErrQueueSend) {
		a.Log.ErrorContext(r.Context(), "enrich: queue send failed", "request_id", RequestID(r.Context()), "error", err.Error())
		return &APIError{Status: http.StatusServiceUnavailable, Code: "QUEUE_UNAVAILABLE",
			Message: "the beers are registered but could not be enqueued; repeat the request"}
	}
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
