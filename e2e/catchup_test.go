//go:build e2e

package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redrive/redrive/enrichment"
	"github.com/redrive/redrive/internal/promtext"
)

// fireCronAsync fires cron at `at` from any goroutine (FireCron may only
// fail the test from the test's own goroutine).
func fireCronAsync(w *Worker, cron string, at time.Time) error { return w.FireCronErr(cron, at) }

// jobSummaries returns the summaries logged by the runs of job scheduled at at.
func jobSummaries(w *Worker, job string, at time.Time) []map[string]any {
	var out []map[string]any
	sc := bufio.NewScanner(strings.NewReader(w.Log()))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		i := strings.Index(line, `{"time":`)
		if i < 0 || !strings.Contains(line, `"msg":"cron: job`) {
			continue
		}
		var l struct {
			Job         string         `json:"job"`
			ScheduledAt int64          `json:"scheduled_at"`
			Summary     map[string]any `json:"summary"`
		}
		if json.Unmarshal([]byte(line[i:]), &l) == nil && l.Job == job && l.ScheduledAt == at.UnixMilli() {
			out = append(out, l.Summary)
		}
	}
	return out
}

// scrape reads /admin/metrics.
func scrape(t *testing.T, w *Worker) *promtext.Exposition {
	t.Helper()
	r := w.Admin(t, http.MethodGet, "/admin/metrics", nil)
	if r.Status != http.StatusOK {
		t.Fatalf("metrics: %d %s", r.Status, r.Raw)
	}
	page, err := promtext.Parse(string(r.Raw))
	if err != nil {
		t.Fatalf("%v\n%s", err, r.Raw)
	}
	return page
}

// A day of downtime with 300 due beers is caught up completely with no
// duplicates when the cron fires twice at once: the 300 beers (due a day
// before the worker is back) are seeded in one statement, the frequent cron
// is fired twice concurrently, and every beer is enqueued exactly once
// (catch-up counter 300, one provider call per beer, no stale duplicate at
// the consumer), enriched, and 86400 s late. A beer that used up its
// attempts stays failed. Then the breaker alert and gauge follow an open
// breaker. A worker of its own: its counters are this test's alone.
//
// Whether the two fires interleave in wrangler dev is up to its scheduling
// (seen: [300 0] and [140 160]), so runs that certainly overlap — two
// isolates in production — are proven natively by
// enrichment.TestCatchUpOverlappingRunsNeverSendABeerTwice.
func TestCatchUpAfterADayOfDowntimeWithTwoCronFires(t *testing.T) {
	const beers = 300
	w := startWorker(t, map[string]string{"CRON_BATCH_SIZE": "20"})
	p := uniq("catchup")
	token := func(i int) string { return fmt.Sprintf("%s-%03d", p, i) }
	for i := 1; i <= beers; i++ {
		w.Provider.On(token(i), Behavior{Content: "6.5"})
	}
	w.Provider.On(p+"-exhausted", Behavior{Content: "6.5"})
	back := cronTime()
	due := back.Add(-24 * time.Hour)
	w.Exec(t, fmt.Sprintf(`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < %[4]d)
		INSERT INTO beers(beer_id, name, brewer, status, next_attempt_at, created_at, updated_at)
		SELECT 'id-%[1]s-' || substr('000' || i, -3, 3), '%[1]s-' || substr('000' || i, -3, 3), 'Downtime Brewing', 'pending', %[2]d, %[3]d, %[3]d FROM n;
		INSERT INTO beers(beer_id, name, status, attempts, next_attempt_at, last_error, created_at, updated_at)
		VALUES ('id-%[1]s-exhausted', '%[1]s-exhausted', 'failed', 4, %[2]d, 'transient: status 503', %[3]d, %[3]d)`,
		p, due.UnixMilli(), due.Add(-time.Hour).UnixMilli(), beers))
	if n := w.Int(t, `SELECT COUNT(*) FROM beers WHERE status = 'pending' AND next_attempt_at = ?`, due.UnixMilli()); n != beers {
		t.Fatalf("seeded %d due beers", n)
	}

	// The worker is back: two concurrent fires of the frequent cron.
	var wg sync.WaitGroup
	start := make(chan struct{})
	errs := make([]error, 2)
	for i := range errs {
		wg.Add(1)
		go func() { defer wg.Done(); <-start; errs[i] = fireCronAsync(w, cronFrequent, back) }()
	}
	close(start)
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	Eventually(t, 60*time.Second, "both runs recorded", func() bool {
		return w.Int(t, `SELECT COALESCE(SUM(runs), 0) FROM job_runs WHERE job IN (?, 'alerts') AND last_run_at = ?`,
			enrichment.CatchUpJobName, back.UnixMilli()) == 4
	})
	if n := w.Int(t, `SELECT failures FROM job_runs WHERE job = ?`, enrichment.CatchUpJobName); n != 0 {
		t.Fatalf("catch-up runs failed: %d", n)
	}
	counter := func(name string) int64 {
		return w.Int(t, `SELECT COALESCE((SELECT value FROM counters WHERE name = ?), 0)`, name)
	}
	if n := counter(enrichment.CounterCatchUpEnqueued); n != beers {
		t.Fatalf("catch-up enqueued %d messages for %d beers", n, beers)
	}
	var split []any
	var total int64
	Eventually(t, 10*time.Second, "both runs logged", func() bool { return len(jobSummaries(w, enrichment.CatchUpJobName, back)) == 2 })
	for _, s := range jobSummaries(w, enrichment.CatchUpJobName, back) {
		n := int64(s["enqueued"].(float64))
		total += n
		split = append(split, n)
		if n > 0 && (s["lateness_max_ms"].(float64) != 86_400_000 || s["lateness_median_ms"].(float64) != 86_400_000) {
			t.Errorf("run summary lateness: %v", s)
		}
	}
	t.Logf("the two runs enqueued %v beers", split)

	if total != beers {
		t.Fatalf("runs enqueued %v, %d in all; want %d", split, total, beers)
	}
	if n := counter(enrichment.CounterCatchUpLateness); n != beers*86400 {
		t.Fatalf("lateness sum %d s, want %d (each beer 1 day late)", n, beers*86400)
	}

	// The consumer enriches every beer, each with exactly one provider call.
	Eventually(t, 3*time.Minute, "all beers enriched", func() bool {
		return w.Int(t, `SELECT COUNT(*) FROM beers WHERE beer_id LIKE ? AND status = 'enriched' AND abv = 6.5`, "id-"+p+"-___") == beers
	})
	for i := 1; i <= beers; i++ {
		if n := len(w.Provider.Calls(token(i))); n != 1 {
			t.Errorf("beer %s: %d provider calls", token(i), n)
		}
	}
	// The consumer adds its batch's counters after settling the batch's
	// messages: wait for the last batch's, then it must be exactly beers.
	Eventually(t, 30*time.Second, "provider calls counted", func() bool { return counter(enrichment.CounterProviderCalls) >= beers })
	if n := counter(enrichment.CounterProviderCalls); n != beers {
		t.Errorf("provider calls %d, want %d", n, beers)
	}
	if n := counter(enrichment.CounterStale); n != 0 {
		t.Errorf("%d duplicate messages reached the consumer", n)
	}
	s := beerState(t, w, "id-"+p+"-exhausted")
	if s.Status != enrichment.StatusFailed || s.Attempts != 4 || len(w.Provider.Calls(p+"-exhausted")) != 0 {
		t.Fatalf("the exhausted beer was re-queued: %+v", s)
	}

	// Later runs find nothing to do.
	fireAndWait(t, w, cronFrequent, "alerts", back.Add(5*time.Minute))
	if n := w.Int(t, `SELECT last_summary ->> '$.enqueued' FROM job_runs WHERE job = ?`, enrichment.CatchUpJobName); n != 0 {
		t.Fatalf("a later run enqueued %d", n)
	}
	page := scrape(t, w)
	if page.Samples["redrive_catchup_enqueued_total"] != beers || page.Samples["redrive_catchup_lateness_seconds_total"] != beers*86400 ||
		page.Samples["redrive_catchup_last_lateness_max_seconds"] != 0 || page.Types["redrive_catchup_last_lateness_max_seconds"] != "gauge" {
		t.Fatalf("catch-up metrics: enqueued %v lateness %v last max %v",
			page.Samples["redrive_catchup_enqueued_total"], page.Samples["redrive_catchup_lateness_seconds_total"],
			page.Samples["redrive_catchup_last_lateness_max_seconds"])
	}

	// The breaker opens: the alert fires and the gauge says so; closed: both clear.
	if page.Samples["redrive_enrichment_breaker_open"] != 0 {
		t.Fatal("breaker gauge is 1 before the breaker opened")
	}
	w.Exec(t, fmt.Sprintf(`INSERT INTO enrichment_breaker(name, state, previous_state, failures, open_until, updated_at)
		VALUES ('provider', 'open', 'closed', 5, %[1]d, %[2]d)
		ON CONFLICT(name) DO UPDATE SET state = 'open', failures = 5, open_until = %[1]d, updated_at = %[2]d`,
		back.Add(24*time.Hour).UnixMilli(), back.Add(9*time.Minute).UnixMilli()))
	fireAndWait(t, w, cronFrequent, "alerts", back.Add(10*time.Minute))
	page = scrape(t, w)
	alert := promtext.Key("redrive_alert_firing", "alert", "enrichment_breaker_open")
	if page.Samples["redrive_enrichment_breaker_open"] != 1 || page.Samples[alert] != 1 {
		t.Fatalf("breaker open: gauge %v alert %v", page.Samples["redrive_enrichment_breaker_open"], page.Samples[alert])
	}
	Eventually(t, 10*time.Second, "the alert is logged", func() bool {
		return strings.Contains(w.Log(), `"msg":"alert: firing","service":"redrive","alert":"enrichment_breaker_open"`)
	})
	w.Exec(t, `UPDATE enrichment_breaker SET state = 'closed', failures = 0, open_until = NULL`)
	fireAndWait(t, w, cronFrequent, "alerts", back.Add(15*time.Minute))
	page = scrape(t, w)
	if page.Samples["redrive_enrichment_breaker_open"] != 0 || page.Samples[alert] != 0 {
		t.Fatalf("breaker closed: gauge %v alert %v", page.Samples["redrive_enrichment_breaker_open"], page.Samples[alert])
	}
}
