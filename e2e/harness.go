//go:build e2e

// Package e2e runs the built wasm worker under `wrangler dev` (workerd, local
// D1, local Queues) and talks to it over HTTP, with a fake enrichment
// provider on 127.0.0.1. Run it with `make test-e2e`.
package e2e

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	_ "modernc.org/sqlite"

	"github.com/redrive/redrive/internal/sqlitetest"
)

// Test credentials passed to the worker with --var (never real secrets).
const (
	TestAPIKey      = "e2e-api-key"
	TestAdminSecret = "e2e-admin-secret"
	// TestReportToken is REPORT_TOKEN (POST /admin/attempts); the
	// JavaScript consumer (e2e/jsconsumer/wrangler.jsonc) reports with it.
	TestReportToken = "e2e-report-token"
)

// Options configures one worker.
type Options struct {
	// Vars are passed as --var NAME:VALUE, overriding wrangler.jsonc's e2e vars.
	Vars map[string]string
	// Provider is the fake provider to point ENRICHMENT_API_URL at (a new one when nil).
	Provider *FakeProvider
	// Config is the wrangler config to run, relative to the project root. Empty
	// means wrangler.jsonc with its e2e environment (--env e2e); another config
	// runs its top-level environment (the bench's bench/reference/wrangler.jsonc).
	Config string
	// ReadyPath is polled with admin credentials until it answers 200 (/health when empty).
	ReadyPath string
	// ExtraConfigs are more workers run in the same `wrangler dev` (-c once
	// per config, after the primary's): they share its local queues and, with
	// the same database_id, its local D1. Only the primary (Config) serves
	// HTTP and gets the migrations and --var values; --env applies to every
	// config, so each needs that environment (e2e/jsconsumer/wrangler.jsonc).
	ExtraConfigs []string
	// Main is an entry module to run instead of the config's main (wrangler
	// dev's script argument), relative to the project root: the bench's
	// metered entry modules (bench/d1meta).
	Main string
	// Persist is a local state directory to run on (another worker's,
	// stopped: its D1 and queues as it left them); it is not removed by
	// Stop. Empty: a fresh one, removed by Stop.
	Persist string
}

// Worker is one running `wrangler dev --env e2e` with its own local state.
type Worker struct {
	URL      string
	Provider *FakeProvider
	// ReadyAfter is the time from starting wrangler dev to the first 200 from /health.
	ReadyAfter time.Duration

	root, persist string
	configArgs    []string // selects the wrangler config and environment
	extraArgs     []string // -c of each extra config (wrangler dev only)
	cmd           *exec.Cmd
	logPath       string
	ownProvider   bool
	ownPersist    bool // persist was made for this worker (removed by Stop)
	redrive       bool // wrangler.jsonc's e2e environment (not another config)

	dbOnce sync.Once
	db     *sql.DB
	dbErr  error
	rwOnce sync.Once
	rw     *sql.DB
	rwErr  error

	stopOnce sync.Once
}

// StartWorker applies the migrations to a fresh local D1, starts wrangler dev
// on free ports and waits (polling /health) until it answers 200.
func StartWorker(opts Options) (*Worker, error) {
	root, err := sqlitetest.Root()
	if err != nil {
		return nil, err
	}
	persist, ownPersist := opts.Persist, opts.Persist == ""
	if ownPersist {
		if persist, err = os.MkdirTemp("", "redrive-e2e-"); err != nil {
			return nil, err
		}
	}
	w := &Worker{root: root, persist: persist, ownPersist: ownPersist, Provider: opts.Provider,
		logPath:    filepath.Join(persist, fmt.Sprintf("wrangler-%d.log", time.Now().UnixNano())),
		configArgs: []string{"--env", "e2e"}, redrive: opts.Config == ""}
	if opts.Config != "" {
		w.configArgs = []string{"--config", opts.Config}
	}
	if len(opts.ExtraConfigs) > 0 {
		// Several configs: the primary must be named too, first.
		primary := opts.Config
		if primary == "" {
			primary = "wrangler.jsonc"
			w.configArgs = append([]string{"--config", primary}, w.configArgs...)
		}
		for _, c := range opts.ExtraConfigs {
			w.extraArgs = append(w.extraArgs, "--config", c)
		}
	}
	readyPath := opts.ReadyPath
	if readyPath == "" {
		readyPath = "/health"
	}
	if w.Provider == nil {
		if w.Provider, err = StartFakeProvider(); err != nil {
			return nil, err
		}
		w.ownProvider = true
	}
	if out, err := w.wrangler(2*time.Minute, w.d1Args("migrations", "apply", "beer-db", "--local", "--persist-to", persist)...); err != nil {
		w.Stop()
		return nil, fmt.Errorf("apply migrations: %v\n%s", err, out)
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	inspector, err := freePort()
	if err != nil {
		return nil, err
	}
	args := []string{"dev"}
	if opts.Main != "" {
		args = append(args, opts.Main)
	}
	args = append(args, "--local", "--persist-to", persist, "--ip", "127.0.0.1",
		"--port", fmt.Sprint(port), "--inspector-port", fmt.Sprint(inspector), "--test-scheduled",
		"--show-interactive-dev-session=false",
		"--var", "API_KEY:"+TestAPIKey, "--var", "ADMIN_SECRET:"+TestAdminSecret, "--var", "REPORT_TOKEN:"+TestReportToken,
		"--var", "ENRICHMENT_API_URL:"+w.Provider.URL, "--var", "ENRICHMENT_API_KEY:e2e-provider-key")
	args = append(append(args, w.configArgs...), w.extraArgs...)
	for k, v := range opts.Vars {
		args = append(args, "--var", k+":"+v)
	}
	logFile, err := os.Create(w.logPath)
	if err != nil {
		return nil, err
	}
	w.cmd = exec.Command(filepath.Join(root, "node_modules", ".bin", "wrangler"), args...)
	w.cmd.Dir = root
	w.cmd.Stdout, w.cmd.Stderr = logFile, logFile
	w.cmd.Env = append(os.Environ(), "WRANGLER_SEND_METRICS=false", "CI=true", "NO_COLOR=1")
	w.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	started := time.Now()
	if err := w.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start wrangler dev: %w", err)
	}
	go func() { w.cmd.Wait(); logFile.Close() }()
	w.URL = fmt.Sprintf("http://127.0.0.1:%d", port)
	if w.redrive {
		if err := contractWorker(w.URL); err != nil {
			w.Stop()
			return nil, err
		}
	}

	err = Poll(90*time.Second, func() (bool, error) {
		resp, err := w.Do(http.MethodGet, readyPath, nil, AdminHeaders())
		if err != nil {
			return false, nil
		}
		return resp.Status == http.StatusOK, nil
	})
	w.ReadyAfter = time.Since(started)
	if err != nil {
		log := w.Log()
		w.Stop()
		return nil, fmt.Errorf("worker not ready: %v\n--- wrangler log ---\n%s", err, tail(log, 4000))
	}
	return w, nil
}

// Stop ends wrangler and workerd (the whole process group, by PID), closes
// the fake provider it owns and removes the local state. Only the first
// call does anything.
func (w *Worker) Stop() { w.stopOnce.Do(w.stop) }

func (w *Worker) stop() {
	if w.db != nil {
		w.db.Close()
	}
	if w.rw != nil {
		w.rw.Close()
	}
	if w.cmd != nil && w.cmd.Process != nil {
		pgid := w.cmd.Process.Pid
		syscall.Kill(-pgid, syscall.SIGTERM)
		deadline := time.Now().Add(5 * time.Second)
		for time.Now().Before(deadline) && syscall.Kill(-pgid, 0) == nil {
			time.Sleep(50 * time.Millisecond)
		}
		syscall.Kill(-pgid, syscall.SIGKILL)
	}
	if w.ownProvider && w.Provider != nil {
		w.Provider.Close()
	}
	if w.ownPersist && os.Getenv("E2E_KEEP_STATE") == "" {
		os.RemoveAll(w.persist)
	}
}

// Log returns what wrangler and the worker printed so far.
func (w *Worker) Log() string {
	b, _ := os.ReadFile(w.logPath)
	return string(b)
}

// d1Args builds `wrangler d1 <args>` for this worker's config and environment.
func (w *Worker) d1Args(args ...string) []string {
	return append(append([]string{"d1"}, args...), w.configArgs...)
}

// wrangler runs a one-off wrangler command in the project root.
func (w *Worker) wrangler(timeout time.Duration, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(w.root, "node_modules", ".bin", "wrangler"), args...)
	cmd.Dir = w.root
	cmd.Env = append(os.Environ(), "WRANGLER_SEND_METRICS=false", "CI=true", "NO_COLOR=1")
	return cmd.CombinedOutput()
}

// Response is a decoded envelope plus the raw response.
type Response struct {
	Status int
	Header http.Header
	Raw    []byte
	// Contract is how the exchange does not match handlers/openapi.json
	// (nil when it does, or was not checked: see contract.go).
	Contract error
	// Elapsed is the exchange's time on the wire, without the harness's
	// contract check (what the benchmarks time).
	Elapsed time.Duration
	Success bool            `json:"success"`
	ReqID   string          `json:"requestId"`
	Data    json.RawMessage `json:"data"`
	Error   *struct {
		Message string `json:"message"`
		Code    string `json:"code"`
	} `json:"error"`
}

// Decode unmarshals the envelope's data into v.
func (r *Response) Decode(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(r.Data, v); err != nil {
		t.Fatalf("decode data: %v\n%s", err, r.Raw)
	}
}

// Do sends a request with the given headers; body may be nil, []byte, string or any JSON value.
func (w *Worker) Do(method, path string, body any, headers map[string]string) (*Response, error) {
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case []byte:
		rd = bytes.NewReader(b)
	case string:
		rd = strings.NewReader(b)
	case io.Reader:
		rd = b // of unknown length: sent chunked, without Content-Length
	default:
		js, err := json.Marshal(b)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(js)
	}
	req, err := http.NewRequest(method, w.URL+path, rd)
	if err != nil {
		return nil, err
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	req, ex := withExchange(req)
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	out := &Response{Status: resp.StatusCode, Header: resp.Header, Raw: raw, Contract: ex.Mismatch, Elapsed: ex.Elapsed}
	_ = json.Unmarshal(raw, out)
	return out, nil
}

// client drops idle connections after a second, well before wrangler dev's
// server closes them (Node's keep-alive timeout is 5 s): a request written
// on a connection the server is closing fails with "connection reset", and
// a POST is not retried. Every exchange with a redrive worker is checked
// against the OpenAPI document on the way (contract.go).
var client = &http.Client{Transport: contractTransport{&http.Transport{IdleConnTimeout: time.Second, MaxIdleConnsPerHost: 8}}}

// AdminHeaders are valid admin credentials.
func AdminHeaders() map[string]string {
	return map[string]string{"X-API-Key": TestAPIKey, "X-Admin-Secret": TestAdminSecret}
}

// Admin sends an authenticated request and fails the test on transport errors.
func (w *Worker) Admin(t testing.TB, method, path string, body any) *Response {
	t.Helper()
	r, err := w.Do(method, path, body, AdminHeaders())
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	if r.Contract != nil {
		t.Error(r.Contract)
	}
	return r
}

// Send puts text messages on a queue through the e2e-only route (up to 100 per call).
func (w *Worker) Send(t testing.TB, queueName string, bodies ...string) {
	t.Helper()
	w.SendDelayed(t, queueName, 0, bodies...)
}

// SendDelayed is Send with a delivery delay in seconds.
func (w *Worker) SendDelayed(t testing.TB, queueName string, delaySeconds int, bodies ...string) {
	t.Helper()
	for len(bodies) > 0 {
		n := min(len(bodies), 100)
		msgs := make([]map[string]any, n)
		for i, b := range bodies[:n] {
			msgs[i] = map[string]any{"body": b, "delay_seconds": delaySeconds}
		}
		r := w.Admin(t, http.MethodPost, "/__dev/send", map[string]any{"queue": queueName, "messages": msgs})
		if r.Status != http.StatusOK {
			t.Fatalf("send to %s: %d %s", queueName, r.Status, r.Raw)
		}
		bodies = bodies[n:]
	}
}

// FireCron runs the jobs of expression cron at time at (now when zero).
// wrangler dev's /cdn-cgi/handler/scheduled does not reach a worker with
// static assets (redrive serves the console): for redrive a zero time fires
// the runtime's scheduled event through /__scheduled (--test-scheduled), and
// a given time goes through POST /__dev/cron (DEV_ROUTES), which runs the
// same jobs at that time. Other workers (the bench's reference) keep
// /cdn-cgi/handler/scheduled.
func (w *Worker) FireCron(t testing.TB, cron string, at time.Time) {
	t.Helper()
	if err := w.FireCronErr(cron, at); err != nil {
		t.Fatal(err)
	}
}

// FireCronErr is FireCron for any goroutine: it returns the error.
func (w *Worker) FireCronErr(cron string, at time.Time) error {
	switch {
	case w.redrive && at.IsZero():
		return w.get("/__scheduled?" + url.Values{"cron": {cron}}.Encode())
	case w.redrive:
		r, err := w.Do(http.MethodPost, "/__dev/cron", map[string]any{"cron": cron, "time": at.UnixMilli()}, AdminHeaders())
		if err != nil {
			return fmt.Errorf("fire cron %q at %s: %w", cron, at, err)
		}
		if r.Status != http.StatusOK {
			return fmt.Errorf("fire cron %q at %s: %d %s", cron, at, r.Status, r.Raw)
		}
		return nil
	}
	q := url.Values{"cron": {cron}}
	if !at.IsZero() {
		q.Set("time", fmt.Sprint(at.UnixMilli()))
	}
	return w.get("/cdn-cgi/handler/scheduled?" + q.Encode())
}

// FireScheduled fires the runtime's scheduled event for cron at the current
// time (wrangler dev --test-scheduled's /__scheduled): the worker's real cron entry.
func (w *Worker) FireScheduled(t testing.TB, cron string) {
	t.Helper()
	if err := w.get("/__scheduled?" + url.Values{"cron": {cron}}.Encode()); err != nil {
		t.Fatal(err)
	}
}

func (w *Worker) get(target string) error {
	resp, err := http.Get(w.URL + target)
	if err != nil {
		return fmt.Errorf("GET %s: %w", target, err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %d %s", target, resp.StatusCode, body)
	}
	return nil
}

// DB opens the worker's local D1 database file read-only (the SQLite file
// workerd writes under --persist-to), for asserting on state directly.
func (w *Worker) DB(t testing.TB) *sql.DB {
	t.Helper()
	w.dbOnce.Do(func() { w.db, w.dbErr = w.openD1File("mode=ro") })
	if w.dbErr != nil {
		t.Fatal(w.dbErr)
	}
	return w.db
}

// ExecDirect changes the worker's local D1 file directly (a SQLite
// connection of its own, in milliseconds where Exec takes seconds); tests use
// it to break D1 under the running worker (rename a table away and back).
func (w *Worker) ExecDirect(t testing.TB, sqlText string) {
	t.Helper()
	w.rwOnce.Do(func() {
		if w.rw, w.rwErr = w.openD1File("mode=rw"); w.rwErr == nil {
			w.rw.SetMaxOpenConns(1)
		}
	})
	if w.rwErr != nil {
		t.Fatal(w.rwErr)
	}
	if _, err := w.rw.Exec(sqlText); err != nil {
		t.Fatalf("%s: %v", sqlText, err)
	}
}

// sharedDatabaseID is the database_id of wrangler.jsonc's DB binding in env.e2e.
const sharedDatabaseID = "00000000-0000-0000-0000-000000000000"

// DBOf opens the local SQLite file of the D1 database whose database_id
// (wrangler.jsonc) is id, read-only; closed when the test ends.
func (w *Worker) DBOf(t testing.TB, id string) *sql.DB {
	t.Helper()
	f := filepath.Join(w.persist, "v3", "d1", "miniflare-D1DatabaseObject", miniflareObjectID("miniflare-D1DatabaseObject", id)+".sqlite")
	if _, err := os.Stat(f); err != nil {
		t.Fatalf("no local D1 file for database %s: %v", id, err)
	}
	db, err := sql.Open("sqlite", "file:"+f+"?mode=ro&_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// miniflareObjectID is the id miniflare names a Durable Object's file by
// (durableObjectNamespaceIdFromName in miniflare): a local D1 database is
// the object named by its database_id.
func miniflareObjectID(uniqueKey, name string) string {
	key := sha256.Sum256([]byte(uniqueKey))
	mac := hmac.New(sha256.New, key[:])
	mac.Write([]byte(name))
	nameMAC := mac.Sum(nil)[:16]
	mac = hmac.New(sha256.New, key[:])
	mac.Write(nameMAC)
	return hex.EncodeToString(append(append([]byte{}, nameMAC...), mac.Sum(nil)[:16]...))
}

// openD1File opens the local D1 SQLite file (under --persist-to) with the
// given URI options: the DB binding's when several databases are there.
func (w *Worker) openD1File(opts string) (*sql.DB, error) {
	dir := filepath.Join(w.persist, "v3", "d1", "miniflare-D1DatabaseObject")
	if f := filepath.Join(dir, miniflareObjectID("miniflare-D1DatabaseObject", sharedDatabaseID)+".sqlite"); w.redrive {
		if _, err := os.Stat(f); err == nil {
			return sql.Open("sqlite", "file:"+f+"?"+opts+"&_pragma=busy_timeout(5000)")
		}
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.sqlite"))
	for _, f := range files {
		if filepath.Base(f) != "metadata.sqlite" {
			return sql.Open("sqlite", "file:"+f+"?"+opts+"&_pragma=busy_timeout(5000)")
		}
	}
	return nil, fmt.Errorf("no local D1 file under %s", w.persist)
}

// Int runs a query returning one integer.
func (w *Worker) Int(t testing.TB, query string, args ...any) int64 {
	t.Helper()
	var n sql.NullInt64
	if err := w.DB(t).QueryRow(query, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return n.Int64
}

// Exec changes the local D1 through `wrangler d1 execute` (slow: seconds);
// tests use it to seed or age rows. The worker sees the change at once.
func (w *Worker) Exec(t testing.TB, sqlText string) {
	t.Helper()
	w.execD1(t, 2*time.Minute, "--command", sqlText)
}

// ExecFile runs a SQL file through `wrangler d1 execute --file`.
func (w *Worker) ExecFile(t testing.TB, path string) {
	t.Helper()
	w.execD1(t, 5*time.Minute, "--file", path)
}

// execD1 runs `wrangler d1 execute` against the worker's local D1. The
// running worker holds the same SQLite file: a statement that finds it
// locked (SQLITE_BUSY) did nothing and is run again, until timeout.
func (w *Worker) execD1(t testing.TB, timeout time.Duration, args ...string) {
	t.Helper()
	var out []byte
	err := Poll(timeout, func() (bool, error) {
		var err error
		out, err = w.wrangler(timeout, w.d1Args(append([]string{"execute", "beer-db", "--local", "--persist-to", w.persist}, args...)...)...)
		if err != nil && bytes.Contains(out, []byte("SQLITE_BUSY")) {
			return false, nil
		}
		return true, err
	})
	if err != nil {
		t.Fatalf("d1 execute %s: %v\n%s", args[0], err, out)
	}
}

// Poll calls cond until it reports true, returns an error, or timeout passes.
func Poll(timeout time.Duration, cond func() (bool, error)) error {
	deadline := time.Now().Add(timeout)
	for {
		ok, err := cond()
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("condition not met within %s", timeout)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Eventually fails the test unless cond holds within timeout; msg describes it.
func Eventually(t testing.TB, timeout time.Duration, msg string, cond func() bool) {
	t.Helper()
	if err := Poll(timeout, func() (bool, error) { return cond(), nil }); err != nil {
		t.Fatalf("%s: %v", msg, err)
	}
}

// Consistently fails the test as soon as cond stops holding during d: a
// settle window, to show that nothing more happens (no extra delivery).
func Consistently(t testing.TB, d time.Duration, msg string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		if !cond() {
			t.Fatalf("%s: stopped holding", msg)
		}
		if time.Now().After(deadline) {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}
