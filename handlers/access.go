package handlers

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"strings"

	"github.com/redrive/redrive/access"
)

// principalKey is the context key of a request's access.Principal.
type principalKey struct{}

// principalOf returns the principal the request's route check admitted
// (the zero Principal, which may do nothing, on a public route).
func principalOf(r *http.Request) access.Principal {
	p, _ := r.Context().Value(principalKey{}).(access.Principal)
	return p
}

// allow returns the check of a route that needs perm: it authenticates the
// request (authenticate) and refuses with 403 FORBIDDEN a principal
// without perm (naming it), or a scoped one on an everyPipeline route.
func (a *API) allow(perm access.Permission, scope routeScope) func(r *http.Request) (access.Principal, *APIError) {
	return func(r *http.Request) (access.Principal, *APIError) {
		p, err := a.signIn(r, perm == access.Report)
		switch {
		case err != nil:
			return p, err
		case !p.Can(perm):
			return p, forbidden(p, perm)
		case p.Scoped() && scope == everyPipeline:
			return p, unscopedOnly(p)
		}
		return p, nil
	}
}

// signIn is authenticate behind the limit of failed sign-ins per client
// (signIns): a client past it (a remote one) is refused, 429 RATE_LIMITED, before its
// credentials are checked; a refused credential (401, or the 403 of the
// pair's wrong secret or of an Access identity without a role) counts
// against its client.
func (a *API) signIn(r *http.Request, report bool) (access.Principal, *APIError) {
	client := r.Header.Get("CF-Connecting-IP")
	if client == "" || loopbackHost(client) {
		// No client address, or this machine's (a local run: wrangler dev
		// sets 127.0.0.1; Cloudflare never does): nobody to limit.
		return a.authenticate(r, report)
	}
	now := a.Clock.Now()
	if wait := a.failedSignIns.limited(client, now); wait > 0 {
		return access.Principal{}, &APIError{Status: http.StatusTooManyRequests, Code: "RATE_LIMITED",
			Message: fmt.Sprintf("too many failed sign-ins from this client: try again in %d s", int64(math.Ceil(wait.Seconds())))}
	}
	p, err := a.authenticate(r, report)
	if err != nil && (err.Status == http.StatusUnauthorized || err.Status == http.StatusForbidden) {
		a.failedSignIns.failed(client, now)
	}
	return p, err
}

// need refuses the request's principal, 403, when it lacks perm (a
// permission a parameter or a part of the answer asks for beyond its
// route's).
func need(r *http.Request, perm access.Permission) error {
	if p := principalOf(r); !p.Can(perm) {
		return forbidden(p, perm)
	}
	return nil
}

func forbidden(p access.Principal, perm access.Permission) *APIError {
	return &APIError{Status: http.StatusForbidden, Code: "FORBIDDEN",
		Message: fmt.Sprintf("%s (role %s) lacks the %s permission", p.Name, p.Role, perm)}
}

// authenticate returns the request's principal: a named key's (access.Keys)
// for `Authorization: Bearer rdk_…`, REPORT_TOKEN's for another bearer
// token on the report route, the Access identity's for a request without
// Authorization nor X-API-Key that came through Cloudflare Access (accessPrincipal, when
// API.Access is set), the pair's for a request without either that carries
// X-API-Key and X-Admin-Secret (Auth.check).
// Nothing is answered while the pair is not configured (503).
func (a *API) authenticate(r *http.Request, report bool) (access.Principal, *APIError) {
	if a.Auth.APIKey == "" || a.Auth.AdminSecret == "" {
		return access.Principal{}, a.Auth.check(r)
	}
	h := r.Header.Get("Authorization")
	if jwt := r.Header.Get(AccessHeader); h == "" && r.Header.Get("X-API-Key") == "" && jwt != "" && a.Access != nil {
		return a.accessPrincipal(r, jwt)
	}
	if h == "" {
		if err := a.Auth.check(r); err != nil {
			return access.Principal{}, err
		}
		return access.PairPrincipal, nil
	}
	token, ok := bearerToken(h)
	switch {
	case !ok:
		return access.Principal{}, unauthorized("MALFORMED_CREDENTIAL", "Authorization must be Bearer <key>")
	case strings.HasPrefix(token, access.TokenPrefix):
		return a.keyPrincipal(r.Context(), token)
	case report:
		if err := a.Auth.checkReportToken(token); err != nil {
			return access.Principal{}, err
		}
		return access.ReportTokenPrincipal, nil
	}
	return access.Principal{}, unauthorized("MALFORMED_KEY", "a key starts with "+access.TokenPrefix)
}

// keyPrincipal authenticates a named key's token.
func (a *API) keyPrincipal(ctx context.Context, token string) (access.Principal, *APIError) {
	p, err := a.keys().Authenticate(ctx, token)
	if err == nil {
		return p, nil
	}
	if e, ok := accessError(err); ok {
		return p, e
	}
	if a.Log != nil {
		a.Log.ErrorContext(ctx, "key authentication: d1 unreachable", "request_id", RequestID(ctx), "error", err.Error())
	}
	return p, &APIError{Status: http.StatusServiceUnavailable, Code: "D1_UNAVAILABLE", Message: "the key could not be checked: D1 did not answer"}
}

// bearerToken returns the token of an Authorization value "Bearer <token>",
// spelled as openapi.json's bearer schemes are (the one parse the check and
// the audit's fingerprint share).
func bearerToken(h string) (string, bool) { return strings.CutPrefix(h, "Bearer ") }

func unauthorized(code, msg string) *APIError {
	return &APIError{Status: http.StatusUnauthorized, Code: code, Message: msg}
}
