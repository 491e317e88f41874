package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func run(t *testing.T, env map[string]string, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := Main(context.Background(), args, Env{Stdin: strings.NewReader(stdin), Stdout: &out, Stderr: &errOut,
		Getenv: func(k string) string { return env[k] }})
	return code, out.String(), errOut.String()
}

// fakeAPI answers stats with the credentials it saw.
func fakeAPI(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.Header.Get("X-API-Key") != "key" || r.Header.Get("X-Admin-Secret") != "secret" {
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprint(w, `{"success":false,"error":{"code":"UNAUTHORIZED","message":"missing or invalid X-API-Key"},"requestId":"x"}`)
			return
		}
		fmt.Fprint(w, `{"success":true,"requestId":"x","data":{"by_status":{"pending":7},"last_24h":{}}}`)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestCredentialsFromEnvironmentOrAPrivateProfile(t *testing.T) {
	srv := fakeAPI(t)
	dir := t.TempDir()
	conf := filepath.Join(dir, "config.json")
	write := func(mode os.FileMode, body string) {
		if err := os.WriteFile(conf, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(conf, mode); err != nil {
			t.Fatal(err)
		}
	}
	profiles := fmt.Sprintf(`{"default":{"url":%q,"api_key":"key","admin_secret":"secret"},"other":{"url":%q,"api_key":"wrong","admin_secret":"secret"}}`, srv.URL, srv.URL)
	write(0o600, profiles)
	env := map[string]string{"REDRIVE_CONFIG": conf}

	code, out, _ := run(t, env, "", "stats", "--json")
	if code != ExitOK || !strings.Contains(out, `"pending": 7`) {
		t.Fatalf("from the default profile: %d %s", code, out)
	}
	if code, _, _ := run(t, env, "", "stats", "--profile", "other"); code != ExitAuth {
		t.Fatalf("a profile with a wrong key: exit %d, want %d", code, ExitAuth)
	}
	// The environment wins field by field.
	env["REDRIVE_API_KEY"] = "key"
	if code, _, errOut := run(t, env, "", "stats", "--profile", "other"); code != ExitOK {
		t.Fatalf("REDRIVE_API_KEY over the profile's: exit %d %s", code, errOut)
	}
	if code, _, errOut := run(t, env, "", "stats", "--profile", "missing"); code != ExitAuth || !strings.Contains(errOut, `no profile "missing"`) {
		t.Fatalf("an unknown profile: exit %d %s", code, errOut)
	}
	for _, mode := range []os.FileMode{0o640, 0o604, 0o644} {
		write(mode, profiles)
		code, _, errOut := run(t, map[string]string{"REDRIVE_CONFIG": conf}, "", "stats")
		if code != ExitAuth || !strings.Contains(errOut, "chmod 600") {
			t.Fatalf("mode %04o: exit %d %s", mode, code, errOut)
		}
	}
	write(0o400, profiles)
	if code, _, _ := run(t, map[string]string{"REDRIVE_CONFIG": conf}, "", "stats"); code != ExitOK {
		t.Fatalf("mode 0400: exit %d", code)
	}
	// Nothing at all.
	if code, _, errOut := run(t, map[string]string{"REDRIVE_CONFIG": filepath.Join(dir, "none.json")}, "", "stats"); code != ExitAuth || !strings.Contains(errOut, "REDRIVE_URL") {
		t.Fatalf("no credentials: exit %d %s", code, errOut)
	}
}

func TestCredentialsAreNotFlags(t *testing.T) {
	for _, flag := range []string{"--api-key", "--admin-secret", "--url", "--key"} {
		if code, _, _ := run(t, nil, "", "stats", flag, "x"); code != ExitUsage {
			t.Errorf("%s: exit %d, want usage", flag, code)
		}
	}
}

func TestUsageErrors(t *testing.T) {
	env := map[string]string{"REDRIVE_URL": "http://127.0.0.1:1", "REDRIVE_API_KEY": "k", "REDRIVE_ADMIN_SECRET": "s"}
	for _, args := range [][]string{
		{"nope"}, {"ls", "x"}, {"show"}, {"show", "0"}, {"show", "-3"}, {"replay"}, {"replay", "1", "--q", "x"},
		{"ack", "1", "--failed-after", "yesterday"}, {"edit", "1"}, {"tasks", "create", "--q", "x"}, {"tasks", "watch"},
		{"export", "--format", "xml"}, {"replay", "--failed-before", "soon"}, {"tasks", "bogus"},
	} {
		if code, _, errOut := run(t, env, "", args...); code != ExitUsage {
			t.Errorf("%v: exit %d, want %d (%s)", args, code, ExitUsage, errOut)
		}
	}
}

func TestDeclinedConfirmationSendsNothing(t *testing.T) {
	var posts []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var b bytes.Buffer
		b.ReadFrom(r.Body)
		posts = append(posts, b.String())
		fmt.Fprint(w, `{"success":true,"requestId":"x","data":{"dry_run":true,"matched_count":3,"not_replayable_count":0,"sample":[],"by_failure_reason":[{"failure_reason":"boom","count":3}]}}`)
	}))
	defer srv.Close()
	env := map[string]string{"REDRIVE_URL": srv.URL, "REDRIVE_API_KEY": "k", "REDRIVE_ADMIN_SECRET": "s"}
	for _, answer := range []string{"", "n\n", "no\n", "maybe\n"} {
		posts = nil
		code, _, errOut := run(t, env, answer, "replay", "--q", "x")
		if code != ExitFailure || len(posts) != 1 || !strings.Contains(posts[0], `"dry_run":true`) {
			t.Fatalf("answer %q: exit %d, requests %v", answer, code, posts)
		}
		if !strings.Contains(errOut, "3 pending rows would be replayed") || !strings.Contains(errOut, "boom") || !strings.Contains(errOut, "[y/N]") {
			t.Fatalf("answer %q: stderr %s", answer, errOut)
		}
	}
}

func TestCellsAreOneLineOfText(t *testing.T) {
	for in, want := range map[string]string{
		"a\nb\rc\td":            "a b c d",
		"\x1b[31mred":           " [31mred",
		"rtl\u202eevil":         "rtl evil",
		"":                      "-",
		strings.Repeat("x", 70): strings.Repeat("x", 59) + "…",
	} {
		if got := cell(in); got != want {
			t.Errorf("cell(%q) = %q, want %q", in, got, want)
		}
	}
	if got := cell((*string)(nil)); got != "-" {
		t.Errorf("nil: %q", got)
	}
}

func TestProgressBar(t *testing.T) {
	for _, c := range []struct {
		k    task
		want string
	}{
		{task{Matched: 100, Sent: 50, State: "running"}, "[###############...............] 50/100  running"},
		{task{Matched: 20, Sent: 19, SendFailed: 1, State: "done"}, "[##############################] 20/20  done"},
		{task{Matched: 0, State: "done"}, "[..............................] 0/0  done"},
	} {
		if got := progress(c.k); !strings.HasPrefix(got, c.want) {
			t.Errorf("progress(%+v) = %q, want %q...", c.k, got, c.want)
		}
	}
}

// TestFollowStopsAtTheLastPage: without --all one page; with it, every page
// until has_more is false, each request at the previous page's cursor, the
// result carrying the last cursor; an error stops the walk.
func TestFollowStopsAtTheLastPage(t *testing.T) {
	pages := []page{
		{Messages: []json.RawMessage{json.RawMessage(`1`)}, TotalCount: 3, cursorPage: cursorPage{NextCursor: opt("c1"), HasMore: true}},
		{Messages: []json.RawMessage{json.RawMessage(`2`)}, cursorPage: cursorPage{NextCursor: opt("c2"), HasMore: true}},
		{Messages: []json.RawMessage{json.RawMessage(`3`)}},
	}
	walk := func(all bool, failAt int) (page, []string, error) {
		var cursors []string
		cur := "start"
		i := 0
		out, err := follow(all, func() (page, error) {
			cursors = append(cursors, cur)
			if i == failAt {
				return page{}, errors.New("boom")
			}
			i++
			return pages[i-1], nil
		}, func(next *string) { cur = *next })
		return out, cursors, err
	}
	out, cursors, err := walk(false, -1)
	if err != nil || len(out.Messages) != 1 || !out.HasMore || *out.NextCursor != "c1" || len(cursors) != 1 {
		t.Fatalf("one page: %+v %v %v", out, cursors, err)
	}
	out, cursors, err = walk(true, -1)
	if err != nil || len(out.Messages) != 3 || out.HasMore || out.NextCursor != nil || out.TotalCount != 3 ||
		strings.Join(cursors, ",") != "start,c1,c2" {
		t.Fatalf("all pages: %+v %v %v", out, cursors, err)
	}
	if _, cursors, err = walk(true, 1); err == nil || len(cursors) != 2 {
		t.Fatalf("an error on page 2: %v after %v", err, cursors)
	}
}

// REDRIVE_TOKEN alone runs a command on a named key: the request carries
// Authorization: Bearer and neither secret of the pair; with the pair set
// too, the key wins.
func TestCommandsRunOnANamedKey(t *testing.T) {
	var got []http.Header
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.Header.Clone())
		fmt.Fprint(w, `{"success":true,"requestId":"x","data":{"messages":[],"next_cursor":null,"has_more":false,"total_count":0}}`)
	}))
	defer srv.Close()
	token := "rdk_0123456789abcdef_" + strings.Repeat("A", 43)
	for _, env := range []map[string]string{
		{"REDRIVE_URL": srv.URL, "REDRIVE_TOKEN": token},
		{"REDRIVE_URL": srv.URL, "REDRIVE_TOKEN": token, "REDRIVE_API_KEY": "k", "REDRIVE_ADMIN_SECRET": "s"},
	} {
		got = nil
		if code, out, errOut := run(t, env, "", "ls", "--json"); code != 0 || len(got) != 1 {
			t.Fatalf("ls on a key: exit %d %s %s", code, out, errOut)
		}
		if h := got[0]; h.Get("Authorization") != "Bearer "+token || h.Get("X-API-Key") != "" || h.Get("X-Admin-Secret") != "" {
			t.Fatalf("headers %v", h)
		}
	}
	if code, _, errOut := run(t, map[string]string{"REDRIVE_URL": srv.URL, "REDRIVE_API_KEY": "k"}, "", "ls"); code == 0 || !strings.Contains(errOut, "REDRIVE_TOKEN") {
		t.Fatalf("half a pair: exit %d %s", code, errOut)
	}
}

// keys create prints the key and its token once, keys ls the keys without
// one, keys revoke the revoked key; each is the API's call for it.
func TestKeysCommands(t *testing.T) {
	var calls []string
	key := `{"id":"0123456789abcdef","name":"bot","role":"viewer","created_by":"admin","created_at":1800000000000,"expires_at":null,"revoked_at":null,"revoked_by":null,"last_used_at":null`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var b bytes.Buffer
		b.ReadFrom(r.Body)
		calls = append(calls, r.Method+" "+r.URL.Path+" "+b.String())
		switch r.URL.Path {
		case "/admin/keys":
			if r.Method == "POST" {
				w.WriteHeader(201)
				fmt.Fprint(w, `{"success":true,"requestId":"x","data":`+key+`,"token":"rdk_0123456789abcdef_`+strings.Repeat("A", 43)+`"}}`)
				return
			}
			fmt.Fprint(w, `{"success":true,"requestId":"x","data":{"keys":[`+key+`}]}}`)
		default:
			fmt.Fprint(w, `{"success":true,"requestId":"x","data":`+strings.Replace(key, `"revoked_at":null`, `"revoked_at":1800000001000`, 1)+`}}`)
		}
	}))
	defer srv.Close()
	env := map[string]string{"REDRIVE_URL": srv.URL, "REDRIVE_API_KEY": "k", "REDRIVE_ADMIN_SECRET": "s"}
	code, out, errOut := run(t, env, "", "keys", "create", "--name", "bot", "--role", "viewer")
	if code != 0 || !strings.Contains(out, "rdk_0123456789abcdef_") || !strings.Contains(out, "bot") || len(calls) != 1 ||
		calls[0] != `POST /admin/keys {"name":"bot","role":"viewer"}` {
		t.Fatalf("create: exit %d %s %s %v", code, out, errOut, calls)
	}
	code, out, _ = run(t, env, "", "keys", "ls")
	if code != 0 || strings.Contains(out, "rdk_") || !strings.Contains(out, "0123456789abcdef") || calls[1] != "GET /admin/keys " {
		t.Fatalf("ls: exit %d %s %v", code, out, calls)
	}
	code, out, _ = run(t, env, "", "keys", "revoke", "0123456789abcdef")
	if code != 0 || !strings.Contains(out, "2027-01-15") || !strings.HasPrefix(calls[2], "POST /admin/keys/0123456789abcdef/revoke") {
		t.Fatalf("revoke: exit %d %s %v", code, out, calls)
	}
}

// whoami prints the credential's principal, role, pipelines and
// permissions; keys create --pipelines sends them.
func TestWhoamiAndScopedKeys(t *testing.T) {
	var calls []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var b bytes.Buffer
		b.ReadFrom(r.Body)
		calls = append(calls, r.Method+" "+r.URL.Path+" "+b.String()+" "+r.Header.Get("Authorization"))
		if r.URL.Path == "/admin/whoami" {
			fmt.Fprint(w, `{"success":true,"requestId":"x","data":{"principal":"key:orders-bot","role":"operator","pipelines":["orders"],"permissions":["self","read","replay"]}}`)
			return
		}
		w.WriteHeader(201)
		fmt.Fprint(w, `{"success":true,"requestId":"x","data":{"id":"0123456789abcdef","name":"o","role":"operator","pipelines":["orders","tickets"],"created_by":"admin","created_at":1800000000000,"expires_at":null,"revoked_at":null,"revoked_by":null,"last_used_at":null,"token":"rdk_0123456789abcdef_`+strings.Repeat("A", 43)+`"}}`)
	}))
	defer srv.Close()
	token := "rdk_0123456789abcdef_" + strings.Repeat("B", 43)
	code, out, errOut := run(t, map[string]string{"REDRIVE_URL": srv.URL, "REDRIVE_TOKEN": token}, "", "whoami")
	if code != 0 || !strings.Contains(out, "key:orders-bot") || !strings.Contains(out, "orders") || !strings.Contains(out, "self read replay") ||
		calls[0] != "GET /admin/whoami  Bearer "+token {
		t.Fatalf("whoami: exit %d %q %s %v", code, out, errOut, calls)
	}
	env := map[string]string{"REDRIVE_URL": srv.URL, "REDRIVE_API_KEY": "k", "REDRIVE_ADMIN_SECRET": "s"}
	code, out, errOut = run(t, env, "", "keys", "create", "--name", "o", "--role", "operator", "--pipelines", "orders,tickets")
	if code != 0 || !strings.Contains(out, "orders,tickets") || calls[1] != `POST /admin/keys {"name":"o","pipelines":["orders","tickets"],"role":"operator"} ` {
		t.Fatalf("create: exit %d %q %s %v", code, out, errOut, calls)
	}
}

// groups ack|resolve|ignore|snooze|open send the group's status change
// with the owner and note given; snooze needs --for.
func TestGroupStatusCommands(t *testing.T) {
	var calls []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var b bytes.Buffer
		b.ReadFrom(r.Body)
		calls = append(calls, r.Method+" "+r.URL.Path+" "+b.String())
		fmt.Fprint(w, `{"success":true,"requestId":"x","data":{"incident":{"signature":"3c0f9a2b7d1e4c55","status":"acknowledged",`+
			`"occurrence":2,"since":1800000000000,"resolved_at":null,"snoozed_until":null,"owner":"alice","note":null},"event_id":"evt_0123456789abcdef01234567"}}`)
	}))
	defer srv.Close()
	env := map[string]string{"REDRIVE_URL": srv.URL, "REDRIVE_API_KEY": "k", "REDRIVE_ADMIN_SECRET": "s"}
	code, out, errOut := run(t, env, "", "groups", "ack", "3c0f9a2b7d1e4c55", "--owner", "alice")
	if code != 0 || !strings.Contains(out, "acknowledged") || !strings.Contains(out, "evt_0123456789abcdef01234567") || len(calls) != 1 ||
		calls[0] != `POST /admin/dlq/groups/3c0f9a2b7d1e4c55/status {"owner":"alice","status":"acknowledged"}` {
		t.Fatalf("ack: exit %d %s %s %v", code, out, errOut, calls)
	}
	if code, _, _ := run(t, env, "", "groups", "snooze", "3c0f9a2b7d1e4c55"); code != 2 || len(calls) != 1 {
		t.Fatalf("snooze without --for: exit %d, %d calls", code, len(calls))
	}
	code, _, _ = run(t, env, "", "groups", "snooze", "3c0f9a2b7d1e4c55", "--for", "2h")
	if code != 0 || len(calls) != 2 || !strings.Contains(calls[1], `"status":"snoozed","until":`) {
		t.Fatalf("snooze: exit %d %v", code, calls)
	}
	code, _, _ = run(t, env, "", "groups", "resolve", "3c0f9a2b7d1e4c55", "--note", "")
	if code != 0 || calls[2] != `POST /admin/dlq/groups/3c0f9a2b7d1e4c55/status {"note":"","status":"resolved"}` {
		t.Fatalf("resolve: exit %d %v", code, calls)
	}
}
