//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redrive/redrive/enrichment"
)

// msgParked is the consumer's log line for a deferral parked in D1.
const msgParked = "enrichment: deferred; the beer waits in D1 (no attempt spent)"

// ticker fires the frequent cron every period until stopped, as a
// production schedule (or `make dev`'s ticker) would; it returns stop.
func ticker(w *Worker, period time.Duration) (stop func()) {
	stopTimed := timedTicker(period, func() { w.FireCronErr(cronFrequent, time.Time{}) })
	return func() { stopTimed() }
}

// timedTicker calls fire every period until stopped; its stop returns how
// long each finished fire took (a fire that takes longer than period
// delays the next one: time.Ticker drops the ticks missed). stop waits at
// most a minute for a fire in flight (see fireClient; it ends when the
// worker stops).
func timedTicker(period time.Duration, fire func()) (stop func() []time.Duration) {
	ctx, cancel := context.WithCancel(context.Background())
	var mu sync.Mutex
	var took []time.Duration
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(period)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				start := time.Now()
				fire() // a failed tick is the next tick's work
				mu.Lock()
				took = append(took, time.Since(start))
				mu.Unlock()
			}
		}
	}()
	return func() []time.Duration {
		cancel()
		select {
		case <-done:
		case <-time.After(time.Minute):
		}
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(took)
	}
}

// fireClient fires the drills' crons with a deadline. wrangler dev has
// been seen to hold a GET /__scheduled without dispatching it to the worker
// until another request arrived (logged as "200 OK (20971ms)", the jobs
// running only when the next fire came): during the drill's 150 s without
// other requests the ticker stalled with it, and the catch-up ran 2 to 4
// times instead of about 30 (so 2 or 3 probes where the schedule allows
// about 8). A fire that times out is nudged by the next one.
var fireClient = &http.Client{Transport: &http.Transport{IdleConnTimeout: time.Second}}

// fireFrequent fires the frequent cron as FireCronErr does (the runtime's
// scheduled event at the current time), giving up after timeout.
func fireFrequent(w *Worker, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, w.URL+"/__scheduled?"+url.Values{"cron": {cronFrequent}}.Encode(), nil)
	if err != nil {
		return err
	}
	resp, err := fireClient.Do(req)
	if err != nil {
		return err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("fire %s: %d", cronFrequent, resp.StatusCode)
	}
	return nil
}

// medianMax is the median and the largest of ds (0, 0 when empty).
func medianMax(ds []time.Duration) (median, largest time.Duration) {
	if len(ds) == 0 {
		return 0, 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2], s[len(s)-1]
}

// catchUpRuns is how many times the catch-up job has run.
func catchUpRuns(t *testing.T, w *Worker) int64 {
	return w.Int(t, `SELECT COALESCE((SELECT runs FROM job_runs WHERE job = ?), 0)`, enrichment.CatchUpJobName)
}

// rowsWritten is every D1 row written so far, all operations together.
func rowsWritten(t *testing.T, w *Worker) int64 {
	var n int64
	for _, u := range d1Usage(t, w) {
		n += u.RowsWritten
	}
	return n
}

// outageBeers registers n beers, each named by its own token (its calls
// are counted apart), all answered with b.
func outageBeers(t *testing.T, w *Worker, token string, n int, b Behavior) []enrichment.Beer {
	var beers []enrichment.Beer
	for i := range n {
		name := fmt.Sprintf("%s-%02d", token, i)
		w.Provider.On(name, b)
		beers = append(beers, enrichment.Beer{BeerID: "id-" + name, BeerName: name, Brewer: "E2E Brewing"})
	}
	enrich(t, w, beers...)
	return beers
}

// answerAll sets the provider's answer for every beer.
func answerAll(w *Worker, beers []enrichment.Beer, b Behavior) {
	for _, beer := range beers {
		w.Provider.On(beer.BeerName, b)
	}
}

// callsOf is the provider calls for the beers.
func callsOf(w *Worker, beers []enrichment.Beer) int {
	n := 0
	for _, b := range beers {
		n += len(w.Provider.Calls(b.BeerName))
	}
	return n
}

// Drill: the provider answers 500 for a while, then recovers. Cooldown 2 s,
// 60 waiting beers, the cron ticking every 5 s. For 150 s after the breaker
// opened: no beer is called more than ENRICHMENT_MAX_ATTEMPTS times, a beer
// reaches the DLQ only with its real calls spent (failure_count = its
// calls), each waiting beer is deferred at most 12 times, and the D1 rows
// written per waiting beer stay under 40. After the recovery every beer is
// enriched or (its attempts spent) in the DLQ: nothing lost.
func TestOutageDrillProviderDownThenUp(t *testing.T) {
	w := startWorker(t, map[string]string{"ENRICHMENT_BREAKER_THRESHOLD": "5", "ENRICHMENT_BREAKER_COOLDOWN_SECONDS": "2",
		"ENRICHMENT_BREAKER_MAX_COOLDOWN_SECONDS": "20", "D1_USAGE_FLUSH_SECONDS": "0"})
	dumpOnFailure(t, w)
	token := uniq("outage")
	const n = 60
	written0 := rowsWritten(t, w)
	beers := outageBeers(t, w, token, n, Behavior{Status: http.StatusInternalServerError})
	stopTicker := timedTicker(5*time.Second, func() { fireFrequent(w, 20*time.Second) })
	stopped := false
	stop := func() []time.Duration { stopped = true; return stopTicker() }
	defer func() {
		if !stopped {
			stop()
		}
	}()

	Eventually(t, 60*time.Second, "breaker open", func() bool {
		return w.Int(t, `SELECT COUNT(*) FROM enrichment_breaker WHERE state <> 'closed'`) == 1
	})
	opened := time.Now()
	runs0, probes0 := catchUpRuns(t, w), counterValue(t, w, enrichment.CounterBreakerProbes)
	Eventually(t, 90*time.Second, "every beer waiting or failed", func() bool {
		return w.Int(t, `SELECT COUNT(*) FROM beers WHERE beer_id LIKE ? AND status IN ('waiting', 'failed')`, "id-"+token+"%") == n
	})
	time.Sleep(time.Until(opened.Add(150 * time.Second))) // the drill's length, not a synchronisation
	writtenOutage := rowsWritten(t, w) - written0
	// The probes the schedule allowed in these 150 s depend on how often
	// the catch-up actually ran: a tick that takes longer than its period
	// delays the next one.
	runs, probes := catchUpRuns(t, w)-runs0, counterValue(t, w, enrichment.CounterBreakerProbes)-probes0
	reopens := w.Int(t, `SELECT reopens FROM enrichment_breaker`)
	t.Logf("probes: %d half-open probes and %d failed probes in a row in 150 s, %d catch-up runs (one every %.1f s)",
		probes, reopens, runs, 150/float64(max(runs, 1)))
	parks := map[string]int{}
	for _, r := range logRecords(w, msgParked) {
		parks[r.str("beer_id")]++
	}
	maxParks, calls := 0, map[string]int{}
	for _, b := range beers {
		maxParks = max(maxParks, parks[b.BeerID])
		calls[b.BeerID] = len(w.Provider.Calls(b.BeerName))
		if calls[b.BeerID] > 4 {
			t.Fatalf("beer %s called %d times, more than ENRICHMENT_MAX_ATTEMPTS", b.BeerID, calls[b.BeerID])
		}
	}
	totalCalls := callsOf(w, beers)
	dlqOutage := w.Int(t, `SELECT COUNT(*) FROM dlq_messages WHERE row_key LIKE ?`, "id-"+token+"%")
	t.Logf("outage figures (150 s after the breaker opened): provider calls %d, deferrals per beer max %d, D1 rows written %d (%.1f per waiting beer), DLQ rows %d",
		totalCalls, maxParks, writtenOutage, float64(writtenOutage)/n, dlqOutage)
	if maxParks > 12 {
		t.Fatalf("a waiting beer was deferred %d times (at most 12)", maxParks)
	}
	if writtenOutage > 40*n {
		t.Fatalf("%d D1 rows written for %d waiting beers (at most 40 each)", writtenOutage, n)
	}

	answerAll(w, beers, Behavior{Content: "5.0"})
	recovered := time.Now()
	Eventually(t, 5*time.Minute, "every beer enriched or dead-lettered after its attempts", func() bool {
		return w.Int(t, `SELECT COUNT(*) FROM beers WHERE beer_id LIKE ? AND (status = 'enriched' OR
			(status = 'failed' AND attempts = 4))`, "id-"+token+"%") == n
	})
	t.Logf("recovery: every beer settled %s after the provider answered again", time.Since(recovered).Round(time.Second))
	median, largest := medianMax(stop())
	t.Logf("cron ticks: median %s, max %s per fire (period 5 s)", median.Round(10*time.Millisecond), largest.Round(10*time.Millisecond))
	for _, b := range beers {
		s := beerState(t, w, b.BeerID)
		c := len(w.Provider.Calls(b.BeerName))
		if s.Status == enrichment.StatusFailed {
			if got := w.Int(t, `SELECT failure_count FROM dlq_messages WHERE row_key = ?`, b.BeerID); got != int64(c) || c != 4 {
				t.Fatalf("beer %s in the DLQ with failure_count %d after %d calls", b.BeerID, got, c)
			}
			continue
		}
		if c > 4 || s.Attempts != int64(c) {
			t.Fatalf("beer %s: %d calls, attempts %d", b.BeerID, c, s.Attempts)
		}
	}
	if strings.Contains(w.Log(), "the queue moves the message to the DLQ") {
		t.Fatal("a last attempt was left to the queue's own dead-lettering")
	}
}

// Drill: the provider refuses the key (401, every call). Every beer waits
// (no attempt spent, nothing dead-lettered), and the catch-up probes the
// key itself (enrichment.KeyProbe): no beer goes back to the queue while
// the key is refused, and the waiting beers cost no D1 row. An operator's
// reset (POST /admin/enrichment/breaker/reset, audited) releases them
// all; refused again, they wait again. Then the key is fixed: the next
// key probe closes the breaker and the same catch-up run releases every
// beer, enriched with one call each, without an operator.
func TestOutageDrillRevokedKey(t *testing.T) {
	w := startWorker(t, map[string]string{"ENRICHMENT_BREAKER_COOLDOWN_SECONDS": "2", "ENRICHMENT_BREAKER_MAX_COOLDOWN_SECONDS": "4",
		"D1_USAGE_FLUSH_SECONDS": "0"})
	dumpOnFailure(t, w)
	token := uniq("revoked")
	const n = 20
	refused := Behavior{Status: http.StatusUnauthorized}
	w.Provider.Default(refused)
	w.Provider.On(enrichment.KeyProbeBeer.BeerName, refused) // the key probe's question, counted apart
	beers := outageBeers(t, w, token, n, refused)
	stop := ticker(w, 3*time.Second)
	defer stop()
	waiting := func() int64 {
		return w.Int(t, `SELECT COUNT(*) FROM beers WHERE beer_id LIKE ? AND status = 'waiting'`, "id-"+token+"%")
	}
	Eventually(t, 60*time.Second, "every beer waiting", func() bool { return waiting() == n })
	// Every beer is parked and stays parked: the key probes are the only
	// calls, and they cost no queue operation and no beer row.
	keyProbes := func() int { return len(w.Provider.Calls(enrichment.KeyProbeBeer.BeerName)) }
	catchUpWritten := func() int64 { return d1Usage(t, w)["cron "+enrichment.CatchUpJobName].RowsWritten }
	calls0, keyProbes0, written0, parks0 := callsOf(w, beers), keyProbes(), rowsWritten(t, w), len(logRecords(w, msgParked))
	runs0, catchUp0 := catchUpRuns(t, w), catchUpWritten()
	since := time.Now()
	Eventually(t, 90*time.Second, "three key probes", func() bool { return keyProbes() >= keyProbes0+3 })
	probes, written, took := keyProbes()-keyProbes0, rowsWritten(t, w)-written0, time.Since(since)
	runs, catchUp := catchUpRuns(t, w)-runs0, catchUpWritten()-catchUp0
	if c := callsOf(w, beers); c != calls0 {
		t.Fatalf("beers called %d times while the key was refused and probed by the catch-up", c-calls0)
	}
	if p := len(logRecords(w, msgParked)); p != parks0 || waiting() != n {
		t.Fatalf("%d more deferrals, %d waiting: a beer went round the queue", p-parks0, waiting())
	}
	if n := w.Int(t, `SELECT COUNT(*) FROM dlq_messages WHERE row_key LIKE ?`, "id-"+token+"%"); n != 0 {
		t.Fatalf("%d DLQ rows for a revoked key", n)
	}
	if n := w.Int(t, `SELECT COALESCE(SUM(attempts), 0) FROM beers WHERE beer_id LIKE ?`, "id-"+token+"%"); n != 0 {
		t.Fatalf("a revoked key spent %d attempts", n)
	}
	maxCalls := 0
	for _, b := range beers {
		maxCalls = max(maxCalls, len(w.Provider.Calls(b.BeerName)))
	}
	t.Logf("revoked key: %d beer calls before the breaker opened (at most %d per beer), then %d key probes in %s: 0 beer calls, 0 deferrals, %d D1 rows written in all (%.1f per key probe, %.2f per waiting beer)",
		calls0, maxCalls, probes, took.Round(time.Second), written, float64(written)/float64(probes), float64(written)/n)
	t.Logf("the catch-up job: %d runs, %d D1 rows written (its job_runs record included)", runs, catchUp)
	// Each run writes its job_runs record; each key probe the breaker row,
	// nothing else (no beer, no quota, no counter). The counts are read one
	// after the other: one run (2 rows) of slack.
	if catchUp > runs+int64(probes)+2 {
		t.Fatalf("the catch-up wrote %d rows in %d runs with %d key probes: more than its record and one row per probe", catchUp, runs, probes)
	}

	// The operator's reset releases every beer; the key is still refused,
	// so they wait again (one call each at most).
	r := w.Admin(t, http.MethodPost, "/admin/enrichment/breaker/reset", nil)
	if r.Status != http.StatusOK || !r.Success {
		t.Fatalf("reset: %d %s", r.Status, r.Raw)
	}
	if n := w.Int(t, `SELECT COUNT(*) FROM admin_audit WHERE action = 'breaker_reset' AND outcome = 'ok'`); n != 1 {
		t.Fatalf("%d audited resets", n)
	}
	Eventually(t, 60*time.Second, "the breaker open again and every beer waiting again", func() bool {
		return waiting() == n && w.Int(t, `SELECT COUNT(*) FROM enrichment_breaker WHERE state = 'open' AND cause = 'auth'`) == 1 &&
			w.Int(t, `SELECT COUNT(*) FROM beers WHERE beer_id LIKE ? AND status = 'waiting' AND updated_at > ?`, "id-"+token+"%", since.UnixMilli()) == n
	})
	for _, b := range beers {
		if c := len(w.Provider.Calls(b.BeerName)); c > 2 {
			t.Fatalf("beer %s called %d times", b.BeerID, c)
		}
	}

	// The key is fixed: the catch-up's next key probe closes the breaker
	// and releases every beer, without an operator.
	w.Provider.Default(Behavior{Content: "5.0"})
	w.Provider.On(enrichment.KeyProbeBeer.BeerName, Behavior{Content: "5.0"})
	answerAll(w, beers, Behavior{Content: "5.0"})
	fixed := time.Now()
	Eventually(t, 2*time.Minute, "every beer enriched after the key fix", func() bool {
		return w.Int(t, `SELECT COUNT(*) FROM beers WHERE beer_id LIKE ? AND status = 'enriched'`, "id-"+token+"%") == n
	})
	t.Logf("recovery: every beer enriched %s after the key fix (no reset; cooldown 2 s, cap 4 s, tick 3 s)", time.Since(fixed).Round(time.Second))
	if n := w.Int(t, `SELECT COUNT(*) FROM admin_audit WHERE action = 'breaker_reset'`); n != 1 {
		t.Fatalf("%d resets: the recovery needed an operator", n)
	}
	if n := w.Int(t, `SELECT COUNT(*) FROM dlq_messages WHERE row_key LIKE ?`, "id-"+token+"%"); n != 0 {
		t.Fatalf("%d DLQ rows", n)
	}
}

// dumpOnFailure logs the beers and the breaker when t fails (before the
// worker stops).
func dumpOnFailure(t *testing.T, w *Worker) {
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		db := w.DB(t)
		for _, q := range []string{
			`SELECT json_object('state', state, 'cause', cause, 'open_until', open_until, 'probe_until', probe_until, 'reopens', reopens, 'failures', failures) FROM enrichment_breaker`,
			`SELECT json_object('id', beer_id, 'status', status, 'waiting', waiting, 'waits', waits, 'attempts', attempts, 'next', next_attempt_at, 'updated', updated_at, 'err', last_error) FROM beers ORDER BY updated_at DESC LIMIT 30`,
			`SELECT json_object('job', job, 'last_run_at', last_run_at, 'summary', last_summary) FROM job_runs WHERE job = 'enrichment_catchup'`,
		} {
			rows, err := db.Query(q)
			if err != nil {
				t.Logf("dump: %v", err)
				continue
			}
			for rows.Next() {
				var s string
				rows.Scan(&s)
				t.Logf("dump: %s", s)
			}
			rows.Close()
		}
		t.Logf("dump: now %d", time.Now().UnixMilli())
	})
}
