//go:build e2e

package e2e

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/internal/sqlitetest"
)

// referenceOptions start the original TypeScript worker (bench/reference: the
// original D1 dead-letter plan's code) instead of redrive: same credentials, its own config, local D1
// and queues. It has no /health, so readiness is its empty first list page.
var referenceOptions = Options{Config: "bench/reference/wrangler.jsonc", ReadyPath: "/admin/dlq?limit=1"}

// startPair starts redrive and the original worker side by side, each with
// fresh local state, and stops both when the test ends.
func startPair(t *testing.T) (w, ref *Worker) {
	t.Helper()
	w, err := StartWorker(Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	if ref, err = StartWorker(referenceOptions); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ref.Stop)
	return w, ref
}

// referenceCleanupCron is the reference's cleanup cron (its daily auto-cleanup at 3 AM UTC).
const referenceCleanupCron = "0 3 * * *"

// benchSide is one worker's measurement of a figure.
type benchSide struct {
	Median float64 `json:"median"`
	P90    float64 `json:"p90,omitempty"`
	N      int     `json:"n"`
	Note   string  `json:"note,omitempty"`
	// Failed says why the worker could not do what was asked (the figure's
	// median is then the time to fail).
	Failed string `json:"failed,omitempty"`
}

// benchFigure is one measured figure of `make bench`: redrive's side in the
// top-level fields, the reference's (when it has an equivalent) beside it.
type benchFigure struct {
	Name   string  `json:"name"`
	Unit   string  `json:"unit"`
	Median float64 `json:"median"`
	P90    float64 `json:"p90,omitempty"`
	N      int     `json:"n"`
	Target string  `json:"target,omitempty"`
	Note   string  `json:"note,omitempty"`
	// Reference is the same figure for the original TypeScript worker
	// (bench/reference), measured in the same run on this machine with the
	// same data and requests, alternating with redrive.
	Reference *benchSide `json:"reference,omitempty"`
	// Ratio is how many times better redrive did: reference time / redrive
	// time, or redrive rate / reference rate. 0 when there is nothing to compare.
	Ratio float64 `json:"ratio,omitempty"`
}

type benchReport struct {
	When    time.Time     `json:"when"`
	Machine string        `json:"machine"`
	Figures []benchFigure `json:"figures"`
	// Rows is D1's rows read and written per operation at 100,000 and
	// 1,000,000 rows, redrive beside the original's statements (bench_rows_test.go).
	Rows []rowsTable `json:"rows,omitempty"`
}

func (r *benchReport) add(f benchFigure) {
	if ref := f.Reference; ref != nil && ref.Failed == "" && ref.Median > 0 && f.Median > 0 {
		if f.Unit == "msg/s" {
			f.Ratio = f.Median / ref.Median
		} else {
			f.Ratio = ref.Median / f.Median
		}
	}
	r.Figures = append(r.Figures, f)
	line := fmt.Sprintf("bench: %-48s median %10.2f %-7s p90 %10.2f  n=%d %s", f.Name, f.Median, f.Unit, f.P90, f.N, f.Note)
	if ref := f.Reference; ref != nil {
		line += fmt.Sprintf(" | reference median %.2f p90 %.2f n=%d %s%s", ref.Median, ref.P90, ref.N, ref.Failed, ref.Note)
		if f.Ratio > 0 {
			line += fmt.Sprintf(" | ratio %.2fx", f.Ratio)
		}
	}
	fmt.Fprintln(os.Stderr, line)
}

// table renders the report as a markdown table.
func (r *benchReport) table() string {
	var b strings.Builder
	b.WriteString("\n| figure | redrive median | p90 | reference median (this machine) | ratio | seed reference figure/target |\n")
	b.WriteString("| --- | --- | --- | --- | --- | --- |\n")
	for _, f := range r.Figures {
		ref, ratio := "—", "—"
		if s := f.Reference; s != nil {
			ref = fmt.Sprintf("%.2f %s", s.Median, f.Unit)
			if s.Failed != "" {
				ref = fmt.Sprintf("fails: %s (%.2f %s to fail)", s.Failed, s.Median, f.Unit)
			}
		}
		if f.Ratio > 0 {
			ratio = fmt.Sprintf("%.2f×", f.Ratio)
		}
		p90 := "—"
		if f.P90 > 0 {
			p90 = fmt.Sprintf("%.2f", f.P90)
		}
		fmt.Fprintf(&b, "| %s | %.2f %s | %s | %s | %s | %s |\n", f.Name, f.Median, f.Unit, p90, ref, ratio, f.Target)
	}
	b.WriteString("\nratio: how many times faster redrive is than the reference on this machine in this run (reference ms ÷ redrive ms; redrive msg/s ÷ reference msg/s).\n")
	return b.String()
}

// quantiles returns the median and p90 of xs.
func quantiles(xs []float64) (median, p90 float64) {
	if len(xs) == 0 {
		return 0, 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	at := func(q float64) float64 { return s[int(q*float64(len(s)-1)+0.5)] }
	return at(0.5), at(0.9)
}

// side summarises one worker's samples.
func side(xs []float64, note string) *benchSide {
	med, p90 := quantiles(xs)
	return &benchSide{Median: med, P90: p90, N: len(xs), Note: note}
}

// benchRequest builds the i-th request of a measurement.
type benchRequest func(i int) (method, path string, body any)

func get(path string) benchRequest {
	return func(int) (string, string, any) { return http.MethodGet, path, nil }
}

// benchCheck accepts or rejects one answer; an error fails the bench.
type benchCheck func(r *Response) error

func status200(r *Response) error {
	if r.Status != http.StatusOK {
		return fmt.Errorf("%d %s", r.Status, r.Raw)
	}
	return nil
}

// benchTarget is one worker's part of a paired measurement.
type benchTarget struct {
	w     *Worker
	req   benchRequest
	check benchCheck // status200 when nil
	// mayFail records a failed check as the worker's failure instead of
	// failing the bench (the reference's known defects).
	mayFail bool
}

// timeCall sends one admin request and returns its wall time in
// milliseconds and, when mayFail, what was wrong with the answer.
func timeCall(t *testing.T, name string, bt benchTarget, i int) (float64, error) {
	t.Helper()
	method, path, body := bt.req(i)
	resp := bt.w.Admin(t, method, path, body)
	// The exchange alone: redrive's answers are also checked against the
	// API document in this process, which is not the worker's time.
	el := float64(resp.Elapsed.Microseconds()) / 1000
	check := bt.check
	if check == nil {
		check = status200
	}
	err := check(resp)
	if err != nil && !bt.mayFail {
		t.Fatalf("%s (%s): %v", name, bt.w.URL, err)
	}
	return el, err
}

// measure times n sequential admin requests (after 3 warm-up calls, which
// also use req) and reports milliseconds; every answer must be 200.
func (r *benchReport) measure(t *testing.T, w *Worker, name, target string, n int, req benchRequest) {
	t.Helper()
	ms := make([]float64, 0, n)
	for i := 0; i < n+3; i++ {
		el, _ := timeCall(t, name, benchTarget{w: w, req: req}, i)
		if i >= 3 {
			ms = append(ms, el)
		}
	}
	med, p90 := quantiles(ms)
	r.add(benchFigure{Name: name, Unit: "ms", Median: med, P90: p90, N: n, Target: target})
}

// measurePair is measure for redrive and the reference at once: request i
// goes to both, one after the other (which one first alternates), so that
// the machine's noise hits both alike. The reference's first failing check
// is recorded as its failure when ref.mayFail (its median is then the time
// to fail).
func (r *benchReport) measurePair(t *testing.T, name, target string, n int, red, ref benchTarget) {
	t.Helper()
	var redMS, refMS []float64
	failed, failures := "", 0
	for i := 0; i < n+3; i++ {
		targets := []benchTarget{red, ref}
		if i%2 == 1 {
			targets = []benchTarget{ref, red}
		}
		for _, bt := range targets {
			el, err := timeCall(t, name, bt, i)
			if err != nil {
				failures++
				failed = err.Error()
			}
			if i < 3 {
				continue
			}
			if bt.w == red.w {
				redMS = append(redMS, el)
			} else {
				refMS = append(refMS, el)
			}
		}
	}
	f := benchFigure{Name: name, Unit: "ms", Target: target, N: len(redMS), Reference: side(refMS, "")}
	f.Median, f.P90 = quantiles(redMS)
	if failures > 0 {
		f.Reference.Failed = fmt.Sprintf("%d of %d calls, %s", failures, n+3, failed)
	}
	r.add(f)
}

// TestBench is `make bench`: it measures the built worker in workerd and,
// side by side with the same data and requests, the original TypeScript
// worker (bench/reference), and writes bench-results/latest.json. It only
// runs with REDRIVE_BENCH=1; the figures are reported, never asserted
// (speed is not a test).
func TestBench(t *testing.T) {
	if os.Getenv("REDRIVE_BENCH") == "" {
		t.Skip("benchmarks run with `make bench` (REDRIVE_BENCH=1)")
	}
	root, _ := sqlitetest.Root()
	rep := &benchReport{When: time.Now().UTC(), Machine: fmt.Sprintf("%s/%s, %d CPUs, %s", runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.Version())}

	// Size of the wasm module, raw and gzipped (what the Workers limit counts).
	wasm, err := os.ReadFile(filepath.Join(root, "build", "app.wasm"))
	if err != nil {
		t.Fatal(err)
	}
	var gz bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&gz, gzip.BestCompression)
	zw.Write(wasm)
	zw.Close()
	rep.add(benchFigure{Name: "wasm size raw", Unit: "MB", Median: float64(len(wasm)) / 1e6, N: 1})
	rep.add(benchFigure{Name: "wasm size gzip", Unit: "MB", Median: float64(gz.Len()) / 1e6, N: 1, Target: "< 3 MB"})

	// Cold start: process start to the first 200 (redrive: /health; the
	// reference: its empty first list page), fresh state each time, alternating.
	var cold, refCold []float64
	for i := 0; i < 3; i++ {
		for _, opts := range []Options{{}, referenceOptions} {
			w, err := StartWorker(opts)
			if err != nil {
				t.Fatal(err)
			}
			if opts.Config == "" {
				cold = append(cold, float64(w.ReadyAfter.Milliseconds()))
			} else {
				refCold = append(refCold, float64(w.ReadyAfter.Milliseconds()))
			}
			w.Stop()
		}
	}
	med, p90 := quantiles(cold)
	rep.add(benchFigure{Name: "cold start (wrangler dev to first 200)", Unit: "ms", Median: med, P90: p90, N: len(cold), Reference: side(refCold, "first 200 of GET /admin/dlq?limit=1 (it has no /health)")})

	w, ref := startPair(t)

	// Per-call overhead on an empty database.
	rep.measure(t, w, "GET /health", "", 200, get("/health"))
	rep.measurePair(t, "GET /admin/dlq?limit=1 (empty table)", "", 200,
		benchTarget{w: w, req: get("/admin/dlq?limit=1")}, benchTarget{w: ref, req: get("/admin/dlq?limit=1")})

	benchCapture(t, w, ref, rep)
	benchAdminAt100k(t, w, ref, rep)

	// Retention on workers of their own, so that the churn of the figures
	// above (100k rows written and deleted) does not weigh on it.
	rw, err := StartWorker(Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer rw.Stop()
	rref, err := StartWorker(referenceOptions)
	if err != nil {
		t.Fatal(err)
	}
	defer rref.Stop()
	benchRetention100k(t, rw, rref, rep)

	// D1 rows read and written per operation, at 100,000 and 1,000,000 rows.
	rep.Rows = benchRows(t, 100_000, 1_000_000)
	writeRows(t, rep.Rows)

	out := filepath.Join(root, "bench-results")
	os.MkdirAll(out, 0o755)
	js, _ := json.MarshalIndent(rep, "", "  ")
	if err := os.WriteFile(filepath.Join(out, "latest.json"), js, 0o644); err != nil {
		t.Fatal(err)
	}
	fmt.Fprintln(os.Stderr, rep.table())
	fmt.Fprintf(os.Stderr, "bench: wrote %s\n", filepath.Join(out, "latest.json"))
}

// pollFast is Poll with a 10 ms tick, for waits whose end is being timed.
func pollFast(timeout time.Duration, cond func() bool) error {
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			return fmt.Errorf("condition not met within %s", timeout)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return nil
}

// captureDelay holds back the messages of a capture run until every send
// has been made, so that the consumer drains a backlog of them (as after
// an outage or a failing deploy) instead of racing the harness's sends,
// which go through the measured worker's own /__dev/send and compete with
// its consumer for the same isolate.
const captureDelay = 3 * time.Second

// captureRun feeds w's DLQ n messages in sendBatch calls of 100 (four
// senders at once, each message delayed by captureDelay) through the
// /__dev/send route both workers have, waits until all are stored, checks
// that each is stored exactly once and returns stored messages per second,
// from the first stored message to the last.
func captureRun(t *testing.T, w *Worker, prefix string, n int) float64 {
	t.Helper()
	chunks := make(chan []map[string]any, n/100)
	for i := 0; i < n; i += 100 {
		msgs := make([]map[string]any, 100)
		for j := range msgs {
			msgs[j] = map[string]any{"body": beerBody(t, fmt.Sprintf("%s-%04d", prefix, i+j), "Bench Beer", nil), "delay_seconds": int(captureDelay / time.Second)}
		}
		chunks <- msgs
	}
	close(chunks)
	errs := make(chan error, 4)
	for range 4 {
		go func() {
			for msgs := range chunks {
				r, err := w.Do(http.MethodPost, "/__dev/send", map[string]any{"queue": "beer-enrichment-dlq", "messages": msgs}, AdminHeaders())
				if err == nil && r.Status != http.StatusOK {
					err = fmt.Errorf("send: %d %s", r.Status, r.Raw)
				}
				if err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range 4 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	sent := time.Now()
	like := prefix + "-%"
	if err := pollFast(5*time.Minute, func() bool {
		return w.Int(t, `SELECT COUNT(*) FROM dlq_messages WHERE `+w.KeyColumn()+` LIKE ?`, like) >= int64(n)
	}); err != nil {
		t.Fatalf("capture on %s: %v", w.URL, err)
	}
	done := time.Now()
	for what, q := range map[string]string{
		"rows":                  `SELECT COUNT(*) FROM dlq_messages WHERE row_key LIKE ?`,
		"distinct message ids":  `SELECT COUNT(DISTINCT message_id) FROM dlq_messages WHERE row_key LIKE ?`,
		"distinct message body": `SELECT COUNT(DISTINCT row_key) FROM dlq_messages WHERE row_key LIKE ?`,
	} {
		if got := w.Int(t, strings.ReplaceAll(q, "row_key", w.KeyColumn()), like); got != int64(n) {
			t.Fatalf("capture on %s stored %d %s for %d messages", w.URL, got, what, n)
		}
	}
	first := time.UnixMilli(w.Int(t, `SELECT MIN(failed_at) FROM dlq_messages WHERE `+w.KeyColumn()+` LIKE ?`, like))
	if first.Before(sent) {
		t.Fatalf("capture on %s: the first message was stored %s before the last send returned: captureDelay (%s) is too short for the sends",
			w.URL, sent.Sub(first), captureDelay)
	}
	return float64(n) / done.Sub(first).Seconds()
}

// benchCapture measures DLQ capture on both workers: 2,000 messages per run,
// 3 runs each after a warm-up of 500, alternating redrive and the reference.
func benchCapture(t *testing.T, w, ref *Worker, rep *benchReport) {
	var rates, refRates []float64
	for run := 0; run < 4; run++ {
		workers := []*Worker{w, ref}
		if run%2 == 1 {
			workers = []*Worker{ref, w}
		}
		n := 2000
		if run == 0 {
			n = 500
		}
		for _, x := range workers {
			rate := captureRun(t, x, unique(fmt.Sprintf("bench-cap%d", run)), n)
			if run == 0 { // warm-up
				continue
			}
			if x == w {
				rates = append(rates, rate)
			} else {
				refRates = append(refRates, rate)
			}
		}
	}
	med, p90 := quantiles(rates)
	note := fmt.Sprintf("a backlog of 2,000 drained (sent %s ahead); exactly-once verified", captureDelay)
	rep.add(benchFigure{Name: "DLQ capture, batches of 100 (stored/s)", Unit: "msg/s", Median: med, P90: p90, N: len(rates),
		Target: ">= 10x the reference (issue 15)", Note: note,
		Reference: side(refRates, note)})
}

// seedAdminSQL inserts n DLQ rows in one statement (70% pending, 15%
// replayed, 10% acknowledged, 5% on another queue; 50 brewers, 12 reasons,
// some repeat failures). Row i gets id firstID+i on a table whose rows were
// deleted (ids are AUTOINCREMENT). The reference's table is its own
// dlq_messages (bench/reference/migrations): the same rows without redrive's
// additional columns.
func seedAdminSQL(n int, now int64, redrive bool) string {
	cols := `message_id, beer_id, beer_name, brewer, failed_at, failure_count, failure_reason, source_queue, status,
		replay_count, replayed_at, acknowledged_at, raw_message`
	vals := `'m-' || i, 'beer-' || i, 'Beer ' || i, 'Brewer ' || (i % 50), %[2]d - (i * 26), 4,
		'transient: provider status ' || (500 + i % 12),
		CASE WHEN i % 20 = 0 THEN 'other-queue' ELSE 'beer-enrichment' END,
		CASE WHEN i % 20 < 14 THEN 'pending' WHEN i % 20 < 17 THEN 'replayed' ELSE 'acknowledged' END,
		CASE WHEN i % 97 = 0 THEN 1 + i % 4 ELSE 0 END,
		CASE WHEN i % 20 BETWEEN 14 AND 16 THEN %[2]d - (i * 13) END,
		CASE WHEN i % 20 >= 17 THEN %[2]d - (i * 13) END,
		json_object('beer_id', 'beer-' || i, 'beer_name', 'Beer ' || i, 'brewer', 'Brewer ' || (i % 50))`
	if redrive {
		cols = strings.Replace(cols, "beer_id, beer_name, brewer", "row_key, label_1, label_2", 1)
		cols += `, failure_class, last_message_id, first_failed_at, updated_at`
		vals += `, 'transient', 'm-' || i, %[2]d - (i * 26), %[2]d`
	}
	vals = strings.ReplaceAll(vals, "% ", "%% ")
	return fmt.Sprintf(`INSERT INTO dlq_messages(`+cols+`)
	WITH RECURSIVE seq(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM seq WHERE i + 1 < %[1]d)
	SELECT `+vals+` FROM seq`, n, now)
}

// seedAdmin seeds n rows on w and returns the id of row 0 (ids run on from
// earlier rows: the tables are AUTOINCREMENT).
func seedAdmin(t *testing.T, w *Worker, n int, now int64, redrive bool) int64 {
	t.Helper()
	w.Exec(t, "DELETE FROM dlq_messages; "+seedAdminSQL(n, now, redrive))
	if got := w.Int(t, `SELECT COUNT(*) FROM dlq_messages`); got != int64(n) {
		t.Fatalf("seeded %d rows on %s", got, w.URL)
	}
	base := w.Int(t, `SELECT MIN(id) FROM dlq_messages`)
	if bad := w.Int(t, `SELECT COUNT(*) FROM dlq_messages WHERE id - ? != CAST(substr(message_id, 3) AS INTEGER)`, base); bad != 0 {
		t.Fatalf("seeded ids on %s are not consecutive from %d (%d off)", w.URL, base, bad)
	}
	return base
}

// countIs checks that an answer is 200 and its data field key is want.
func countIs(key string, want int) benchCheck {
	return func(r *Response) error {
		if r.Status != http.StatusOK {
			msg := strings.TrimSpace(string(r.Raw))
			if r.Error != nil {
				msg = r.Error.Code + ": " + r.Error.Message
			}
			return fmt.Errorf("HTTP %d %s", r.Status, msg)
		}
		var d map[string]any
		if err := json.Unmarshal(r.Data, &d); err != nil {
			return fmt.Errorf("decode: %v: %s", err, r.Raw)
		}
		if got, _ := d[key].(float64); int(got) != want {
			return fmt.Errorf("%s = %v, want %d: %s", key, d[key], want, r.Raw)
		}
		return nil
	}
}

// benchAdminAt100k seeds the same 100,000 DLQ rows on both workers and
// measures the admin routes over them, alternating request by request.
func benchAdminAt100k(t *testing.T, w, ref *Worker, rep *benchReport) {
	const n = 100_000
	now := time.Now().UnixMilli()
	base := seedAdmin(t, w, n, now, true)
	refBase := seedAdmin(t, ref, n, now, false)
	pair := func(name, target string, count int, path string) {
		rep.measurePair(t, name, target, count, benchTarget{w: w, req: get(path)}, benchTarget{w: ref, req: get(path)})
	}

	pair("list first page @100k (GET /admin/dlq)", "<= 7.8 ms (reference)", 50, "/admin/dlq")
	rep.measure(t, w, "list filtered page @100k (brewer text + status)", "", 30, get("/admin/dlq?status=all&q=Brewer%2017&limit=100"))
	pair("list filtered page @100k (beer_id)", "", 50, "/admin/dlq?status=all&beer_id=beer-4242")
	pair("stats @100k (GET /admin/dlq/stats)", "<= 84 ms (reference)", 30, "/admin/dlq/stats")

	benchPagination(t, w, ref, n, rep)

	// Pending main-queue rows have i % 20 in 1..13; each call takes fresh ones.
	pending := func(first int64, k int) int64 { return first + int64((k/13)*20+1+k%13) }
	ids := func(first int64, from, count int) []int64 {
		out := make([]int64, count)
		for j := range out {
			out[j] = pending(first, from+j)
		}
		return out
	}
	replay := func(first int64) benchRequest {
		return func(c int) (string, string, any) {
			// The delay keeps the consumers idle while the bench runs.
			return http.MethodPost, "/admin/dlq/replay", map[string]any{"ids": ids(first, c*50, 50), "delay_seconds": 43200}
		}
	}
	rep.measurePair(t, "replay 50 ids @100k", "<= 38 ms (reference)", 20,
		benchTarget{w: w, req: replay(base), check: countIs("replayed_count", 50)},
		benchTarget{w: ref, req: replay(refBase), check: countIs("replayed_count", 50)})
	ack := func(first int64, from, count int) benchRequest {
		return func(c int) (string, string, any) {
			return http.MethodPost, "/admin/dlq/acknowledge", map[string]any{"ids": ids(first, from+c*count, count)}
		}
	}
	rep.measurePair(t, "acknowledge 100 ids @100k", "works (reference fails at 100; 99 ids: 7 ms)", 20,
		benchTarget{w: w, req: ack(base, 10_000, 100), check: countIs("acknowledged_count", 100)},
		benchTarget{w: ref, req: ack(refBase, 10_000, 100), check: countIs("acknowledged_count", 100), mayFail: true})
	rep.measurePair(t, "acknowledge 99 ids @100k", "7 ms (reference)", 20,
		benchTarget{w: w, req: ack(base, 20_000, 99), check: countIs("acknowledged_count", 99)},
		benchTarget{w: ref, req: ack(refBase, 20_000, 99), check: countIs("acknowledged_count", 99)})
	rep.measure(t, w, "bulk replay dry run over all pending @100k", "", 10, func(int) (string, string, any) {
		return http.MethodPost, "/admin/dlq/replay", map[string]any{"filter": map[string]any{}, "dry_run": true}
	})
}

// benchPagination walks every row of both workers once, 100 per page,
// alternating page by page, and checks that each walk saw all n rows.
func benchPagination(t *testing.T, w, ref *Worker, n int, rep *benchReport) {
	type walk struct {
		w      *Worker
		cursor string
		seen   int
		done   bool
		ms     []float64
		took   time.Duration
	}
	walks := []*walk{{w: w}, {w: ref}}
	for page := 0; !walks[0].done || !walks[1].done; page++ {
		for k := range walks {
			x := walks[(k+page)%2]
			if x.done {
				continue
			}
			path := "/admin/dlq?status=all&limit=100"
			if x.cursor != "" {
				path += "&cursor=" + url.QueryEscape(x.cursor)
			}
			r := x.w.Admin(t, http.MethodGet, path, nil)
			el := r.Elapsed // the exchange, without the contract check
			x.took += el
			x.ms = append(x.ms, float64(el.Microseconds())/1000)
			if r.Status != http.StatusOK {
				t.Fatalf("pagination on %s: %d %s", x.w.URL, r.Status, r.Raw)
			}
			var p struct {
				Messages   []json.RawMessage `json:"messages"`
				NextCursor *string           `json:"next_cursor"`
				HasMore    bool              `json:"has_more"`
			}
			r.Decode(t, &p)
			x.seen += len(p.Messages)
			if !p.HasMore || p.NextCursor == nil {
				x.done = true
				continue
			}
			x.cursor = *p.NextCursor
		}
	}
	for _, x := range walks {
		if x.seen != n {
			t.Fatalf("full pagination on %s saw %d rows of %d", x.w.URL, x.seen, n)
		}
	}
	f := benchFigure{Name: "full pagination @100k (100/page)", Unit: "ms/page", N: len(walks[0].ms),
		Target: "<= 13.6 ms/page (reference)", Note: fmt.Sprintf("all %d rows in %s", walks[0].seen, walks[0].took.Round(time.Millisecond)),
		Reference: side(walks[1].ms, fmt.Sprintf("all %d rows in %s", walks[1].seen, walks[1].took.Round(time.Millisecond)))}
	f.Median, f.P90 = quantiles(walks[0].ms)
	rep.add(f)
}

// seedExpiredSQL inserts rows expired terminal rows (half acknowledged, half
// replayed, 60 days ago, 5,000 beer ids) for the retention figure; redrive's
// table gets its last_message_id too.
func seedExpiredSQL(prefix string, at int64, rows int, redrive bool) string {
	cols, vals := "message_id, beer_id", "'%[1]s-' || i, '%[1]s-' || (i %% 5000)"
	if redrive {
		cols, vals = "message_id, last_message_id, row_key", "'%[1]s-' || i, '', '%[1]s-' || (i %% 5000)"
	}
	return fmt.Sprintf(`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < %[3]d)
		INSERT INTO dlq_messages(`+cols+`, status, failed_at, acknowledged_at, replayed_at)
		SELECT `+vals+`, CASE WHEN i %% 2 = 0 THEN 'acknowledged' ELSE 'replayed' END,
			%[2]d - 61 * 86400000, %[2]d - 60 * 86400000, %[2]d - 60 * 86400000 FROM n`, prefix, at, rows)
}

// benchRetention100k seeds 100,000 expired terminal rows on each worker and
// times its scheduled cleanup until they are gone, 3 runs each, alternating:
// redrive's daily cron (the scheduled handler answers when its run is over;
// fired again while rows remain), the reference's own daily auto-cleanup through
// /__scheduled (it awaits the cleanup; the time runs until no row is left).
func benchRetention100k(t *testing.T, w, ref *Worker, rep *benchReport) {
	const rows = 100_000
	var secs, refSecs []float64
	seed := func(x *Worker, at time.Time, redrive bool) {
		x.Exec(t, "DELETE FROM dlq_messages; "+seedExpiredSQL(unique("bench-ret"), at.UnixMilli(), rows, redrive))
		if got := x.Int(t, `SELECT COUNT(*) FROM dlq_messages`); got != rows {
			t.Fatalf("seeded %d rows on %s", got, x.URL)
		}
	}
	for run := 0; run < 3; run++ {
		// redrive
		at := cronTime()
		seed(w, at, true)
		var took time.Duration
		var runs int
		for w.Int(t, `SELECT COUNT(*) FROM dlq_messages`) > 0 {
			at = at.Add(time.Second)
			start := time.Now()
			w.FireCron(t, cronDaily, at)
			took += time.Since(start)
			runs++
			if runs > 10 {
				t.Fatalf("retention left %d rows after %d runs", w.Int(t, `SELECT COUNT(*) FROM dlq_messages`), runs)
			}
		}
		secs = append(secs, took.Seconds())

		// reference
		seed(ref, time.Now(), false)
		start := time.Now()
		resp, err := http.Get(ref.URL + "/__scheduled?cron=" + url.QueryEscape(referenceCleanupCron))
		if err != nil {
			t.Fatalf("reference cleanup: %v", err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("reference cleanup: %d %s", resp.StatusCode, body)
		}
		if err := pollFast(2*time.Minute, func() bool { return ref.Int(t, `SELECT COUNT(*) FROM dlq_messages`) == 0 }); err != nil {
			t.Fatalf("reference cleanup left %d rows: %v", ref.Int(t, `SELECT COUNT(*) FROM dlq_messages`), err)
		}
		refSecs = append(refSecs, time.Since(start).Seconds())
	}
	med, p90 := quantiles(secs)
	rep.add(benchFigure{Name: "retention of 100k expired rows (daily cron)", Unit: "s", Median: med, P90: p90, N: len(secs),
		Target: "<= 1.3 s (reference)", Note: "time of the cron calls (the handler returns when the run is done)",
		Reference: side(refSecs, "seed §5 cleanup via /__scheduled, until no row is left")})
}
