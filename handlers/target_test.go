package handlers

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

// serveTarget sends a request whose raw target is target, as the worker's
// bridge builds it: when target does not parse, URL holds only the scheme
// and host and RequestURI keeps target (see platform.newRequest).
func serveTarget(h http.Handler, method, target string, hdr map[string]string) (*httptest.ResponseRecorder, envelope) {
	req := httptest.NewRequest(method, "/", nil)
	if u, err := url.ParseRequestURI(target); err == nil {
		req.URL = u
	} else {
		req.URL = &url.URL{Scheme: "http", Host: "example.com"}
	}
	req.RequestURI = target
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	var env envelope
	_ = json.Unmarshal(rec.Body.Bytes(), &env)
	return rec, env
}

// An invalid percent-escape in the path is a 400 envelope with a request
// id, before authentication (there is no route to authenticate for).
func TestInvalidPercentEscapeIs400(t *testing.T) {
	h := newAPI(t).Handler()
	for _, target := range []string{"/%zz", "/admin/beers/%ZZ", "/admin/dlq%", "/%2", "/admin/dlq/%g0?limit=1", "/health%"} {
		for _, hdr := range []map[string]string{nil, adminHeaders} {
			rec, env := serveTarget(h, "GET", target, hdr)
			if rec.Code != 400 || env.Success || env.Error == nil || env.Error.Code != "INVALID_REQUEST" ||
				!strings.Contains(env.Error.Message, "invalid percent-escape") ||
				env.RequestID == "" || rec.Header().Get("X-Request-ID") != env.RequestID {
				t.Errorf("%s: %d %s", target, rec.Code, rec.Body)
			}
		}
	}
	// A valid escape still routes, and a bad escape in the query is the
	// query parser's 400.
	if rec, env := serveTarget(h, "GET", "/admin/dlq/%73tats", adminHeaders); rec.Code != 200 || !env.Success {
		t.Errorf("valid escape: %d %s", rec.Code, rec.Body)
	}
	if rec, env := serveTarget(h, "GET", "/admin/dlq?q=%zz", adminHeaders); rec.Code != 400 || env.Error == nil || env.Error.Code != "INVALID_REQUEST" {
		t.Errorf("bad escape in the query: %d %s", rec.Code, rec.Body)
	}
}

// A path that is not clean never reaches a route and is never redirected
// (http.ServeMux would answer 307/301 with HTML): 404 envelope.
func TestUncleanPathsAre404NotRedirects(t *testing.T) {
	api, _ := newDLQAPI(t)
	h := api.Handler()
	n := 0
	for _, pattern := range api.Routes() {
		method, p, _ := strings.Cut(pattern, " ")
		p = strings.Replace(p, "{id}", "b1", 1)
		dir, last := p[:strings.LastIndex(p, "/")], p[strings.LastIndex(p, "/")+1:]
		for _, target := range []string{"/" + p, p + "/", dir + "/./" + last, dir + "/x/../" + last, dir + "//" + last,
			p + "/.", p + "/..", dir + "/%2e/" + last, strings.Replace(p, "/", "//", 1) + "?limit=1"} {
			for _, hdr := range []map[string]string{nil, adminHeaders} {
				n++
				rec, env := serveTarget(h, method, target, hdr)
				if rec.Code != 404 || env.Error == nil || env.Error.Code != "NOT_FOUND" || rec.Header().Get("Location") != "" ||
					env.RequestID == "" || rec.Header().Get("X-Request-ID") != env.RequestID {
					t.Errorf("%s %s: %d %s %v", method, target, rec.Code, rec.Body, rec.Header())
				}
			}
		}
	}
	if n < 100 {
		t.Fatalf("only %d requests", n)
	}
}
