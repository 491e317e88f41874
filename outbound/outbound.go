// Package outbound is redrive's one way to make an HTTP request to another
// service (the enrichment provider, the alert webhook): a small request and
// response, a Doer that sends them, and ErrTimeout for a request its timeout
// aborted. In the Worker the Doer is platform.Fetch (the runtime's fetch with
// AbortSignal.timeout); natively it is HTTPDoer (net/http).
package outbound

import (
	"context"
	"errors"
	"time"
)

// MaxResponseBytes is the most of a response body a Doer reads: it reads
// the body as it streams in up to this many bytes and cancels the rest, so
// an endpoint that streams hundreds of MB costs the isolate (128 MB) 1 MiB.
const MaxResponseBytes = 1 << 20

// Request is one outbound HTTP request.
type Request struct {
	Method string
	URL    string
	// Header holds one value per name.
	Header map[string]string
	Body   []byte
	// Timeout, when positive, aborts the request (body included) after this long.
	Timeout time.Duration
	// DiscardBody cancels the response body unread (the Response has no
	// Body), for a caller that needs only the status and headers.
	DiscardBody bool
}

// Response is a received HTTP response.
type Response struct {
	Status int
	// Header holds each header's value under its lower-case name.
	Header map[string]string
	Body   []byte
}

// ErrTimeout is wrapped by a Doer's error when the request was aborted by its timeout.
var ErrTimeout = errors.New("timed out")

// Doer sends one HTTP request. It returns an error only when no response
// arrived (network failure, or ErrTimeout when the timeout aborted it); any
// status is a Response. It follows no redirect: a 3xx is the Response
// (with its location header), since following one would send the
// request's secrets (a bearer key) wherever it points. In the Worker it is
// platform.Fetch (redirect: "manual"); natively HTTPDoer.
type Doer interface {
	Do(ctx context.Context, req Request) (Response, error)
}
