//go:build e2e

package e2e

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"net/http"
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

// latency times n sequential requests and reports milliseconds.
func (r *benchReport) latency(t *testing.T, w *Worker, name, target string, n int, method, path string, body func(i int) any, headers map[string]string, want int) {
	t.Helper()
	ms := make([]float64, 0, n)
	for i := 0; i < n; i++ {
		var b any
		if body != nil {
			b = body(i)
		}
		start := time.Now()
		resp, err := w.Do(method, path, b, headers)
		el := time.Since(start)
		if err != nil || resp.Status != want {
			t.Fatalf("%s: %v %v", name, err, resp)
		}
		ms = append(ms, float64(el.Microseconds())/1000)
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

	// Per-call overhead.
	rep.latency(t, w, "GET /health", "", 200, http.MethodGet, "/health", nil, nil, http.StatusOK)
	rep.latency(t, w, "GET /admin/dlq?limit=1 (empty table)", "", 200, http.MethodGet, "/admin/dlq?limit=1", nil, AdminHeaders(), w.routeStatus(t, "/admin/dlq?limit=1"))

	benchCapture(t, w, rep)

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

// routeStatus is 200 when a route exists, so the bench still runs (and says
// so) on a build without it.
func (w *Worker) routeStatus(t *testing.T, path string) int {
	r := w.Admin(t, http.MethodGet, path, nil)
	return r.Status
}

// benchCapture feeds the DLQ batches of 100 and measures stored messages per
// second until every message is in dlq_messages exactly once.
func benchCapture(t *testing.T, w *Worker, rep *benchReport) {
	const perRun = 2000
	var rates []float64
	for run := 0; run < 3; run++ {
		prefix := fmt.Sprintf("bench-cap-%d-%d", run, time.Now().UnixNano())
		bodies := make([]string, perRun)
		for i := range bodies {
			bodies[i] = fmt.Sprintf(`{"beer_id":"%s-%d","beer_name":"Bench %d","brewer":"Bench Brewing"}`, prefix, i, i)
		}
		start := time.Now()
		w.Send(t, "beer-enrichment-dlq", bodies...)
		Eventually(t, 5*time.Minute, "bench capture stored", func() bool {
			return w.Int(t, `SELECT COUNT(*) FROM dlq_messages WHERE beer_id LIKE ?`, prefix+"-%") >= perRun
		})
		el := time.Since(start)
		if n := w.Int(t, `SELECT COUNT(DISTINCT beer_id) FROM dlq_messages WHERE beer_id LIKE ?`, prefix+"-%"); n != perRun {
			t.Fatalf("capture stored %d distinct of %d", n, perRun)
		}
		if n := w.Int(t, `SELECT COUNT(*) FROM dlq_messages WHERE beer_id LIKE ?`, prefix+"-%"); n != perRun {
			t.Fatalf("capture stored %d rows for %d messages", n, perRun)
		}
		rates = append(rates, perRun/el.Seconds())
	}
	med, p90 := quantiles(rates)
	rep.add(benchFigure{Name: "DLQ capture, batches of 100 (send to stored)", Unit: "msg/s", Median: med, P90: p90, N: len(rates),
		Target: ">= 5x reference 800-930 msg/s", Note: "exactly-once verified"})
}
