package handlers

import (
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// The failure reports one Go instance (one isolate) accepts with
// REPORT_TOKEN: a bucket of reportBurst calls, refilled at
// reportPerSecond. A report writes up to dlq.MaxReportAttempts rows, so
// this bounds what one token holder can make an isolate write (2,000 rows
// a second). It is per isolate, not global: Cloudflare spreads calls over
// isolates, so a determined caller gets more; it holds no state in D1 and
// costs one mutex and a few float operations a call. Calls with the admin
// pair are not limited.
const (
	reportBurst     = 100
	reportPerSecond = 20
)

// rateLimit is a token bucket.
type rateLimit struct {
	mu     sync.Mutex
	burst  float64
	rate   float64 // tokens a second
	tokens float64
	at     time.Time // when tokens was counted; zero: full
}

func newRateLimit(burst, perSecond float64) *rateLimit {
	return &rateLimit{burst: burst, rate: perSecond}
}

// take spends a token at now. With none left it spends nothing and
// returns the wait until one is there.
func (l *rateLimit) take(now time.Time) (time.Duration, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.at.IsZero() {
		l.tokens, l.at = l.burst, now
	}
	if d := now.Sub(l.at); d > 0 {
		l.tokens = math.Min(l.burst, l.tokens+d.Seconds()*l.rate)
		l.at = now
	}
	if l.tokens < 1 {
		return time.Duration((1 - l.tokens) / l.rate * float64(time.Second)), false
	}
	l.tokens--
	return 0, true
}

// wait is how long until l holds a token at now (0: it holds one); it
// spends nothing.
func (l *rateLimit) wait(now time.Time) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.at.IsZero() {
		return 0
	}
	tokens := math.Min(l.burst, l.tokens+max(now.Sub(l.at), 0).Seconds()*l.rate)
	if tokens >= 1 {
		return 0
	}
	return time.Duration((1 - tokens) / l.rate * float64(time.Second))
}

// Failed sign-ins: a client (its CF-Connecting-IP, which Cloudflare sets
// and a caller cannot) may fail signInBurst times, then once per
// 1/signInPerSecond seconds, per isolate; past that its requests are
// refused (429 RATE_LIMITED) before any credential is checked: no hash, no
// D1 read, no signature. A request without CF-Connecting-IP, or with a
// loopback one (local runs: wrangler dev sets 127.0.0.1), is not limited. An isolate keeps at most signInClients clients (it
// starts over past them): about 100 bytes each.
const (
	signInBurst     = 20
	signInPerSecond = 0.2
	signInClients   = 4096
)

// signIns counts the failed sign-ins of each client.
type signIns struct {
	mu      sync.Mutex
	clients map[string]*rateLimit
}

// limited returns how long client must wait before its credentials are
// checked again (0: at once).
func (s *signIns) limited(client string, now time.Time) time.Duration {
	s.mu.Lock()
	l := s.clients[client]
	s.mu.Unlock()
	if l == nil {
		return 0
	}
	return l.wait(now)
}

// failed counts a refused credential of client at now.
func (s *signIns) failed(client string, now time.Time) {
	s.mu.Lock()
	if s.clients == nil || len(s.clients) >= signInClients {
		s.clients = map[string]*rateLimit{}
	}
	l := s.clients[client]
	if l == nil {
		l = newRateLimit(signInBurst, signInPerSecond)
		s.clients[client] = l
	}
	s.mu.Unlock()
	l.take(now)
}

// limitReports refuses, with 429 RATE_LIMITED and Retry-After (whole
// seconds), the calls authenticated by the report token (an Authorization
// header: the route's check has accepted it) beyond l.
func (a *API) limitReports(l *rateLimit, h handlerFunc) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		if r.Header.Get("Authorization") == "" {
			return h(w, r)
		}
		if wait, ok := l.take(a.Clock.Now()); !ok {
			w.Header().Set("Retry-After", strconv.FormatInt(int64(math.Ceil(wait.Seconds())), 10))
			return &APIError{Status: http.StatusTooManyRequests, Code: "RATE_LIMITED",
				Message: "too many reports with REPORT_TOKEN: wait Retry-After seconds and report again"}
		}
		return h(w, r)
	}
}
