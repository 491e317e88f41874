//go:build e2e

package e2e

import (
	"fmt"
	"net/http"
	"os"
	"testing"
)

// TestBenchStart measures only the start and the per-call cost, side by side
// with the original worker, alternating: a new instance's first answer
// (wrangler dev start to the first 200, as TestBench's cold start) and the
// per-call overhead of a route that touches no binding (an unknown admin
// path: both answer 404 after the admin check). It runs with REDRIVE_BENCH=1
// (`go test -tags e2e -run TestBenchStart ./e2e`); nothing is asserted about
// speed.
func TestBenchStart(t *testing.T) {
	if os.Getenv("REDRIVE_BENCH") == "" {
		t.Skip("benchmarks run with REDRIVE_BENCH=1")
	}
	rep := &benchReport{}
	var cold, refCold []float64
	for i := 0; i < 5; i++ {
		order := []Options{{}, referenceOptions}
		if i%2 == 1 {
			order = []Options{referenceOptions, {}}
		}
		for _, opts := range order {
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
	rep.add(benchFigure{Name: "cold start (wrangler dev to first 200)", Unit: "ms", Median: med, P90: p90, N: len(cold), Reference: side(refCold, "")})

	w, ref := startPair(t)
	status404 := func(r *Response) error {
		if r.Status != http.StatusNotFound {
			return fmt.Errorf("%d %s", r.Status, r.Raw)
		}
		return nil
	}
	for range 3 {
		rep.measurePair(t, "GET /admin/nope (404, no binding touched)", "", 200,
			benchTarget{w: w, req: get("/admin/nope"), check: status404}, benchTarget{w: ref, req: get("/admin/nope"), check: status404})
	}
}
