package enrichment

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/config"
	"github.com/redrive/redrive/outbound"
	"github.com/redrive/redrive/queue/queuetest"
)

// Real attempts survive deferrals: a beer whose message is deferred between
// its failed calls (here: parked while the breaker is open and sent again
// by the catch-up, a new message each time) is called at most MaxAttempts
// times in all, and the call that spends the last attempt stores it in the
// DLQ at once, keyed by its first message, with every call in its history
// and failure_count equal to the calls made. (On the old code each copy
// started again at attempt 1: the beer was called on and on and never
// reached the DLQ.)
func TestConsumerCountsRealAttemptsAcrossDeferrals(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	f.c.Policy.BreakerThreshold = 1
	f.provider.status(500, `{"error":{"message":"down"}}`)
	cu := newCatchUp(f.db, f.sender)
	cu.Configured = true
	m := msg("first", "ra", "Real Attempts", 1)
	for round := 0; round < 12 && f.provider.calls() < 10; round++ {
		f.consume(t, m)
		if m.Acked && f.beer(t, "ra").Status == StatusFailed {
			break
		}
		// Whatever happened (a retry, a park), the next delivery is a
		// fresh message once the breaker lets a probe through: the catch-up's.
		f.now = f.now.Add(time.Hour)
		sent := len(f.sender.Messages("beer-enrichment"))
		if m.Retried { // the queue redelivers the same message (same id, next attempt)
			m = &queuetest.Message{MsgID: m.MsgID, Attempt: m.Attempt + 1, Text: m.Text, SentAt: m.SentAt}
			continue
		}
		if _, err := cu.Run(ctx, f.now); err != nil {
			t.Fatal(err)
		}
		out := f.sender.Messages("beer-enrichment")
		if len(out) != sent+1 {
			t.Fatalf("round %d: %d messages sent, want the beer's next message", round, len(out)-sent)
		}
		m = &queuetest.Message{MsgID: "copy" + string(rune('a'+round)), Attempt: 1, Text: out[len(out)-1].Body, SentAt: f.now}
	}
	if calls := f.provider.calls(); calls != f.c.Policy.MaxAttempts {
		t.Fatalf("provider called %d times, want %d (ENRICHMENT_MAX_ATTEMPTS)", calls, f.c.Policy.MaxAttempts)
	}
	var count int
	var history, messageID string
	if err := f.db.QueryRow(`SELECT failure_count, history, message_id FROM dlq_messages WHERE row_key = 'ra'`).Scan(&count, &history, &messageID); err != nil {
		t.Fatalf("no DLQ row after the last attempt: %v", err)
	}
	var entries []struct {
		Attempt int `json:"attempt"`
		Status  int `json:"status"`
	}
	if err := json.Unmarshal([]byte(history), &entries); err != nil {
		t.Fatal(err)
	}
	if count != 4 || len(entries) != 4 || messageID != "first" {
		t.Fatalf("DLQ row: failure_count %d, %d history entries, message_id %s; want 4, 4, first: %s", count, len(entries), messageID, history)
	}
	for i, e := range entries {
		if e.Attempt != i+1 || e.Status != 500 {
			t.Fatalf("history entry %d: %+v", i, e)
		}
	}
	if s := f.beer(t, "ra"); s.Status != StatusFailed || s.Attempts != 4 {
		t.Fatalf("beer %+v", s)
	}
}

// Two messages for one beer in one batch (a catch-up re-send beside a late
// message, a replay beside the original) make one call: the later one is
// settled by the first one's outcome. (On the old code a 429 made both
// call, spending two quota units and two breaker failures.)
func TestConsumerOneCallPerBeerAndBatch(t *testing.T) {
	for _, status := range []int{429, 500} {
		f := newFixture(t)
		f.provider.status(status, `{"error":{"message":"slow down"}}`, "Retry-After", "30")
		first, late := msg("orig", "twice", "Twice", 2), msg("resend", "twice", "Twice", 1)
		f.consume(t, first, late)
		if f.provider.calls() != 1 {
			t.Fatalf("%d: provider called %d times for one beer in one batch", status, f.provider.calls())
		}
		if !first.Retried || !late.Acked {
			t.Fatalf("%d: first %+v late %+v", status, first, late)
		}
		var used int64
		f.db.QueryRow(`SELECT used FROM enrichment_quota`).Scan(&used)
		var failures int64
		f.db.QueryRow(`SELECT COALESCE((SELECT failures FROM enrichment_breaker), 0)`).Scan(&failures)
		if used != 1 || (status == 500 && failures != 1) {
			t.Fatalf("%d: quota used %d breaker failures %d", status, used, failures)
		}
	}
}

// hangingDoer never answers: each call takes the whole timeout (on the
// fixture's clock) and times out.
type hangingDoer struct {
	f     *fixture
	calls int
}

func (h *hangingDoer) Do(_ context.Context, r outbound.Request) (outbound.Response, error) {
	h.calls++
	h.f.now = h.f.now.Add(r.Timeout)
	return outbound.Response{}, outbound.ErrTimeout
}

// A batch of hanging calls settles before the consumer's wall limit
// whatever ENRICHMENT_TIMEOUT_MS is within its bounds: no call starts that
// could end past batchCallWindow, and the messages left are parked for the
// catch-up (due at once, no attempt spent). (On the old code 100 calls of
// 120 s ran 200 minutes, and none of the batch's decisions were applied.)
func TestConsumerBatchSettlesBeforeTheWallLimit(t *testing.T) {
	var maxTimeout time.Duration
	for _, s := range config.Specs() {
		if s.Name == "ENRICHMENT_TIMEOUT_MS" {
			maxTimeout = time.Duration(s.Max) * time.Millisecond
		}
	}
	if maxTimeout != MaxProviderTimeout || batchCallWindow+3*time.Minute > BatchWallLimit {
		t.Fatalf("ENRICHMENT_TIMEOUT_MS max %v, MaxProviderTimeout %v, call window %v", maxTimeout, MaxProviderTimeout, batchCallWindow)
	}
	for _, timeout := range []time.Duration{100 * time.Millisecond, 15 * time.Second, maxTimeout} {
		f := newFixture(t)
		f.c.Policy.BreakerThreshold = 1000
		h := &hangingDoer{f: f}
		f.c.Provider.Doer, f.c.Provider.Timeout = h, timeout
		start := f.now
		var msgs []*queuetest.Message
		for i := range 100 { // Queues' largest batch
			id := "h" + strings.Repeat("x", i%3) + string(rune('A'+i/26)) + string(rune('a'+i%26))
			msgs = append(msgs, msg(id, id, "Hanging", 1))
		}
		f.consume(t, msgs...)
		if took := f.now.Sub(start); took > batchCallWindow {
			t.Fatalf("timeout %v: the batch's calls ran %v, past the %v window", timeout, took, batchCallWindow)
		}
		if want := min(100, int(batchCallWindow/timeout)); h.calls != want {
			t.Fatalf("timeout %v: %d calls, want %d", timeout, h.calls, want)
		}
		parked := 0
		for _, m := range msgs {
			if m.Acked {
				parked++
				if s := f.beer(t, m.MsgID); s.Status != StatusPending || s.Attempts != 0 || *s.NextAttemptAt > f.now.UnixMilli() {
					t.Fatalf("timeout %v: parked beer %+v", timeout, s)
				}
			}
		}
		if parked != 100-h.calls {
			t.Fatalf("timeout %v: %d parked, want %d", timeout, parked, 100-h.calls)
		}
	}
}

// A beer whose attempts are already spent (its last attempt's DLQ store
// failed, so its message came back) is stored without another call; if
// that store fails again the message is retried, never dropped.
func TestConsumerSpentAttemptsAreStoredWithoutACall(t *testing.T) {
	f := newFixture(t)
	if _, err := f.db.Exec(`INSERT INTO beers(beer_id, name, status, attempts, attempt_key, created_at, updated_at)
		VALUES ('spent', 'Spent', 'queued', 4, 'orig', 1, 1)`); err != nil {
		t.Fatal(err)
	}
	if _, err := f.db.Exec(`CREATE TRIGGER no_rows BEFORE INSERT ON dlq_messages BEGIN SELECT RAISE(ABORT, 'full'); END`); err != nil {
		t.Fatal(err)
	}
	m := msg("again", "spent", "Spent", 2)
	f.consume(t, m)
	if m.Acked || !m.Retried || f.provider.calls() != 0 {
		t.Fatalf("store failing: %+v calls %d", m, f.provider.calls())
	}
	f.db.Exec(`DROP TRIGGER no_rows`)
	m = msg("again", "spent", "Spent", 3)
	f.consume(t, m)
	var count int
	var history string
	if err := f.db.QueryRow(`SELECT failure_count, COALESCE(history, '[]') FROM dlq_messages WHERE message_id = 'orig'`).Scan(&count, &history); err != nil ||
		!m.Acked || count != 4 || history != "[]" || f.provider.calls() != 0 {
		t.Fatalf("acked %v row %v count %d history %s calls %d", m.Acked, err, count, history, f.provider.calls())
	}
	if s := f.beer(t, "spent"); s.Status != StatusFailed {
		t.Fatalf("beer %+v", s)
	}
}
