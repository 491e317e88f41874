//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/enrichment"
)

// "Nothing dropped": faults that are not a message's fault (the provider
// refusing the key, D1 unavailable) never lose it, never dead-letter it,
// and never ack it before it is stored or done.

// logRecord is one JSON log line of the worker.
type logRecord map[string]any

func (r logRecord) str(k string) string { s, _ := r[k].(string); return s }
func (r logRecord) num(k string) int64  { f, _ := r[k].(float64); return int64(f) }

// logRecords returns the worker's JSON log lines whose msg is msg.
func logRecords(w *Worker, msg string) []logRecord {
	var out []logRecord
	for _, line := range strings.Split(w.Log(), "\n") {
		i := strings.Index(line, `{"time"`)
		if i < 0 || !strings.Contains(line, msg) {
			continue
		}
		var r logRecord
		if json.Unmarshal([]byte(line[i:]), &r) == nil && r.str("msg") == msg {
			out = append(out, r)
		}
	}
	return out
}

const (
	msgDeferred      = "enrichment: deferred; a fresh copy waits on the queue (no attempt spent)"
	msgDLQUnavailRtr = "dlq: D1 unavailable; message retried later"
)

// deferrals counts the deferrals logged per beer_id for class.
func deferrals(w *Worker, class string) map[string]int {
	out := map[string]int{}
	for _, r := range logRecords(w, msgDeferred) {
		if r.str("class") == class {
			out[r.str("beer_id")]++
		}
	}
	return out
}

// firing reads alert_state for one alert (0 when it never fired).
func firing(t *testing.T, w *Worker, alert string) int64 {
	t.Helper()
	return w.Int(t, `SELECT COALESCE((SELECT firing FROM alert_state WHERE name = ?), 0)`, alert)
}

// 401 and 403 from the provider: the breaker opens at once with cause auth,
// the beers wait in D1 (no attempt spent, no DLQ row) while the catch-up
// probes the key itself (enrichment.KeyProbe, refused like every call), the
// calls' quota is given back, and enrichment_auth_failing fires. Once the
// provider accepts the key again, the key probe closes the breaker (its
// call counted in the quota), every beer is enriched and the alert
// resolves.
func TestEnrichAuthFailureOpensBreakerAndDefers(t *testing.T) {
	// Re-opens capped at 8 s: the probes after the key is accepted again
	// come within the test's patience however many failed before.
	w := startWorker(t, map[string]string{"ENRICHMENT_BREAKER_COOLDOWN_SECONDS": "2", "ENRICHMENT_BREAKER_MAX_COOLDOWN_SECONDS": "8"})
	dumpOnFailure(t, w)
	enriched := int64(0)
	keyProbes := func() int64 { return int64(len(w.Provider.Calls(enrichment.KeyProbeBeer.BeerName))) }
	acceptedProbes := int64(0)
	cronAt := cronTime()
	for _, status := range []int{http.StatusUnauthorized, http.StatusForbidden} {
		var beers []enrichment.Beer
		var tokens []string
		w.Provider.On(enrichment.KeyProbeBeer.BeerName, Behavior{Status: status}) // the key is refused, whatever the question
		for i := range 3 {
			token := uniq(fmt.Sprintf("auth%d-%d", status, i))
			w.Provider.On(token, Behavior{Status: status})
			tokens = append(tokens, token)
			beers = append(beers, beerFor(token))
		}
		calls := func() int {
			n := 0
			for _, tk := range tokens {
				n += len(w.Provider.Calls(tk))
			}
			return n
		}
		enrich(t, w, beers...)

		// Every beer waiting, and the provider refused at least three calls
		// (the first, then the catch-up's key probes after each cooldown).
		probes0 := keyProbes()
		stop := ticker(w, 2*time.Second)
		Eventually(t, 90*time.Second, fmt.Sprintf("%d: every beer waiting, three calls refused", status), func() bool {
			return int64(calls())+keyProbes()-probes0 >= 3 && w.Int(t, `SELECT COUNT(*) FROM beers WHERE status = 'waiting' AND beer_id IN (?, ?, ?)`,
				beers[0].BeerID, beers[1].BeerID, beers[2].BeerID) == 3
		})
		stop()
		if n := w.Int(t, `SELECT COUNT(*) FROM enrichment_breaker WHERE cause = 'auth' AND state <> 'closed'`); n != 1 {
			t.Fatalf("%d: breaker not open because of auth", status)
		}
		if n := w.Int(t, `SELECT COUNT(*) FROM dlq_messages`); n != 0 {
			t.Fatalf("%d: %d DLQ rows for an auth failure", status, n)
		}
		if n := w.Int(t, `SELECT COUNT(*) FROM message_attempts`); n != 0 {
			t.Fatalf("%d: %d attempt records: a deferral must not spend an attempt", status, n)
		}
		for _, b := range beers {
			s := beerState(t, w, b.BeerID)
			if s.Status != enrichment.StatusWaiting || s.Attempts != 0 || s.LastError == nil ||
				!(strings.HasPrefix(*s.LastError, "auth: status") || strings.HasPrefix(*s.LastError, "breaker_open: circuit breaker open (auth)")) {
				t.Fatalf("%d: beer %+v", status, s)
			}
		}
		// Each refused call gave its reservation back (a refused key probe
		// takes none): only the enrichments and the accepted key probes count.
		if used := w.Int(t, `SELECT COALESCE(MAX(used), 0) FROM enrichment_quota`); used != enriched+acceptedProbes {
			t.Fatalf("%d: quota used %d, want %d (refused calls given back)", status, used, enriched+acceptedProbes)
		}

		cronAt = cronAt.Add(time.Minute)
		fireAndWait(t, w, cronFrequent, "alerts", cronAt)
		if firing(t, w, "enrichment_auth_failing") != 1 {
			t.Fatalf("%d: enrichment_auth_failing not firing", status)
		}

		// The provider accepts the key again: the next key probe closes the breaker.
		for _, tk := range tokens {
			w.Provider.On(tk, Behavior{Content: "5.0"})
		}
		accepted0 := keyProbes()
		w.Provider.On(enrichment.KeyProbeBeer.BeerName, Behavior{Content: "5.0"})
		stop = ticker(w, 2*time.Second)
		defer stop()
		for _, b := range beers {
			s := waitStatus(t, w, b.BeerID, enrichment.StatusEnriched, 90*time.Second)
			if s.Attempts != 1 {
				t.Fatalf("%d: beer enriched with attempts %d, want 1 (deferrals spend none)", status, s.Attempts)
			}
		}
		enriched += int64(len(beers))
		stop()
		acceptedProbes += keyProbes() - accepted0
		cronAt = cronAt.Add(time.Minute)
		fireAndWait(t, w, cronFrequent, "alerts", cronAt)
		if firing(t, w, "enrichment_auth_failing") != 0 {
			t.Fatalf("%d: enrichment_auth_failing still firing after the provider recovered", status)
		}
		if n := w.Int(t, `SELECT COUNT(*) FROM enrichment_breaker WHERE state = 'closed' AND cause IS NULL`); n != 1 {
			t.Fatalf("%d: breaker not closed", status)
		}
		if n := w.Int(t, `SELECT COUNT(*) FROM dlq_messages`); n != 0 {
			t.Fatalf("%d: %d DLQ rows", status, n)
		}
	}
	if !strings.Contains(w.Log(), `"msg":"alert: resolved","service":"redrive","alert":"enrichment_auth_failing"`) {
		t.Fatal("the alert's resolution was not logged")
	}
}

// D1 unavailable under the DLQ consumer (dlq_messages renamed away): the
// messages are not acked; each is retried with a delay that doubles per
// delivery (D1_RETRY_BASE_SECONDS=1: 1, 2, 4 s). Once the table is back
// every message is stored exactly once.
func TestCaptureSurvivesD1Unavailable(t *testing.T) {
	w := startWorker(t, map[string]string{"D1_RETRY_BASE_SECONDS": "1"})
	w.ExecDirect(t, `ALTER TABLE dlq_messages RENAME TO dlq_messages_away`)
	prefix := unique("d1down")
	var bodies []string
	for i := range 5 {
		bodies = append(bodies, beerBody(t, fmt.Sprintf("%s-%d", prefix, i), "Outage "+prefix, nil))
	}
	w.Send(t, "beer-enrichment-dlq", bodies...)

	// The recorded decisions: per message, attempt n retried after 2^(n-1) s.
	type decision struct{ attempt, delay int64 }
	byMessage := func() map[string][]decision {
		out := map[string][]decision{}
		for _, r := range logRecords(w, msgDLQUnavailRtr) {
			out[r.str("message_id")] = append(out[r.str("message_id")], decision{r.num("attempt"), r.num("delay_s")})
		}
		return out
	}
	Eventually(t, 90*time.Second, "each message retried three times with backoff", func() bool {
		got := byMessage()
		if len(got) != len(bodies) {
			return false
		}
		for _, ds := range got {
			if len(ds) < 3 {
				return false
			}
		}
		return true
	})
	w.ExecDirect(t, `ALTER TABLE dlq_messages_away RENAME TO dlq_messages`)
	for id, ds := range byMessage() {
		sort.Slice(ds, func(i, j int) bool { return ds[i].attempt < ds[j].attempt })
		for i, d := range ds[:3] {
			if d.attempt != int64(i+1) || d.delay != int64(1)<<i {
				t.Fatalf("message %s: decisions %v, want attempt n retried after 2^(n-1) s", id, ds)
			}
		}
	}
	if strings.Contains(w.Log(), "storing messages one by one") {
		t.Fatal("a missing table was taken for a content problem")
	}

	Eventually(t, 90*time.Second, "every message stored once the table is back", func() bool {
		return w.Int(t, `SELECT COUNT(*) FROM dlq_messages WHERE label_1 = ?`, "Outage "+prefix) == int64(len(bodies))
	})
	for _, b := range bodies {
		if n := w.Int(t, `SELECT COUNT(*) FROM dlq_messages WHERE raw_message = ?`, b); n != 1 {
			t.Fatalf("body stored %d times: %s", n, b)
		}
	}
	if n := w.Int(t, `SELECT COUNT(DISTINCT message_id) FROM dlq_messages`); n != int64(len(bodies)) {
		t.Fatalf("%d distinct messages stored, want %d", n, len(bodies))
	}
}

// D1 unavailable under the enrichment consumer (beers renamed away while
// messages arrive): the messages are deferred (fresh copies) instead of
// spending their attempts, so none reaches the DLQ however long it lasts;
// once the table is back every beer is enriched with one provider call.
func TestEnrichmentSurvivesD1Unavailable(t *testing.T) {
	w := startWorker(t, map[string]string{"D1_RETRY_BASE_SECONDS": "1"})
	// Beers nobody registered: their messages come straight to the queue
	// (as a replay or another producer sends them) while the table is gone.
	var beers []enrichment.Beer
	for i := range 4 {
		token := uniq(fmt.Sprint("d1beer", i))
		w.Provider.On(token, Behavior{Content: "4.2"})
		beers = append(beers, beerFor(token))
	}
	w.ExecDirect(t, `ALTER TABLE beers RENAME TO beers_away`)
	var bodies []string
	for _, b := range beers {
		bodies = append(bodies, fmt.Sprintf(`{"beer_id":%q,"beer_name":%q,"brewer":%q}`, b.BeerID, b.BeerName, b.Brewer))
	}
	w.Send(t, "beer-enrichment", bodies...)

	// More deferrals per message than max_retries+1 = 4 deliveries: had they
	// been retries, every message would be in the DLQ by now.
	Eventually(t, 120*time.Second, "every message deferred five times", func() bool {
		d := deferrals(w, enrichment.ClassD1Unavailable)
		for _, b := range beers {
			if d[b.BeerID] < 5 {
				return false
			}
		}
		return true
	})
	if n := len(w.Provider.Calls("")); n != 0 {
		t.Fatalf("%d provider calls while the beers could not be tracked", n)
	}
	if n := w.Int(t, `SELECT COUNT(*) FROM dlq_messages`); n != 0 {
		t.Fatalf("%d DLQ rows during the outage", n)
	}
	w.ExecDirect(t, `ALTER TABLE beers_away RENAME TO beers`)

	for _, b := range beers {
		Eventually(t, 90*time.Second, "beer "+b.BeerID+" enriched", func() bool {
			return w.Int(t, `SELECT COUNT(*) FROM beers WHERE beer_id = ? AND status = 'enriched'`, b.BeerID) == 1
		})
		s := beerState(t, w, b.BeerID)
		if s.ABV == nil || *s.ABV != 4.2 || s.Attempts != 1 {
			t.Fatalf("beer %+v", s)
		}
		if n := len(w.Provider.Calls(b.BeerName)); n != 1 {
			t.Fatalf("beer %s: %d provider calls", b.BeerID, n)
		}
	}
	if n := w.Int(t, `SELECT COUNT(*) FROM dlq_messages`); n != 0 {
		t.Fatalf("%d DLQ rows", n)
	}
	if n := w.Int(t, `SELECT COUNT(*) FROM message_attempts`); n != 0 {
		t.Fatalf("%d attempt records: the outage spent attempts", n)
	}
}
