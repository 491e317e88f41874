package handlers

import (
	"bytes"
	"fmt"
	"net/http"

	"github.com/redrive/redrive/metrics"
)

// metrics serves GET /admin/metrics: the Prometheus text format of DLQ rows,
// counters, alert states and job runs, read from D1 in one query. Errors
// are answered with the JSON error envelope like every other route.
func (a *API) metrics(w http.ResponseWriter, r *http.Request) error {
	snap, err := metrics.ReadSnapshot(r.Context(), a.DB)
	if err != nil {
		return fmt.Errorf("admin metrics: %w", err)
	}
	// The DLQ figures and counters of each pipeline's own database, added up.
	for _, d := range a.databases().All[1:] {
		if err := snap.AddDLQ(r.Context(), d.DB); err != nil {
			return fmt.Errorf("admin metrics: %s: %w", d.Name, err)
		}
	}
	snap.Pipelines = map[string]string{}
	for _, p := range a.databases().Pipelines().All() {
		snap.Pipelines[p.Queue] = p.Name
	}
	var buf bytes.Buffer
	if err := metrics.WritePrometheus(&buf, snap, a.Clock.Now()); err != nil {
		return fmt.Errorf("admin metrics: %w", err)
	}
	w.Header().Set("Content-Type", metrics.ContentType)
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(buf.Bytes())
	return nil
}
