//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/redrive/redrive/internal/cli"
)

// The redrive CLI (internal/cli, cmd/redrive) end to end: each command runs
// in-process against the shared worker, its requests and responses go
// through the harness's contract-checking client, its --json output is
// checked against the document's schema of what it prints, and its exit
// code is checked.

// cliResult is one run of the CLI.
type cliResult struct {
	code           int
	stdout, stderr string
}

// syncBuffer is a bytes.Buffer safe to read while the CLI writes it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// cliEnv is the environment of a run: the worker's URL and credentials.
func cliEnv(w *Worker, extra map[string]string) map[string]string {
	env := map[string]string{"REDRIVE_URL": w.URL, "REDRIVE_API_KEY": TestAPIKey, "REDRIVE_ADMIN_SECRET": TestAdminSecret,
		"REDRIVE_CONFIG": filepath.Join(os.TempDir(), "redrive-e2e-no-such-config.json")}
	for k, v := range extra {
		env[k] = v
	}
	return env
}

// runCLI runs the CLI with args, stdin and env; every exchange must match
// the document.
func runCLI(t *testing.T, ctx context.Context, env map[string]string, stdin string, args ...string) cliResult {
	t.Helper()
	var out, errOut syncBuffer
	doer := doerFunc(func(req *http.Request) (*http.Response, error) {
		req, ex := withExchange(req)
		resp, err := client.Do(req)
		if ex.Mismatch != nil {
			t.Errorf("redrive %s: %v", strings.Join(args, " "), ex.Mismatch)
		}
		return resp, err
	})
	code := cli.Main(ctx, args, cli.Env{Stdin: strings.NewReader(stdin), Stdout: &out, Stderr: &errOut,
		Getenv: func(k string) string { return env[k] }, HTTP: doer, Poll: 200 * time.Millisecond})
	return cliResult{code: code, stdout: out.String(), stderr: errOut.String()}
}

// wantCode fails the test unless the run exited with code.
func (r cliResult) wantCode(t *testing.T, code int, what string) cliResult {
	t.Helper()
	if r.code != code {
		t.Fatalf("%s: exit %d, want %d\nstdout: %.2000s\nstderr: %.2000s", what, r.code, code, r.stdout, r.stderr)
	}
	return r
}

// checkOutput checks the CLI's --json output as the data of a 200 answer of
// the operation method target (reqBody: a request it accepts).
func checkOutput(t *testing.T, method, target, reqBody, out string) {
	t.Helper()
	if contract.v == nil {
		t.Fatal("the contract validator is not loaded")
	}
	id := uuid.NewString()
	body := fmt.Sprintf(`{"success":true,"requestId":%q,"data":%s}`, id, out)
	checkAnswer(t, method, target, reqBody, "application/json", []byte(body))
}

func checkAnswer(t *testing.T, method, target, reqBody, contentType string, body []byte) {
	t.Helper()
	req := httptest.NewRequest(method, "http://worker"+target, strings.NewReader(reqBody))
	if reqBody != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range AdminHeaders() {
		req.Header.Set(k, v)
	}
	h := http.Header{"Content-Type": {contentType}, "X-Request-Id": {uuid.NewString()}}
	if contentType == "application/x-ndjson" {
		h.Set("X-Export-Rows", fmt.Sprint(bytes.Count(body, []byte("\n"))))
	}
	if err := contract.v.Check(req, []byte(reqBody), http.StatusOK, h, body); err != nil {
		t.Errorf("--json output of %s %s does not match the document: %v\n%.1000s", method, target, err, body)
	}
}

func TestCLIReadCommands(t *testing.T) {
	w := shared
	ctx := context.Background()
	prefix := newPrefix("cliread")
	source := prefix + "-queue"
	base := time.Now().Add(-time.Hour).UnixMilli()
	w.Exec(t, seedSQL(prefix, 120, 1, base, source))
	defer w.Exec(t, fmt.Sprintf(`DELETE FROM dlq_messages WHERE source_queue = '%s'`, source))
	ids := ownIDs(t, w, prefix)
	env := cliEnv(w, nil)

	// ls: every page with --all.
	r := runCLI(t, ctx, env, "", "ls", "--source-queue", source, "--status", "all", "--limit", "50", "--all", "--json").wantCode(t, 0, "ls --all")
	checkOutput(t, "GET", "/admin/dlq", "", r.stdout)
	var pg struct {
		Messages []struct {
			ID int64 `json:"id"`
		} `json:"messages"`
		HasMore bool `json:"has_more"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &pg); err != nil || len(pg.Messages) != 120 || pg.HasMore {
		t.Fatalf("ls --all: %d rows, has_more %v, %v", len(pg.Messages), pg.HasMore, err)
	}
	r = runCLI(t, ctx, env, "", "ls", "--source-queue", source, "--q", prefix+" reason 1", "--failed-after", fmt.Sprint(base-60)).wantCode(t, 0, "ls table")
	if lines := strings.Split(strings.TrimSpace(r.stdout), "\n"); len(lines) != 16 || !strings.HasPrefix(lines[0], "ID") {
		t.Fatalf("ls table: %d lines (want a header and 15 rows)\n%s", len(lines), r.stdout)
	}

	// show: the row with its history and audit.
	r = runCLI(t, ctx, env, "", "show", fmt.Sprint(ids[0]), "--json").wantCode(t, 0, "show")
	checkOutput(t, "GET", fmt.Sprintf("/admin/dlq/%d", ids[0]), "", r.stdout)
	r = runCLI(t, ctx, env, "", "show", fmt.Sprint(ids[0])).wantCode(t, 0, "show table")
	for _, want := range []string{prefix + "-b-0", "HISTORY", "AUDIT"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("show: no %q in\n%s", want, r.stdout)
		}
	}

	for _, c := range []struct {
		args   []string
		target string
	}{
		{[]string{"stats"}, "/admin/dlq/stats"},
		{[]string{"groups", "--limit", "5"}, "/admin/dlq/groups"},
		{[]string{"audit", "--limit", "5"}, "/admin/audit"},
		{[]string{"tasks", "ls"}, "/admin/dlq/replay-tasks"},
	} {
		r = runCLI(t, ctx, env, "", append(c.args, "--json")...).wantCode(t, 0, c.args[0])
		checkOutput(t, "GET", c.target, "", r.stdout)
		runCLI(t, ctx, env, "", c.args...).wantCode(t, 0, c.args[0]+" table")
	}
	r = runCLI(t, ctx, env, "", "health", "--json").wantCode(t, 0, "health")
	var h map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &h); err != nil || h["status"] != "ok" {
		t.Fatalf("health: %v %s", err, r.stdout)
	}
	checkAnswer(t, "GET", "/health", "", "application/json", []byte(fmt.Sprintf(`{"success":true,"requestId":%q,"data":%s}`, uuid.NewString(), r.stdout)))
	r = runCLI(t, ctx, env, "", "metrics").wantCode(t, 0, "metrics")
	if !strings.Contains(r.stdout, "redrive_dlq_messages{") {
		t.Fatalf("metrics: %.500s", r.stdout)
	}
	r = runCLI(t, ctx, env, "", "metrics", "--json").wantCode(t, 0, "metrics --json")
	var samples map[string]float64
	if err := json.Unmarshal([]byte(r.stdout), &samples); err != nil || samples[fmt.Sprintf(`redrive_dlq_messages{source_queue=%q,status="pending"}`, source)] != 120 {
		t.Fatalf("metrics --json: %v, pending of %s: %v", err, source, samples[fmt.Sprintf(`redrive_dlq_messages{source_queue=%q,status="pending"}`, source)])
	}

	// Exit codes: usage, failure (the API refused), auth.
	runCLI(t, ctx, env, "", "show", "abc").wantCode(t, cli.ExitUsage, "show abc")
	runCLI(t, ctx, env, "", "ls", "--no-such-flag").wantCode(t, cli.ExitUsage, "unknown flag")
	runCLI(t, ctx, env, "", "replay").wantCode(t, cli.ExitUsage, "replay without a selection")
	r = runCLI(t, ctx, env, "", "ls", "--status", "bogus").wantCode(t, cli.ExitFailure, "ls --status bogus")
	if !strings.Contains(r.stderr, "INVALID_STATUS") {
		t.Errorf("ls --status bogus: %s", r.stderr)
	}
	runCLI(t, ctx, env, "", "show", "999999999999").wantCode(t, cli.ExitFailure, "show of no such row")
	runCLI(t, ctx, cliEnv(w, map[string]string{"REDRIVE_API_KEY": "wrong"}), "", "stats").wantCode(t, cli.ExitAuth, "a wrong key")
	runCLI(t, ctx, cliEnv(w, map[string]string{"REDRIVE_ADMIN_SECRET": "wrong"}), "", "stats").wantCode(t, cli.ExitAuth, "a wrong admin secret")

	// A profile file: used at mode 0600, refused when others may read it.
	dir := t.TempDir()
	conf := filepath.Join(dir, "config.json")
	profile := fmt.Sprintf(`{"default":{"url":%q,"api_key":%q,"admin_secret":%q}}`, w.URL, TestAPIKey, TestAdminSecret)
	if err := os.WriteFile(conf, []byte(profile), 0o600); err != nil {
		t.Fatal(err)
	}
	fromFile := map[string]string{"REDRIVE_CONFIG": conf}
	runCLI(t, ctx, fromFile, "", "stats").wantCode(t, 0, "credentials from a 0600 profile")
	if err := os.Chmod(conf, 0o644); err != nil {
		t.Fatal(err)
	}
	r = runCLI(t, ctx, fromFile, "", "stats").wantCode(t, cli.ExitAuth, "a 0644 profile")
	if !strings.Contains(r.stderr, "0644") {
		t.Errorf("a 0644 profile: %s", r.stderr)
	}
}

// The built command: go build ./cmd/redrive, then its exit codes as a process.
func TestCLIBinary(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "redrive")
	if out, err := exec.Command("go", "build", "-o", bin, "../cmd/redrive").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	run := func(env map[string]string, args ...string) (int, string) {
		cmd := exec.Command(bin, args...)
		cmd.Env = []string{"HOME=" + t.TempDir()}
		for k, v := range env {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
		out, err := cmd.CombinedOutput()
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode(), string(out)
		} else if err != nil {
			t.Fatal(err)
		}
		return 0, string(out)
	}
	if code, out := run(nil, "--help"); code != 0 || !strings.Contains(out, "Exit codes") {
		t.Fatalf("--help: %d %s", code, out)
	}
	if code, out := run(cliEnv(shared, nil), "health"); code != 0 || !strings.Contains(out, "ok") {
		t.Fatalf("health: %d %s", code, out)
	}
	if code, out := run(cliEnv(shared, map[string]string{"REDRIVE_API_KEY": "wrong"}), "stats"); code != cli.ExitAuth {
		t.Fatalf("a wrong key: exit %d %s", code, out)
	}
	if code, out := run(nil, "stats"); code != cli.ExitAuth || !strings.Contains(out, "REDRIVE_URL") {
		t.Fatalf("no credentials: exit %d %s", code, out)
	}
	if code, _ := run(nil, "ls", "--all", "extra"); code != cli.ExitUsage {
		t.Fatalf("an extra argument: exit %d", code)
	}
}

func TestCLIBulkReplayAndAcknowledge(t *testing.T) {
	w := shared
	ctx := context.Background()
	prefix := newPrefix("clirep")
	base := time.Now().Add(-time.Hour).UnixMilli()
	// Rows of the JavaScript consumer's queue: a replayed message is consumed there.
	w.Exec(t, seedSQL(prefix, 30, 1, base, jsQueue))
	ids := ownIDs(t, w, prefix)
	env := cliEnv(w, nil)
	window := []string{"--source-queue", jsQueue, "--failed-after", fmt.Sprint(base - 29), "--failed-before", fmt.Sprint(base + 1)}
	filterBody := fmt.Sprintf(`{"filter":{"source_queue":%q,"failed_after":%d,"failed_before":%d}}`, jsQueue, base-29, base+1)

	// The dry run alone.
	r := runCLI(t, ctx, env, "", append([]string{"replay", "--dry-run", "--json"}, window...)...).wantCode(t, 0, "replay --dry-run")
	checkOutput(t, "POST", "/admin/dlq/replay", filterBody, r.stdout)
	before := ownState(t, w, prefix)
	// The dry run, then the question: declined, nothing changes.
	r = runCLI(t, ctx, env, "n\n", append([]string{"replay", "--json"}, window...)...).wantCode(t, cli.ExitFailure, "replay declined")
	if !strings.Contains(r.stderr, "30 pending rows would be replayed") || !strings.Contains(r.stderr, prefix+" reason 0") || !strings.Contains(r.stderr, "Replay 30 rows") {
		t.Fatalf("replay declined: the dry run's count and reasons, then the question, on stderr:\n%s", r.stderr)
	}
	if after := ownState(t, w, prefix); after != before {
		t.Fatal("a declined replay changed rows")
	}
	// No answer at all (stdin closed) is no.
	runCLI(t, ctx, env, "", append([]string{"replay"}, window...)...).wantCode(t, cli.ExitFailure, "replay unanswered")
	r = runCLI(t, ctx, env, "", append([]string{"ack", "--dry-run", "--json"}, window...)...).wantCode(t, 0, "ack --dry-run")
	checkOutput(t, "POST", "/admin/dlq/acknowledge", filterBody, r.stdout)
	if !strings.Contains(r.stdout, `"matched_count": 30`) {
		t.Fatalf("ack --dry-run: %s", r.stdout)
	}
	// Ack by id first (two rows), with a note: they are then not pending.
	r = runCLI(t, ctx, env, "", "ack", fmt.Sprint(ids[0]), fmt.Sprint(ids[1]), "--note", "cli test", "--yes", "--json").wantCode(t, 0, "ack ids")
	checkOutput(t, "POST", "/admin/dlq/acknowledge", `{"ids":[1,2],"note":"x"}`, r.stdout)
	if n := w.Int(t, `SELECT COUNT(*) FROM dlq_messages WHERE id IN (?, ?) AND status = 'acknowledged' AND acknowledged_note = 'cli test'`, ids[0], ids[1]); n != 2 {
		t.Fatalf("%d rows acknowledged with the note", n)
	}
	// Confirmed: every matching row is replayed, page by page (--limit 10).
	r = runCLI(t, ctx, env, "y\n", append([]string{"replay", "--json", "--limit", "10"}, window...)...).wantCode(t, 0, "replay confirmed")
	checkOutput(t, "POST", "/admin/dlq/replay", filterBody, r.stdout)
	var res struct {
		ReplayedCount int `json:"replayed_count"`
		FailedCount   int `json:"failed_count"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil || res.ReplayedCount != 28 || res.FailedCount != 0 {
		t.Fatalf("replay: %+v %v\n%s", res, err, r.stdout)
	}
	if n := w.Int(t, `SELECT COUNT(*) FROM dlq_messages WHERE row_key LIKE ? AND status = 'replayed' AND replay_count = 1`, prefix+"-%"); n != 28 {
		t.Fatalf("%d rows replayed, want 28", n)
	}
	// By ids, with rows that are not pending: partial.
	r = runCLI(t, ctx, env, "", "replay", fmt.Sprint(ids[0]), fmt.Sprint(ids[2]), "--yes", "--json").wantCode(t, cli.ExitPartial, "replay of rows not pending")
	checkOutput(t, "POST", "/admin/dlq/replay", `{"ids":[1]}`, r.stdout)
	r = runCLI(t, ctx, env, "", "ack", fmt.Sprint(ids[3]), "--yes").wantCode(t, cli.ExitPartial, "ack of a row not pending")

	// Ack by filter: the dry run, the question, then every page.
	prefix2 := newPrefix("cliack")
	w.Exec(t, seedSQL(prefix2, 12, 1, base, prefix2+"-queue"))
	defer w.Exec(t, fmt.Sprintf(`DELETE FROM dlq_messages WHERE source_queue = '%s'`, prefix2+"-queue"))
	r = runCLI(t, ctx, env, "yes\n", "ack", "--source-queue", prefix2+"-queue", "--note", "poison", "--json").wantCode(t, 0, "ack by filter")
	if !strings.Contains(r.stderr, "12 pending rows would be acknowledged") {
		t.Errorf("ack by filter: %s", r.stderr)
	}
	checkOutput(t, "POST", "/admin/dlq/acknowledge", `{"filter":{"q":"x"},"note":"y"}`, r.stdout)
	if n := w.Int(t, `SELECT COUNT(*) FROM dlq_messages WHERE source_queue = ? AND status = 'acknowledged' AND acknowledged_note = 'poison'`, prefix2+"-queue"); n != 12 {
		t.Fatalf("%d rows acknowledged by filter, want 12", n)
	}
}

func TestCLIEditReplaysTheEditedBody(t *testing.T) {
	w := shared
	ctx := context.Background()
	prefix := newPrefix("cliedit")
	w.Exec(t, seedSQL(prefix, 2, 1, time.Now().Add(-time.Hour).UnixMilli(), jsQueue))
	ids := ownIDs(t, w, prefix)
	dir := t.TempDir()
	// An editor that renames the beer, and one that breaks the JSON.
	good := filepath.Join(dir, "good.sh")
	bad := filepath.Join(dir, "bad.sh")
	os.WriteFile(good, []byte("#!/bin/sh\nsed -i 's/\"beer_name\": \"[^\"]*\"/\"beer_name\": \"Edited Ale\"/' \"$1\"\n"), 0o700)
	os.WriteFile(bad, []byte("#!/bin/sh\nprintf '{\"beer_id\": ' > \"$1\"\n"), 0o700)

	before := ownState(t, w, prefix)
	r := runCLI(t, ctx, cliEnv(w, map[string]string{"EDITOR": bad}), "", "edit", fmt.Sprint(ids[0]), "--note", "fix").wantCode(t, cli.ExitFailure, "edit to invalid JSON")
	if !strings.Contains(r.stderr, "not valid JSON") || ownState(t, w, prefix) != before {
		t.Fatalf("invalid JSON must be refused before anything is sent: %s", r.stderr)
	}
	runCLI(t, ctx, cliEnv(w, map[string]string{"EDITOR": "true"}), "", "edit", fmt.Sprint(ids[0]), "--note", "fix").wantCode(t, cli.ExitFailure, "edit without a change")
	runCLI(t, ctx, cliEnv(w, map[string]string{"EDITOR": good}), "", "edit", fmt.Sprint(ids[0])).wantCode(t, cli.ExitUsage, "edit without --note")

	r = runCLI(t, ctx, cliEnv(w, map[string]string{"EDITOR": good}), "", "edit", fmt.Sprint(ids[0]), "--note", "beer_name was wrong", "--json").wantCode(t, 0, "edit")
	checkOutput(t, "POST", fmt.Sprintf("/admin/dlq/%d/replay", ids[0]), `{"body":{"a":1},"note":"x"}`, r.stdout)
	if n := w.Int(t, `SELECT COUNT(*) FROM dlq_messages WHERE id = ? AND status = 'replayed' AND body_edited = 1`, ids[0]); n != 1 {
		t.Fatal("the edited row is not replayed")
	}
	if n := w.Int(t, `SELECT COUNT(*) FROM admin_audit WHERE action = 'replay_edited' AND note = 'beer_name was wrong'`); n != 1 {
		t.Fatalf("%d audit entries of the edit", n)
	}
}

func TestCLIExportTenThousandRows(t *testing.T) {
	w := shared
	ctx := context.Background()
	prefix := newPrefix("cliexp")
	source := prefix + "-queue"
	const n = 10_000
	base := time.Now().Add(-2 * time.Hour).UnixMilli()
	w.Exec(t, seedSQL(prefix, n, 1, base, source))
	defer w.Exec(t, fmt.Sprintf(`DELETE FROM dlq_messages WHERE source_queue = '%s'`, source))
	env := cliEnv(w, nil)

	r := runCLI(t, ctx, env, "", "export", "--source-queue", source, "--json").wantCode(t, 0, "export ndjson")
	lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	if len(lines) != n {
		t.Fatalf("ndjson export: %d lines, want %d", len(lines), n)
	}
	if !strings.Contains(r.stderr, fmt.Sprintf("exported %d rows", n)) {
		t.Errorf("no progress on stderr: %q", r.stderr)
	}
	checkAnswer(t, "GET", "/admin/dlq/export?format=ndjson", "", "application/x-ndjson", []byte(r.stdout))
	seen := map[int64]bool{}
	for _, l := range lines {
		var m struct {
			ID int64 `json:"id"`
		}
		if err := json.Unmarshal([]byte(l), &m); err != nil || seen[m.ID] {
			t.Fatalf("line %.200q: %v (or a row twice)", l, err)
		}
		seen[m.ID] = true
	}

	file := filepath.Join(t.TempDir(), "dlq.csv")
	runCLI(t, ctx, env, "", "export", "--source-queue", source, "--format", "csv", "-o", file).wantCode(t, 0, "export csv")
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	rows := strings.Split(strings.TrimSuffix(string(data), "\r\n"), "\r\n")
	if len(rows) != n+1 || !strings.HasPrefix(rows[0], "id,") || strings.Count(string(data), "\r\nid,") != 0 {
		t.Fatalf("csv export: %d lines (want a header once and %d rows)", len(rows), n)
	}
	if st, _ := os.Stat(file); st.Mode().Perm() != 0o600 {
		t.Errorf("export file mode %v", st.Mode().Perm())
	}
}

func TestCLITaskWatchedUntilDone(t *testing.T) {
	w := shared
	ctx := context.Background()
	prefix := newPrefix("clitask")
	now := time.Now()
	base := now.Add(-time.Hour).UnixMilli()
	w.Exec(t, seedSQL(prefix, 20, 1, base, jsQueue))
	env := cliEnv(w, nil)
	window := []string{"--source-queue", jsQueue, "--failed-after", fmt.Sprint(base - 19), "--failed-before", fmt.Sprint(base + 1)}
	taskBody := fmt.Sprintf(`{"filter":{"source_queue":%q},"rate_per_minute":600}`, jsQueue)

	// Created after the dry run and a confirmation.
	r := runCLI(t, ctx, env, "y\n", append([]string{"tasks", "create", "--rate", "600", "--json"}, window...)...).wantCode(t, 0, "tasks create")
	if !strings.Contains(r.stderr, "20 pending rows would be replayed") {
		t.Errorf("tasks create: no dry run on stderr: %s", r.stderr)
	}
	var task struct {
		ID      int64  `json:"id"`
		State   string `json:"state"`
		Matched int    `json:"matched"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &task); err != nil || task.Matched != 20 {
		t.Fatalf("tasks create: %v %s", err, r.stdout)
	}
	// The create answer is a 202.
	id := uuid.NewString()
	req := httptest.NewRequest("POST", "http://worker/admin/dlq/replay-tasks", strings.NewReader(taskBody))
	req.Header.Set("Content-Type", "application/json")
	for k, v := range AdminHeaders() {
		req.Header.Set(k, v)
	}
	if err := contract.v.Check(req, []byte(taskBody), http.StatusAccepted, http.Header{"Content-Type": {"application/json"}, "X-Request-Id": {id}},
		[]byte(fmt.Sprintf(`{"success":true,"requestId":%q,"data":%s}`, id, r.stdout))); err != nil {
		t.Errorf("tasks create --json: %v", err)
	}

	// Watched while the cron advances it.
	watchCtx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	done := make(chan cliResult, 1)
	go func() {
		done <- runCLI(t, watchCtx, env, "", "tasks", "watch", fmt.Sprint(task.ID), "--json", "--interval", "300ms")
	}()
	at := now.Add(time.Minute).Truncate(time.Second)
	var watched cliResult
	for i := 0; watched.stdout == "" && i < 6; i++ {
		w.FireCron(t, cronFrequent, at.Add(time.Duration(i)*5*time.Minute))
		select {
		case watched = <-done:
		case <-time.After(3 * time.Second):
		}
	}
	if watched.stdout == "" {
		select {
		case watched = <-done:
		case <-watchCtx.Done():
			t.Fatal("tasks watch did not end")
		}
	}
	watched.wantCode(t, 0, "tasks watch")
	checkOutput(t, "GET", fmt.Sprintf("/admin/dlq/replay-tasks/%d", task.ID), "", watched.stdout)
	if !strings.Contains(watched.stdout, `"state": "done"`) || !strings.Contains(watched.stderr, "[##############################] 20/20") {
		t.Fatalf("tasks watch: stdout %s\nstderr %q", watched.stdout, watched.stderr)
	}

	// Pause, resume and cancel a task whose first delivery is an hour away.
	prefix2 := newPrefix("clitask2")
	w.Exec(t, seedSQL(prefix2, 3, 1, base, prefix2+"-queue"))
	defer w.Exec(t, fmt.Sprintf(`DELETE FROM dlq_messages WHERE source_queue = '%s'`, prefix2+"-queue"))
	r = runCLI(t, ctx, env, "", "tasks", "create", "--source-queue", prefix2+"-queue", "--rate", "10", "--delay", "3600", "--yes", "--json").wantCode(t, 0, "tasks create --yes")
	if err := json.Unmarshal([]byte(r.stdout), &task); err != nil {
		t.Fatal(err)
	}
	for _, step := range []struct{ action, state string }{{"pause", "paused"}, {"resume", "running"}, {"cancel", "cancelled"}} {
		r = runCLI(t, ctx, env, "", "tasks", step.action, fmt.Sprint(task.ID), "--json").wantCode(t, 0, "tasks "+step.action)
		checkOutput(t, "POST", fmt.Sprintf("/admin/dlq/replay-tasks/%d/%s", task.ID, step.action), "", r.stdout)
		if !strings.Contains(r.stdout, fmt.Sprintf(`"state": %q`, step.state)) {
			t.Fatalf("tasks %s: %s", step.action, r.stdout)
		}
	}
	runCLI(t, ctx, env, "", "tasks", "watch", fmt.Sprint(task.ID)).wantCode(t, cli.ExitFailure, "watch of a cancelled task")
	runCLI(t, ctx, env, "", "tasks", "create", "--q", "x").wantCode(t, cli.ExitUsage, "tasks create without --rate")
}

func TestCLITailPrintsNewFailures(t *testing.T) {
	w := shared
	prefix := newPrefix("clitail")
	source := prefix + "-queue"
	defer w.Exec(t, fmt.Sprintf(`DELETE FROM dlq_messages WHERE source_queue = '%s'`, source))
	env := cliEnv(w, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	start := time.Now().UnixMilli()
	// An old row of the queue is not printed.
	w.Exec(t, seedSQL(prefix+"old", 1, 1, start-time.Hour.Milliseconds(), source))
	done := make(chan cliResult, 1)
	go func() {
		done <- runCLI(t, ctx, env, "", "tail", "--source-queue", source, "--since", fmt.Sprint(start), "--count", "3", "--json", "--interval", "200ms")
	}()
	w.Exec(t, seedSQL(prefix, 3, 1, start+1000, source))
	var r cliResult
	select {
	case r = <-done:
	case <-ctx.Done():
		t.Fatal("tail did not print 3 failures")
	}
	r.wantCode(t, 0, "tail")
	lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	if len(lines) != 3 || !strings.Contains(lines[0], prefix+"-b-2") || !strings.Contains(lines[2], prefix+"-b-0") {
		t.Fatalf("tail: want the 3 new rows oldest first:\n%s", r.stdout)
	}
	checkAnswer(t, "GET", "/admin/dlq/export", "", "application/x-ndjson", []byte(r.stdout))
}

// TestCLIPipelineFlag: `redrive pipelines` lists the configured pipelines,
// and --pipeline selects a pipeline's rows in ls, export and the bulk
// actions' dry run; an unknown name is the API's UNKNOWN_PIPELINE.
func TestCLIPipelineFlag(t *testing.T) {
	w := shared
	ctx := context.Background()
	prefix := newPrefix("clipipe")
	w.Exec(t, seedSQL(prefix, 7, 1, time.Now().Add(-time.Hour).UnixMilli(), "e2e-orders"))
	w.Exec(t, seedSQL(prefix+"x", 3, 1, time.Now().Add(-time.Hour).UnixMilli(), "e2e-tickets"))
	defer w.Exec(t, fmt.Sprintf(`DELETE FROM dlq_messages WHERE row_key LIKE '%s%%'`, prefix))
	env := cliEnv(w, nil)

	r := runCLI(t, ctx, env, "", "pipelines", "--json").wantCode(t, 0, "pipelines --json")
	checkOutput(t, "GET", "/admin/pipelines", "", r.stdout)
	var list struct {
		Pipelines []struct{ Name, Queue string } `json:"pipelines"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &list); err != nil {
		t.Fatal(err)
	}
	queues := map[string]string{}
	for _, p := range list.Pipelines {
		queues[p.Name] = p.Queue
	}
	if queues["orders"] != "e2e-orders" || queues["beers"] != "beer-enrichment" {
		t.Fatalf("pipelines: %v", queues)
	}
	r = runCLI(t, ctx, env, "", "pipelines").wantCode(t, 0, "pipelines table")
	if !strings.HasPrefix(r.stdout, "NAME") || !strings.Contains(r.stdout, "e2e-orders") {
		t.Fatalf("pipelines table:\n%s", r.stdout)
	}

	// The q filter matches both seeds; --pipeline keeps the orders rows.
	r = runCLI(t, ctx, env, "", "ls", "--pipeline", "orders", "--q", prefix, "--json").wantCode(t, 0, "ls --pipeline")
	checkOutput(t, "GET", "/admin/dlq", "", r.stdout)
	var pg struct {
		Messages []struct {
			Pipeline    *string `json:"pipeline"`
			SourceQueue string  `json:"source_queue"`
		} `json:"messages"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &pg); err != nil || len(pg.Messages) != 7 {
		t.Fatalf("ls --pipeline orders: %d rows (want 7), %v", len(pg.Messages), err)
	}
	for _, m := range pg.Messages {
		if m.Pipeline == nil || *m.Pipeline != "orders" || m.SourceQueue != "e2e-orders" {
			t.Fatalf("ls --pipeline orders gave a row of %v / %s", m.Pipeline, m.SourceQueue)
		}
	}
	r = runCLI(t, ctx, env, "", "export", "--pipeline", "tickets", "--q", prefix, "--json").wantCode(t, 0, "export --pipeline")
	if lines := strings.Split(strings.TrimSpace(r.stdout), "\n"); len(lines) != 3 {
		t.Fatalf("export --pipeline tickets: %d lines, want 3\n%.1000s", len(lines), r.stdout)
	}
	checkAnswer(t, "GET", "/admin/dlq/export?format=ndjson&pipeline=tickets", "", "application/x-ndjson", []byte(r.stdout))
	r = runCLI(t, ctx, env, "", "replay", "--pipeline", "orders", "--q", prefix, "--dry-run", "--json").wantCode(t, 0, "replay --pipeline --dry-run")
	var dry struct {
		Matched int `json:"matched_count"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &dry); err != nil || dry.Matched != 7 {
		t.Fatalf("replay --pipeline orders --dry-run: %s (%v)", r.stdout, err)
	}
	r = runCLI(t, ctx, env, "", "stats", "--pipeline", "tickets", "--json").wantCode(t, 0, "stats --pipeline")
	checkOutput(t, "GET", "/admin/dlq/stats?pipeline=tickets", "", r.stdout)
	var st struct {
		Pipeline      string `json:"pipeline"`
		BySourceQueue []struct {
			SourceQueue string `json:"source_queue"`
		} `json:"by_source_queue"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &st); err != nil || st.Pipeline != "tickets" ||
		len(st.BySourceQueue) != 1 || st.BySourceQueue[0].SourceQueue != "e2e-tickets" {
		t.Fatalf("stats --pipeline tickets: %s (%v)", r.stdout, err)
	}
	// groups --pipeline: only that pipeline's groups, every one of them.
	w.Send(t, "e2e-orders-dlq", `{"order":{"id":"`+prefix+`-g"}}`)
	Eventually(t, 60*time.Second, "an orders group", func() bool {
		return w.Int(t, `SELECT COUNT(*) FROM dlq_signatures WHERE source_queue = 'e2e-orders'`) > 0
	})
	r = runCLI(t, ctx, env, "", "groups", "--pipeline", "orders", "--all", "--json").wantCode(t, 0, "groups --pipeline")
	var gp struct {
		Groups []struct {
			SourceQueue string  `json:"source_queue"`
			Pipeline    *string `json:"pipeline"`
		} `json:"groups"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &gp); err != nil ||
		int64(len(gp.Groups)) != w.Int(t, `SELECT COUNT(*) FROM dlq_signatures WHERE source_queue = 'e2e-orders'`) {
		t.Fatalf("groups --pipeline orders: %.500s (%v)", r.stdout, err)
	}
	for _, g := range gp.Groups {
		if g.SourceQueue != "e2e-orders" || g.Pipeline == nil || *g.Pipeline != "orders" {
			t.Fatalf("groups --pipeline orders listed a group of %s", g.SourceQueue)
		}
	}
	r = runCLI(t, ctx, env, "", "ls", "--pipeline", "no-such-pipeline").wantCode(t, cli.ExitFailure, "ls --pipeline unknown")
	if !strings.Contains(r.stderr, "UNKNOWN_PIPELINE") {
		t.Fatalf("ls --pipeline unknown: stderr %q", r.stderr)
	}
}

// The CLI manages keys and runs on one: keys create --pipelines prints the
// token once; on that token (REDRIVE_TOKEN, no pair) whoami names the key,
// ls --pipeline keeps its pipeline's rows, another pipeline is refused;
// keys revoke ends it.
func TestCLIRunsOnAScopedKey(t *testing.T) {
	w := shared
	ctx := context.Background()
	prefix := newPrefix("clikey")
	w.Exec(t, seedSQL(prefix, 4, 1, time.Now().Add(-time.Hour).UnixMilli(), "e2e-orders"))
	defer w.Exec(t, fmt.Sprintf(`DELETE FROM dlq_messages WHERE row_key LIKE '%s%%'`, prefix))
	r := runCLI(t, ctx, cliEnv(w, nil), "", "keys", "create", "--name", prefix+"-orders", "--role", "operator", "--pipelines", "orders", "--json").
		wantCode(t, 0, "keys create")
	var key struct{ ID, Token string }
	if err := json.Unmarshal([]byte(r.stdout), &key); err != nil || !strings.HasPrefix(key.Token, "rdk_") {
		t.Fatalf("keys create: %v %s", err, r.stdout)
	}
	env := map[string]string{"REDRIVE_URL": w.URL, "REDRIVE_TOKEN": key.Token,
		"REDRIVE_CONFIG": filepath.Join(os.TempDir(), "redrive-e2e-no-such-config.json")}
	r = runCLI(t, ctx, env, "", "whoami", "--json").wantCode(t, 0, "whoami")
	checkOutput(t, "GET", "/admin/whoami", "", r.stdout)
	var me struct {
		Principal string
		Pipelines []string
	}
	if err := json.Unmarshal([]byte(r.stdout), &me); err != nil || me.Principal != "key:"+prefix+"-orders" || strings.Join(me.Pipelines, ",") != "orders" {
		t.Fatalf("whoami: %v %s", err, r.stdout)
	}
	r = runCLI(t, ctx, env, "", "ls", "--q", prefix, "--json").wantCode(t, 0, "ls on the key")
	var pg struct {
		Messages []struct {
			SourceQueue string `json:"source_queue"`
		} `json:"messages"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &pg); err != nil || len(pg.Messages) != 4 || pg.Messages[0].SourceQueue != "e2e-orders" {
		t.Fatalf("ls on the key: %v %s", err, r.stdout)
	}
	r = runCLI(t, ctx, env, "", "ls", "--pipeline", "beers")
	if r.code == 0 || !strings.Contains(r.stderr, "FORBIDDEN") {
		t.Fatalf("ls --pipeline beers on an orders key: exit %d %s %s", r.code, r.stdout, r.stderr)
	}
	runCLI(t, ctx, cliEnv(w, nil), "", "keys", "revoke", key.ID).wantCode(t, 0, "keys revoke")
	if r = runCLI(t, ctx, env, "", "whoami"); r.code == 0 || !strings.Contains(r.stderr, "KEY_REVOKED") {
		t.Fatalf("whoami after revoke: exit %d %s %s", r.code, r.stdout, r.stderr)
	}
}
