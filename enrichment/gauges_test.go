package enrichment

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/redrive/redrive/internal/promtext"
	"github.com/redrive/redrive/internal/sqlitetest"
	"github.com/redrive/redrive/metrics"
)

// enrichment's gauges on the metrics page: the breaker's (0 before any
// breaker row, then following its state) and the catch-up's lateness (absent
// before the job's first run, then its last summary in seconds).
func TestEnrichmentGaugesOnTheMetricsPage(t *testing.T) {
	db := sqlitetest.New(t)
	ctx := context.Background()
	page := func() map[string]float64 {
		t.Helper()
		snap, err := metrics.ReadSnapshot(ctx, db)
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		if err := metrics.WritePrometheus(&b, snap, time.Now()); err != nil {
			t.Fatal(err)
		}
		p, err := promtext.Parse(b.String())
		if err != nil {
			t.Fatal(err)
		}
		return p.Samples
	}
	s := page()
	if v, ok := s["redrive_enrichment_breaker_open"]; !ok || v != 0 {
		t.Errorf("breaker gauge before any breaker row: %v (present %v)", v, ok)
	}
	if _, ok := s["redrive_catchup_last_lateness_max_seconds"]; ok {
		t.Error("catch-up lateness reported before the job ever ran")
	}
	for _, c := range []struct {
		state string
		want  float64
	}{{"closed", 0}, {"open", 1}, {"half_open", 1}, {"closed", 0}} {
		if _, err := db.Exec(`INSERT INTO enrichment_breaker(name, state, updated_at) VALUES ('provider', ?, 1)
			ON CONFLICT(name) DO UPDATE SET state = excluded.state`, c.state); err != nil {
			t.Fatal(err)
		}
		if got := page()["redrive_enrichment_breaker_open"]; got != c.want {
			t.Errorf("state %s: gauge %v, want %v", c.state, got, c.want)
		}
	}
	if err := (metrics.JobRuns{DB: db}).RecordRun(ctx, CatchUpJobName, time.Now(), time.Second, nil,
		map[string]any{"enqueued": 3, "lateness_max_ms": int64(86_400_000), "lateness_median_ms": int64(1500)}); err != nil {
		t.Fatal(err)
	}
	s = page()
	if s["redrive_catchup_last_lateness_max_seconds"] != 86400 || s["redrive_catchup_last_lateness_median_seconds"] != 1.5 {
		t.Errorf("catch-up lateness: max %v median %v", s["redrive_catchup_last_lateness_max_seconds"], s["redrive_catchup_last_lateness_median_seconds"])
	}
}
