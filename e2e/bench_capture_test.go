//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/internal/sqlitetest"
)

// brokerLine is the line the local Queues broker (miniflare) prints after
// each batch it delivered: acked/total and the time from dispatching the
// batch to the consumer's answer, which is when every message of it is
// settled (acked or retried).
var brokerLine = regexp.MustCompile(`QUEUE beer-enrichment-dlq (\d+)/(\d+) \((\d+)ms\)`)

// ansi matches terminal colour codes (the broker colours its lines).
var ansi = regexp.MustCompile("\x1b\\[[0-9;]*m")

// brokerTimes returns the settle time (ms) of every DLQ batch w's broker
// delivered so far, with its acked and total counts.
func brokerTimes(w *Worker) (ms []float64, acked, total []int) {
	for _, m := range brokerLine.FindAllStringSubmatch(ansi.ReplaceAllString(w.Log(), ""), -1) {
		a, _ := strconv.Atoi(m[1])
		n, _ := strconv.Atoi(m[2])
		d, _ := strconv.ParseFloat(m[3], 64)
		ms, acked, total = append(ms, d), append(acked, a), append(total, n)
	}
	return ms, acked, total
}

// captureBatch sends one batch of 100 new messages to w's DLQ (one
// sendBatch through /__dev/send, no delay: the broker dispatches the batch
// as soon as the 100th message arrives), waits until the broker reports the
// batch settled and all 100 rows are stored once, and returns the broker's
// delivered → settled time and the wall time from the send to the 100th
// stored row seen by polling the D1 file.
func captureBatch(t *testing.T, w *Worker, prefix string) (settled, wall float64) {
	t.Helper()
	before, _, _ := brokerTimes(w)
	msgs := make([]map[string]any, 100)
	for j := range msgs {
		msgs[j] = map[string]any{"body": beerBody(t, fmt.Sprintf("%s-%03d", prefix, j), "Bench Beer", nil)}
	}
	like := prefix + "-%"
	start := time.Now()
	r, err := w.Do(http.MethodPost, "/__dev/send", map[string]any{"queue": "beer-enrichment-dlq", "messages": msgs}, AdminHeaders())
	if err != nil || r.Status != http.StatusOK {
		t.Fatalf("send to %s: %v %v", w.URL, err, r)
	}
	if err := pollFast(time.Minute, func() bool {
		return w.Int(t, `SELECT COUNT(*) FROM dlq_messages WHERE `+w.KeyColumn()+` LIKE ?`, like) >= 100
	}); err != nil {
		t.Fatalf("capture batch on %s: %v", w.URL, err)
	}
	wall = float64(time.Since(start).Microseconds()) / 1000
	var ms []float64
	var acked, total []int
	if err := pollFast(time.Minute, func() bool {
		ms, acked, total = brokerTimes(w)
		return len(ms) > len(before)
	}); err != nil {
		t.Fatalf("capture batch on %s: no broker line for it: %v", w.URL, err)
	}
	if len(ms) != len(before)+1 || acked[len(ms)-1] != 100 || total[len(ms)-1] != 100 {
		t.Fatalf("capture batch on %s: broker lines %v %v/%v after %d: want one more, 100/100", w.URL, ms, acked, total, len(before))
	}
	for what, q := range map[string]string{
		"rows":                 `SELECT COUNT(*) FROM dlq_messages WHERE row_key LIKE ?`,
		"distinct message ids": `SELECT COUNT(DISTINCT message_id) FROM dlq_messages WHERE row_key LIKE ?`,
		"distinct beer ids":    `SELECT COUNT(DISTINCT row_key) FROM dlq_messages WHERE row_key LIKE ?`,
	} {
		if got := w.Int(t, strings.ReplaceAll(q, "row_key", w.KeyColumn()), like); got != 100 {
			t.Fatalf("capture batch on %s stored %d %s for 100 messages", w.URL, got, what)
		}
	}
	return ms[len(ms)-1], wall
}

// captureBatchFigure is one table size's per-batch figures, both workers.
type captureBatchFigure struct {
	Table     string       `json:"table"`
	Settled   benchSide    `json:"settled_ms"`
	Wall      benchSide    `json:"wall_ms"`
	RefSettle benchSide    `json:"reference_settled_ms"`
	RefWall   benchSide    `json:"reference_wall_ms"`
	Ratio     float64      `json:"ratio"`
	Samples   [4][]float64 `json:"samples"`
}

// TestBenchCaptureBatch times batches of 100 DLQ messages delivered to the
// consumer, from delivery to settled, one batch after another, redrive and the original TypeScript worker
// (bench/reference) alternating in the same run: on a fresh table and at
// 100,000 rows. Settled is the local Queues broker's own time for the
// batch (dispatch to the consumer's answer, printed by miniflare for every
// batch of either worker), so neither worker times itself and the harness's
// HTTP and polling stay out of it; the wall time (send to the 100th row
// seen) is reported beside it. Runs with REDRIVE_BENCH=1 only; writes
// bench-results/capture_batch.json. Reported, never asserted.
func TestBenchCaptureBatch(t *testing.T) {
	if os.Getenv("REDRIVE_BENCH") == "" {
		t.Skip("benchmarks run with `make bench` (REDRIVE_BENCH=1)")
	}
	batches := 9
	if n, err := strconv.Atoi(os.Getenv("REDRIVE_BENCH_BATCHES")); err == nil && n > 0 {
		batches = n
	}
	w, ref := startPair(t)

	var figures []captureBatchFigure
	measure := func(table string) {
		var s [4][]float64              // redrive settled, wall; reference settled, wall
		for i := -2; i < batches; i++ { // two warm-up batches each
			pair := []*Worker{w, ref}
			if i%2 != 0 {
				pair = []*Worker{ref, w}
			}
			for _, x := range pair {
				settled, wall := captureBatch(t, x, unique(fmt.Sprintf("bcb%d", i+2)))
				if i < 0 {
					continue
				}
				k := 0
				if x == ref {
					k = 2
				}
				s[k], s[k+1] = append(s[k], settled), append(s[k+1], wall)
			}
		}
		f := captureBatchFigure{Table: table, Settled: *side(s[0], ""), Wall: *side(s[1], ""),
			RefSettle: *side(s[2], ""), RefWall: *side(s[3], ""), Samples: s}
		if f.Settled.Median > 0 {
			f.Ratio = f.RefSettle.Median / f.Settled.Median
		}
		load, _ := os.ReadFile("/proc/loadavg")
		fmt.Fprintf(os.Stderr, "bench: capture batch of 100, %s: redrive settled median %.1f ms p90 %.1f (wall %.1f) | reference settled median %.1f ms p90 %.1f (wall %.1f) | ratio %.2fx | n=%d | load %s\n",
			table, f.Settled.Median, f.Settled.P90, f.Wall.Median, f.RefSettle.Median, f.RefSettle.P90, f.RefWall.Median, f.Ratio, len(s[0]), strings.TrimSpace(string(load)))
		fmt.Fprintf(os.Stderr, "bench:   samples redrive %v | reference %v\n", s[0], s[2])
		figures = append(figures, f)
	}
	measure("fresh")
	now := time.Now().UnixMilli()
	seedAdmin(t, w, 100_000, now, true)
	seedAdmin(t, ref, 100_000, now, false)
	measure("100k rows")

	root, _ := sqlitetest.Root()
	out := filepath.Join(root, "bench-results")
	os.MkdirAll(out, 0o755)
	js, _ := json.MarshalIndent(figures, "", "  ")
	if err := os.WriteFile(filepath.Join(out, "capture_batch.json"), js, 0o644); err != nil {
		t.Fatal(err)
	}
}
