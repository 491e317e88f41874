//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"net/http"
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
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(period)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				w.FireCronErr(cronFrequent, time.Time{}) // a failed tick is the next tick's work
			}
		}
	}()
	return func() { cancel(); wg.Wait() }
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
	stop := ticker(w, 5*time.Second)
	defer stop()

	Eventually(t, 60*time.Second, "breaker open", func() bool {
		return w.Int(t, `SELECT COUNT(*) FROM enrichment_breaker WHERE state <> 'closed'`) == 1
	})
	opened := time.Now()
	Eventually(t, 90*time.Second, "every beer waiting or failed", func() bool {
		return w.Int(t, `SELECT COUNT(*) FROM beers WHERE beer_id LIKE ? AND status IN ('waiting', 'failed')`, "id-"+token+"%") == n
	})
	time.Sleep(time.Until(opened.Add(150 * time.Second))) // the drill's length, not a synchronisation
	writtenOutage := rowsWritten(t, w) - written0
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
	dlqOutage := w.Int(t, `SELECT COUNT(*) FROM dlq_messages WHERE beer_id LIKE ?`, "id-"+token+"%")
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
	for _, b := range beers {
		s := beerState(t, w, b.BeerID)
		c := len(w.Provider.Calls(b.BeerName))
		if s.Status == enrichment.StatusFailed {
			if got := w.Int(t, `SELECT failure_count FROM dlq_messages WHERE beer_id = ?`, b.BeerID); got != int64(c) || c != 4 {
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

// Drill: the provider refuses the key (401). Every beer waits (no attempt
// spent, nothing dead-lettered, enrichment_auth_failing fires), one probe
// at a time rotating among them; then the key is fixed and an operator
// closes the breaker (POST /admin/enrichment/breaker/reset): every beer is
// enriched with one call.
func TestOutageDrillRevokedKey(t *testing.T) {
	w := startWorker(t, map[string]string{"ENRICHMENT_BREAKER_COOLDOWN_SECONDS": "2", "ENRICHMENT_BREAKER_MAX_COOLDOWN_SECONDS": "4"})
	dumpOnFailure(t, w)
	token := uniq("revoked")
	const n = 20
	beers := outageBeers(t, w, token, n, Behavior{Status: http.StatusUnauthorized})
	stop := ticker(w, 3*time.Second)
	defer stop()
	Eventually(t, 60*time.Second, "every beer waiting", func() bool {
		return w.Int(t, `SELECT COUNT(*) FROM beers WHERE beer_id LIKE ? AND status = 'waiting'`, "id-"+token+"%") == n
	})
	// Probes rotate: within a while at least three distinct beers probed.
	Eventually(t, 90*time.Second, "probes by three different beers", func() bool {
		probed := 0
		for _, b := range beers {
			if len(w.Provider.Calls(b.BeerName)) > 0 {
				probed++
			}
		}
		return probed >= 3
	})
	if n := w.Int(t, `SELECT COUNT(*) FROM dlq_messages WHERE beer_id LIKE ?`, "id-"+token+"%"); n != 0 {
		t.Fatalf("%d DLQ rows for a revoked key", n)
	}
	if n := w.Int(t, `SELECT COALESCE(SUM(attempts), 0) FROM beers WHERE beer_id LIKE ?`, "id-"+token+"%"); n != 0 {
		t.Fatalf("a revoked key spent %d attempts", n)
	}
	maxCalls := 0
	for _, b := range beers {
		maxCalls = max(maxCalls, len(w.Provider.Calls(b.BeerName)))
	}
	t.Logf("revoked key: %d calls in all, at most %d per beer", callsOf(w, beers), maxCalls)

	answerAll(w, beers, Behavior{Content: "5.0"})
	r := w.Admin(t, http.MethodPost, "/admin/enrichment/breaker/reset", nil)
	if r.Status != http.StatusOK || !r.Success {
		t.Fatalf("reset: %d %s", r.Status, r.Raw)
	}
	reset := time.Now()
	Eventually(t, 2*time.Minute, "every beer enriched after the reset", func() bool {
		return w.Int(t, `SELECT COUNT(*) FROM beers WHERE beer_id LIKE ? AND status = 'enriched'`, "id-"+token+"%") == n
	})
	t.Logf("recovery: every beer enriched %s after the reset", time.Since(reset).Round(time.Second))
	if n := w.Int(t, `SELECT COUNT(*) FROM admin_audit WHERE action = 'breaker_reset' AND outcome = 'ok'`); n != 1 {
		t.Fatalf("%d audited resets", n)
	}
	if n := w.Int(t, `SELECT COUNT(*) FROM dlq_messages WHERE beer_id LIKE ?`, "id-"+token+"%"); n != 0 {
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
