package cli

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
)

// The worker never redirects, so the CLI follows no redirect: a 3xx is an
// error naming where it pointed, and the admin pair never reaches that
// host (Go's client would forward X-API-Key and X-Admin-Secret to it).
func TestFollowsNoRedirect(t *testing.T) {
	var elsewhere atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		elsewhere.Add(1)
		w.Write([]byte(`{"success":true,"requestId":"x","data":{}}`))
	}))
	defer other.Close()
	for _, code := range []int{301, 302, 303, 307, 308} {
		worker := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, other.URL+r.URL.Path, code)
		}))
		env := map[string]string{"REDRIVE_URL": worker.URL, "REDRIVE_API_KEY": "k", "REDRIVE_ADMIN_SECRET": "s"}
		for _, args := range [][]string{{"stats"}, {"health"}} {
			exit, _, errOut := run(t, env, "", args...)
			host := strings.TrimPrefix(other.URL, "http://")
			if exit != ExitFailure || !strings.Contains(errOut, "never redirects") || !strings.Contains(errOut, host) {
				t.Errorf("%d %v: exit %d, stderr %s", code, args, exit, errOut)
			}
		}
		worker.Close()
	}
	if n := elsewhere.Load(); n != 0 {
		t.Fatalf("the redirect's target got %d requests", n)
	}
}

// doerFunc is an HttpRequestDoer.
type doerFunc func(*http.Request) (*http.Response, error)

func (f doerFunc) Do(r *http.Request) (*http.Response, error) { return f(r) }

// The admin pair goes only over https, or over http to this machine: a
// plain http:// URL to any other host is refused before any connection.
func TestRefusesPlainHTTPExceptToLoopback(t *testing.T) {
	for raw, ok := range map[string]bool{
		"http://redrive.example.workers.dev":  false,
		"http://10.0.0.7:8787":                false,
		"http://127.0.0.1.example.com":        false,
		"ftp://redrive.example":               false,
		"redrive.example.workers.dev":         false,
		"https://redrive.example.workers.dev": true,
		"http://127.0.0.1:8787":               true,
		"http://localhost:8787":               true,
		"http://[::1]:8787":                   true,
	} {
		var sent []string
		doer := doerFunc(func(r *http.Request) (*http.Response, error) {
			sent = append(sent, r.URL.String())
			return nil, &url.Error{Op: "Get", URL: r.URL.String(), Err: errors.New("no network in this test")}
		})
		for _, args := range [][]string{{"stats"}, {"health"}} {
			sent = nil
			var out, errOut bytes.Buffer
			env := map[string]string{"REDRIVE_URL": raw, "REDRIVE_API_KEY": "k", "REDRIVE_ADMIN_SECRET": "s"}
			exit := Main(context.Background(), args, Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errOut, HTTP: doer,
				Getenv: func(k string) string { return env[k] }})
			if ok {
				if len(sent) == 0 || exit != ExitFailure {
					t.Errorf("%s %v: exit %d, requests %v: want it tried", raw, args, exit, sent)
				}
				continue
			}
			if len(sent) != 0 || exit != ExitAuth || !strings.Contains(errOut.String(), "https://") {
				t.Errorf("%s %v: exit %d, requests %v, stderr %s: want refused before any request", raw, args, exit, sent, errOut.String())
			}
		}
	}
}
