package enrichment

import "github.com/redrive/redrive/metrics"

// The gauges enrichment reports on /admin/metrics, from its own tables and
// its catch-up job's last summary.
func init() {
	metrics.DeclareGauge(metrics.Gauge{Name: "enrichment_breaker_open",
		Help: "1 while the provider's circuit breaker is open or half-open (enrichment_breaker), 0 when closed or never used.",
		SQL:  `SELECT COALESCE(MAX(state <> 'closed'), 0) FROM enrichment_breaker`})
	for _, g := range []struct{ name, key, help string }{
		{"catchup_last_lateness_max_seconds", "lateness_max_ms", "Largest lateness (now - due) among the beers the last catch-up run enqueued (0 when none)."},
		{"catchup_last_lateness_median_seconds", "lateness_median_ms", "Median lateness (now - due) of the beers the last catch-up run enqueued (0 when none)."},
	} {
		// No row before the job's first run: the gauge is left off the page.
		metrics.DeclareGauge(metrics.Gauge{Name: g.name, Help: g.help, Scale: 0.001,
			SQL: `SELECT COALESCE(CAST(last_summary ->> '$.` + g.key + `' AS INTEGER), 0) FROM job_runs WHERE job = '` + CatchUpJobName + `'`})
	}
}
