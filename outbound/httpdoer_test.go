//go:build !(js && wasm)

package outbound

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// streamer answers with an endless body (64 KiB chunks, flushed) and
// counts what it wrote; done closes when the client went away.
type streamer struct {
	written atomic.Int64
	done    chan struct{}
}

func (s *streamer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	defer close(s.done)
	chunk := []byte(strings.Repeat("x", 64<<10))
	rc := http.NewResponseController(w)
	for s.written.Load() < 1<<34 {
		n, err := w.Write(chunk)
		s.written.Add(int64(n))
		if err != nil || rc.Flush() != nil {
			return
		}
	}
}

func endless(t *testing.T) (*streamer, *httptest.Server) {
	s := &streamer{done: make(chan struct{})}
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return s, srv
}

// wait returns once the server's handler has ended (the transfer was cut).
func (s *streamer) wait(t *testing.T) {
	t.Helper()
	select {
	case <-s.done:
	case <-time.After(time.Minute):
		t.Fatalf("the server is still streaming after %d bytes: the client did not cut the body", s.written.Load())
	}
}

// A body is read up to MaxResponseBytes and the rest is not read: the
// transfer ends there, whatever the server would send.
func TestHTTPDoerReadsUpToTheLimit(t *testing.T) {
	s, srv := endless(t)
	resp, err := HTTPDoer{}.Do(context.Background(), Request{Method: "GET", URL: srv.URL, Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Status != 200 || len(resp.Body) != MaxResponseBytes {
		t.Fatalf("status %d, %d body bytes, want %d", resp.Status, len(resp.Body), MaxResponseBytes)
	}
	s.wait(t)
}

// DiscardBody: no body is read (Response.Body is empty) and the transfer ends.
func TestHTTPDoerDiscardsTheBody(t *testing.T) {
	s, srv := endless(t)
	resp, err := HTTPDoer{}.Do(context.Background(), Request{Method: "POST", URL: srv.URL, Timeout: time.Minute, DiscardBody: true})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Status != 200 || len(resp.Body) != 0 {
		t.Fatalf("status %d, %d body bytes, want none", resp.Status, len(resp.Body))
	}
	s.wait(t)
}

// A Doer follows no redirect: the 3xx is the response, and its target sees
// no request (the Authorization header would go with it). Also with a
// Client of the caller's that would follow.
func TestHTTPDoerFollowsNoRedirect(t *testing.T) {
	var elsewhere atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { elsewhere.Add(1) }))
	defer other.Close()
	for _, code := range []int{301, 302, 303, 307, 308} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, other.URL+"/next", code)
		}))
		for _, d := range []HTTPDoer{{}, {Client: &http.Client{}}} {
			resp, err := d.Do(context.Background(), Request{Method: "POST", URL: srv.URL, Header: map[string]string{"Authorization": "Bearer k"}, Body: []byte("{}")})
			if err != nil || resp.Status != code || resp.Header["location"] != other.URL+"/next" {
				t.Errorf("%d: %+v %v", code, resp, err)
			}
		}
		srv.Close()
	}
	if n := elsewhere.Load(); n != 0 {
		t.Fatalf("the redirect's target got %d requests", n)
	}
}
