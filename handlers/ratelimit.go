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
