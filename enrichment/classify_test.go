package enrichment

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/outbound"
)

func answer(content string) []byte {
	return []byte(fmt.Sprintf(`{"id":"x","choices":[{"index":0,"message":{"role":"assistant","content":%q}}]}`, content))
}

func TestClassify(t *testing.T) {
	now := time.Date(2030, 5, 6, 7, 8, 9, 0, time.UTC)
	errBody := []byte(`{"error":{"message":"upstream exploded","type":"server_error"}}`)
	cases := []struct {
		name       string
		resp       outbound.Response
		err        error
		outcome    Outcome
		abv        float64
		retryAfter time.Duration
		reason     string // substring
	}{
		{"200 number", outbound.Response{Status: 200, Body: answer("5.2")}, nil, Enriched, 5.2, 0, "answer 5.2"},
		{"200 number with percent and spaces", outbound.Response{Status: 200, Body: answer(" 12.5% \n")}, nil, Enriched, 12.5, 0, "12.5"},
		{"200 number with full stop", outbound.Response{Status: 200, Body: answer("4.")}, nil, Enriched, 4, 0, "answer 4"},
		{"200 number in full", outbound.Response{Status: 200, Body: answer("5.25")}, nil, Enriched, 5.25, 0, "answer 5.25"},
		{"200 zero", outbound.Response{Status: 200, Body: answer("0")}, nil, Enriched, 0, 0, "answer 0"},
		{"200 upper bound", outbound.Response{Status: 200, Body: answer("70")}, nil, Enriched, 70, 0, "answer 70"},
		{"201 counts as 2xx", outbound.Response{Status: 201, Body: answer("6")}, nil, Enriched, 6, 0, "answer 6"},
		{"200 unknown", outbound.Response{Status: 200, Body: answer("unknown")}, nil, NotFound, 0, 0, "not a number: unknown"},
		{"200 prose", outbound.Response{Status: 200, Body: answer("It is about 5%")}, nil, NotFound, 0, 0, "not a number"},
		{"200 above range", outbound.Response{Status: 200, Body: answer("70.1")}, nil, NotFound, 0, 0, "outside 0..70"},
		{"200 negative", outbound.Response{Status: 200, Body: answer("-1")}, nil, NotFound, 0, 0, "outside 0..70"},
		{"200 NaN", outbound.Response{Status: 200, Body: answer("NaN")}, nil, NotFound, 0, 0, "not a number"},
		{"200 not JSON", outbound.Response{Status: 200, Body: []byte("<html>oops</html>")}, nil, Permanent, 0, 0, "unparseable response"},
		{"200 no choices", outbound.Response{Status: 200, Body: []byte(`{"choices":[]}`)}, nil, Permanent, 0, 0, "unparseable response"},
		{"200 null content", outbound.Response{Status: 200, Body: []byte(`{"choices":[{"message":{"content":null}}]}`)}, nil, Permanent, 0, 0, "unparseable response"},
		{"200 empty body", outbound.Response{Status: 200}, nil, Permanent, 0, 0, "unparseable response"},
		{"429 seconds", outbound.Response{Status: 429, Header: map[string]string{"retry-after": "7"}, Body: errBody}, nil, RateLimited, 0, 7 * time.Second, "status 429: upstream exploded (retry after 7s)"},
		{"429 HTTP date", outbound.Response{Status: 429, Header: map[string]string{"retry-after": now.Add(90 * time.Second).Format(http.TimeFormat)}}, nil, RateLimited, 0, 90 * time.Second, "retry after 1m30s"},
		{"429 zero is one second", outbound.Response{Status: 429, Header: map[string]string{"retry-after": "0"}}, nil, RateLimited, 0, time.Second, "status 429"},
		{"429 capped at 12h", outbound.Response{Status: 429, Header: map[string]string{"retry-after": "999999"}}, nil, RateLimited, 0, MaxDelay, "retry after 12h0m0s"},
		{"429 without header", outbound.Response{Status: 429}, nil, RateLimited, 0, 0, "status 429"},
		{"429 garbage header", outbound.Response{Status: 429, Header: map[string]string{"retry-after": "soon"}}, nil, RateLimited, 0, 0, "status 429"},
		{"500", outbound.Response{Status: 500, Body: errBody}, nil, Transient, 0, 0, "status 500: upstream exploded"},
		{"502 html", outbound.Response{Status: 502, Body: []byte("<html>\n bad   gateway\n</html>")}, nil, Transient, 0, 0, "status 502: <html> bad gateway </html>"},
		{"503", outbound.Response{Status: 503}, nil, Transient, 0, 0, "status 503"},
		{"408", outbound.Response{Status: 408}, nil, Transient, 0, 0, "status 408"},
		{"timeout", outbound.Response{}, fmt.Errorf("%w: no complete answer within 1s", outbound.ErrTimeout), Transient, 0, 0, "timeout: timed out: no complete answer within 1s"},
		{"network", outbound.Response{}, errors.New("fetch failed: TypeError: Network connection lost."), Transient, 0, 0, "network: fetch failed"},
		{"400", outbound.Response{Status: 400, Body: []byte(`{"error":"bad model"}`)}, nil, Permanent, 0, 0, "status 400: bad model"},
		{"401", outbound.Response{Status: 401, Body: []byte(`{"message":"invalid api key"}`)}, nil, Auth, 0, 0, "status 401: invalid api key"},
		{"403", outbound.Response{Status: 403}, nil, Auth, 0, 0, "status 403"},
		{"404", outbound.Response{Status: 404}, nil, Permanent, 0, 0, "status 404"},
		{"422", outbound.Response{Status: 422}, nil, Permanent, 0, 0, "status 422"},
		{"other 4xx", outbound.Response{Status: 418}, nil, Permanent, 0, 0, "status 418"},
		{"unexpected status", outbound.Response{Status: 600}, nil, Permanent, 0, 0, "unexpected status 600"},
		{"unexpected 1xx", outbound.Response{Status: 199}, nil, Permanent, 0, 0, "unexpected status 199"},
		// A redirect is not followed: permanent, naming its scheme and host only.
		{"302", outbound.Response{Status: 302, Header: map[string]string{"location": "https://other.example:8443/v1?key=s3cret"}}, nil, Permanent, 0, 0,
			"status 302: redirect to https://other.example:8443 not followed (set ENRICHMENT_API_URL to the endpoint itself)"},
		{"300", outbound.Response{Status: 300}, nil, Permanent, 0, 0, "status 300: redirect to nowhere (no location) not followed"},
		{"399 relative", outbound.Response{Status: 399, Header: map[string]string{"location": "/v2/chat"}}, nil, Permanent, 0, 0, "status 399: redirect to a path of the same host not followed"},
		{"307 unreadable", outbound.Response{Status: 307, Header: map[string]string{"location": "http://%zz"}}, nil, Permanent, 0, 0, "status 307: redirect to an unreadable location not followed"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v := Classify(c.resp, c.err, now, "")
			if v.Outcome != c.outcome || v.ABV != c.abv || v.RetryAfter != c.retryAfter || !strings.Contains(v.Reason, c.reason) {
				t.Fatalf("got %+v, want %s abv=%v retryAfter=%v reason~%q", v, c.outcome, c.abv, c.retryAfter, c.reason)
			}
			if strings.ContainsAny(v.Reason, "\n\r\t") {
				t.Fatalf("reason is not one line: %q", v.Reason)
			}
		})
	}
}

func TestClassifyShortensLongErrors(t *testing.T) {
	v := Classify(outbound.Response{Status: 500, Body: []byte(strings.Repeat("x", 5000))}, nil, time.Now(), "")
	if n := len([]rune(v.Reason)); n > 220 {
		t.Fatalf("reason has %d characters", n)
	}
}

// shorten makes one line (runs of white space become one space) and keeps
// up to 200 bytes, never half a character; a longer text is cut and "…".
func TestShorten(t *testing.T) {
	for in, want := range map[string]string{
		"":                             "",
		" a \n\tb  c ":                 "a b c",
		strings.Repeat("é", 100):       strings.Repeat("é", 100),
		strings.Repeat("é", 101):       strings.Repeat("é", 100) + "…",
		"a" + strings.Repeat("é", 100): "a" + strings.Repeat("é", 99) + "…",
		strings.Repeat("ab ", 100):     strings.TrimSpace(strings.Repeat("ab ", 100))[:200] + "…",
	} {
		if got := shorten(in, ""); got != want {
			t.Errorf("shorten(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2030, 5, 6, 7, 8, 9, 0, time.UTC)
	cases := []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"7", 7 * time.Second, true},
		{" 120 ", 2 * time.Minute, true},
		{"0", 0, true},
		{"43200", MaxDelay, true},
		{"43201", MaxDelay, true},
		{"99999999999999999999999", MaxDelay, true},
		{now.Add(30 * time.Second).Format(http.TimeFormat), 30 * time.Second, true},
		{"Mon, 06 May 2030 07:10:09 GMT", 2 * time.Minute, true},          // IMF-fixdate
		{"Monday, 06-May-30 07:10:09 GMT", 2 * time.Minute, true},         // RFC 850
		{"Mon May  6 07:10:09 2030", 2 * time.Minute, true},               // asctime
		{now.Add(-time.Hour).Format(http.TimeFormat), 0, true},            // past: now
		{now.Add(48 * time.Hour).Format(http.TimeFormat), MaxDelay, true}, // capped
		{"", 0, false},
		{"-5", 0, false},
		{"1.5", 0, false},
		{"tomorrow", 0, false},
	}
	for _, c := range cases {
		got, ok := ParseRetryAfter(c.in, now)
		if got != c.want || ok != c.ok {
			t.Errorf("ParseRetryAfter(%q) = %v, %v; want %v, %v", c.in, got, ok, c.want, c.ok)
		}
	}
}

func TestBackoffCap(t *testing.T) {
	b := Backoff{Base: 30 * time.Second, Max: time.Hour}
	want := []time.Duration{30 * time.Second, time.Minute, 2 * time.Minute, 4 * time.Minute, 8 * time.Minute, 16 * time.Minute, 32 * time.Minute, time.Hour, time.Hour}
	for i, w := range want {
		if got := b.Cap(i + 1); got != w {
			t.Errorf("Cap(%d) = %v, want %v", i+1, got, w)
		}
	}
	if got := (Backoff{Base: time.Hour, Max: 100 * time.Hour}).Cap(50); got != MaxDelay {
		t.Errorf("a Max above 12 h must be capped at MaxDelay, got %v", got)
	}
	if got := (Backoff{}).Cap(3); got != time.Second {
		t.Errorf("zero config must still wait 1 s, got %v", got)
	}
}

// Every delay is a whole number of seconds in 1 s..Cap(n), for any attempt and
// any random value, and the jitter spans the whole range (full jitter).
func TestBackoffDelayBounds(t *testing.T) {
	for _, b := range []Backoff{{Base: time.Second, Max: 2 * time.Second}, {Base: 30 * time.Second, Max: time.Hour}, {Base: 1500 * time.Millisecond, Max: MaxDelay}} {
		for attempt := 0; attempt <= 120; attempt++ {
			c := b.Cap(attempt)
			for _, rnd := range []float64{0, 1e-9, 0.25, 0.5, 0.999999999} {
				d := b.Delay(attempt, rnd)
				if d < time.Second || d > c || d > MaxDelay || d%time.Second != 0 {
					t.Fatalf("%+v Delay(%d, %v) = %v, cap %v", b, attempt, rnd, d, c)
				}
			}
		}
	}
	b := Backoff{Base: 30 * time.Second, Max: time.Hour}
	if lo, hi := b.Delay(3, 0), b.Delay(3, 0.999999); lo != time.Second || hi != 2*time.Minute {
		t.Fatalf("attempt 3 spans %v..%v, want 1s..2m0s", lo, hi)
	}
	if mid := b.Delay(3, 0.5); mid != time.Minute {
		t.Fatalf("Delay(3, 0.5) = %v, want 1m0s", mid)
	}
}

func TestQueueDelay(t *testing.T) {
	for in, want := range map[time.Duration]time.Duration{
		-time.Second:            time.Second,
		0:                       time.Second,
		1500 * time.Millisecond: 2 * time.Second,
		7 * time.Second:         7 * time.Second,
		13 * time.Hour:          MaxDelay,
	} {
		if got := queueDelay(in); got != want {
			t.Errorf("queueDelay(%v) = %v, want %v", in, got, want)
		}
	}
}
