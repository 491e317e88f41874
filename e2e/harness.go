//go:build e2e

// Package e2e runs the built wasm worker under `wrangler dev` (workerd, local
// D1, local Queues) and talks to it over HTTP, with a fake enrichment
// provider on 127.0.0.1. Run it with `make test-e2e`.
package e2e

import (
	"bytes"
	"cmp"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
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

	"github.com/redrive/redrive/config"
	"github.com/redrive/redrive/internal/d1migrate"
	"github.com/redrive/redrive/internal/sqlitetest"
	"github.com/redrive/redrive/internal/wranglerconfig"
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
	// OwnDatabases migrates every D1 binding of the environment (each
	// one's ids from its base, as make migrate-local) for pipelines on
	// databases of their own. In env.e2e it also runs the tickets pipeline
	// on TICKETS_DB: PIPELINES is env.e2e's with tickets' "database" set
	// (unless Vars name PIPELINES). Without it only DB is migrated and the
	// worker runs its environment as declared (env.e2e: every pipeline on
	// DB, the one-database deployment the rest of the suite exercises: a
	// bulk filter needs no pipeline; the D1 row figures are one database's).
	OwnDatabases bool
	// Env is the environment of wrangler.jsonc to run ("e2e" when empty;
	// ignored with Config): the bench's "bench".
	Env string
	// Persist is a local state directory to run on (another worker's,
	// stopped: its D1 and queues as it left them); it is not removed by
	// Stop. Empty: a fresh one, removed by Stop.
	Persist string
}

// Worker is one running `wrangler dev --env e2e` (or Options.Env) with its
// own local state.
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
	ownDatabases  bool // Options.OwnDatabases

	dbOnce sync.Once
	db     *sql.DB
	dbErr  error
	rwOnce sync.Once
	rw     *sql.DB
	rwErr  error

	// d1Files maps each D1 binding to its SQLite file under persist (the
	// file its migrations created); others holds the read-only handles
	// DBOf opened on them.
	d1Files  map[string]string
	othersMu sync.Mutex
	others   map[string]*sql.DB

	stopOnce sync.Once
}

// StartWorker applies the migrations to a fresh local D1, starts wrangler dev
// on free ports and waits (polling /health) until it answers 200. On any
// error what it started is stopped (wrangler, the fake provider it owns,
// the local state).
func StartWorker(opts Options) (_ *Worker, err error) {
	w, err := newWorker(opts)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			w.Stop()
		}
	}()
	readyPath := cmp.Or(opts.ReadyPath, "/health")
	if w.Provider == nil {
		if w.Provider, err = StartFakeProvider(); err != nil {
			return nil, err
		}
		w.ownProvider = true
	}
	if err := w.migrate(); err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	inspector, err := freePort()
	if err != nil {
		return nil, err
	}
	args, err := w.devArgs(opts, port, inspector)
	if err != nil {
		return nil, err
	}
	started, err := w.startWrangler(args)
	if err != nil {
		return nil, err
	}
	w.URL = fmt.Sprintf("http://127.0.0.1:%d", port)
	if w.redrive {
		if err := contractWorker(w.URL); err != nil {
			return nil, err
		}
	}
	if err := w.awaitReady(readyPath, started); err != nil {
		return nil, err
	}
	return w, nil
}

// newWorker makes the worker opts describe, not started yet: the project
// root, its local state directory (a fresh one unless Options.Persist),
// the path of its wrangler log and the arguments that select its wrangler
// configs and environment.
func newWorker(opts Options) (*Worker, error) {
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
		configArgs: []string{"--env", "e2e"}, redrive: opts.Config == "", ownDatabases: opts.OwnDatabases}
	if opts.Env != "" {
		w.configArgs = []string{"--env", opts.Env}
	}
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
	return w, nil
}

// devArgs is the wrangler dev command line: the entry module
// (Options.Main), local mode on the worker's state directory, the ports,
// the test credentials and the provider's URL, the configs, then the --var
// values (PIPELINES with tickets on TICKETS_DB for OwnDatabases in the e2e
// environment, then Options.Vars).
func (w *Worker) devArgs(opts Options, port, inspector int) ([]string, error) {
	args := []string{"dev"}
	if opts.Main != "" {
		args = append(args, opts.Main)
	}
	args = append(args, "--local", "--persist-to", w.persist, "--ip", "127.0.0.1",
		"--port", fmt.Sprint(port), "--inspector-port", fmt.Sprint(inspector), "--test-scheduled",
		"--show-interactive-dev-session=false",
		"--var", "API_KEY:"+TestAPIKey, "--var", "ADMIN_SECRET:"+TestAdminSecret, "--var", "REPORT_TOKEN:"+TestReportToken,
		"--var", "ENRICHMENT_API_URL:"+w.Provider.URL, "--var", "ENRICHMENT_API_KEY:e2e-Zq8wX3vN7tR2kP5m")
	args = append(append(args, w.configArgs...), w.extraArgs...)
	if w.redrive && opts.OwnDatabases && opts.Vars["PIPELINES"] == "" && w.env() == "e2e" {
		own, err := ticketsOnOwnDatabase(w.root)
		if err != nil {
			return nil, err
		}
		args = append(args, "--var", "PIPELINES:"+own)
	}
	for k, v := range opts.Vars {
		args = append(args, "--var", k+":"+v)
	}
	return args, nil
}

// startWrangler starts wrangler dev with args in the project root, in a
// process group of its own (Stop ends the group) with its output in the
// worker's log, and returns when it was started.
func (w *Worker) startWrangler(args []string) (time.Time, error) {
	logFile, err := os.Create(w.logPath)
	if err != nil {
		return time.Time{}, err
	}
	w.cmd = exec.Command(filepath.Join(w.root, "node_modules", ".bin", "wrangler"), args...)
	w.cmd.Dir = w.root
	w.cmd.Stdout, w.cmd.Stderr = logFile, logFile
	w.cmd.Env = append(os.Environ(), "WRANGLER_SEND_METRICS=false", "CI=true", "NO_COLOR=1")
	w.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	started := time.Now()
	if err := w.cmd.Start(); err != nil {
		return time.Time{}, fmt.Errorf("start wrangler dev: %w", err)
	}
	go func() { w.cmd.Wait(); logFile.Close() }()
	return started, nil
}

// awaitReady polls readyPath with admin credentials until it answers 200
// (readyTimeout) and sets ReadyAfter from started. When it does not, the
// error carries the end of the wrangler log (StartWorker stops the worker).
func (w *Worker) awaitReady(readyPath string, started time.Time) error {
	err := Poll(readyTimeout, func() (bool, error) {
		resp, err := w.Do(http.MethodGet, readyPath, nil, AdminHeaders())
		if err != nil {
			return false, nil
		}
		return resp.Status == http.StatusOK, nil
	})
	w.ReadyAfter = time.Since(started)
	if err != nil {
		return fmt.Errorf("worker not ready: %v\n--- wrangler log ---\n%s", err, tail(w.Log(), 4000))
	}
	return nil
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
	for _, db := range w.others {
		db.Close()
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

// readyTimeout bounds a worker's start (wrangler dev answering): seconds
// on a quiet machine, minutes on a loaded one.
const readyTimeout = 4 * time.Minute

// migrateTimeout bounds one wrangler migration step: the 22 migrations of
// a fresh database take seconds on a quiet machine and minutes on a loaded
// one (several workerd instances building and running on two cores).
const migrateTimeout = 8 * time.Minute

// migrate applies the migrations to every D1 database the worker's
// environment binds, as make migrate-local does (internal/d1migrate: for
// each binding its migrations, then its id range; DB only unless
// OwnDatabases: no pipeline names another), and notes which local SQLite
// file each binding's migrations created. Another config (the
// bench's reference worker) gets its beer-db migrated only.
func (w *Worker) migrate() error {
	if !w.redrive {
		if out, err := w.wrangler(migrateTimeout, w.d1Args("migrations", "apply", "beer-db", "--local", "--persist-to", w.persist)...); err != nil {
			return fmt.Errorf("apply migrations: %v\n%s", err, out)
		}
		return nil
	}
	cfg, err := wranglerconfig.Load(w.root)
	if err != nil {
		return err
	}
	steps, err := d1migrate.Plan(cfg, w.env(), []string{"--local", "--persist-to", w.persist}, w.configArgs)
	if err != nil {
		return err
	}
	w.d1Files = map[string]string{}
	for _, st := range steps {
		if !w.ownDatabases && st.Binding != config.SharedDatabase {
			continue // no pipeline names it (OwnDatabases)
		}
		before := w.sqliteFiles()
		if out, err := w.wrangler(migrateTimeout, st.Args...); err != nil {
			return fmt.Errorf("migrate %s (%s): %v\n%s", st.Binding, strings.Join(st.Args[:3], " "), err, out)
		}
		for f := range w.sqliteFiles() {
			if !before[f] {
				w.d1Files[st.Binding] = f
			}
		}
	}
	return nil
}

// env is the wrangler environment the worker runs ("" for the top level).
func (w *Worker) env() string {
	env := ""
	for i, a := range w.configArgs {
		if a == "--env" && i+1 < len(w.configArgs) {
			env = w.configArgs[i+1]
		}
	}
	return env
}

// TicketsDB is the D1 binding of env.e2e that OwnDatabases runs the
// tickets pipeline on.
const TicketsDB = "TICKETS_DB"

// ticketsOnOwnDatabase is env.e2e's PIPELINES with the tickets pipeline on
// TicketsDB.
func ticketsOnOwnDatabase(root string) (string, error) {
	cfg, err := wranglerconfig.Load(root)
	if err != nil {
		return "", err
	}
	var ps []map[string]any
	if err := json.Unmarshal([]byte(cfg.Envs["e2e"].Vars["PIPELINES"]), &ps); err != nil {
		return "", fmt.Errorf("env.e2e PIPELINES: %w", err)
	}
	found := false
	for _, p := range ps {
		if p["name"] == "tickets" {
			p["database"], found = TicketsDB, true
		}
	}
	if !found {
		return "", errors.New("env.e2e PIPELINES has no tickets pipeline")
	}
	b, err := json.Marshal(ps)
	return string(b), err
}

// sqliteFiles are the local D1 database files under persist.
func (w *Worker) sqliteFiles() map[string]bool {
	files, _ := filepath.Glob(filepath.Join(w.persist, "v3", "d1", "miniflare-D1DatabaseObject", "*.sqlite"))
	out := map[string]bool{}
	for _, f := range files {
		if filepath.Base(f) != "metadata.sqlite" {
			out[f] = true
		}
	}
	return out
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
		if ne, ok := err.(net.Error); ok && ne.Timeout() {
			err = fmt.Errorf("%w\n%s", err, w.diagnoseHang())
		}
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
//
// A request not answered within clientTimeout fails (Do's error then says
// whether the worker still answers /health and a route without D1, and
// ends with the worker's log): a worker that never answers once blocked
// the whole suite until it was killed. No request of the suite takes a
// tenth of it (the slowest, a cron run over 1,000,000 rows, takes seconds).
var client = &http.Client{Timeout: clientTimeout,
	Transport: contractTransport{&http.Transport{IdleConnTimeout: time.Second, MaxIdleConnsPerHost: 8}}}

// clientTimeout bounds every request of the shared client.
const clientTimeout = 10 * time.Minute

// diagnoseHang says what still answers on a worker that left a request
// unanswered: /health (which reads D1) and an unknown path (a 404 that
// touches no binding), each given 10 s, then the tail of its log.
func (w *Worker) diagnoseHang() string {
	probe := &http.Client{Timeout: 10 * time.Second}
	var b strings.Builder
	b.WriteString("--- the worker left the request unanswered; what still answers ---\n")
	for _, path := range []string{"/health", "/no-such-route"} {
		start := time.Now()
		resp, err := probe.Get(w.URL + path)
		if err != nil {
			fmt.Fprintf(&b, "GET %s: %v\n", path, err)
			continue
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		fmt.Fprintf(&b, "GET %s: %d in %s\n", path, resp.StatusCode, time.Since(start).Round(time.Millisecond))
	}
	b.WriteString("--- wrangler log (tail) ---\n")
	b.WriteString(tail(w.Log(), 6000))
	return b.String()
}

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

// openD1File opens the local D1 SQLite file of DB (under --persist-to) with the given URI options.
func (w *Worker) openD1File(opts string) (*sql.DB, error) {
	return w.openD1FileOf(config.SharedDatabase, opts)
}

// openD1FileOf opens the local D1 SQLite file of binding: the file
// miniflare names by the binding's database_id (wrangler.jsonc), else the
// one its migrations created; another config's one database for DB.
func (w *Worker) openD1FileOf(binding, opts string) (*sql.DB, error) {
	open := func(f string) (*sql.DB, error) {
		return sql.Open("sqlite", "file:"+f+"?"+opts+"&_pragma=busy_timeout(5000)")
	}
	if id := w.databaseID(binding); id != "" {
		f := filepath.Join(w.persist, "v3", "d1", "miniflare-D1DatabaseObject", miniflareObjectID("miniflare-D1DatabaseObject", id)+".sqlite")
		if _, err := os.Stat(f); err == nil {
			return open(f)
		}
	}
	if f, ok := w.d1Files[binding]; ok {
		return open(f)
	}
	if binding == config.SharedDatabase {
		for f := range w.sqliteFiles() {
			return open(f) // another config: its one database
		}
	}
	return nil, fmt.Errorf("no local D1 file of %s under %s", binding, w.persist)
}

// databaseID is binding's database_id in the worker's environment of
// wrangler.jsonc ("" for another config or an unknown binding).
func (w *Worker) databaseID(binding string) string {
	if !w.redrive {
		return ""
	}
	cfg, err := wranglerconfig.Load(w.root)
	if err != nil {
		return ""
	}
	env, _ := cfg.Environment(w.env())
	for _, d := range env.D1Databases {
		if d.Binding == binding {
			return d.DatabaseID
		}
	}
	return ""
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

// DBOf opens the local D1 file of binding read-only (DB(t) is DB's), for
// asserting on the rows of a pipeline with its own database.
func (w *Worker) DBOf(t testing.TB, binding string) *sql.DB {
	t.Helper()
	if binding == config.SharedDatabase {
		return w.DB(t)
	}
	w.othersMu.Lock()
	defer w.othersMu.Unlock()
	if db, ok := w.others[binding]; ok {
		return db
	}
	db, err := w.openD1FileOf(binding, "mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	if w.others == nil {
		w.others = map[string]*sql.DB{}
	}
	w.others[binding] = db
	return db
}

// KeyColumn is the column of dlq_messages that holds a row's key: row_key
// in redrive's schema (migrations/0034), beer_id in the original worker's
// (bench/reference), which the benchmarks query side by side.
func (w *Worker) KeyColumn() string {
	if w.redrive {
		return "row_key"
	}
	return "beer_id"
}

// IntOf runs a query returning one integer in binding's database.
func (w *Worker) IntOf(t testing.TB, binding, query string, args ...any) int64 {
	t.Helper()
	var n sql.NullInt64
	if err := w.DBOf(t, binding).QueryRow(query, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %s: %v", binding, query, err)
	}
	return n.Int64
}

// ExecOf changes binding's local D1 through `wrangler d1 execute`, as Exec does DB's.
func (w *Worker) ExecOf(t testing.TB, binding, sqlText string) {
	t.Helper()
	w.execD1Of(t, binding, 2*time.Minute, "--command", sqlText)
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
	w.execD1Of(t, "beer-db", timeout, args...)
}

// execD1Of is execD1 on database (a binding or a database name).
func (w *Worker) execD1Of(t testing.TB, database string, timeout time.Duration, args ...string) {
	t.Helper()
	var out []byte
	err := Poll(timeout, func() (bool, error) {
		var err error
		out, err = w.wrangler(timeout, w.d1Args(append([]string{"execute", database, "--local", "--persist-to", w.persist}, args...)...)...)
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
