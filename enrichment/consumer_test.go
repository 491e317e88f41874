package enrichment

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/internal/sqlitetest"
	"github.com/redrive/redrive/metrics"
	"github.com/redrive/redrive/outbound"
	"github.com/redrive/redrive/queue"
	"github.com/redrive/redrive/queue/queuetest"
)

var discard = slog.New(slog.NewTextHandler(io.Discard, nil))

const testKey = "sk-test-secret"

// fakeProvider is an httptest chat-completions server whose answer is set
// per test; it records every request.
type fakeProvider struct {
	srv *httptest.Server

	mu     sync.Mutex
	answer func(w http.ResponseWriter, r *http.Request)
	bodies []string
	auth   []string
}

func newFakeProvider(t *testing.T) *fakeProvider {
	p := &fakeProvider{}
	p.answer = func(w http.ResponseWriter, _ *http.Request) { w.Write(answer("5.0")) }
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		p.mu.Lock()
		p.bodies = append(p.bodies, string(body))
		p.auth = append(p.auth, r.Header.Get("Authorization"))
		answer := p.answer
		p.mu.Unlock()
		answer(w, r)
	}))
	t.Cleanup(p.srv.Close)
	return p
}

func (p *fakeProvider) set(f func(w http.ResponseWriter, r *http.Request)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.answer = f
}

func (p *fakeProvider) status(code int, body string, header ...string) {
	p.set(func(w http.ResponseWriter, _ *http.Request) {
		for i := 0; i+1 < len(header); i += 2 {
			w.Header().Set(header[i], header[i+1])
		}
		w.WriteHeader(code)
		io.WriteString(w, body)
	})
}

func (p *fakeProvider) calls() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.bodies)
}

type fixture struct {
	c        *Consumer
	db       *sql.DB
	provider *fakeProvider
	sender   *queuetest.Sender
	now      time.Time
}

func newFixture(t *testing.T) *fixture {
	f := &fixture{db: sqlitetest.New(t), provider: newFakeProvider(t), sender: &queuetest.Sender{},
		now: time.Date(2030, 6, 1, 10, 0, 0, 0, time.UTC)}
	f.c = &Consumer{DB: f.db, Log: discard, Sender: f.sender,
		Provider: ChatProvider{URL: f.provider.srv.URL + "/chat/completions", Model: "test-model", APIKey: testKey,
			Timeout: 2 * time.Second, Doer: outbound.HTTPDoer{}},
		Policy: Policy{Backoff: Backoff{Base: 10 * time.Second, Max: time.Minute}, MaxAttempts: 4,
			BreakerThreshold: 100, BreakerCooldown: time.Minute, DailyLimit: 1000, D1RetryBase: 30 * time.Second},
		Clock: func() time.Time { return f.now },
		Rand:  func() float64 { return 0.5 },
	}
	return f
}

func msg(id, beerID, name string, attempt int) *queuetest.Message {
	body, _ := json.Marshal(Beer{BeerID: beerID, BeerName: name, Brewer: "Test Brewing"})
	m := queuetest.New(id, string(body))
	m.Attempt = attempt
	return m
}

func (f *fixture) consume(t *testing.T, msgs ...*queuetest.Message) {
	t.Helper()
	if err := f.c.ConsumeBatch(context.Background(), "beer-enrichment", queuetest.Batch(msgs...)); err != nil {
		t.Fatalf("ConsumeBatch: %v", err)
	}
	for _, m := range msgs {
		if !m.Settled() || (m.Acked && m.Retried) {
			t.Fatalf("message %s must be settled exactly once: acked=%v retried=%v", m.MsgID, m.Acked, m.Retried)
		}
	}
}

// deferredCopies returns the fresh copies sent back to the enrichment queue.
func (f *fixture) deferredCopies() []queue.Outgoing {
	return f.sender.Messages("beer-enrichment")
}

// wantDeferred checks that m was deferred: acked (not retried), one fresh
// copy with its body and content type sent with delay, and no attempt
// record (no attempt spent).
func (f *fixture) wantDeferred(t *testing.T, m *queuetest.Message, delay time.Duration) {
	t.Helper()
	if !m.Acked || m.Retried {
		t.Fatalf("%s: acked %v retried %v; want acked after its copy was sent", m.MsgID, m.Acked, m.Retried)
	}
	body, ct := m.Body()
	var copies []queue.Outgoing
	for _, o := range f.deferredCopies() {
		if o.Body == body {
			copies = append(copies, o)
		}
	}
	if len(copies) == 0 {
		t.Fatalf("%s: no copy sent", m.MsgID)
	}
	if last := copies[len(copies)-1]; last.ContentType != ct || last.Delay != delay {
		t.Fatalf("%s: copy %+v, want content type %s and delay %v", m.MsgID, last, ct, delay)
	}
	if _, ok := f.attempt(t, m.MsgID); ok {
		t.Fatalf("%s: a deferral must not record an attempt", m.MsgID)
	}
}

// wantParked checks that m was deferred by parking its beer in D1: acked
// (not retried), no copy sent, no attempt recorded, the beer in status
// with last_error starting with class. It returns the beer.
func (f *fixture) wantParked(t *testing.T, m *queuetest.Message, beerID, status, class string) BeerState {
	t.Helper()
	if !m.Acked || m.Retried {
		t.Fatalf("%s: acked %v retried %v; want acked (parked)", m.MsgID, m.Acked, m.Retried)
	}
	body, _ := m.Body()
	for _, o := range f.deferredCopies() {
		if o.Body == body {
			t.Fatalf("%s: a copy was sent (%+v); want the beer parked", m.MsgID, o)
		}
	}
	if _, ok := f.attempt(t, m.MsgID); ok {
		t.Fatalf("%s: a deferral must not record an attempt", m.MsgID)
	}
	s := f.beer(t, beerID)
	if s.Status != status || s.LastError == nil || !strings.HasPrefix(*s.LastError, class+": ") {
		t.Fatalf("%s: beer %+v, want %s with last_error %s: ...", m.MsgID, s, status, class)
	}
	return s
}

func (f *fixture) beer(t *testing.T, id string) BeerState {
	t.Helper()
	s, err := Registry{DB: f.db}.Lookup(context.Background(), id)
	if err != nil {
		t.Fatalf("beer %s: %v", id, err)
	}
	return s
}

func (f *fixture) counters(t *testing.T) map[string]int64 {
	t.Helper()
	c, err := metrics.Counters{DB: f.db}.All(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

type attemptRow struct {
	Attempt int
	Class   string
	Error   string
}

func (f *fixture) attempt(t *testing.T, messageID string) (attemptRow, bool) {
	t.Helper()
	var a attemptRow
	err := f.db.QueryRow(`SELECT attempt, error_class, error FROM message_attempts WHERE message_id = ?`, messageID).Scan(&a.Attempt, &a.Class, &a.Error)
	if err == sql.ErrNoRows {
		return a, false
	}
	if err != nil {
		t.Fatal(err)
	}
	return a, true
}

func TestConsumerStoresABVAndAcks(t *testing.T) {
	f := newFixture(t)
	f.provider.set(func(w http.ResponseWriter, _ *http.Request) { w.Write(answer("5.2")) })
	m := msg("m1", "b1", "Pale Ale Deluxe", 1)
	f.consume(t, m)
	if !m.Acked {
		t.Fatal("not acked")
	}
	s := f.beer(t, "b1")
	if s.Status != StatusEnriched || s.ABV == nil || *s.ABV != 5.2 || s.Confidence == nil || *s.Confidence != ProviderConfidence ||
		s.Source == nil || *s.Source != "llm:test-model" || s.Attempts != 1 || s.EnrichedAt == nil || *s.EnrichedAt != f.now.UnixMilli() {
		t.Fatalf("beer: %+v", s)
	}
	if f.provider.auth[0] != "Bearer "+testKey || !strings.Contains(f.provider.bodies[0], "Pale Ale Deluxe") || !strings.Contains(f.provider.bodies[0], `"model":"test-model"`) {
		t.Fatalf("request: auth %q body %s", f.provider.auth[0], f.provider.bodies[0])
	}
	c := f.counters(t)
	if c[CounterEnriched] != 1 || c[CounterProviderCalls] != 1 || c[CounterRetried] != 0 {
		t.Fatalf("counters %v", c)
	}
}

// The line of a provider call carries the day's quota used, this call
// included: 1, then 2 for the next message.
func TestConsumerLogsTheQuotaItsCallsUse(t *testing.T) {
	f := newFixture(t)
	var logs strings.Builder
	f.c.Log = slog.New(slog.NewJSONHandler(&logs, nil))
	f.provider.set(func(w http.ResponseWriter, _ *http.Request) { w.Write(answer("5.2")) })
	f.consume(t, msg("m1", "b1", "One", 1))
	f.consume(t, msg("m2", "b2", "Two", 1))
	var used []float64
	for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		var e map[string]any
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		if e["msg"] == "enrichment: provider answered" {
			n, _ := e["quota_used"].(float64)
			used = append(used, n)
		}
	}
	if len(used) != 2 || used[0] != 1 || used[1] != 2 {
		t.Fatalf("quota_used of the provider calls: %v, want [1 2]\n%s", used, logs.String())
	}
}

func TestConsumerUnknownIsNotFound(t *testing.T) {
	f := newFixture(t)
	for i, content := range []string{"unknown", "85"} {
		f.provider.set(func(w http.ResponseWriter, _ *http.Request) { w.Write(answer(content)) })
		id := fmt.Sprint("nf", i)
		m := msg(id, id, "Mystery "+content, 1)
		f.consume(t, m)
		s := f.beer(t, id)
		if !m.Acked || s.Status != StatusNotFound || s.ABV != nil || s.LastError == nil || !strings.HasPrefix(*s.LastError, "not_found: ") {
			t.Fatalf("%s: acked=%v beer %+v", content, m.Acked, s)
		}
	}
	if c := f.counters(t); c[CounterNotFound] != 2 {
		t.Fatalf("counters %v", c)
	}
}

func TestConsumerTransientFailureRecordsAttemptAndRetriesWithBackoff(t *testing.T) {
	f := newFixture(t)
	f.provider.status(500, `{"error":{"message":"upstream melted"}}`)
	m := msg("m500", "b500", "Lager", 2)
	f.consume(t, m)
	// The beer's first real attempt (whatever the delivery count): backoff
	// base 10 s, attempt 1: cap 10 s; Rand 0.5 → 5 s.
	if !m.Retried || m.RetryDelay != 5*time.Second {
		t.Fatalf("retried=%v delay=%v", m.Retried, m.RetryDelay)
	}
	a, ok := f.attempt(t, "m500")
	if !ok || a.Attempt != 1 || a.Class != ClassTransient || a.Error != "status 500: upstream melted" {
		t.Fatalf("attempt record %+v %v", a, ok)
	}
	s := f.beer(t, "b500")
	if s.Status != StatusQueued || s.NextAttemptAt == nil || *s.NextAttemptAt != f.now.Add(5*time.Second).UnixMilli() ||
		s.LastError == nil || *s.LastError != "transient: status 500: upstream melted" {
		t.Fatalf("beer %+v", s)
	}

	// The queue's last attempt (max_retries+1 = 4): stored in the DLQ here,
	// with both calls in its history, and acked; beer failed, no next attempt.
	last := msg("m500", "b500", "Lager", 4)
	f.consume(t, last)
	var count int
	var history string
	if err := f.db.QueryRow(`SELECT failure_count, history FROM dlq_messages WHERE message_id = 'm500'`).Scan(&count, &history); err != nil ||
		!last.Acked || last.Retried || count != 2 || strings.Count(history, `"status":500`) != 2 {
		t.Fatalf("last attempt: acked=%v row %v count %d history %s", last.Acked, err, count, history)
	}
	if s := f.beer(t, "b500"); s.Status != StatusFailed || s.NextAttemptAt != nil || s.Attempts != 2 {
		t.Fatalf("beer after last attempt %+v", s)
	}
	if c := f.counters(t); c[CounterRetried] != 2 || c[CounterProviderCalls] != 2 {
		t.Fatalf("counters %v", c)
	}
}

func TestConsumerHonoursRetryAfter(t *testing.T) {
	f := newFixture(t)
	f.provider.status(429, `{"error":{"message":"slow down"}}`, "Retry-After", "7")
	m := msg("m429", "b429", "Stout", 1)
	f.consume(t, m)
	a, _ := f.attempt(t, "m429")
	if !m.Retried || m.RetryDelay != 7*time.Second || a.Class != ClassRateLimited || !strings.Contains(a.Error, "status 429: slow down") {
		t.Fatalf("delay %v record %+v", m.RetryDelay, a)
	}
	// Without Retry-After: the backoff (attempt 1, cap 10 s, Rand 0.5 → 5 s).
	f.provider.status(429, `{}`)
	m = msg("m429b", "b429b", "Porter", 1)
	f.consume(t, m)
	if m.RetryDelay != 5*time.Second {
		t.Fatalf("delay without Retry-After = %v", m.RetryDelay)
	}
}

func TestConsumerPermanentFailureGoesToDLQAtOnce(t *testing.T) {
	f := newFixture(t)
	// The provider echoes the key: it must not reach the DLQ row.
	f.provider.status(400, `{"error":{"message":"bad request for key `+testKey+`"}}`)
	m := msg("m401", "b401", "Sour", 1)
	m.Type = queue.JSON // as a TypeScript producer's send(obj)
	f.consume(t, m)
	if !m.Acked {
		t.Fatal("a permanent failure must be acked (no wasted retries)")
	}
	var class, reason, source, ct, hash string
	var count int
	err := f.db.QueryRow(`SELECT failure_class, failure_reason, failure_count, source_queue, content_type, body_hash FROM dlq_messages
		WHERE message_id = 'm401' AND row_key = 'b401'`).Scan(&class, &reason, &count, &source, &ct, &hash)
	if err != nil || class != "permanent" || !strings.HasPrefix(reason, "permanent: status 400: bad request for key") || count != 1 || source != "beer-enrichment" {
		t.Fatalf("dlq row: %v %s %q %d %s", err, class, reason, count, source)
	}
	if ct != "json" || hash != dlq.BodyHash(queue.JSON, m.Text) {
		t.Fatalf("content type %q body hash %q: replay could not send it as it was produced", ct, hash)
	}
	if strings.Contains(reason, testKey) {
		t.Fatalf("secret leaked into the DLQ reason: %q", reason)
	}
	if _, ok := f.attempt(t, "m401"); ok {
		t.Fatal("no retry, so no attempt record")
	}
	if s := f.beer(t, "b401"); s.Status != StatusFailed || s.LastError == nil || !strings.Contains(*s.LastError, "400") {
		t.Fatalf("beer %+v", s)
	}
	if c := f.counters(t); c[CounterPermanent] != 1 || f.provider.calls() != 1 {
		t.Fatalf("counters %v calls %d", c, f.provider.calls())
	}
}

func TestConsumerUnparseableAnswerIsPermanent(t *testing.T) {
	f := newFixture(t)
	f.provider.status(200, `<html>maintenance</html>`)
	m := msg("mhtml", "bhtml", "Bock", 1)
	f.consume(t, m)
	var reason string
	f.db.QueryRow(`SELECT failure_reason FROM dlq_messages WHERE message_id = 'mhtml'`).Scan(&reason)
	if !m.Acked || !strings.HasPrefix(reason, "permanent: unparseable response") {
		t.Fatalf("acked=%v reason %q", m.Acked, reason)
	}
}

func TestConsumerStoresPoisonMessages(t *testing.T) {
	f := newFixture(t)
	bad := []*queuetest.Message{
		queuetest.New("p1", "not json"),
		queuetest.New("p2", `{"beer_name":"No Id"}`),
		queuetest.New("p3", `{"beer_id":42}`),
		queuetest.New("p4", `null`),
		{MsgID: "p5", Attempt: 1, Text: "AAEC", Type: queue.Bytes},
		{MsgID: "p6", Attempt: 1, Text: `[1,{"beer_id":"x"}]`, Type: queue.JSON},
		{MsgID: "p7", Attempt: 1, Text: `{"beer_id":"d"}`, Type: queue.V8},
	}
	f.consume(t, bad...)
	for _, m := range bad {
		var class, reason, raw, enc, ct string
		err := f.db.QueryRow(`SELECT failure_class, failure_reason, raw_message, raw_encoding, content_type FROM dlq_messages WHERE message_id = ?`, m.MsgID).
			Scan(&class, &reason, &raw, &enc, &ct)
		_, want := m.Body()
		if err != nil || !m.Acked || class != "poison" || !strings.HasPrefix(reason, "poison: ") || raw != m.Text || ct != string(want) {
			t.Errorf("%s: acked=%v row %v %s %q %q %s", m.MsgID, m.Acked, err, class, reason, raw, ct)
		}
	}
	if f.provider.calls() != 0 {
		t.Fatalf("poison must not reach the provider: %d calls", f.provider.calls())
	}
	if c := f.counters(t); c[CounterPoison] != 7 {
		t.Fatalf("counters %v", c)
	}
}

// Staleness (a message whose work is already done has no value in a
// retry): a message for a beer already enriched or not_found
// is acked without a provider call and without spending quota.
func TestConsumerAcksStaleMessagesWithoutCalling(t *testing.T) {
	f := newFixture(t)
	f.db.Exec(`INSERT INTO beers(beer_id, name, status, abv, created_at, updated_at) VALUES ('s1', 'Done', 'enriched', 4.5, 1, 1), ('s2', 'NF', 'not_found', NULL, 1, 1)`)
	m1, m2 := msg("ms1", "s1", "Done", 1), msg("ms2", "s2", "NF", 1)
	f.consume(t, m1, m2)
	if !m1.Acked || !m2.Acked || f.provider.calls() != 0 {
		t.Fatalf("acked %v %v, calls %d", m1.Acked, m2.Acked, f.provider.calls())
	}
	var quotaRows int
	f.db.QueryRow(`SELECT COUNT(*) FROM enrichment_quota`).Scan(&quotaRows)
	if s := f.beer(t, "s1"); s.ABV == nil || *s.ABV != 4.5 || quotaRows != 0 {
		t.Fatalf("stale ack changed state: %+v quota rows %d", s, quotaRows)
	}
	// Two messages for one beer in one batch: one call, the second is stale.
	d1, d2 := msg("md1", "dup", "Twice", 1), msg("md2", "dup", "Twice", 1)
	f.consume(t, d1, d2)
	if !d1.Acked || !d2.Acked || f.provider.calls() != 1 {
		t.Fatalf("duplicates: calls %d", f.provider.calls())
	}
	if c := f.counters(t); c[CounterStale] != 3 {
		t.Fatalf("counters %v", c)
	}
}

// A message for a beer nobody registered (a replay, a direct send) registers it.
func TestConsumerRegistersUnknownBeers(t *testing.T) {
	f := newFixture(t)
	f.consume(t, msg("mu", "unreg", "Surprise Saison", 1))
	if s := f.beer(t, "unreg"); s.Status != StatusEnriched || s.BeerName != "Surprise Saison" || s.Brewer != "Test Brewing" {
		t.Fatalf("beer %+v", s)
	}
}

func TestConsumerMissingAPIKeyIsAConfigError(t *testing.T) {
	f := newFixture(t)
	var logs strings.Builder
	f.c.Log = slog.New(slog.NewJSONHandler(&logs, nil))
	f.c.Provider.APIKey = ""
	m := msg("mkey", "bkey", "Kölsch", 3)
	f.consume(t, m)
	// Parked until the key is set (the catch-up sends it back then).
	s := f.wantParked(t, m, "bkey", StatusWaiting, ClassConfig)
	if f.provider.calls() != 0 || s.Attempts != 0 || *s.LastError != "config: ENRICHMENT_API_KEY is not set" {
		t.Fatalf("a config error is not not_found: %+v calls %d", s, f.provider.calls())
	}
	if !strings.Contains(logs.String(), `"level":"ERROR"`) || !strings.Contains(logs.String(), `"class":"config"`) {
		t.Fatalf("config error must be logged loudly: %s", logs.String())
	}
	if c := f.counters(t); c[CounterConfigErrors] != 1 || c[CounterDeferred] != 1 || c[CounterProviderCalls] != 0 {
		t.Fatalf("counters %v", c)
	}
}

// A hanging provider is cut off at the timeout: the request is aborted
// (the server sees its context cancelled) and the attempt is recorded as a
// transient timeout of the configured 100 ms.
func TestConsumerTimeoutAbortsTheCall(t *testing.T) {
	f := newFixture(t)
	f.c.Provider.Timeout = 100 * time.Millisecond
	released, stop := make(chan struct{}, 1), make(chan struct{})
	defer close(stop)
	f.provider.set(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
			released <- struct{}{}
		case <-stop: // the test is over
		}
	})
	m := msg("mhang", "bhang", "Hazy", 1)
	f.consume(t, m)
	a, _ := f.attempt(t, "mhang")
	if !m.Retried || a.Class != ClassTransient || a.Error != "timeout: timed out: no complete answer within 100ms" {
		t.Fatalf("retried=%v record %+v", m.Retried, a)
	}
	select {
	case <-released:
	case <-time.After(30 * time.Second): // a deadline for the server's goroutine, not a measurement
		t.Fatal("the provider never saw the request aborted")
	}
}

func TestConsumerNetworkFailureIsTransient(t *testing.T) {
	f := newFixture(t)
	f.c.Provider.URL = "http://127.0.0.1:1/unreachable"
	m := msg("mnet", "bnet", "Helles", 1)
	f.consume(t, m)
	if a, _ := f.attempt(t, "mnet"); !m.Retried || a.Class != ClassTransient || !strings.HasPrefix(a.Error, "network: ") {
		t.Fatalf("record %+v", a)
	}
}

func TestConsumerCircuitBreaker(t *testing.T) {
	f := newFixture(t)
	f.c.Policy.BreakerThreshold = 2
	f.provider.status(503, `{"error":{"message":"overloaded"}}`)
	f.consume(t, msg("c1", "cb1", "One", 1), msg("c2", "cb2", "Two", 1))
	if f.provider.calls() != 2 {
		t.Fatalf("calls %d", f.provider.calls())
	}
	// Open: no call; retried with a delay landing at the end of the cooldown.
	f.now = f.now.Add(20 * time.Second)
	blocked := msg("c3", "cb3", "Three", 1)
	f.consume(t, blocked)
	if f.provider.calls() != 2 {
		t.Fatalf("open breaker: calls %d", f.provider.calls())
	}
	if s := f.wantParked(t, blocked, "cb3", StatusWaiting, ClassBreakerOpen); s.Attempts != 0 ||
		!strings.HasPrefix(*s.LastError, "breaker_open: circuit breaker open (transient); provider not called before ") {
		t.Fatalf("blocked beer %+v", s)
	}
	// After the cooldown one probe goes through; a healthy answer closes it.
	f.now = f.now.Add(40 * time.Second)
	f.provider.set(func(w http.ResponseWriter, _ *http.Request) { w.Write(answer("6.1")) })
	probe, after := msg("c3", "cb3", "Three", 2), msg("c1", "cb1", "One", 2)
	f.consume(t, probe, after)
	if !probe.Acked || !after.Acked || f.provider.calls() != 4 {
		t.Fatalf("after probe: acked %v %v calls %d", probe.Acked, after.Acked, f.provider.calls())
	}
	c := f.counters(t)
	if c[CounterBreakerOpened] != 1 || c[CounterBreakerProbes] != 1 || c[CounterBreakerClosed] != 1 || c[CounterBreakerBlocked] != 1 {
		t.Fatalf("counters %v", c)
	}
	var state string
	f.db.QueryRow(`SELECT state FROM enrichment_breaker`).Scan(&state)
	if state != BreakerClosed {
		t.Fatalf("state %s", state)
	}
}

func TestConsumerQuotaStopsCallsAndKeepsMessages(t *testing.T) {
	f := newFixture(t)
	f.c.Policy.DailyLimit = 1
	f.now = time.Date(2030, 6, 1, 20, 0, 0, 0, time.UTC) // 4 h before the UTC reset
	first, second := msg("q1", "qb1", "First", 1), msg("q2", "qb2", "Second", 1)
	f.consume(t, first, second)
	if !first.Acked || f.provider.calls() != 1 {
		t.Fatalf("first: acked %v calls %d", first.Acked, f.provider.calls())
	}
	// Parked, due after the reset (spread over QuotaSpread: Rand 0.5 → 7.5 min).
	if s := f.wantParked(t, second, "qb2", StatusPending, ClassQuota); s.NextAttemptAt == nil ||
		*s.NextAttemptAt != ResetAt(f.now).Add(QuotaSpread/2).UnixMilli() || s.Attempts != 0 || !strings.HasPrefix(*s.LastError, "quota: daily limit of 1") {
		t.Fatalf("beer %+v", s)
	}
	// Early in the UTC day too: D1 keeps it, so no 12 h cap applies.
	f.now = time.Date(2030, 6, 1, 1, 0, 0, 0, time.UTC)
	f.db.Exec(`UPDATE enrichment_quota SET used = 1`)
	early := msg("q3", "qb3", "Third", 1)
	f.consume(t, early)
	if s := f.wantParked(t, early, "qb3", StatusPending, ClassQuota); *s.NextAttemptAt != ResetAt(f.now).Add(QuotaSpread/2).UnixMilli() {
		t.Fatalf("early beer %+v", s)
	}
	// The next day the deferred copy (a new message, attempt 1) goes through.
	f.now = time.Date(2030, 6, 2, 0, 0, 5, 0, time.UTC)
	again := msg("q2-copy", "qb2", "Second", 1)
	f.consume(t, again)
	if !again.Acked || f.beer(t, "qb2").Status != StatusEnriched {
		t.Fatal("message refused by the quota was not processed after the reset")
	}
	if c := f.counters(t); c[CounterQuotaRefused] != 2 || c[CounterProviderCalls] != 2 {
		t.Fatalf("counters %v", c)
	}
}

// D1 unavailable when the batch's beers are read: no attempt is spent.
// Every message is deferred: a fresh copy (same body and content type) is
// sent with D1Delay of the message's age, and only then is the original acked.
func TestConsumerD1UnavailableDefersWithoutSpendingAttempts(t *testing.T) {
	f := newFixture(t)
	f.db.Close()
	m1, m2 := msg("md1", "bd1", "Dunkel", 1), msg("md2", "bd2", "Doppelbock", 3)
	m1.SentAt, m2.SentAt = f.now, f.now.Add(-2*time.Minute)
	m2.Type = queue.JSON
	f.consume(t, m1, m2)
	if f.provider.calls() != 0 {
		t.Fatalf("provider called with D1 down: %d", f.provider.calls())
	}
	copies := f.deferredCopies()
	if len(copies) != 2 || f.sender.Calls != 1 {
		t.Fatalf("copies %+v in %d sends, want 2 in one", copies, f.sender.Calls)
	}
	for i, want := range []struct {
		m     *queuetest.Message
		ct    queue.ContentType
		delay time.Duration
	}{{m1, queue.Text, 27 * time.Second}, {m2, queue.JSON, 210 * time.Second}} { // base 30 s; 4 min - 1/8 (Rand 0.5)
		if !want.m.Acked || want.m.Retried || copies[i].Body != want.m.Text || copies[i].ContentType != want.ct || copies[i].Delay != want.delay {
			t.Errorf("%s: acked %v retried %v copy %+v; want %s after %v", want.m.MsgID, want.m.Acked, want.m.Retried, copies[i], want.ct, want.delay)
		}
	}
}

// A table missing (beers renamed away) is D1 unavailable too: deferred, not
// retried. Once it is back the copy is processed like any message, and the
// beer was never charged an attempt.
func TestConsumerMissingBeersTableDefersThenRecovers(t *testing.T) {
	f := newFixture(t)
	enrich(t, f, "br1")
	if _, err := f.db.Exec(`ALTER TABLE beers RENAME TO beers_away`); err != nil {
		t.Fatal(err)
	}
	m := msg("mr1", "br1", "Renamed", 1)
	m.SentAt = f.now
	f.consume(t, m)
	f.wantDeferred(t, m, 27*time.Second)
	if f.provider.calls() != 0 {
		t.Fatal("provider called although the beer could not be tracked")
	}
	if _, err := f.db.Exec(`ALTER TABLE beers_away RENAME TO beers`); err != nil {
		t.Fatal(err)
	}
	again := msg("mr1-copy", "br1", "Renamed", 1)
	f.consume(t, again)
	if s := f.beer(t, "br1"); !again.Acked || s.Status != StatusEnriched || s.Attempts != 1 {
		t.Fatalf("after recovery: acked %v beer %+v", again.Acked, s)
	}
	if n, _ := queueDLQRows(f.db); n != 0 {
		t.Fatalf("%d DLQ rows", n)
	}
}

// D1 failing in the middle of a message (the breaker's table gone) defers
// it as well; a statement failing while D1 answers is the old path.
func TestConsumerD1FailingMidMessageDefers(t *testing.T) {
	f := newFixture(t)
	if _, err := f.db.Exec(`DROP TABLE enrichment_breaker`); err != nil {
		t.Fatal(err)
	}
	m := msg("mb", "bb", "Breakerless", 2)
	m.SentAt = f.now.Add(-30 * time.Second)
	f.consume(t, m)
	f.wantDeferred(t, m, 53*time.Second) // age 30 s: c = 60 s, less 1/8 (Rand 0.5)
	if s := f.beer(t, "bb"); s.Attempts != 0 || f.provider.calls() != 0 {
		t.Fatalf("beer %+v calls %d", s, f.provider.calls())
	}
}

// When the fresh copy of a message deferred for D1 cannot be sent, the
// message is retried instead, with the same delay: never acked without a
// copy, never lost.
func TestConsumerDeferralFallsBackToRetryWhenTheSendFails(t *testing.T) {
	f := newFixture(t)
	f.sender.Err = errors.New("queue unavailable")
	f.db.Close()
	first := msg("s1", "sb1", "First", 2)
	first.SentAt = f.now.Add(-30 * time.Second)
	f.consume(t, first)
	if first.Acked || !first.Retried || first.RetryDelay != 53*time.Second {
		t.Fatalf("D1 down and send failing: %+v", first)
	}
	// No sender at all: the same.
	f.c.Sender = nil
	second := msg("s2", "sb2", "Second", 1)
	second.SentAt = f.now
	f.consume(t, second)
	if second.Acked || !second.Retried || second.RetryDelay != 27*time.Second {
		t.Fatalf("without a sender: %+v", second)
	}
}

// 401 and 403 are the provider refusing the key, not the message's fault:
// class auth, no DLQ row, the reserved quota given back, the breaker open
// at once (cause auth) for its cooldown, and the message deferred until
// then. The other messages of the batch are not called (breaker open).
func TestConsumerAuthFailureOpensBreakerAndDefers(t *testing.T) {
	for _, status := range []int{401, 403} {
		t.Run(fmt.Sprint(status), func(t *testing.T) {
			f := newFixture(t)
			var logs strings.Builder
			f.c.Log = slog.New(slog.NewJSONHandler(&logs, nil))
			f.provider.status(status, `{"error":{"message":"invalid key `+testKey+`"}}`)
			m1, m2 := msg("a1", "ab1", "One", 1), msg("a2", "ab2", "Two", 3)
			m1.Type = queue.JSON
			f.consume(t, m1, m2)
			if f.provider.calls() != 1 {
				t.Fatalf("provider calls %d, want 1 (the breaker opened)", f.provider.calls())
			}
			f.wantParked(t, m1, "ab1", StatusWaiting, ClassAuth)
			f.wantParked(t, m2, "ab2", StatusWaiting, ClassBreakerOpen)
			if n, _ := queueDLQRows(f.db); n != 0 {
				t.Fatalf("%d DLQ rows for an auth failure", n)
			}
			var used int64
			f.db.QueryRow(`SELECT used FROM enrichment_quota`).Scan(&used)
			if used != 0 {
				t.Fatalf("quota used %d, want the refused call given back", used)
			}
			var state, cause string
			var openUntil int64
			f.db.QueryRow(`SELECT state, cause, open_until FROM enrichment_breaker`).Scan(&state, &cause, &openUntil)
			if state != BreakerOpen || cause != CauseAuth || openUntil != f.now.Add(time.Minute).UnixMilli() {
				t.Fatalf("breaker %s %s %d", state, cause, openUntil)
			}
			s := f.beer(t, "ab1")
			if s.Status != StatusWaiting || s.Attempts != 0 || s.LastError == nil || !strings.HasPrefix(*s.LastError, fmt.Sprintf("auth: status %d: invalid key", status)) ||
				strings.Contains(*s.LastError, testKey) {
				t.Fatalf("beer %+v", s)
			}
			if s := f.beer(t, "ab2"); s.LastError == nil || !strings.HasPrefix(*s.LastError, "breaker_open: circuit breaker open (auth)") {
				t.Fatalf("second beer %+v", s)
			}
			c := f.counters(t)
			if c[CounterAuthFailures] != 1 || c[CounterBreakerOpened] != 1 || c[CounterDeferred] != 2 || c[CounterPermanent] != 0 || c[CounterRetried] != 0 {
				t.Fatalf("counters %v", c)
			}
			if strings.Contains(logs.String(), testKey) || !strings.Contains(logs.String(), `"class":"auth"`) {
				t.Fatalf("logs: %s", logs.String())
			}

			// After the cooldown the probe succeeds: closed, cause cleared, enriched.
			f.now = f.now.Add(time.Minute)
			f.provider.set(func(w http.ResponseWriter, _ *http.Request) { w.Write(answer("5.5")) })
			c1, c2 := msg("a1-copy", "ab1", "One", 1), msg("a2-copy", "ab2", "Two", 1)
			f.consume(t, c1, c2)
			if !c1.Acked || !c2.Acked || f.beer(t, "ab1").Status != StatusEnriched || f.beer(t, "ab2").Status != StatusEnriched {
				t.Fatal("not enriched after the key was fixed")
			}
			var nullCause sql.NullString
			f.db.QueryRow(`SELECT state, cause FROM enrichment_breaker`).Scan(&state, &nullCause)
			if state != BreakerClosed || nullCause.Valid {
				t.Fatalf("breaker after the probe: %s %v", state, nullCause)
			}
		})
	}
}

func queueDLQRows(db *sql.DB) (int64, error) {
	var n int64
	err := db.QueryRow(`SELECT COUNT(*) FROM dlq_messages`).Scan(&n)
	return n, err
}

// enrich registers beer ids as queued (as POST /admin/enrich leaves them).
func enrich(t *testing.T, f *fixture, ids ...string) {
	t.Helper()
	for _, id := range ids {
		if _, err := f.db.Exec(`INSERT INTO beers(beer_id, name, status, queued_at, created_at, updated_at) VALUES (?, ?, 'queued', 1, 1, 1)`, id, id); err != nil {
			t.Fatal(err)
		}
	}
}
