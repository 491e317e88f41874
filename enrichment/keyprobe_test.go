package enrichment

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/queue/queuetest"
)

// keyProbeFixture: the breaker open for a refused key (shipped cap 15 min,
// cooldown 1 min, jitter 0.5), two beers waiting, and a catch-up with the
// key probe.
func keyProbeFixture(t *testing.T) (*fixture, *CatchUp, *queuetest.Sender) {
	t.Helper()
	f := newFixture(t)
	f.c.Policy.BreakerMaxCooldown = 15 * time.Minute
	f.now = catchUpNow
	if _, _, err := f.c.Breaker().Trip(context.Background(), f.now, CauseAuth); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"w1", "w2"} {
		m := msg("m"+id, id, "Waits "+id, 1)
		f.consume(t, m)
		f.wantParked(t, m, id, StatusWaiting, ClassBreakerOpen)
	}
	s := &queuetest.Sender{}
	c := newCatchUp(f.db, s)
	c.Configured = true
	c.KeyProbe = &KeyProbe{Provider: f.c.Provider, Breaker: f.c.Breaker(), Quota: f.c.Quota()}
	c.Clock = func() time.Time { return f.now }
	return f, c, s
}

func breakerOf(t *testing.T, f *fixture) BreakerState {
	t.Helper()
	s, err := f.c.Breaker().Read(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func quotaUsed(t *testing.T, f *fixture) int64 {
	t.Helper()
	var n int64
	if err := f.db.QueryRow(`SELECT COALESCE(SUM(used), 0) FROM enrichment_quota`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// While the breaker is open for a refused key, the catch-up probes the key
// itself when the probe is due: one call with KeyProbeBeer, no beer sent,
// no beer touched, no quota; a refusal or no answer re-opens the breaker
// for longer each time (reopens + 1; [max(cooldown, c/2), c], c = min(cap,
// cooldown·2ⁿ)); an accepted key closes it and the same run releases every
// waiting beer (the recovery the schedule test counts on).
func TestCatchUpProbesARefusedKeyItself(t *testing.T) {
	ctx := context.Background()
	f, c, s := keyProbeFixture(t)
	f.provider.status(http.StatusUnauthorized, `{"error":"bad key"}`)
	calls0 := f.provider.calls()
	run := func(at time.Time) map[string]any {
		t.Helper()
		recordRun(t, f.db, at.Add(-5*time.Minute), map[string]any{"up_since": catchUpNow.Add(-2 * time.Hour).UnixMilli()}, nil)
		f.now = at
		sum, err := c.Run(ctx, at.Add(time.Minute)) // the breaker follows the wall clock, not the scheduled time
		if err != nil {
			t.Fatal(err)
		}
		return sum
	}
	// A run whose scheduled time is past the breaker's end (a cron fired
	// with a time) does not probe before the wall clock gets there.
	f.now = catchUpNow.Add(30 * time.Second)
	if sum, err := c.Run(ctx, catchUpNow.Add(time.Hour)); err != nil || f.provider.calls() != calls0 || sum["key_probe"] != nil || len(s.Sent) != 0 {
		t.Fatalf("probed by the scheduled time: %v %v", sum, err)
	}
	// Not due: no call.
	if sum := run(catchUpNow.Add(30 * time.Second)); f.provider.calls() != calls0 || sum["key_probe"] != nil {
		t.Fatalf("probed before the breaker was due: %v", sum)
	}
	at := catchUpNow.Add(2 * time.Minute)
	for i, tc := range []struct {
		status int
		want   string
		reopen time.Duration // 0.75 · min(15 min, 1 min · 2ⁿ), never below the cooldown
	}{
		{http.StatusUnauthorized, "refused", 90 * time.Second},
		{http.StatusForbidden, "refused", 3 * time.Minute},
		{http.StatusInternalServerError, "failed", 6 * time.Minute},
	} {
		f.provider.status(tc.status, `{"error":"no"}`)
		sum := run(at)
		b := breakerOf(t, f)
		if sum["key_probe"] != tc.want || sum["enqueued"] != int64(0) || len(s.Sent) != 0 {
			t.Fatalf("probe %d: %v, sent %v", i+1, sum, s.Sent)
		}
		if b.State != BreakerOpen || b.Cause != CauseAuth || b.Reopens != int64(i+1) {
			t.Fatalf("probe %d: breaker %+v", i+1, b)
		}
		if until := time.UnixMilli(b.OpenUntil); until.Before(at.Add(tc.reopen)) || until.After(at.Add(tc.reopen+5*time.Second)) {
			t.Fatalf("probe %d: open until %v, want %v after %v", i+1, until, tc.reopen, at)
		}
		if got := f.provider.calls() - calls0; got != i+1 {
			t.Fatalf("probe %d: %d provider calls", i+1, got)
		}
		// Not due again before open_until.
		if sum := run(time.UnixMilli(b.OpenUntil - 1)); sum["key_probe"] != nil || f.provider.calls()-calls0 != i+1 {
			t.Fatalf("probe %d: probed again before open_until: %v", i+1, sum)
		}
		at = time.UnixMilli(b.OpenUntil)
	}
	if n := quotaUsed(t, f); n != 0 {
		t.Fatalf("refused probes took %d quota units", n)
	}
	for _, id := range []string{"w1", "w2"} {
		if st := f.beer(t, id); st.Status != StatusWaiting || st.Attempts != 0 {
			t.Fatalf("%s while the key is refused: %+v", id, st)
		}
	}
	// The key is accepted: closed, counted once in the quota, and this run
	// releases both waiting beers.
	f.provider.set(func(w http.ResponseWriter, _ *http.Request) { w.Write(answer("5.0")) })
	sum := run(at)
	if sum["key_probe"] != "accepted" || sum["released"] != int64(2) || len(sentBeers(t, s)) != 2 {
		t.Fatalf("accepted: %v %v", sum, sentBeers(t, s))
	}
	if b := breakerOf(t, f); b.State != BreakerClosed || b.Reopens != 0 || b.Cause != "" {
		t.Fatalf("breaker after the accepted probe: %+v", b)
	}
	if n := quotaUsed(t, f); n != 1 {
		t.Fatalf("the accepted probe took %d quota units", n)
	}
	f.provider.mu.Lock()
	defer f.provider.mu.Unlock()
	for _, body := range f.provider.bodies[calls0:] {
		if !strings.Contains(body, KeyProbeBeer.BeerName) || strings.Contains(body, "Waits") {
			t.Fatalf("a key probe asked %s", body)
		}
	}
}

// The key probe runs only for a breaker open (not half-open) for an auth
// failure: a transient outage keeps the rotating probe by a waiting beer
// (it spends the beer's attempts, so a lone beer reaches the DLQ), and a
// half-open breaker's expired lease too.
func TestCatchUpKeyProbeOnlyForAnOpenAuthBreaker(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		setup string
	}{
		{"transient", `UPDATE enrichment_breaker SET cause = 'transient'`},
		{"half-open", `UPDATE enrichment_breaker SET state = 'half_open', probe_until = open_until`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, c, s := keyProbeFixture(t)
			if _, err := f.db.Exec(tc.setup); err != nil {
				t.Fatal(err)
			}
			calls0 := f.provider.calls()
			recordRun(t, f.db, catchUpNow.Add(-5*time.Minute), map[string]any{"up_since": catchUpNow.Add(-2 * time.Hour).UnixMilli()}, nil)
			f.now = catchUpNow.Add(2 * time.Minute)
			sum, err := c.Run(ctx, catchUpNow.Add(2*time.Minute))
			if err != nil {
				t.Fatal(err)
			}
			if sum["key_probe"] != nil || f.provider.calls() != calls0 || sum["probe"] != int64(1) || len(sentBeers(t, s)) != 1 {
				t.Fatalf("%v, %d calls, sent %v", sum, f.provider.calls()-calls0, sentBeers(t, s))
			}
		})
	}
	// Without the key set, no probe of any kind.
	f, c, s := keyProbeFixture(t)
	c.Configured = false
	f.now = catchUpNow.Add(2 * time.Minute)
	calls0 := f.provider.calls()
	if sum, err := c.Run(ctx, catchUpNow.Add(2*time.Minute)); err != nil || sum["key_probe"] != nil || f.provider.calls() != calls0 || len(s.Sent) != 0 {
		t.Fatalf("without a key: %v %v", sum, err)
	}
}

// ReopenAfterKeyProbe changes the breaker only while it is still open for
// the cause with the open_until the caller read: a probe a consumer claimed
// meanwhile, a reset, a new trip or another cause is left alone.
func TestReopenAfterKeyProbeOnlyChangesTheBreakerItRead(t *testing.T) {
	ctx := context.Background()
	f, _, _ := keyProbeFixture(t)
	b := f.c.Breaker()
	s0 := breakerOf(t, f)
	at := time.UnixMilli(s0.OpenUntil)
	for _, tc := range []struct {
		name     string
		observed int64
		cause    string
	}{
		{"another open_until", s0.OpenUntil + 1, CauseAuth},
		{"another cause", s0.OpenUntil, CauseTransient},
	} {
		if ok, _, err := b.ReopenAfterKeyProbe(ctx, at, tc.observed, tc.cause); err != nil || ok {
			t.Fatalf("%s: updated %v %v", tc.name, ok, err)
		}
		if s := breakerOf(t, f); s != s0 {
			t.Fatalf("%s: breaker changed %+v", tc.name, s)
		}
	}
	if _, err := f.db.Exec(`UPDATE enrichment_breaker SET state = 'half_open'`); err != nil {
		t.Fatal(err)
	}
	if ok, _, err := b.ReopenAfterKeyProbe(ctx, at, s0.OpenUntil, CauseAuth); err != nil || ok {
		t.Fatalf("half-open: updated %v %v", ok, err)
	}
	if _, err := f.db.Exec(`UPDATE enrichment_breaker SET state = 'open'`); err != nil {
		t.Fatal(err)
	}
	ok, until, err := b.ReopenAfterKeyProbe(ctx, at, s0.OpenUntil, CauseAuth)
	if err != nil || !ok || until != at.Add(90*time.Second) {
		t.Fatalf("the breaker it read: %v %v %v", ok, until, err)
	}
	if s := breakerOf(t, f); s.Reopens != 1 || s.OpenUntil != until.UnixMilli() || s.State != BreakerOpen || s.Cause != CauseAuth {
		t.Fatalf("after: %+v", s)
	}
}
