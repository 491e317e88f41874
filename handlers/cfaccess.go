package handlers

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"

	"github.com/redrive/redrive/access"
	"github.com/redrive/redrive/access/cfaccess"
)

// AccessHeader is the header Cloudflare Access adds to each request it lets
// through: the signed JWT of the identity that signed in.
const AccessHeader = "Cf-Access-Jwt-Assertion"

// AccessSignIn signs in the requests that come through a Cloudflare Access
// application (API.Access): their JWT is verified, and the identity it names
// gets the role and pipelines of the first rule of Rules that matches.
type AccessSignIn struct {
	Verifier *cfaccess.Verifier
	Rules    cfaccess.Rules
}

// accessPrincipal verifies the request's Access JWT and returns its
// principal ("access:<email>"): 401 with the verifier's code for a token it
// refuses, 503 ACCESS_UNAVAILABLE when the team's keys cannot be had, 403
// FORBIDDEN for an identity no rule gives a role, or for a change (any
// method but GET and HEAD) a browser sent from another site: Access signs
// in with a cookie, which a page elsewhere could make the browser send.
func (a *API) accessPrincipal(r *http.Request, token string) (access.Principal, *APIError) {
	id, err := a.Access.Verifier.Verify(r.Context(), token)
	if err != nil {
		var e *cfaccess.Error
		if errors.As(err, &e) {
			return access.Principal{}, &APIError{Status: e.Status, Code: e.Code, Message: e.Message}
		}
		a.logAccessFailure(r.Context(), err)
		return access.Principal{}, &APIError{Status: http.StatusServiceUnavailable, Code: cfaccess.CodeUnavailable, Message: "the Access token could not be checked"}
	}
	name := "access:" + id.Email
	if id.Email == "" {
		name = "access:" + id.Subject
	}
	role, pipelines, ok := a.Access.Rules.Match(id)
	if !ok {
		return access.Principal{}, &APIError{Status: http.StatusForbidden, Code: "FORBIDDEN",
			Message: fmt.Sprintf("%s has no role here: no rule of ACCESS_ROLES matches it", name)}
	}
	if crossSite(r) {
		return access.Principal{}, &APIError{Status: http.StatusForbidden, Code: "CROSS_SITE",
			Message: "a change signed in through Access must come from the console's own origin"}
	}
	return access.Principal{Name: name, Role: access.Role(role), Pipelines: pipelines}, nil
}

// crossSite reports whether r is a change (not GET or HEAD) that a browser
// sent from a page of another origin: Sec-Fetch-Site says so, or Origin
// names another host than the request's.
func crossSite(r *http.Request) bool {
	if r.Method == http.MethodGet || r.Method == http.MethodHead {
		return false
	}
	switch r.Header.Get("Sec-Fetch-Site") {
	case "cross-site", "same-site":
		return true
	}
	origin := r.Header.Get("Origin")
	if origin == "" {
		return false
	}
	u, err := url.Parse(origin)
	return err != nil || u.Host != r.Host
}

func (a *API) logAccessFailure(ctx context.Context, err error) {
	if a.Log != nil {
		a.Log.ErrorContext(ctx, "access sign-in: verification failed", "request_id", RequestID(ctx), "error", err.Error())
	}
}
