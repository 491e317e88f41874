package handlers

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/redrive/redrive/internal/jsonscan"
)

// The query parameters of every route are declared once, in the OpenAPI
// document (openapi.json): an operation's parameters "in": "query". The
// server checks a request's query string against its route's before the
// route's handler runs (checkQuery), so that no route acts on a request
// carrying a parameter it would ignore (POST /admin/dlq/import?dry_run=true
// is refused, not run). A route the document does not describe (the
// DEV_ROUTES routes) accepts none.

// declaredQuery returns the query parameters the route pattern ("METHOD
// /path", as routeTable writes it) declares; nil: none.
func declaredQuery(pattern string) map[string]bool {
	return documentQuery()[pattern]
}

// documentQuery is the query parameters of each operation of the embedded
// document, keyed by route pattern, read once, on the first request that
// has a query string. It is read by a scanner, not by reflection
// (encoding/json is TinyGo's slowest path, and the document is 180 KB).
var documentQuery = sync.OnceValue(func() map[string]map[string]bool { return queryParameters(openAPIDocument) })

// queryParameters reads, from an OpenAPI document, the query parameters of
// each operation: its own and its path's, a parameter given by reference
// ("$ref": "#/components/parameters/...") included. The keys are route
// patterns ("GET /admin/dlq"). doc must be valid JSON (openapi.json is:
// the tests load it).
func queryParameters(doc []byte) map[string]map[string]bool {
	var paths, components []byte
	jsonscan.Members(doc, func(key, value []byte) {
		switch {
		case jsonscan.KeyIs(key, "paths"):
			paths = value
		case jsonscan.KeyIs(key, "components"):
			components = value
		}
	})
	shared := sharedParameters(components)
	out := map[string]map[string]bool{}
	if len(paths) == 0 || paths[0] != '{' {
		return out
	}
	jsonscan.Members(paths, func(pathKey, item []byte) {
		if len(item) == 0 || item[0] != '{' {
			return
		}
		path := keyText(pathKey)
		common := map[string]bool{}
		addQueryParameters(member(item, "parameters"), shared, common)
		jsonscan.Members(item, func(methodKey, op []byte) {
			method := keyText(methodKey)
			if !operationMethods[method] || len(op) == 0 || op[0] != '{' {
				return
			}
			params := map[string]bool{}
			for k := range common {
				params[k] = true
			}
			addQueryParameters(member(op, "parameters"), shared, params)
			out[strings.ToUpper(method)+" "+path] = params
		})
	})
	return out
}

// sharedParameters are the parameters of an OpenAPI document's components
// (its "components" object), keyed by the reference that names each
// ("#/components/parameters/NAME").
func sharedParameters(components []byte) map[string][]byte {
	shared := map[string][]byte{} // "#/components/parameters/NAME" -> its object
	if len(components) > 0 && components[0] == '{' {
		jsonscan.Members(components, func(key, value []byte) {
			if jsonscan.KeyIs(key, "parameters") && len(value) > 0 && value[0] == '{' {
				jsonscan.Members(value, func(name, p []byte) {
					shared["#/components/parameters/"+keyText(name)] = p
				})
			}
		})
	}
	return shared
}

// addQueryParameters adds the names of the query parameters of a
// parameters array (list) to into; a parameter given by reference is read
// from shared (sharedParameters).
func addQueryParameters(list []byte, shared map[string][]byte, into map[string]bool) {
	if len(list) == 0 || list[0] != '[' {
		return
	}
	jsonscan.Elements(list, func(p []byte) {
		if ref := member(p, "$ref"); ref != nil {
			s, _ := jsonscan.Text(ref)
			p = shared[s]
		}
		in, _ := jsonscan.Text(member(p, "in"))
		name, ok := jsonscan.Text(member(p, "name"))
		if in == "query" && ok {
			into[name] = true
		}
	})
}

// operationMethods are the keys of an OpenAPI path item that are operations.
var operationMethods = map[string]bool{"get": true, "put": true, "post": true, "delete": true, "options": true,
	"head": true, "patch": true, "trace": true}

// member returns the raw value of the member name of the JSON object obj
// (nil when obj is not an object or has no such member).
func member(obj []byte, name string) []byte {
	if len(obj) == 0 || obj[0] != '{' {
		return nil
	}
	var out []byte
	jsonscan.Members(obj, func(key, value []byte) {
		if out == nil && jsonscan.KeyIs(key, name) {
			out = value
		}
	})
	return out
}

// keyText is an object key as Members gives it (still escaped), decoded.
func keyText(key []byte) string {
	s, _ := jsonscan.Text(append(append([]byte{'"'}, key...), '"'))
	return s
}

// queryKey keys the checked query parameters of a request in its context.
type queryKey struct{}

// checkQuery checks r's query string against the parameters its route
// (pattern) declares, and returns the request to hand to the route: with
// the parameters' values in its context (queryValues). Refused: a
// parameter the route does not declare, one given more than once, an
// invalid percent-escape or ';', text that is not UTF-8 (400
// INVALID_REQUEST). A request without a query string is returned as it is.
func checkQuery(r *http.Request, pattern string) (*http.Request, error) {
	if r.URL.RawQuery == "" {
		return r, nil
	}
	q, err := query(r.URL, declaredQuery(pattern))
	if err != nil {
		return r, err
	}
	return r.WithContext(context.WithValue(r.Context(), queryKey{}, q)), nil
}

// queryValues returns the single value of each query parameter of r, as
// checkQuery read them before the route's handler ran (an empty value
// counts as absent; nil, which reads as empty, without a query string).
func queryValues(r *http.Request) map[string]string {
	q, _ := r.Context().Value(queryKey{}).(map[string]string)
	return q
}

// query returns the single value of each known parameter. Unknown or
// repeated parameters, invalid percent-escapes and text that is not UTF-8
// are rejected; an empty value counts as absent.
func query(u *url.URL, known map[string]bool) (map[string]string, error) {
	vals, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return nil, badRequest("INVALID_REQUEST", "malformed query string (an invalid percent-escape, or ';')")
	}
	out := map[string]string{}
	for k, vs := range vals {
		if !known[k] {
			return nil, badRequest("INVALID_REQUEST", "unknown query parameter "+quote(k))
		}
		if len(vs) > 1 {
			return nil, badRequest("INVALID_REQUEST", "query parameter "+quote(k)+" given more than once")
		}
		if !utf8.ValidString(vs[0]) {
			return nil, badRequest("INVALID_REQUEST", "query parameter "+quote(k)+" is not valid UTF-8")
		}
		if vs[0] != "" {
			out[k] = vs[0]
		}
	}
	return out, nil
}
