//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/redrive/redrive/handlers"
	"github.com/redrive/redrive/internal/apicontract"
	"github.com/redrive/redrive/internal/sqlitetest"
)

// The contract test: every request the harness's client sends to a redrive
// worker (wrangler.jsonc's e2e environment, not the bench's reference
// worker) and its response are checked against handlers/openapi.json by
// internal/apicontract. The response is always checked (the 4xx answers to
// hostile requests included); the request only when the server accepted it
// (2xx), since tests send invalid requests on purpose. A mismatch fails the
// test that holds the response (Admin, the hostile corpus) and, whoever
// sent it, the run (TestMain prints every one).
//
// Not part of the API, so not checked (the whole list):
//   - /__dev/* and /__scheduled: DEV_ROUTES and wrangler dev --test-scheduled only;
//   - /cdn-cgi/*: wrangler dev's own routes;
//   - the console's static files (build/console), served without the worker.
var contractSkip = []string{"/__dev/", "/__scheduled", "/cdn-cgi/"}

var contract struct {
	once   sync.Once
	v      *apicontract.Validator
	err    error
	static map[string]bool // paths of the console's static files

	mu         sync.Mutex
	hosts      map[string]bool // host:port of the redrive workers
	checked    int
	mismatches []string
}

// contractWorker registers a redrive worker's URL: its exchanges are checked.
func contractWorker(workerURL string) error {
	contract.once.Do(func() {
		contract.v, contract.err = apicontract.New(handlers.OpenAPIDocument())
		contract.static = map[string]bool{"/": true}
		root, err := sqlitetest.Root()
		if err != nil {
			contract.err = err
			return
		}
		dir := filepath.Join(root, "build", "console")
		contract.err = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				rel, _ := filepath.Rel(dir, p)
				contract.static["/"+filepath.ToSlash(rel)] = true
			}
			return err
		})
	})
	if contract.err != nil {
		return fmt.Errorf("contract: %w", contract.err)
	}
	contract.mu.Lock()
	defer contract.mu.Unlock()
	if contract.hosts == nil {
		contract.hosts = map[string]bool{}
	}
	contract.hosts[strings.TrimPrefix(workerURL, "http://")] = true
	return nil
}

type exchangeKey struct{}

// exchange is what the transport learns of one exchange besides the
// response: how it does not match the document, and how long it took.
type exchange struct {
	// Mismatch is how the exchange does not match handlers/openapi.json
	// (nil when it matched or was not checked).
	Mismatch error
	// Elapsed is the exchange alone: from sending the request to the last
	// byte of the response, before the contract check (which runs in this
	// process and would otherwise be timed as the worker's).
	Elapsed time.Duration
}

// withExchange returns req with a slot the transport fills in.
func withExchange(req *http.Request) (*http.Request, *exchange) {
	slot := new(exchange)
	return req.WithContext(context.WithValue(req.Context(), exchangeKey{}, slot)), slot
}

// contractTransport is the harness client's transport (see client). It reads
// every response whole, timing the exchange, then checks it when checked.
type contractTransport struct{ base http.RoundTripper }

func (c contractTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	check := checked(req)
	var reqBody []byte
	if check && req.Body != nil && req.Body != http.NoBody {
		var err error
		reqBody, err = io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, err
		}
		r := req.Clone(req.Context())
		r.Body = io.NopCloser(bytes.NewReader(reqBody))
		req = r
	}
	slot, _ := req.Context().Value(exchangeKey{}).(*exchange)
	if slot == nil {
		slot = new(exchange)
	}
	start := time.Now()
	resp, err := c.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	slot.Elapsed = time.Since(start)
	resp.Body = io.NopCloser(bytes.NewReader(body))
	if !check {
		return resp, nil
	}
	seen := req
	if p := runtimePath(req.URL); p != req.URL.EscapedPath() {
		seen = req.Clone(req.Context())
		seen.URL.Opaque, seen.URL.Path, seen.URL.RawPath = p, "", ""
	}
	mismatch := contract.v.Check(seen, reqBody, resp.StatusCode, resp.Header, body)
	if mismatch != nil {
		mismatch = fmt.Errorf("%s does not match handlers/openapi.json: %w\n  %.400s", apicontract.Describe(req, resp.StatusCode), mismatch, body)
	}
	contract.mu.Lock()
	contract.checked++
	if mismatch != nil {
		contract.mismatches = append(contract.mismatches, mismatch.Error())
	}
	contract.mu.Unlock()
	slot.Mismatch = mismatch
	return resp, nil
}

// runtimePath is the path of u as the worker sees it: workerd parses the
// request's URL (WHATWG URL), which resolves dot segments (".", "..", and
// their %2e spellings) before any route is matched.
func runtimePath(u *url.URL) string {
	raw := u.EscapedPath()
	if u.Opaque != "" {
		raw = u.Opaque
	}
	segs := strings.Split(raw, "/")[1:]
	out := []string{}
	for i, s := range segs {
		last := i == len(segs)-1
		switch strings.ToLower(s) {
		case "..", ".%2e", "%2e.", "%2e%2e":
			if len(out) > 0 {
				out = out[:len(out)-1]
			}
			if last {
				out = append(out, "")
			}
		case ".", "%2e":
			if last {
				out = append(out, "")
			}
		default:
			out = append(out, s)
		}
	}
	return "/" + strings.Join(out, "/")
}

// checked reports whether an exchange is checked: one with a redrive
// worker, outside contractSkip and the static files.
func checked(req *http.Request) bool {
	contract.mu.Lock()
	redrive := contract.hosts[req.URL.Host]
	contract.mu.Unlock()
	if !redrive {
		return false
	}
	p := req.URL.Path
	if req.URL.Opaque != "" {
		p = req.URL.Opaque
	}
	for _, prefix := range contractSkip {
		if strings.HasPrefix(p, prefix) {
			return false
		}
	}
	return !contract.static[p]
}

// contractReport prints how many responses were checked and every
// mismatch; it returns false when there was one.
func contractReport() bool {
	contract.mu.Lock()
	defer contract.mu.Unlock()
	fmt.Fprintf(os.Stderr, "contract: %d responses checked against handlers/openapi.json, %d mismatches\n", contract.checked, len(contract.mismatches))
	for i, m := range contract.mismatches {
		if i == 50 {
			fmt.Fprintf(os.Stderr, "  ... and %d more\n", len(contract.mismatches)-50)
			break
		}
		fmt.Fprintf(os.Stderr, "  %s\n", m)
	}
	return len(contract.mismatches) == 0
}
