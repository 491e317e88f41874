package enrichment

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/redrive/redrive/internal/text"
	"github.com/redrive/redrive/outbound"
)

// MaxDelay is Cloudflare Queues' limit on a retry delay (12 h).
const MaxDelay = 12 * time.Hour

// MaxABV is the largest ABV (percent) accepted from the provider; anything
// above is treated as "not found" rather than stored.
const MaxABV = 70.0

// Outcome is what one provider attempt means for the message.
type Outcome string

// The outcomes Classify returns.
const (
	// Enriched: the provider answered with an ABV in 0..MaxABV; store it and ack.
	Enriched Outcome = "enriched"
	// NotFound: the provider answered, but with no usable ABV; store that and ack.
	NotFound Outcome = "not_found"
	// RateLimited: 429; retry after Retry-After (or the backoff when it has none).
	RateLimited Outcome = "rate_limited"
	// Transient: 5xx, 408, timeout or network failure; retry with backoff.
	Transient Outcome = "transient"
	// Auth: 401 or 403, the provider refuses our API key. Not the message's
	// fault: every call fails the same way until the key is fixed, so the
	// breaker opens at once and the message waits (no DLQ row).
	Auth Outcome = "auth"
	// Permanent: the request itself is wrong (400/404/422, other 4xx,
	// unexpected statuses, unparseable answers); retrying cannot help.
	Permanent Outcome = "permanent"
)

// Verdict is the classification of one provider attempt.
type Verdict struct {
	Outcome Outcome
	// ABV is the answer when Outcome is Enriched.
	ABV float64
	// RetryAfter is the provider's Retry-After (RateLimited only; 0 when absent
	// or unparseable), at least 1 s and at most MaxDelay.
	RetryAfter time.Duration
	// Reason is a short single-line description for logs, attempt records and
	// DLQ rows, with the API key redacted (text.Redact).
	Reason string
	// Status is the response's HTTP status (0 when none arrived), and
	// Duration how long the call took: set by the consumer for the
	// attempt's history entry.
	Status   int
	Duration time.Duration
}

// Classify turns the result of one provider call (the response, or the
// transport error when none arrived) into a Verdict. It is the single place
// that decides what a provider answer means; now is used for HTTP-date
// Retry-After values. The API key is redacted from the reason: from the
// provider's raw text before anything cuts it, and from the reason built
// (text.Redact, text.ClipRedact), so no piece of it of text.SecretRun
// bytes or more is logged or stored.
func Classify(resp outbound.Response, err error, now time.Time, key string) Verdict {
	v := classify(resp, err, now, key)
	v.Reason = text.Redact(v.Reason, key)
	return v
}

func classify(resp outbound.Response, err error, now time.Time, key string) Verdict {
	if err != nil {
		if errors.Is(err, outbound.ErrTimeout) {
			return Verdict{Outcome: Transient, Reason: "timeout: " + shorten(err.Error(), key)}
		}
		return Verdict{Outcome: Transient, Reason: "network: " + shorten(err.Error(), key)}
	}
	status := resp.Status
	switch {
	case status >= 200 && status < 300:
		return classifyAnswer(resp.Body, key)
	case status == http.StatusTooManyRequests:
		v := Verdict{Outcome: RateLimited, Reason: statusReason(resp, key)}
		if d, ok := ParseRetryAfter(resp.Header["retry-after"], now); ok {
			v.RetryAfter = max(d, time.Second)
			v.Reason += fmt.Sprintf(" (retry after %s)", d)
		}
		return v
	case status >= 500 && status < 600, status == http.StatusRequestTimeout:
		return Verdict{Outcome: Transient, Reason: statusReason(resp, key)}
	case status == http.StatusUnauthorized, status == http.StatusForbidden:
		return Verdict{Outcome: Auth, Reason: statusReason(resp, key)}
	case status >= 400 && status < 500:
		return Verdict{Outcome: Permanent, Reason: statusReason(resp, key)}
	case status >= 300 && status < 400:
		// The Doer follows no redirect (the bearer key would go with it):
		// ENRICHMENT_API_URL is not the endpoint itself.
		return Verdict{Outcome: Permanent, Reason: fmt.Sprintf("status %d: redirect to %s not followed (set ENRICHMENT_API_URL to the endpoint itself)",
			status, redirectTarget(resp.Header["location"]))}
	default:
		return Verdict{Outcome: Permanent, Reason: "unexpected " + statusReason(resp, key)}
	}
}

// classifyAnswer reads a 2xx chat-completions body.
func classifyAnswer(body []byte, key string) Verdict {
	var r chatResponse
	if err := json.Unmarshal(body, &r); err != nil {
		return Verdict{Outcome: Permanent, Reason: "unparseable response: not chat-completions JSON"}
	}
	if len(r.Choices) == 0 || r.Choices[0].Message.Content == nil {
		return Verdict{Outcome: Permanent, Reason: "unparseable response: no choices[0].message.content"}
	}
	answer := strings.TrimSpace(*r.Choices[0].Message.Content)
	abv, ok := parseABV(answer)
	switch {
	case !ok:
		return Verdict{Outcome: NotFound, Reason: "answer is not a number: " + shorten(answer, key)}
	case abv < 0 || abv > MaxABV:
		return Verdict{Outcome: NotFound, Reason: fmt.Sprintf("answer %g is outside 0..%g", abv, MaxABV)}
	default:
		return Verdict{Outcome: Enriched, ABV: abv, Reason: "answer " + strconv.FormatFloat(abv, 'f', -1, 64)}
	}
}

// parseABV accepts a bare number, optionally followed by "%" or a full stop.
func parseABV(s string) (float64, bool) {
	s = strings.TrimSpace(strings.TrimSuffix(s, "."))
	s = strings.TrimSpace(strings.TrimSuffix(s, "%"))
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, false
	}
	return v, true
}

// statusReason is "status N: <provider's error text>".
func statusReason(resp outbound.Response, key string) string {
	msg := providerError(resp.Body, key)
	if msg == "" {
		return fmt.Sprintf("status %d", resp.Status)
	}
	return fmt.Sprintf("status %d: %s", resp.Status, msg)
}

// redirectTarget names where a redirect pointed: its scheme and host (the
// rest may carry a token).
func redirectTarget(location string) string {
	u, err := url.Parse(location)
	switch {
	case location == "":
		return "nowhere (no location)"
	case err != nil:
		return "an unreadable location"
	case u.Host == "":
		return "a path of the same host"
	}
	return shorten(u.Scheme+"://"+u.Host, "")
}

// providerError extracts the error text of an OpenAI-style error body
// ({"error":{"message":...}}, {"error":"..."}, {"message":...}), else the
// start of the body.
func providerError(body []byte, key string) string {
	var e struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
	}
	if json.Unmarshal(body, &e) == nil {
		var nested struct {
			Message string `json:"message"`
		}
		var flat string
		switch {
		case json.Unmarshal(e.Error, &nested) == nil && nested.Message != "":
			return shorten(nested.Message, key)
		case json.Unmarshal(e.Error, &flat) == nil && flat != "":
			return shorten(flat, key)
		case e.Message != "":
			return shorten(e.Message, key)
		}
	}
	return shorten(string(body), key)
}

// shorten makes text one line of at most 200 characters, with key
// redacted before the cut (text.ClipRedact).
func shorten(s, key string) string {
	return text.ClipRedact(strings.Join(strings.FieldsFunc(s, unicode.IsSpace), " "), 200, key)
}

// ParseRetryAfter reads a Retry-After value: delay seconds or an HTTP date.
// The result is never negative and at most MaxDelay; ok is false when the
// value is absent or unreadable.
func ParseRetryAfter(v string, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if n, err := strconv.ParseUint(v, 10, 64); err == nil {
		if n > uint64(MaxDelay/time.Second) {
			return MaxDelay, true
		}
		return time.Duration(n) * time.Second, true
	} else if errors.Is(err, strconv.ErrRange) {
		return MaxDelay, true
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	return min(max(t.Sub(now), 0), MaxDelay), true
}

// Backoff is exponential backoff with full jitter.
type Backoff struct {
	// Base is the cap after the first failed attempt.
	Base time.Duration
	// Max bounds every cap (and MaxDelay bounds Max).
	Max time.Duration
}

// Cap is the largest delay after failed attempt n (1-based): min(Max, Base*2^(n-1)),
// at least 1 s and at most MaxDelay.
func (b Backoff) Cap(attempt int) time.Duration {
	limit := min(b.Max, MaxDelay)
	c := b.Base
	for i := 1; i < attempt && c < limit; i++ {
		c *= 2
	}
	return max(min(c, limit), time.Second)
}

// Delay is the wait after failed attempt n given rnd uniform in [0, 1): a
// whole number of seconds uniform in 1 s..Cap(n) (full jitter; Queues counts
// delays in whole seconds, and 0 would mean the consumer's default delay).
func (b Backoff) Delay(attempt int, rnd float64) time.Duration {
	c := b.Cap(attempt)
	secs := math.Ceil(rnd * c.Seconds())
	return min(max(time.Duration(secs)*time.Second, time.Second), c.Truncate(time.Second))
}

// queueDelay rounds d up to whole seconds within 1 s..MaxDelay, the range a
// queue retry accepts.
func queueDelay(d time.Duration) time.Duration {
	s := time.Duration(math.Ceil(d.Seconds())) * time.Second
	return min(max(s, time.Second), MaxDelay)
}
