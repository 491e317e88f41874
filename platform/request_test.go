package platform

import (
	"io"
	"net/http"
	"testing"
)

func TestNewRequestKeepsTheRawTarget(t *testing.T) {
	for _, c := range []struct {
		url, path, query, target string
	}{
		{"http://127.0.0.1:8787/admin/dlq?q=a%20b", "/admin/dlq", "q=a%20b", "/admin/dlq?q=a%20b"},
		{"https://example.com", "", "", "/"},
		{"https://example.com?x=1", "", "x=1", "/?x=1"},
		{"http://h//admin/./dlq/", "//admin/./dlq/", "", "//admin/./dlq/"},
		{"http://h/a%2Fb", "/a/b", "", "/a%2Fb"},
		// Go cannot parse these: the request keeps the target for the
		// handler to reject, with an empty path and no query.
		{"http://127.0.0.1:8787/%zz", "", "", "/%zz"},
		{"http://h/admin/beers/%ZZ?limit=1", "", "", "/admin/beers/%ZZ?limit=1"},
		{"http://h/%", "", "", "/%"},
	} {
		req, err := newRequest(http.MethodPost, c.url, []byte("body"))
		if err != nil {
			t.Fatalf("%s: %v", c.url, err)
		}
		b, _ := io.ReadAll(req.Body)
		if req.URL.Path != c.path || req.URL.RawQuery != c.query || req.RequestURI != c.target || req.Method != http.MethodPost || string(b) != "body" {
			t.Errorf("%s: path %q query %q target %q method %s body %q; want path %q query %q target %q",
				c.url, req.URL.Path, req.URL.RawQuery, req.RequestURI, req.Method, b, c.path, c.query, c.target)
		}
		if req.URL.Host == "" {
			t.Errorf("%s: no host", c.url)
		}
	}
}
