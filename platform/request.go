package platform

import (
	"bytes"
	"context"
	"net/http"
	"strings"
)

// (Not js/wasm only: plain Go, tested natively.)

// newRequest builds the request for url (absolute, as the runtime gives it)
// with RequestURI set to its raw path and query, as net/http's server does.
// The runtime passes on URLs that Go cannot parse (an invalid percent-escape
// such as /%zz in the path); such a request still reaches the handler, with
// only the scheme and host in URL and the unparsable target in RequestURI,
// so that the handler answers it (redrive's handlers with a 400 envelope)
// instead of the runtime answering 500.
func newRequest(method, rawURL string, body []byte) (*http.Request, error) {
	origin, target := splitTarget(rawURL)
	req, err := http.NewRequestWithContext(context.Background(), method, rawURL, bytes.NewReader(body))
	if err != nil {
		req, err = http.NewRequestWithContext(context.Background(), method, origin, bytes.NewReader(body))
		if err != nil {
			return nil, err
		}
	}
	req.RequestURI = target
	return req, nil
}

// splitTarget splits an absolute URL into its origin (scheme://host) and
// its request target (path and query, "/" when empty).
func splitTarget(rawURL string) (origin, target string) {
	rest := rawURL
	if i := strings.Index(rest, "://"); i >= 0 {
		rest = rest[i+3:]
	}
	i := strings.IndexAny(rest, "/?")
	if i < 0 {
		return rawURL, "/"
	}
	origin, target = rawURL[:len(rawURL)-len(rest)+i], rest[i:]
	if target[0] == '?' {
		target = "/" + target
	}
	return origin, target
}
