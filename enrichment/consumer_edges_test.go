package enrichment

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/queue/queuetest"
)

// A body that is not a usable {beer_id, ...} object is stored with the
// reason that says what is wrong with it; a beer_id of 128 characters is
// the longest accepted.
func TestConsumerPoisonReasons(t *testing.T) {
	f := newFixture(t)
	longest := strings.Repeat("é", MaxBeerIDLen)
	ok := msg("ok", longest, "Long Id", 1)
	bad := map[*queuetest.Message]string{
		queuetest.New("null", `null`):                                          "poison: body is not a JSON object",
		queuetest.New("array", `[1]`):                                          "poison: body is not a JSON object",
		queuetest.New("no-id", `{"beer_name":"x"}`):                            "poison: body has no beer_id",
		queuetest.New("long-id", `{"beer_id":"`+longest+`x","beer_name":"x"}`): "poison: beer_id is too long",
	}
	msgs := []*queuetest.Message{ok}
	for m := range bad {
		msgs = append(msgs, m)
	}
	f.consume(t, msgs...)
	for m, want := range bad {
		var reason string
		if err := f.db.QueryRow(`SELECT failure_reason FROM dlq_messages WHERE message_id = ?`, m.MsgID).Scan(&reason); err != nil || reason != want || !m.Acked {
			t.Errorf("%s: reason %q (%v), want %q; acked %v", m.MsgID, reason, err, want, m.Acked)
		}
	}
	if s := f.beer(t, longest); !ok.Acked || s.Status != StatusEnriched || f.provider.calls() != 1 {
		t.Fatalf("128-character beer_id: acked %v beer %+v calls %d", ok.Acked, s, f.provider.calls())
	}
}

// Without D1_RETRY_BASE_SECONDS a message deferred for D1 waits
// dlq.DefaultRetryBase; the deferral is counted once D1 answers again.
func TestConsumerD1DeferralDefaultsAndCounts(t *testing.T) {
	f := newFixture(t)
	f.c.Policy.D1RetryBase = 0
	if _, err := f.db.Exec(`ALTER TABLE beers RENAME TO beers_away`); err != nil {
		t.Fatal(err)
	}
	m := msg("md", "bd", "Dark", 1)
	m.SentAt = f.now
	f.consume(t, m)
	f.wantDeferred(t, m, 263*time.Second) // age 0: the base (300 s), less 1/8 (Rand 0.5), in whole seconds
	if c := f.counters(t); c[CounterD1Unavailable] != 1 || c[CounterDeferred] != 1 || c[CounterRetried] != 0 {
		t.Fatalf("counters %v", c)
	}
}

// A message arriving while a half-open probe is in flight waits (parked)
// and makes no second call.
func TestConsumerWaitsForTheProbeInFlight(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	b := f.c.Breaker()
	if _, _, err := b.Trip(ctx, f.now, CauseTransient); err != nil {
		t.Fatal(err)
	}
	probeAt := f.now.Add(f.c.Policy.BreakerCooldown)
	if adm, err := b.Admit(ctx, probeAt); err != nil || !adm.Probe {
		t.Fatalf("probe: %+v %v", adm, err)
	}
	f.now = probeAt.Add(time.Second)
	m := msg("mw", "bw", "Waiting", 1)
	f.consume(t, m)
	f.wantParked(t, m, "bw", StatusWaiting, ClassBreakerOpen)
	if f.provider.calls() != 0 {
		t.Fatalf("a second call during the probe: %d", f.provider.calls())
	}
}

// The question names the beer, and its brewer when there is one.
func TestChatProviderQuestion(t *testing.T) {
	f := newFixture(t)
	withBrewer := msg("q1", "qb1", "Pils", 1)
	bare := queuetest.New("q2", `{"beer_id":"qb2","beer_name":"Helles"}`)
	f.consume(t, withBrewer, bare)
	want := []string{`What is the ABV of the beer "Pils" brewed by "Test Brewing"?`, `What is the ABV of the beer "Helles"?`}
	if len(f.provider.bodies) != 2 {
		t.Fatalf("calls %d", len(f.provider.bodies))
	}
	for i, body := range f.provider.bodies {
		var req chatRequest
		if err := json.Unmarshal([]byte(body), &req); err != nil || len(req.Messages) != 2 || req.Messages[0].Role != "system" ||
			req.Messages[1].Role != "user" || req.Messages[1].Content != want[i] {
			t.Errorf("request %d: %s (%v), want user question %q", i, body, err, want[i])
		}
	}
}

// A statement that fails while D1 answers (here: storing the answer) is
// retried like a transient failure: an attempt spent and recorded, backoff.
func TestConsumerStatementFailureIsRetried(t *testing.T) {
	f := newFixture(t)
	if _, err := f.db.Exec(`CREATE TRIGGER no_abv BEFORE UPDATE OF abv ON beers BEGIN SELECT RAISE(ABORT, 'abv refused'); END`); err != nil {
		t.Fatal(err)
	}
	m := msg("mi", "bi", "Refused", 1)
	f.consume(t, m)
	// Backoff for attempt 1 with Base 10 s and jitter 0.5: 5 s.
	if !m.Retried || m.RetryDelay != 5*time.Second {
		t.Fatalf("retried %v after %v, want 5s", m.Retried, m.RetryDelay)
	}
	a, ok := f.attempt(t, "mi")
	if !ok || a.Attempt != 1 || a.Class != ClassTransient || !strings.HasPrefix(a.Error, "internal: store answer for beer bi: ") ||
		!strings.Contains(a.Error, "abv refused") {
		t.Fatalf("attempt %+v %v", a, ok)
	}
	if s := f.beer(t, "bi"); s.Status != StatusQueued || s.Attempts != 1 {
		t.Fatalf("beer %+v", s)
	}
	if c := f.counters(t); c[CounterRetried] != 1 || c[CounterEnriched] != 0 {
		t.Fatalf("counters %v", c)
	}
}

// A poison message that cannot be stored is retried with backoff, not acked.
func TestConsumerPoisonStoreFailureRetries(t *testing.T) {
	f := newFixture(t)
	if _, err := f.db.Exec(`CREATE TRIGGER no_rows BEFORE INSERT ON dlq_messages BEGIN SELECT RAISE(ABORT, 'full'); END`); err != nil {
		t.Fatal(err)
	}
	m := queuetest.New("pp", "not json")
	m.Attempt = 2
	f.consume(t, m)
	// Backoff for attempt 2 with Base 10 s and jitter 0.5: 10 s.
	if m.Acked || !m.Retried || m.RetryDelay != 10*time.Second {
		t.Fatalf("acked %v retried %v after %v", m.Acked, m.Retried, m.RetryDelay)
	}
	if c := f.counters(t); c[CounterRetried] != 1 || c[CounterPoison] != 0 {
		t.Fatalf("counters %v", c)
	}
}
