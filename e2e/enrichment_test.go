//go:build e2e

package e2e

import (
	"database/sql"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/enrichment"
)

// uniq makes a token unique to this run; it is the beer name (the fake
// provider picks its behaviour by it) and, prefixed, the beer id.
func uniq(prefix string) string { return fmt.Sprintf("%s-%d", prefix, time.Now().UnixNano()) }

func beerFor(token string) enrichment.Beer {
	return enrichment.Beer{BeerID: "id-" + token, BeerName: token, Brewer: "E2E Brewing"}
}

// enrich posts beers to /admin/enrich and returns the result.
func enrich(t *testing.T, w *Worker, beers ...enrichment.Beer) enrichment.EnqueueResult {
	t.Helper()
	r := w.Admin(t, http.MethodPost, "/admin/enrich", map[string]any{"beers": beers})
	if r.Status != http.StatusOK || !r.Success {
		t.Fatalf("POST /admin/enrich: %d %s", r.Status, r.Raw)
	}
	var res enrichment.EnqueueResult
	r.Decode(t, &res)
	return res
}

// beerState reads GET /admin/beers/{id}.
func beerState(t *testing.T, w *Worker, id string) enrichment.BeerState {
	t.Helper()
	r := w.Admin(t, http.MethodGet, "/admin/beers/"+id, nil)
	if r.Status != http.StatusOK {
		t.Fatalf("GET /admin/beers/%s: %d %s", id, r.Status, r.Raw)
	}
	var s enrichment.BeerState
	r.Decode(t, &s)
	return s
}

func waitStatus(t *testing.T, w *Worker, id, status string, timeout time.Duration) enrichment.BeerState {
	t.Helper()
	var s enrichment.BeerState
	Eventually(t, timeout, "beer "+id+" reaches "+status, func() bool {
		s = beerState(t, w, id)
		return s.Status == status
	})
	return s
}

// startWorker starts a worker of this test's own with vars, stopped at cleanup
// (its log printed when the test failed).
func startWorker(t *testing.T, vars map[string]string) *Worker {
	t.Helper()
	return startWorkerWith(t, Options{Vars: vars})
}

// startJSWorker starts a worker of this test's own with the JavaScript
// producer and consumers (e2e/jsconsumer) beside it, stopped at cleanup.
func startJSWorker(t *testing.T) *Worker {
	t.Helper()
	return startWorkerWith(t, Options{ExtraConfigs: []string{jsConsumerConfig}})
}

// startWorkerWith starts a worker of this test's own with opts, stopped at
// cleanup (its log printed when the test failed).
func startWorkerWith(t *testing.T, opts Options) *Worker {
	t.Helper()
	w, err := StartWorker(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("--- worker log (tail) ---\n%s", tail(w.Log(), 6000))
		}
		w.Stop()
	})
	return w
}

func TestEnrichStoresABV(t *testing.T) {
	token := uniq("abv")
	shared.Provider.On(token, Behavior{Content: "6.4"})
	b := beerFor(token)
	res := enrich(t, shared, b)
	if res.Received != 1 || len(res.Queued) != 1 || res.Queued[0] != b.BeerID {
		t.Fatalf("enqueue result %+v", res)
	}
	s := waitStatus(t, shared, b.BeerID, enrichment.StatusEnriched, 30*time.Second)
	if s.ABV == nil || *s.ABV != 6.4 || s.Source == nil || *s.Source != "llm:fake" || s.BeerName != token || s.Brewer != "E2E Brewing" || s.Attempts != 1 {
		t.Fatalf("beer %+v", s)
	}
	if n := len(shared.Provider.Calls(token)); n != 1 {
		t.Fatalf("provider calls = %d, want 1", n)
	}
	if got := shared.Provider.LastAuthorization(); got != "Bearer e2e-Zq8wX3vN7tR2kP5m" {
		t.Fatalf("Authorization = %q", got)
	}
}

func TestEnrichUnknownIsNotFound(t *testing.T) {
	token := uniq("unknown")
	shared.Provider.On(token, Behavior{Content: "unknown"})
	b := beerFor(token)
	enrich(t, shared, b)
	s := waitStatus(t, shared, b.BeerID, enrichment.StatusNotFound, 30*time.Second)
	if s.ABV != nil || len(shared.Provider.Calls(token)) != 1 {
		t.Fatalf("beer %+v, calls %d", s, len(shared.Provider.Calls(token)))
	}
}

// An already enriched beer causes no provider call: neither a repeated
// registration (nothing is sent) nor a message for it (acked as stale).
func TestEnrichAlreadyEnrichedCausesNoCall(t *testing.T) {
	token := uniq("stale")
	shared.Provider.On(token, Behavior{Content: "4.8"})
	b := beerFor(token)
	enrich(t, shared, b)
	waitStatus(t, shared, b.BeerID, enrichment.StatusEnriched, 30*time.Second)

	res := enrich(t, shared, b)
	if len(res.Queued) != 0 || len(res.AlreadyDone) != 1 || res.AlreadyDone[0] != b.BeerID {
		t.Fatalf("repeat registration: %+v", res)
	}
	shared.Send(t, "beer-enrichment", fmt.Sprintf(`{"beer_id":%q,"beer_name":%q,"brewer":"E2E Brewing"}`, b.BeerID, token))
	Eventually(t, 30*time.Second, "stale message acked", func() bool {
		for _, line := range strings.Split(shared.Log(), "\n") {
			if strings.Contains(line, "beer already done; acked without a provider call") && strings.Contains(line, `"beer_id":"`+b.BeerID+`"`) {
				return true
			}
		}
		return false
	})
	if n := len(shared.Provider.Calls(token)); n != 1 {
		t.Fatalf("provider calls = %d, want 1 (the first enrichment only)", n)
	}
}

// A provider 500 is retried max_retries+1 = 4 times, then the message is in
// dlq_messages with the last attempt recorded (attempt 4, the provider's text).
func TestEnrichServerErrorIsRetriedThenCaptured(t *testing.T) {
	token := uniq("err500")
	shared.Provider.On(token, Behavior{Status: http.StatusInternalServerError})
	b := beerFor(token)
	enrich(t, shared, b)

	var messageID, reason string
	var count int64
	Eventually(t, 60*time.Second, "message captured in dlq_messages", func() bool {
		err := shared.DB(t).QueryRow(`SELECT message_id, COALESCE(failure_reason, ''), failure_count FROM dlq_messages WHERE row_key = ?`, b.BeerID).
			Scan(&messageID, &reason, &count)
		return err == nil
	})
	if n := len(shared.Provider.Calls(token)); n != 4 {
		t.Fatalf("provider calls = %d, want max_retries+1 = 4", n)
	}
	const providerText = "fake provider error 500"
	var attempt int64
	var class, errText string
	err := shared.DB(t).QueryRow(`SELECT attempt, error_class, error FROM message_attempts WHERE message_id = ?`, messageID).Scan(&attempt, &class, &errText)
	switch {
	case err == nil:
		if attempt != 4 || class != enrichment.ClassTransient || errText != "status 500: "+providerText {
			t.Fatalf("attempt record: %d %s %q", attempt, class, errText)
		}
	case err == sql.ErrNoRows:
		// The DLQ consumer may consume the record into the row.
		if count != 4 || !strings.Contains(reason, providerText) {
			t.Fatalf("no attempt record and the row lacks it: count %d reason %q", count, reason)
		}
	default:
		t.Fatal(err)
	}
	s := beerState(t, shared, b.BeerID)
	if s.Status != enrichment.StatusFailed || s.Attempts != 4 || s.LastError == nil || !strings.Contains(*s.LastError, providerText) {
		t.Fatalf("beer %+v", s)
	}
}

// 429 with Retry-After: 7: the consumer asks the queue for a 7 s delay (the
// beer's next_attempt_at is its failed attempt's time + 7000 ms, class
// rate_limited), and the redelivery then enriches the beer.
func TestEnrichHonoursRetryAfter(t *testing.T) {
	token := uniq("ratelimited")
	shared.Provider.On(token, Behavior{Status: http.StatusTooManyRequests, RetryAfter: "7"})
	b := beerFor(token)
	enrich(t, shared, b)
	var next, updated int64
	var lastError string
	Eventually(t, 30*time.Second, "429 recorded on the beer", func() bool {
		return shared.DB(t).QueryRow(`SELECT next_attempt_at, updated_at, last_error FROM beers WHERE beer_id = ? AND next_attempt_at IS NOT NULL`, b.BeerID).
			Scan(&next, &updated, &lastError) == nil
	})
	if next-updated != 7000 || !strings.HasPrefix(lastError, "rate_limited: status 429") {
		t.Fatalf("retry decided for %d ms after the attempt (want 7000), last_error %q", next-updated, lastError)
	}
	shared.Provider.On(token, Behavior{Content: "5.5"})
	s := waitStatus(t, shared, b.BeerID, enrichment.StatusEnriched, 60*time.Second)
	if calls := shared.Provider.Calls(token); len(calls) != 2 || s.Attempts != 2 {
		t.Fatalf("calls %d, beer %+v", len(calls), s)
	}
}

// (401/403 from the provider are no longer permanent: see
// TestEnrichAuthFailureOpensBreakerAndDefers in dropped_test.go, on a
// worker of its own, since they open the breaker at once.)

// Malformed messages are stored as poison and acked without a provider call.
func TestEnrichPoisonMessagesAreStored(t *testing.T) {
	token := uniq("poison")
	shared.Send(t, "beer-enrichment", "not json "+token, fmt.Sprintf(`{"beer_name":%q}`, token))
	Eventually(t, 30*time.Second, "both poison messages stored", func() bool {
		return shared.Int(t, `SELECT COUNT(*) FROM dlq_messages WHERE raw_message LIKE ? AND failure_class = 'poison' AND failure_count = 1`, "%"+token+"%") == 2
	})
	if n := len(shared.Provider.Calls(token)); n != 0 {
		t.Fatalf("provider calls = %d", n)
	}
}

func TestEnrichAPIRejectsBadInput(t *testing.T) {
	for name, body := range map[string]any{
		"no beers":     map[string]any{},
		"missing name": map[string]any{"beers": []map[string]string{{"beer_id": "x"}}},
		"not json":     "{nope",
	} {
		r := shared.Admin(t, http.MethodPost, "/admin/enrich", body)
		if r.Status != http.StatusBadRequest || r.Error == nil || r.Error.Code != "INVALID_REQUEST" {
			t.Errorf("%s: %d %s", name, r.Status, r.Raw)
		}
	}
	if r := shared.Admin(t, http.MethodGet, "/admin/beers/"+uniq("nobody"), nil); r.Status != http.StatusNotFound || r.Error.Code != "NOT_FOUND" {
		t.Errorf("unknown beer: %d %s", r.Status, r.Raw)
	}
	if r, err := shared.Do(http.MethodGet, "/admin/beers/x", nil, nil); err != nil || r.Status != http.StatusUnauthorized {
		t.Errorf("no credentials: %v %+v", err, r)
	}
}

// A hanging provider is cut off at ENRICHMENT_TIMEOUT_MS: the request is
// aborted (the fake sees the client go away), the attempt is a transient
// timeout, and the message keeps being retried.
func TestEnrichHangingProviderIsCutOff(t *testing.T) {
	w := startWorker(t, map[string]string{"ENRICHMENT_TIMEOUT_MS": "1000"})
	token := uniq("hang")
	w.Provider.On(token, Behavior{Hang: true})
	b := beerFor(token)
	enrich(t, w, b)
	Eventually(t, 60*time.Second, "a second attempt after the first timed out", func() bool { return len(w.Provider.Calls(token)) >= 2 })
	if w.Provider.Calls(token)[0].Ended.IsZero() {
		t.Fatal("the first hanging request is still open: the timeout did not abort it")
	}
	var class, errText string
	Eventually(t, 10*time.Second, "attempt recorded", func() bool {
		return w.DB(t).QueryRow(`SELECT error_class, error FROM message_attempts LIMIT 1`).Scan(&class, &errText) == nil
	})
	// The recorded decision: aborted by the 1 s timeout (not at once, not later).
	if class != enrichment.ClassTransient || !strings.HasPrefix(errText, "timeout: ") || !strings.Contains(errText, "within 1s") {
		t.Fatalf("attempt record %s %q", class, errText)
	}
}

// The breaker opens after ENRICHMENT_BREAKER_THRESHOLD consecutive transient
// failures: provider calls stop while the beers wait in D1 (waiting,
// breaker_open, no attempt spent by the deferral); after the cooldown the
// catch-up sends one of them as the probe, which reaches a now healthy
// provider and closes the breaker, and its next run sends the other.
func TestEnrichCircuitBreakerOpensAndCloses(t *testing.T) {
	w := startWorker(t, map[string]string{"ENRICHMENT_BREAKER_THRESHOLD": "2", "ENRICHMENT_BREAKER_COOLDOWN_SECONDS": "6"})
	ta, tb := uniq("brk-a"), uniq("brk-b")
	w.Provider.On(ta, Behavior{Status: http.StatusServiceUnavailable})
	w.Provider.On(tb, Behavior{Status: http.StatusServiceUnavailable})
	a, b := beerFor(ta), beerFor(tb)
	enrich(t, w, a, b)
	calls := func() int { return len(w.Provider.Calls(ta)) + len(w.Provider.Calls(tb)) }

	Eventually(t, 30*time.Second, "breaker open", func() bool {
		return w.Int(t, `SELECT COUNT(*) FROM enrichment_breaker WHERE state = 'open'`) == 1
	})
	opened := calls()
	if opened != 2 {
		t.Fatalf("provider calls when the breaker opened = %d, want the threshold 2", opened)
	}
	Eventually(t, 30*time.Second, "both beers waiting while open", func() bool {
		return w.Int(t, `SELECT COUNT(*) FROM beers WHERE status = 'waiting' AND last_error LIKE 'breaker_open: circuit breaker open (transient)%' AND beer_id IN (?, ?)`,
			a.BeerID, b.BeerID) == 2
	})
	if n := calls(); n != opened {
		t.Fatalf("provider calls grew from %d to %d while the breaker was open", opened, n)
	}

	w.Provider.On(ta, Behavior{Content: "5.1"})
	w.Provider.On(tb, Behavior{Content: "5.2"})
	stop := ticker(w, 3*time.Second)
	defer stop()
	waitStatus(t, w, a.BeerID, enrichment.StatusEnriched, 60*time.Second)
	waitStatus(t, w, b.BeerID, enrichment.StatusEnriched, 60*time.Second)
	if st := w.Int(t, `SELECT COUNT(*) FROM enrichment_breaker WHERE state = 'closed' AND failures = 0`); st != 1 {
		t.Fatal("breaker not closed after the healthy probe")
	}
	counter := func(name string) int64 {
		return w.Int(t, `SELECT COALESCE(MAX(value), 0) FROM counters WHERE name = ?`, name)
	}
	if counter(enrichment.CounterBreakerOpened) != 1 || counter(enrichment.CounterBreakerProbes) != 1 || counter(enrichment.CounterBreakerClosed) != 1 {
		t.Fatalf("breaker counters opened=%d probes=%d closed=%d", counter(enrichment.CounterBreakerOpened),
			counter(enrichment.CounterBreakerProbes), counter(enrichment.CounterBreakerClosed))
	}
	if n := calls(); n != opened+2 {
		t.Fatalf("provider calls = %d, want %d (one probe, then the other beer)", n, opened+2)
	}
	if !strings.Contains(w.Log(), "enrichment: circuit breaker opened") || !strings.Contains(w.Log(), "enrichment: circuit breaker closed") {
		t.Fatal("state changes not logged")
	}
}

// DAILY_ENRICHMENT_LIMIT=2: the third beer gets no provider call; it is
// parked in D1 until the UTC day resets (pending, due after the reset, no
// attempt spent, not in the DLQ) with the quota as its last error. A stale
// message spends nothing.
func TestEnrichDailyQuotaStopsCallsWithoutLosingMessages(t *testing.T) {
	w := startWorker(t, map[string]string{"DAILY_ENRICHMENT_LIMIT": "2"})
	var beers []enrichment.Beer
	for i := 0; i < 3; i++ {
		token := uniq(fmt.Sprint("quota", i))
		w.Provider.On(token, Behavior{Content: "5.0"})
		beers = append(beers, beerFor(token))
	}
	before := time.Now()
	enrich(t, w, beers...)

	Eventually(t, 30*time.Second, "one message refused by the quota", func() bool {
		return w.Int(t, `SELECT COALESCE(MAX(value), 0) FROM counters WHERE name = ?`, enrichment.CounterQuotaRefused) == 1
	})
	Eventually(t, 30*time.Second, "two beers enriched", func() bool {
		return w.Int(t, `SELECT COUNT(*) FROM beers WHERE status = 'enriched'`) == 2
	})
	if n := len(w.Provider.Calls("")); n != 2 {
		t.Fatalf("provider calls = %d, want the limit 2", n)
	}
	if used := w.Int(t, `SELECT used FROM enrichment_quota WHERE day = ?`, time.Now().UTC().Format(time.DateOnly)); used != 2 {
		t.Fatalf("quota used = %d", used)
	}
	var refused enrichment.BeerState
	for _, b := range beers {
		if s := beerState(t, w, b.BeerID); s.Status != enrichment.StatusEnriched {
			refused = s
		}
	}
	if refused.Status != enrichment.StatusPending || refused.Attempts != 0 || refused.LastError == nil || !strings.HasPrefix(*refused.LastError, "quota: daily limit of 2") {
		t.Fatalf("refused beer %+v", refused)
	}
	// Due after the UTC day resets, within its first QuotaSpread.
	due := enrichment.ResetAt(before)
	if refused.NextAttemptAt == nil || time.UnixMilli(*refused.NextAttemptAt).Before(due) || time.UnixMilli(*refused.NextAttemptAt).After(due.Add(enrichment.QuotaSpread)) {
		t.Fatalf("next attempt %v, want within %v of %v", refused.NextAttemptAt, enrichment.QuotaSpread, due)
	}
	if n := w.Int(t, `SELECT COUNT(*) FROM dlq_messages`); n != 0 {
		t.Fatalf("a quota refusal must not dead-letter the message (%d rows)", n)
	}
	Eventually(t, 10*time.Second, "the deferral logged", func() bool {
		return strings.Contains(w.Log(), `"msg":"`+msgParked+`"`) &&
			strings.Contains(w.Log(), `"class":"quota"`)
	})
	if n := w.Int(t, `SELECT COUNT(*) FROM message_attempts`); n != 0 {
		t.Fatalf("a deferral must not spend an attempt (%d attempt records)", n)
	}

	// A message for an enriched beer is acked as stale: no reservation, no refusal.
	done := beers[0]
	if s := beerState(t, w, done.BeerID); s.Status != enrichment.StatusEnriched {
		done = beers[1]
	}
	w.Send(t, "beer-enrichment", fmt.Sprintf(`{"beer_id":%q,"beer_name":%q}`, done.BeerID, done.BeerName))
	Eventually(t, 30*time.Second, "stale message acked", func() bool {
		return w.Int(t, `SELECT COALESCE(MAX(value), 0) FROM counters WHERE name = ?`, enrichment.CounterStale) == 1
	})
	if n := w.Int(t, `SELECT value FROM counters WHERE name = ?`, enrichment.CounterQuotaRefused); n != 1 {
		t.Fatalf("quota refusals = %d, want 1", n)
	}
	if len(w.Provider.Calls("")) != 2 {
		t.Fatal("stale message reached the provider")
	}
}

// A provider that redirects (307 keeps the method, the body and, in
// workerd, the explicitly set Authorization) is not followed: fetch runs
// with redirect "manual", the redirect's target sees no request, and the
// beer fails at once with a reason naming where the redirect pointed.
func TestEnrichProviderRedirectIsNotFollowed(t *testing.T) {
	other, err := StartFakeProvider()
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	for _, status := range []int{http.StatusFound, http.StatusTemporaryRedirect} {
		token := uniq(fmt.Sprintf("redirect%d", status))
		shared.Provider.On(token, Behavior{Status: status, Location: other.URL + "?token=abc"})
		b := beerFor(token)
		enrich(t, shared, b)
		s := waitStatus(t, shared, b.BeerID, enrichment.StatusFailed, 60*time.Second)
		target, _ := url.Parse(other.URL)
		want := fmt.Sprintf("permanent: status %d: redirect to http://%s not followed", status, target.Host)
		if s.LastError == nil || !strings.HasPrefix(*s.LastError, want) || strings.Contains(*s.LastError, "token=abc") {
			t.Fatalf("beer %+v, want last_error %q...", s, want)
		}
		if n := len(shared.Provider.Calls(token)); n != 1 {
			t.Fatalf("provider calls = %d, want 1 (a permanent failure)", n)
		}
	}
	if n := len(other.Calls("")); n != 0 {
		t.Fatalf("the redirect's target got %d requests", n)
	}
}
