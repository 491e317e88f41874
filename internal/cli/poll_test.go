package cli

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// scripted answers each request with the next of its answers (the last one
// repeats): an HTTP status and a body, or status 0 to drop the connection.
type scripted struct {
	mu      sync.Mutex
	answers []scriptedAnswer
	calls   int
}

type scriptedAnswer struct {
	status int
	body   string
}

func (s *scripted) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	a := s.answers[min(s.calls, len(s.answers)-1)]
	s.calls++
	s.mu.Unlock()
	if a.status == 0 {
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			conn.Close()
		}
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(a.status)
	fmt.Fprint(w, a.body)
}

func (s *scripted) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls
}

const (
	emptyPage  = `{"success":true,"requestId":"x","data":{"messages":[],"has_more":false,"next_cursor":null}}`
	oneRowPage = `{"success":true,"requestId":"x","data":{"messages":[{"id":7,"message_id":"m7","beer_id":"b7","status":"pending","failed_at":%d,"failure_reason":"boom","source_queue":"beer-enrichment"}],"has_more":false,"next_cursor":null}}`
	d1Failed   = `{"success":false,"requestId":"r1","error":{"code":"INTERNAL_ERROR","message":"internal error; see logs for request id"}}`
	busy       = `{"success":false,"requestId":"r2","error":{"code":"RATE_LIMITED","message":"slow down"}}`
	badFilter  = `{"success":false,"requestId":"r3","error":{"code":"INVALID_FILTER","message":"bad"}}`
	notConf    = `{"success":false,"requestId":"r4","error":{"code":"NOT_CONFIGURED","message":"API_KEY and ADMIN_SECRET must be set"}}`
)

func runPoll(t *testing.T, srv *httptest.Server, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	code := Main(ctx, args, Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errOut, Poll: time.Millisecond,
		Getenv: func(k string) string {
			return map[string]string{"REDRIVE_URL": srv.URL, "REDRIVE_API_KEY": "k", "REDRIVE_ADMIN_SECRET": "s"}[k]
		}})
	return code, out.String(), errOut.String()
}

func TestTailTriesAgainThroughAFailingWorker(t *testing.T) {
	failedAt := time.Now().Add(time.Hour).UnixMilli()
	s := &scripted{answers: []scriptedAnswer{
		{200, emptyPage},
		{500, d1Failed},
		{0, ""}, // a dropped connection: Go's transport tries a reused one again by itself,
		{0, ""}, // then reports this second drop, on a new connection
		{429, busy},
		{200, fmt.Sprintf(oneRowPage, failedAt)},
	}}
	srv := httptest.NewServer(s)
	defer srv.Close()
	code, out, errOut := runPoll(t, srv, "tail", "--count", "1", "--json")
	if code != ExitOK || !strings.Contains(out, `"message_id":"m7"`) {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if n := strings.Count(errOut, "trying again in"); n != 3 {
		t.Fatalf("%d retries reported, want 3: %s", n, errOut)
	}
	for _, want := range []string{"INTERNAL_ERROR (HTTP 500)", "RATE_LIMITED (HTTP 429)", "EOF", "trying again in 1ms", "trying again in 2ms", "trying again in 4ms",
		"the worker answers again after 3 failed tries"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q: %s", want, errOut)
		}
	}
	if s.count() != 6 {
		t.Fatalf("%d requests, want 6", s.count())
	}
}

func TestTailEndsOnAnErrorThatWillNotPass(t *testing.T) {
	for name, answers := range map[string][]scriptedAnswer{
		"a 5xx before any answer": {{500, d1Failed}, {200, emptyPage}},
		"a 400 after an answer":   {{200, emptyPage}, {400, badFilter}, {200, emptyPage}},
		"NOT_CONFIGURED":          {{200, emptyPage}, {503, notConf}, {200, emptyPage}},
	} {
		t.Run(name, func(t *testing.T) {
			s := &scripted{answers: answers}
			srv := httptest.NewServer(s)
			defer srv.Close()
			code, _, errOut := runPoll(t, srv, "tail")
			if code == ExitOK || strings.Contains(errOut, "trying again") {
				t.Fatalf("exit %d, stderr %q", code, errOut)
			}
			if s.count() != len(answers)-1 {
				t.Fatalf("%d requests, want %d", s.count(), len(answers)-1)
			}
		})
	}
}

func TestTailBeforeAnyAnswerEndsOnARefusedConnection(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &httptest.Server{URL: "http://" + l.Addr().String()}
	l.Close() // nothing listens there now
	code, _, errOut := runPoll(t, srv, "tail")
	if code == ExitOK || strings.Contains(errOut, "trying again") {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
}

func TestTasksWatchTriesAgainThroughAFailingWorker(t *testing.T) {
	task := `{"success":true,"requestId":"x","data":{"id":1,"state":%q,"rate_per_minute":60,"matched":2,"sent":%d,"send_failed":0,"remaining":%d}}`
	s := &scripted{answers: []scriptedAnswer{
		{200, fmt.Sprintf(task, "running", 1, 1)},
		{503, d1Failed},
		{502, "bad gateway"},
		{200, fmt.Sprintf(task, "done", 2, 0)},
	}}
	srv := httptest.NewServer(s)
	defer srv.Close()
	code, _, errOut := runPoll(t, srv, "tasks", "watch", "1", "--json")
	if code != ExitOK || s.count() != 4 {
		t.Fatalf("exit %d after %d requests, stderr %q", code, s.count(), errOut)
	}
	if n := strings.Count(errOut, "trying again in"); n != 2 || !strings.Contains(errOut, "answers again after 2 failed tries") {
		t.Fatalf("stderr %q", errOut)
	}
}

func TestPollWaitDoublesUpToAMinute(t *testing.T) {
	var waits []string
	for n := 1; n <= 8; n++ {
		waits = append(waits, pollWait(2*time.Second, n).String())
	}
	if got := strings.Join(waits, " "); got != "2s 4s 8s 16s 32s 1m0s 1m0s 1m0s" {
		t.Fatalf("waits %s", got)
	}
	if got := pollWait(90*time.Second, 1); got != time.Minute {
		t.Fatalf("an interval past a minute waits %s", got)
	}
}
