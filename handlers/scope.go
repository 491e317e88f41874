package handlers

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/redrive/redrive/access"
	"github.com/redrive/redrive/dlq"
)

// Pipeline scopes (access.Principal.Pipelines): a scoped credential sees
// and acts on its pipelines' rows alone. Each route of the route table
// says whether it serves one (perPipeline: it limits its answer and its
// action to the caller's pipelines, through dlq.Scope) or answers only a
// credential of every pipeline (everyPipeline: 403 for a scoped one).

// routeScope is how a route treats a credential limited to pipelines.
type routeScope bool

const (
	// perPipeline routes limit what they read and do to the caller's
	// pipelines: a filter to its pipeline (dlq.Scope.Filter), ids to its
	// rows (another pipeline's id is a 404), lists to its entries.
	perPipeline routeScope = true
	// everyPipeline routes are about no pipeline in particular (metrics,
	// jobs, alerts, enrichment, the breaker, keys, moves between
	// databases): a scoped credential gets 403 FORBIDDEN.
	everyPipeline routeScope = false
)

// scopeOf is the scope of the request's principal.
func scopeOf(r *http.Request) dlq.Scope { return dlq.Scope{Pipelines: principalOf(r).Pipelines} }

// unscopedOnly is the 403 of a scoped principal on an everyPipeline route.
func unscopedOnly(p access.Principal) *APIError {
	return &APIError{Status: http.StatusForbidden, Code: "FORBIDDEN",
		Message: fmt.Sprintf("%s is limited to the pipelines %s; this route answers credentials of every pipeline",
			p.Name, strings.Join(p.Pipelines, ", "))}
}

// scopedPipeline is the pipeline a per-pipeline read of r names in its
// query (pipeline), limited to the principal's scope (dlq.Scope.Pipeline).
func scopedPipeline(r *http.Request) (string, error) {
	return scopeOf(r).Pipeline(queryValues(r)["pipeline"])
}

// checkPipelines refuses (400 UNKNOWN_PIPELINE) a key's pipelines that are
// not configured; nil (every pipeline) passes.
func checkPipelines(ps dlq.Pipelines, names []string) error {
	for _, n := range names {
		if _, err := ps.Queue(n); err != nil || n == "" {
			return badRequest("UNKNOWN_PIPELINE", fmt.Sprintf("pipelines must name configured pipelines; got %s", quote(n)))
		}
	}
	return nil
}
