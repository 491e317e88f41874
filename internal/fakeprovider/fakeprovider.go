// Package fakeprovider is an OpenAI-compatible chat-completions server on
// loopback that answers as it is told: the stand-in for the enrichment
// provider in the e2e tests and in `make dev` (cmd/devprovider).
package fakeprovider

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Behavior is how the fake provider answers one call.
type Behavior struct {
	// Status is the HTTP status (200 when zero).
	Status int
	// Content is the model's answer for a 200 ("5.2", "unknown", ...).
	Content string
	// Body replaces the whole response body when set (for unparseable answers).
	Body string
	// RetryAfter sets the Retry-After header when non-empty.
	RetryAfter string
	// Location sets the Location header when non-empty (with a 3xx Status:
	// a redirect).
	Location string
	// Hang keeps the request open until the client goes away or the server stops.
	Hang bool
	// Stream, when positive, answers with a body of that many bytes (the
	// start of a JSON object that never ends), written as fast as the
	// client reads it, until the client goes away (Call.Written says how
	// much was written).
	Stream int64
}

// Call is one request the fake provider received.
type Call struct {
	Token string
	At    time.Time
	// Ended is when the handler returned (for a Hang: when the client went
	// away); zero while the request is still open.
	Ended time.Time
	// Written is how many body bytes a Stream answer wrote before it ended.
	Written int64
}

// Provider is an OpenAI-compatible chat-completions server on 127.0.0.1.
// Behaviour is chosen per call by the first registered token found in the
// request body (tests use unique beer names as tokens), else the default.
type Provider struct {
	URL string

	srv  *http.Server
	stop chan struct{}

	mu       sync.Mutex
	def      Behavior
	byToken  map[string]Behavior
	calls    []Call
	lastAuth string
}

// Start listens on addr ("127.0.0.1:0" for a free port); by default every
// call is answered with an ABV of 5.0.
func Start(addr string) (*Provider, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	p := &Provider{
		URL:     fmt.Sprintf("http://%s/chat/completions", ln.Addr()),
		stop:    make(chan struct{}),
		def:     Behavior{Content: "5.0"},
		byToken: map[string]Behavior{},
	}
	p.srv = &http.Server{Handler: http.HandlerFunc(p.serve)}
	go p.srv.Serve(ln)
	return p, nil
}

// Close stops the server and releases hanging requests.
func (p *Provider) Close() {
	close(p.stop)
	p.srv.Close()
}

// Default sets the behaviour for requests that mention no token.
func (p *Provider) Default(b Behavior) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.def = b
}

// On sets the behaviour for requests mentioning token.
func (p *Provider) On(token string, b Behavior) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.byToken[token] = b
}

// Calls returns the calls whose body mentioned token ("" for all calls).
func (p *Provider) Calls(token string) []Call {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []Call
	for _, c := range p.calls {
		if token == "" || c.Token == token {
			out = append(out, c)
		}
	}
	return out
}

// LastAuthorization is the Authorization header of the latest call.
func (p *Provider) LastAuthorization() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.lastAuth
}

func (p *Provider) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	p.mu.Lock()
	b, token := p.def, ""
	for t, tb := range p.byToken {
		if strings.Contains(string(body), t) {
			b, token = tb, t
			break
		}
	}
	p.calls = append(p.calls, Call{Token: token, At: time.Now()})
	idx := len(p.calls) - 1
	p.lastAuth = r.Header.Get("Authorization")
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		p.calls[idx].Ended = time.Now()
		p.mu.Unlock()
	}()

	if b.Hang {
		select {
		case <-r.Context().Done():
		case <-p.stop:
		}
		return
	}
	if b.RetryAfter != "" {
		w.Header().Set("Retry-After", b.RetryAfter)
	}
	if b.Location != "" {
		w.Header().Set("Location", b.Location)
	}
	status := b.Status
	if status == 0 {
		status = http.StatusOK
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	if b.Stream > 0 {
		n := p.stream(w, b.Stream)
		p.mu.Lock()
		p.calls[idx].Written = n
		p.mu.Unlock()
		return
	}
	switch {
	case b.Body != "":
		io.WriteString(w, b.Body)
	case status == http.StatusOK:
		json.NewEncoder(w).Encode(map[string]any{
			"id": "fake", "object": "chat.completion",
			"choices": []map[string]any{{"index": 0, "message": map[string]string{"role": "assistant", "content": b.Content}}},
		})
	default:
		json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"message": fmt.Sprintf("fake provider error %d", status)}})
	}
}

// stream writes n bytes of `{"pad":"xxx...` in 64 KiB chunks, flushing
// each, and returns how many were written before a write failed (the
// client went away).
func (p *Provider) stream(w http.ResponseWriter, n int64) int64 {
	chunk := []byte(strings.Repeat("x", 64<<10))
	copy(chunk, `{"pad":"`)
	rc := http.NewResponseController(w)
	var written int64
	for written < n {
		c := chunk[:min(int64(len(chunk)), n-written)]
		m, err := w.Write(c)
		written += int64(m)
		if err != nil || rc.Flush() != nil {
			break
		}
		chunk = chunk[:cap(chunk)]
		copy(chunk, "xxxxxxxx")
	}
	return written
}
