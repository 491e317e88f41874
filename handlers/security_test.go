package handlers

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"
)

// Every answer of the API, success or error, routed or not, carries
// nosniff and no-store.
func TestAnswersAreNeitherSniffedNorCached(t *testing.T) {
	api, _ := newDLQAPI(t)
	h := api.Handler()
	for _, c := range []struct {
		method, path string
		hdr          map[string]string
		code         int
	}{
		{"GET", "/health", nil, 200},
		{"GET", "/admin/dlq", adminHeaders, 200},
		{"GET", "/admin/dlq/export?format=csv", adminHeaders, 200},
		{"GET", "/admin/metrics", adminHeaders, 200},
		{"GET", "/admin/openapi.json", adminHeaders, 200},
		{"GET", "/admin/dlq", nil, 401},
		{"GET", "/nope", nil, 404},
		{"DELETE", "/admin/dlq", adminHeaders, 405},
	} {
		rec, _ := do(h, c.method, c.path, "", c.hdr)
		if rec.Code != c.code || rec.Header().Get("X-Content-Type-Options") != "nosniff" || rec.Header().Get("Cache-Control") != "no-store" {
			t.Errorf("%s %s: %d %v", c.method, c.path, rec.Code, rec.Header())
		}
	}
}

// /health tells an anonymous caller (or one with a wrong credential) its
// status alone; the admin pair sees version, time, D1's latency and the
// instance. With D1 down, the same split holds in the 503.
func TestHealthTellsAnonymousCallersOnlyTheStatus(t *testing.T) {
	api := newAPI(t)
	api.Instance = NewInstance(time.Now())
	for _, c := range []struct {
		name string
		hdr  map[string]string
		want string
	}{
		{"anonymous", nil, `{"status":"ok"}`},
		{"wrong secret", map[string]string{"X-API-Key": "k", "X-Admin-Secret": "x"}, `{"status":"ok"}`},
	} {
		rec, env := do(api.Handler(), "GET", "/health", "", c.hdr)
		if data, _ := json.Marshal(env.Data); rec.Code != 200 || string(data) != c.want {
			t.Errorf("%s: %d %s", c.name, rec.Code, rec.Body)
		}
	}
	rec, env := do(api.Handler(), "GET", "/health", "", adminHeaders)
	data, _ := env.Data.(map[string]any)
	if rec.Code != 200 || data["version"] != "test" || data["d1"] == nil || data["time"] == nil || data["instance"] == nil {
		t.Fatalf("with credentials: %d %s", rec.Code, rec.Body)
	}
	api.DB.Close()
	rec, env = do(api.Handler(), "GET", "/health", "", nil)
	if data, _ := json.Marshal(env.Data); rec.Code != 503 || string(data) != `{"status":"degraded"}` || env.Error == nil || env.Error.Code != "D1_UNAVAILABLE" {
		t.Fatalf("anonymous, D1 down: %d %s", rec.Code, rec.Body)
	}
}

// The audit's key fingerprint is a keyed hash: not the prefix of the key's
// plain SHA-256 (which a weak key could be found from offline), different
// under another ADMIN_SECRET, stable under the same, 12 hex digits.
func TestKeyFingerprintIsKeyedByTheAdminSecret(t *testing.T) {
	plain := sha256.Sum256([]byte("k"))
	a, b := Auth{APIKey: "k", AdminSecret: "s"}, Auth{APIKey: "k", AdminSecret: "t"}
	fa, fb := a.KeyFingerprint("k"), b.KeyFingerprint("k")
	if !regexp.MustCompile(`^[0-9a-f]{12}$`).MatchString(fa) || fa == hex.EncodeToString(plain[:6]) || fa == fb ||
		fa != a.KeyFingerprint("k") || fa == a.KeyFingerprint("k2") {
		t.Fatalf("fingerprints %q %q (plain %x)", fa, fb, plain[:6])
	}
	// As it reaches the audit log.
	api, _ := newDLQAPI(t)
	if rec, _ := do(api.Handler(), "POST", "/admin/dlq/acknowledge", `{"ids":[1]}`, adminHeaders); rec.Code != 200 {
		t.Fatalf("acknowledge: %d %s", rec.Code, rec.Body)
	}
	var fp string
	if err := api.DB.QueryRow(`SELECT key_fingerprint FROM admin_audit`).Scan(&fp); err != nil || fp != fa {
		t.Fatalf("audited fingerprint %q %v, want %q", fp, err, fa)
	}
}

// Calls with REPORT_TOKEN are rate limited per instance: a burst, then 429
// RATE_LIMITED with Retry-After until the bucket refills; calls with the
// admin pair are not counted nor limited, nor are refused tokens.
func TestReportTokenCallsAreRateLimited(t *testing.T) {
	api := reportAPI(t, "tok")
	now := time.UnixMilli(1_750_000_000_000)
	api.Clock = func() time.Time { return now }
	h := api.Handler()
	for range 3 {
		if rec, _ := do(h, "POST", "/admin/attempts", `{}`, bearer("wrong")); rec.Code != 401 {
			t.Fatalf("wrong token: %d %s", rec.Code, rec.Body)
		}
	}
	for i := range reportBurst {
		if rec, _ := do(h, "POST", "/admin/attempts", `{}`, bearer("tok")); rec.Code != 400 {
			t.Fatalf("call %d: %d %s", i+1, rec.Code, rec.Body)
		}
	}
	rec, env := do(h, "POST", "/admin/attempts", `{}`, bearer("tok"))
	if rec.Code != 429 || env.Error == nil || env.Error.Code != "RATE_LIMITED" || rec.Header().Get("Retry-After") != "1" {
		t.Fatalf("over the burst: %d %v %s", rec.Code, rec.Header(), rec.Body)
	}
	if rec, _ := do(h, "POST", "/admin/attempts", `{}`, adminHeaders); rec.Code != 400 {
		t.Fatalf("admin pair while limited: %d %s", rec.Code, rec.Body)
	}
	now = now.Add(time.Second) // reportPerSecond more
	for i := range reportPerSecond {
		if rec, _ := do(h, "POST", "/admin/attempts", `{}`, bearer("tok")); rec.Code != 400 {
			t.Fatalf("after a second, call %d: %d %s", i+1, rec.Code, rec.Body)
		}
	}
	if rec, _ := do(h, "POST", "/admin/attempts", `{}`, bearer("tok")); rec.Code != 429 {
		t.Fatalf("after the refill: %d %s", rec.Code, rec.Body)
	}
}

// The bucket refills at its rate up to its burst, and says how long until
// the next token.
func TestRateLimitBucket(t *testing.T) {
	l := newRateLimit(2, 4)
	t0 := time.Unix(100, 0)
	for i := range 2 {
		if _, ok := l.take(t0); !ok {
			t.Fatalf("take %d refused", i)
		}
	}
	if wait, ok := l.take(t0); ok || wait != 250*time.Millisecond {
		t.Fatalf("empty: %v %v", wait, ok)
	}
	if wait, ok := l.take(t0.Add(125 * time.Millisecond)); ok || wait != 125*time.Millisecond {
		t.Fatalf("half a token: %v %v", wait, ok)
	}
	if _, ok := l.take(t0.Add(250 * time.Millisecond)); !ok {
		t.Fatal("one token after 250 ms refused")
	}
	// An hour idle refills to the burst, not beyond.
	t1 := t0.Add(time.Hour)
	for i := range 2 {
		if _, ok := l.take(t1); !ok {
			t.Fatalf("after an hour, take %d refused", i)
		}
	}
	if _, ok := l.take(t1); ok {
		t.Fatal("the bucket held more than its burst")
	}
	// A clock that steps back changes nothing.
	if _, ok := l.take(t0); ok {
		t.Fatal("a step back refilled the bucket")
	}
}

// DEV_ROUTES answer only requests addressed to a loopback host: a page
// that rebinds its own name to 127.0.0.1 gets the 404 of no route, even
// with the credentials.
func TestDevRoutesAnswerOnlyLoopbackHosts(t *testing.T) {
	api := newAPI(t)
	api.DevCron = func(_ context.Context, _ string, _ time.Time) error { return nil }
	h := api.Handler()
	for _, c := range []struct {
		host string
		code int
	}{
		{"127.0.0.1:8787", 200}, {"127.0.0.1", 200}, {"127.9.9.9:1", 200}, {"localhost:8787", 200}, {"LOCALHOST", 200},
		{"[::1]:8787", 200}, {"[::1]", 200},
		{"evil.example", 404}, {"evil.example:8787", 404}, {"localhost.evil.example", 404}, {"128.0.0.1:8787", 404},
		{"[::2]:8787", 404}, {"0.0.0.0:8787", 404}, {"", 404}, {"[fe80::1%25lo]:8787", 404},
	} {
		for _, path := range []string{"/__dev/send", "/__dev/sql", "/__dev/cron"} {
			body := map[string]string{"/__dev/send": `{"queue":"q","messages":[{"body":"x"}]}`,
				"/__dev/sql": `{"sql":"SELECT 1"}`, "/__dev/cron": `{"cron":"* * * * *"}`}[path]
			req := httptest.NewRequest("POST", path, strings.NewReader(body))
			req.Host = c.host
			for k, v := range adminHeaders {
				req.Header.Set(k, v)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			var env envelope
			_ = json.Unmarshal(rec.Body.Bytes(), &env)
			if c.code == 404 && (rec.Code != 404 || env.Error == nil || env.Error.Code != "NOT_FOUND") ||
				c.code == 200 && rec.Code == 404 {
				t.Errorf("%s at %q: %d %s", path, c.host, rec.Code, rec.Body)
			}
		}
	}
}

// gate is the root handler's Gate.
func gate(t *testing.T, h http.Handler) func(w http.ResponseWriter, r *http.Request) bool {
	t.Helper()
	g, ok := h.(interface {
		Gate(w http.ResponseWriter, r *http.Request) bool
	})
	if !ok {
		t.Fatalf("%T has no Gate", h)
	}
	return g.Gate
}

// unreadable is a body that fails the test when read.
type unreadable struct{ t *testing.T }

func (u unreadable) Read([]byte) (int, error) {
	u.t.Error("the gate read the body")
	return 0, errors.New("read")
}

// The gate answers, without reading the body, every request whose answer
// does not depend on it, with the bytes and headers ServeHTTP answers it
// with (but the request id); it lets through the others.
func TestGateRefusesBeforeTheBody(t *testing.T) {
	api := reportAPI(t, "tok")
	h := api.Handler()
	g := gate(t, h)
	reqID := regexp.MustCompile(`"requestId":"[0-9a-f-]{36}"`)
	for _, c := range []struct {
		name, method, path string
		hdr                map[string]string
		host               string
		answered           bool
	}{
		{"anonymous import", "POST", "/admin/dlq/import", nil, "", true},
		{"wrong key", "POST", "/admin/dlq/release", map[string]string{"X-API-Key": "x", "X-Admin-Secret": "s"}, "", true},
		{"no secret", "POST", "/admin/enrich", map[string]string{"X-API-Key": "k"}, "", true},
		{"anonymous report", "POST", "/admin/attempts", nil, "", true},
		{"wrong token", "POST", "/admin/attempts", bearer("x"), "", true},
		{"not bearer", "POST", "/admin/attempts", map[string]string{"Authorization": "Basic x"}, "", true},
		{"no route", "POST", "/nope", nil, "", true},
		{"wrong method", "PUT", "/admin/dlq/import", adminHeaders, "", true},
		{"unclean path", "POST", "/admin//dlq/import", adminHeaders, "", true},
		{"dev route, foreign host", "POST", "/__dev/send", adminHeaders, "evil.example", true},
		{"unknown parameter", "POST", "/admin/dlq/import?dry_run=true", adminHeaders, "", true},
		{"unknown parameter, anonymous", "POST", "/admin/dlq/import?dry_run=true", nil, "", true},
		{"unknown parameter, report token", "POST", "/admin/attempts?x=1", bearer("tok"), "", true},
		{"unknown parameter, public route", "GET", "/health?x=1", nil, "", true},
		{"unknown parameter, dev route, foreign host", "POST", "/__dev/send?x=1", adminHeaders, "evil.example", true},
		{"declared parameter", "GET", "/admin/dlq?limit=1", adminHeaders, "", false},
		{"admin pair", "POST", "/admin/dlq/import", adminHeaders, "", false},
		{"report token", "POST", "/admin/attempts", bearer("tok"), "", false},
		{"dev route, loopback", "POST", "/__dev/send", adminHeaders, "127.0.0.1:8787", false},
		{"public route", "GET", "/health", nil, "", false},
	} {
		req := httptest.NewRequest(c.method, c.path, unreadable{t})
		if c.host != "" {
			req.Host = c.host
		}
		for k, v := range c.hdr {
			req.Header.Set(k, v)
		}
		gw := httptest.NewRecorder()
		if got := g(gw, req); got != c.answered {
			t.Errorf("%s: gate answered %v", c.name, got)
			continue
		}
		if !c.answered {
			continue
		}
		sreq := httptest.NewRequest(c.method, c.path, strings.NewReader("x"))
		sreq.Host, sreq.Header = req.Host, req.Header
		sw := httptest.NewRecorder()
		h.ServeHTTP(sw, sreq)
		gb, sb := reqID.ReplaceAll(gw.Body.Bytes(), nil), reqID.ReplaceAll(sw.Body.Bytes(), nil)
		gh, sh := gw.Header().Clone(), sw.Header().Clone()
		if gh.Get("X-Request-ID") == "" || !strings.Contains(gw.Body.String(), gh.Get("X-Request-ID")) {
			t.Errorf("%s: request id %q not in %s", c.name, gh.Get("X-Request-ID"), gw.Body)
		}
		gh.Del("X-Request-ID")
		sh.Del("X-Request-ID")
		if gw.Code != sw.Code || !bytes.Equal(gb, sb) || !equalHeaders(gh, sh) {
			t.Errorf("%s: gate %d %v %s, served %d %v %s", c.name, gw.Code, gh, gb, sw.Code, sh, sb)
		}
	}
}

// The gate refuses a query string only after the credentials: a caller
// without them learns nothing of a route's parameters.
func TestGateChecksCredentialsBeforeTheQuery(t *testing.T) {
	g := gate(t, reportAPI(t, "tok").Handler())
	for _, c := range []struct {
		name, method, target string
		hdr                  map[string]string
		host                 string
		status               int
		code                 string
	}{
		{"anonymous", "POST", "/admin/dlq/import?dry_run=true", nil, "", 401, "UNAUTHORIZED"},
		{"no secret", "POST", "/admin/dlq/replay?dry_run=true", map[string]string{"X-API-Key": "k"}, "", 403, "FORBIDDEN"},
		{"wrong token", "POST", "/admin/attempts?x=1", bearer("x"), "", 401, "UNAUTHORIZED"},
		{"dev route, foreign host", "POST", "/__dev/send?x=1", adminHeaders, "evil.example", 404, "NOT_FOUND"},
		{"admin pair", "POST", "/admin/dlq/import?dry_run=true", adminHeaders, "", 400, "INVALID_REQUEST"},
		{"report token", "POST", "/admin/attempts?x=1", bearer("tok"), "", 400, "INVALID_REQUEST"},
		{"public route", "GET", "/health?x=1", nil, "", 400, "INVALID_REQUEST"},
	} {
		req := httptest.NewRequest(c.method, c.target, unreadable{t})
		if c.host != "" {
			req.Host = c.host
		}
		for k, v := range c.hdr {
			req.Header.Set(k, v)
		}
		w := httptest.NewRecorder()
		var env envelope
		if !g(w, req) || w.Code != c.status || json.Unmarshal(w.Body.Bytes(), &env) != nil || env.Error == nil || env.Error.Code != c.code {
			t.Errorf("%s: gate %d %s, want %d %s", c.name, w.Code, w.Body, c.status, c.code)
		}
	}
}

func equalHeaders(a, b http.Header) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return bytes.Equal(ja, jb)
}

var _ io.Reader = unreadable{}
