package handlers

import (
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/redrive/redrive/internal/sqlitetest"
	"github.com/redrive/redrive/queue/queuetest"
)

var discard = slog.New(slog.NewTextHandler(io.Discard, nil))

func newAPI(t *testing.T) *API {
	return &API{DB: sqlitetest.New(t), Log: discard, Auth: Auth{APIKey: "k", AdminSecret: "s"}, Version: "test",
		DevSender: &queuetest.Sender{}}
}

func do(h http.Handler, method, path, body string, hdr map[string]string) (*httptest.ResponseRecorder, envelope) {
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	if strings.HasPrefix(path, "/__dev/") {
		req.Host = "127.0.0.1:8787" // DEV_ROUTES answer only a loopback host (loopbackHost)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	checkContract(req, body, rec)
	var env envelope
	_ = json.Unmarshal(rec.Body.Bytes(), &env)
	return rec, env
}

func TestHealth(t *testing.T) {
	api := newAPI(t)
	rec, env := do(api.Handler(), "GET", "/health", "", adminHeaders)
	if rec.Code != 200 || !env.Success || env.RequestID == "" || env.RequestID != rec.Header().Get("X-Request-ID") ||
		!strings.Contains(rec.Body.String(), `"d1":{"ok":true,`) || !strings.Contains(rec.Body.String(), `"status":"ok"`) {
		t.Fatalf("health: %d %s", rec.Code, rec.Body)
	}
	api.DB.Close()
	rec, env = do(api.Handler(), "GET", "/health", "", adminHeaders)
	if rec.Code != 503 || env.Success || env.Error == nil || env.Error.Code != "D1_UNAVAILABLE" ||
		!strings.Contains(rec.Body.String(), `"d1":{"ok":false,`) || !strings.Contains(rec.Body.String(), `"error":"d1 query failed"`) ||
		!strings.Contains(rec.Body.String(), `"status":"degraded"`) {
		t.Fatalf("health with D1 down: %d %s", rec.Code, rec.Body)
	}
}

func TestAdminAuth(t *testing.T) {
	h := newAPI(t).Handler()
	body := `{"queue":"q","messages":[{"body":"x"}]}`
	cases := []struct {
		name string
		hdr  map[string]string
		code int
		err  string
	}{
		{"no headers", nil, 401, "UNAUTHORIZED"},
		{"wrong key", map[string]string{"X-API-Key": "x", "X-Admin-Secret": "s"}, 401, "UNAUTHORIZED"},
		{"no secret", map[string]string{"X-API-Key": "k"}, 403, "FORBIDDEN"},
		{"wrong secret", map[string]string{"X-API-Key": "k", "X-Admin-Secret": "k"}, 403, "FORBIDDEN"},
		{"both right", map[string]string{"X-API-Key": "k", "X-Admin-Secret": "s"}, 200, ""},
	}
	for _, c := range cases {
		rec, env := do(h, "POST", "/__dev/send", body, c.hdr)
		if rec.Code != c.code || (c.err != "" && (env.Error == nil || env.Error.Code != c.err)) {
			t.Errorf("%s: got %d %s", c.name, rec.Code, rec.Body)
		}
	}
	unset := &API{DB: sqlitetest.New(t), Log: discard, DevSender: &queuetest.Sender{}}
	rec, _ := do(unset.Handler(), "POST", "/__dev/send", body, map[string]string{"X-API-Key": "", "X-Admin-Secret": ""})
	if rec.Code != 503 {
		t.Errorf("unset credentials must fail closed, got %d", rec.Code)
	}
}

func TestUnknownRoutesAndMethods(t *testing.T) {
	h := newAPI(t).Handler()
	rec, env := do(h, "GET", "/nope", "", nil)
	if rec.Code != 404 || env.Error == nil || env.Error.Code != "NOT_FOUND" || env.RequestID == "" {
		t.Errorf("404: %d %s", rec.Code, rec.Body)
	}
	rec, env = do(h, "DELETE", "/health", "", nil)
	if rec.Code != 405 || env.Error == nil || env.Error.Code != "METHOD_NOT_ALLOWED" || rec.Header().Get("Allow") == "" {
		t.Errorf("405: %d %s %v", rec.Code, rec.Body, rec.Header())
	}
}

func TestDecodeJSONRejectsBadBodies(t *testing.T) {
	h := newAPI(t).Handler()
	auth := map[string]string{"X-API-Key": "k", "X-Admin-Secret": "s"}
	for name, body := range map[string]string{
		"empty":    "",
		"null":     "null",
		"array":    "[1]",
		"not json": "{nope",
		"unknown":  `{"queue":"q","messages":[{"body":"x"}],"extra":1}`,
		"trailing": `{"queue":"q","messages":[{"body":"x"}]} {}`,
		"types":    `{"queue":1}`,
	} {
		rec, env := do(h, "POST", "/__dev/send", body, auth)
		if rec.Code != 400 || env.Error == nil || env.Error.Code != "INVALID_REQUEST" {
			t.Errorf("%s: got %d %s", name, rec.Code, rec.Body)
		}
	}
	big := `{"queue":"` + strings.Repeat("a", MaxBodyBytes) + `"}`
	if rec, env := do(h, "POST", "/__dev/send", big, auth); rec.Code != 413 || env.Error.Code != "PAYLOAD_TOO_LARGE" {
		t.Errorf("big body: %d", rec.Code)
	}
}

func TestInternalErrorIsEnvelope500(t *testing.T) {
	api := newAPI(t)
	api.DevSender = &queuetest.Sender{Err: errors.New("queue down")}
	rec, env := do(api.Handler(), "POST", "/__dev/send", `{"queue":"q","messages":[{"body":"x"}]}`, map[string]string{"X-API-Key": "k", "X-Admin-Secret": "s"})
	if rec.Code != 500 || env.Error == nil || env.Error.Code != "INTERNAL_ERROR" || strings.Contains(rec.Body.String(), "queue down") {
		t.Fatalf("got %d %s", rec.Code, rec.Body)
	}
}

// A handler that panics (here: health with no database) answers the 500
// envelope, and the handler keeps serving the next request.
func TestPanicIsEnvelope500(t *testing.T) {
	api := &API{Log: discard, Version: "test"}
	h := api.Handler()
	for range 2 {
		rec, env := do(h, "GET", "/health", "", nil)
		if rec.Code != 500 || env.Success || env.Error == nil || env.Error.Code != "INTERNAL_ERROR" || env.RequestID == "" {
			t.Fatalf("got %d %s", rec.Code, rec.Body)
		}
	}
}
