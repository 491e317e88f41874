//go:build !(js && wasm)

package outbound

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
)

// HTTPDoer is the native Doer (net/http), used by tests against httptest
// servers. It is not built into the Worker: the wasm build uses
// platform.Fetch, because linking the net/http client pulls in TLS and
// doubles the script size.
type HTTPDoer struct {
	// Client sends the requests (http.DefaultClient when nil), with its
	// redirect policy replaced: a Doer follows no redirect.
	Client *http.Client
}

// Do implements Doer; a request past its Timeout fails with ErrTimeout.
func (h HTTPDoer) Do(ctx context.Context, req Request) (Response, error) {
	if req.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, req.Timeout)
		defer cancel()
	}
	r, err := http.NewRequestWithContext(ctx, req.Method, req.URL, bytes.NewReader(req.Body))
	if err != nil {
		return Response{}, fmt.Errorf("build request: %w", err)
	}
	for k, v := range req.Header {
		r.Header.Set(k, v)
	}
	client := http.Client{}
	if h.Client != nil {
		client = *h.Client
	}
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := client.Do(r)
	if err != nil {
		return Response{}, transportError(ctx, req, err)
	}
	// Closing the body unread (or read up to the limit) ends the transfer.
	defer resp.Body.Close()
	var body []byte
	if !req.DiscardBody {
		if body, err = io.ReadAll(io.LimitReader(resp.Body, MaxResponseBytes)); err != nil {
			return Response{}, transportError(ctx, req, err)
		}
	}
	header := make(map[string]string, len(resp.Header))
	for k, vs := range resp.Header {
		header[strings.ToLower(k)] = strings.Join(vs, ", ")
	}
	return Response{Status: resp.StatusCode, Header: header, Body: body}, nil
}

func transportError(ctx context.Context, req Request, err error) error {
	var ne net.Error
	if errors.Is(ctx.Err(), context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()) {
		return fmt.Errorf("%w: no complete answer within %s", ErrTimeout, req.Timeout)
	}
	return fmt.Errorf("request failed: %w", err)
}
