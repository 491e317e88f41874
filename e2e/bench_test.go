//go:build e2e

package e2e

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
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

// benchFigure is one measured figure of `make bench`.
type benchFigure struct {
	Name   string  `json:"name"`
	Unit   string  `json:"unit"`
	Median float64 `json:"median"`
	P90    float64 `json:"p90,omitempty"`
	N      int     `json:"n"`
	Target string  `json:"target,omitempty"`
	Note   string  `json:"note,omitempty"`
}

type benchReport struct {
	When    time.Time     `json:"when"`
	Machine string        `json:"machine"`
	Figures []benchFigure `json:"figures"`
}

func (r *benchReport) add(f benchFigure) {
	r.Figures = append(r.Figures, f)
	fmt.Fprintf(os.Stderr, "bench: %-44s median %10.2f %-6s p90 %10.2f  n=%d %s\n", f.Name, f.Median, f.Unit, f.P90, f.N, f.Note)
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

// benchRequest builds the i-th request of a measurement.
type benchRequest func(i int) (method, path string, body any)

func get(path string) benchRequest {
	return func(int) (string, string, any) { return http.MethodGet, path, nil }
}

// measure times n sequential admin requests (after 3 warm-up calls, which
// also use req) and reports milliseconds; every answer must be 200.
func (r *benchReport) measure(t *testing.T, w *Worker, name, target string, n int, req benchRequest) {
	t.Helper()
	ms := make([]float64, 0, n)
	for i := 0; i < n+3; i++ {
		method, path, body := req(i)
		start := time.Now()
		resp := w.Admin(t, method, path, body)
		el := time.Since(start)
		if resp.Status != http.StatusOK {
			t.Fatalf("%s: %d %s", name, resp.Status, resp.Raw)
		}
		if i >= 3 {
			ms = append(ms, float64(el.Microseconds())/1000)
		}
	}
	med, p90 := quantiles(ms)
	r.add(benchFigure{Name: name, Unit: "ms", Median: med, P90: p90, N: n, Target: target})
}

// TestBench is `make bench`: it measures the built worker in workerd and
// writes bench-results/latest.json. It only runs with REDRIVE_BENCH=1; the
// figures are reported, never asserted (speed is not a test).
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

	// Cold start: process start to the first 200 of /health, fresh state each time.
	var cold []float64
	for i := 0; i < 3; i++ {
		w, err := StartWorker(Options{})
		if err != nil {
			t.Fatal(err)
		}
		cold = append(cold, float64(w.ReadyAfter.Milliseconds()))
		w.Stop()
	}
	med, p90 := quantiles(cold)
	rep.add(benchFigure{Name: "cold start (wrangler dev to first 200)", Unit: "ms", Median: med, P90: p90, N: len(cold)})

	w, err := StartWorker(Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

	// Per-call overhead on an empty database.
	rep.measure(t, w, "GET /health", "", 200, get("/health"))
	rep.measure(t, w, "GET /admin/dlq?limit=1 (empty table)", "", 200, get("/admin/dlq?limit=1"))

	benchCapture(t, w, rep)
	benchAdminAt100k(t, w, rep)

	// Retention on a worker of its own, so that the churn of the figures
	// above (100k rows written and deleted) does not weigh on it.
	rw, err := StartWorker(Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer rw.Stop()
	benchRetention100k(t, rw, rep)

	out := filepath.Join(root, "bench-results")
	os.MkdirAll(out, 0o755)
	js, _ := json.MarshalIndent(rep, "", "  ")
	if err := os.WriteFile(filepath.Join(out, "latest.json"), js, 0o644); err != nil {
		t.Fatal(err)
	}
	var tbl strings.Builder
	fmt.Fprintf(&tbl, "\n| figure | median | p90 | n | target |\n| --- | --- | --- | --- | --- |\n")
	for _, f := range rep.Figures {
		fmt.Fprintf(&tbl, "| %s | %.2f %s | %.2f | %d | %s |\n", f.Name, f.Median, f.Unit, f.P90, f.N, f.Target)
	}
	fmt.Fprintln(os.Stderr, tbl.String())
	fmt.Fprintf(os.Stderr, "bench: wrote %s\n", filepath.Join(out, "latest.json"))
}

// benchCapture feeds the DLQ 2,000 messages in sendBatch calls of 100 (four
// senders at once) and measures stored messages per second, from the first
// stored batch to the last, over 3 runs after a warm-up; every run checks
// that each message is stored exactly once.
func benchCapture(t *testing.T, w *Worker, rep *benchReport) {
	const n = 2000
	var rates []float64
	for run := 0; run < 4; run++ {
		prefix := unique(fmt.Sprintf("bench-cap%d", run))
		chunks := make(chan []map[string]any, n/100)
		for i := 0; i < n; i += 100 {
			msgs := make([]map[string]any, 100)
			for j := range msgs {
				msgs[j] = map[string]any{"body": beerBody(t, fmt.Sprintf("%s-%04d", prefix, i+j), "Bench Beer", nil)}
			}
			chunks <- msgs
		}
		close(chunks)
		errs := make(chan error, 4)
		for range 4 {
			go func() {
				for msgs := range chunks {
					r, err := w.Do(http.MethodPost, "/__e2e/send", map[string]any{"queue": "beer-enrichment-dlq", "messages": msgs}, AdminHeaders())
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
		like := prefix + "-%"
		Eventually(t, 5*time.Minute, "bench capture stored", func() bool {
			return w.Int(t, `SELECT COUNT(*) FROM dlq_messages WHERE beer_id LIKE ?`, like) >= n
		})
		done := time.Now()
		if got := w.Int(t, `SELECT COUNT(DISTINCT message_id) FROM dlq_messages WHERE beer_id LIKE ?`, like); got != n {
			t.Fatalf("capture stored %d distinct messages of %d", got, n)
		}
		if got := w.Int(t, `SELECT COUNT(*) FROM dlq_messages WHERE beer_id LIKE ?`, like); got != n {
			t.Fatalf("capture stored %d rows for %d messages", got, n)
		}
		first := time.UnixMilli(w.Int(t, `SELECT MIN(failed_at) FROM dlq_messages WHERE beer_id LIKE ?`, like))
		if run > 0 { // run 0 warms up
			rates = append(rates, n/done.Sub(first).Seconds())
		}
	}
	med, p90 := quantiles(rates)
	rep.add(benchFigure{Name: "DLQ capture, batches of 100 (stored/s)", Unit: "msg/s", Median: med, P90: p90, N: len(rates),
		Target: ">= 4650 (5x the reference 800-930)", Note: "exactly-once verified"})
}

// benchAdminAt100k seeds 100,000 DLQ rows in one SQL statement (70% pending,
// 15% replayed, 10% acknowledged, 5% on another queue; 50 brewers, 12
// reasons, some repeat failures) and measures the admin routes over them.
func benchAdminAt100k(t *testing.T, w *Worker, rep *benchReport) {
	const n = 100_000
	w.Exec(t, "DELETE FROM dlq_messages")
	now := time.Now().UnixMilli()
	w.Exec(t, fmt.Sprintf(`INSERT INTO dlq_messages(message_id, beer_id, beer_name, brewer, failed_at, failure_count,
		failure_reason, failure_class, source_queue, status, replay_count, replayed_at, acknowledged_at, raw_message,
		last_message_id, first_failed_at, updated_at)
	WITH RECURSIVE seq(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM seq WHERE i + 1 < %[1]d)
	SELECT 'm-' || i, 'beer-' || i, 'Beer ' || i, 'Brewer ' || (i %% 50), %[2]d - (i * 26), 4,
		'transient: provider status ' || (500 + i %% 12), 'transient',
		CASE WHEN i %% 20 = 0 THEN 'other-queue' ELSE 'beer-enrichment' END,
		CASE WHEN i %% 20 < 14 THEN 'pending' WHEN i %% 20 < 17 THEN 'replayed' ELSE 'acknowledged' END,
		CASE WHEN i %% 97 = 0 THEN 1 + i %% 4 ELSE 0 END,
		CASE WHEN i %% 20 BETWEEN 14 AND 16 THEN %[2]d - (i * 13) END,
		CASE WHEN i %% 20 >= 17 THEN %[2]d - (i * 13) END,
		json_object('beer_id', 'beer-' || i, 'beer_name', 'Beer ' || i, 'brewer', 'Brewer ' || (i %% 50)),
		'm-' || i, %[2]d - (i * 26), %[2]d
	FROM seq`, n, now))
	if got := w.Int(t, `SELECT COUNT(*) FROM dlq_messages`); got != n {
		t.Fatalf("seeded %d rows", got)
	}

	rep.measure(t, w, "list first page @100k (GET /admin/dlq)", "<= 7.8 ms (reference)", 50, get("/admin/dlq"))
	rep.measure(t, w, "list filtered page @100k (brewer text + status)", "", 30, get("/admin/dlq?status=all&q=Brewer%2017&limit=100"))
	rep.measure(t, w, "list filtered page @100k (beer_id)", "", 50, get("/admin/dlq?status=all&beer_id=beer-4242"))
	rep.measure(t, w, "stats @100k (GET /admin/dlq/stats)", "<= 84 ms (reference)", 30, get("/admin/dlq/stats"))

	// Full pagination: every row once, 100 per page.
	var pageMS []float64
	seen, cursor, total := 0, "", time.Now()
	for {
		path := "/admin/dlq?status=all&limit=100"
		if cursor != "" {
			path += "&cursor=" + url.QueryEscape(cursor)
		}
		start := time.Now()
		r := w.Admin(t, http.MethodGet, path, nil)
		pageMS = append(pageMS, float64(time.Since(start).Microseconds())/1000)
		var page struct {
			Messages   []json.RawMessage `json:"messages"`
			NextCursor *string           `json:"next_cursor"`
			HasMore    bool              `json:"has_more"`
		}
		if r.Status != http.StatusOK {
			t.Fatalf("pagination: %d %s", r.Status, r.Raw)
		}
		r.Decode(t, &page)
		seen += len(page.Messages)
		if !page.HasMore || page.NextCursor == nil {
			break
		}
		cursor = *page.NextCursor
	}
	if seen != n {
		t.Fatalf("full pagination saw %d rows of %d", seen, n)
	}
	med, p90 := quantiles(pageMS)
	rep.add(benchFigure{Name: "full pagination @100k (100/page)", Unit: "ms/page", Median: med, P90: p90, N: len(pageMS),
		Target: "<= 13.6 ms/page (reference)", Note: fmt.Sprintf("all %d rows in %s", seen, time.Since(total).Round(time.Millisecond))})

	// Pending main-queue rows have i %% 20 in 1..13 and id i+1; each call takes fresh ones.
	pending := func(k int) int64 { return int64((k/13)*20 + 1 + k%13 + 1) }
	rep.measure(t, w, "replay 50 ids @100k", "<= 38 ms (reference)", 20, func(c int) (string, string, any) {
		ids := make([]int64, 50)
		for j := range ids {
			ids[j] = pending(c*50 + j)
		}
		// The delay keeps the consumer idle while the bench runs.
		return http.MethodPost, "/admin/dlq/replay", map[string]any{"ids": ids, "delay_seconds": 43200}
	})
	rep.measure(t, w, "acknowledge 100 ids @100k", "works (reference fails at 100; 99 ids: 7 ms)", 20, func(c int) (string, string, any) {
		ids := make([]int64, 100)
		for j := range ids {
			ids[j] = pending(10_000 + c*100 + j)
		}
		return http.MethodPost, "/admin/dlq/acknowledge", map[string]any{"ids": ids}
	})
	rep.measure(t, w, "bulk replay dry run over all pending @100k", "", 10, func(int) (string, string, any) {
		return http.MethodPost, "/admin/dlq/replay", map[string]any{"filter": map[string]any{}, "dry_run": true}
	})
}

// benchRetention100k seeds 100,000 expired terminal rows and fires the daily
// cron until the retention job has deleted them all.
func benchRetention100k(t *testing.T, w *Worker, rep *benchReport) {
	const rows = 100_000
	var secs []float64
	for run := 0; run < 3; run++ {
		w.Exec(t, "DELETE FROM dlq_messages")
		p := unique("bench-ret")
		at := cronTime()
		w.Exec(t, fmt.Sprintf(`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < %[3]d)
			INSERT INTO dlq_messages(message_id, last_message_id, beer_id, status, failed_at, acknowledged_at, replayed_at)
			SELECT '%[1]s-' || i, '', '%[1]s-' || (i %% 5000), CASE WHEN i %% 2 = 0 THEN 'acknowledged' ELSE 'replayed' END,
				%[2]d - 61 * 86400000, %[2]d - 60 * 86400000, %[2]d - 60 * 86400000 FROM n`, p, at.UnixMilli(), rows))
		if got := w.Int(t, `SELECT COUNT(*) FROM dlq_messages`); got != rows {
			t.Fatalf("seeded %d rows", got)
		}
		// The scheduled handler answers when the run is over: time the calls.
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
	}
	med, p90 := quantiles(secs)
	rep.add(benchFigure{Name: "retention of 100k expired rows (daily cron)", Unit: "s", Median: med, P90: p90, N: len(secs),
		Target: "<= 1.3 s (reference)", Note: "time of the cron calls (the handler returns when the run is done)"})
}
