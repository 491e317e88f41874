package enrichment

import (
	"database/sql"
	"testing"
	"time"
)

// The re-open cap doubles from the cooldown once per failed probe up to
// MaxCooldown, and is the cooldown when MaxCooldown is not above it.
func TestBreakerReopenCap(t *testing.T) {
	b := Breaker{Cooldown: time.Minute, MaxCooldown: 15 * time.Minute}
	for n, want := range []time.Duration{time.Minute, 2 * time.Minute, 4 * time.Minute, 8 * time.Minute, 15 * time.Minute, 15 * time.Minute} {
		if got := b.ReopenCap(n); got != want {
			t.Errorf("ReopenCap(%d) = %v, want %v", n, got, want)
		}
	}
	if got := (Breaker{Cooldown: time.Minute, MaxCooldown: time.Second}).ReopenCap(3); got != time.Minute {
		t.Errorf("MaxCooldown below the cooldown: %v", got)
	}
}

// A parked beer says why it waits (waiting) only while it is waiting: a
// beer parked pending (quota, deadline) has no waiting class.
func TestParkRecordsWhyAWaitingBeerWaits(t *testing.T) {
	f := newFixture(t)
	s := beerStore{DB: f.db}
	enrich(t, f, "w", "p")
	if err := s.park(t.Context(), "w", StatusWaiting, ClassBreakerOpen, "breaker_open: x", f.now, f.now); err != nil {
		t.Fatal(err)
	}
	if err := s.park(t.Context(), "p", StatusPending, ClassQuota, "quota: x", f.now, f.now); err != nil {
		t.Fatal(err)
	}
	for id, want := range map[string]sql.NullString{"w": {String: ClassBreakerOpen, Valid: true}, "p": {}} {
		var got sql.NullString
		var waits int
		if err := f.db.QueryRow(`SELECT waiting, waits FROM beers WHERE beer_id = ?`, id).Scan(&got, &waits); err != nil || got != want || waits != 1 {
			t.Errorf("%s: waiting %v waits %d (%v), want %v and 1", id, got, waits, err, want)
		}
	}
}

// A failed probe re-opens the breaker for a time in [max(cooldown, c/2), c],
// c = min(MaxCooldown, Cooldown·2^n) after the n-th failed probe in a row;
// a success starts the growth again.
func TestBreakerReopenGrowsWithJitter(t *testing.T) {
	ctx := t.Context()
	f := newFixture(t)
	b := Breaker{DB: f.db, Threshold: 1, Cooldown: time.Minute, MaxCooldown: 15 * time.Minute, ProbeLease: time.Minute, Jitter: 0.5}
	t0 := time.UnixMilli(1_900_000_000_000)
	if _, _, err := b.Failed(ctx, t0); err != nil {
		t.Fatal(err)
	}
	at := t0.Add(time.Minute)
	for n, want := range []time.Duration{90 * time.Second, 3 * time.Minute, 6 * time.Minute, 675 * time.Second, 675 * time.Second} {
		if a := mustAdmit(t, b, at); !a.Probe {
			t.Fatalf("probe %d not admitted at %v: %+v", n+1, at, a)
		}
		_, until, err := b.Failed(ctx, at)
		if err != nil || until.Sub(at) != want {
			t.Fatalf("failed probe %d: re-opened for %v (%v), want %v", n+1, until.Sub(at), err, want)
		}
		at = until
	}
	b.Jitter = 0 // the lower half's floor, never below the cooldown
	mustAdmit(t, b, at)
	if _, until, _ := b.Failed(ctx, at); until.Sub(at) != 450*time.Second {
		t.Fatalf("jitter 0: %v", until.Sub(at))
	}
	mustAdmit(t, b, openUntilOf(b, t))
	if closed, err := b.Succeeded(ctx, openUntilOf(b, t)); err != nil || !closed {
		t.Fatalf("closed %v %v", closed, err)
	}
	if st, _ := b.Read(ctx); st.Reopens != 0 {
		t.Fatalf("reopens after a success: %d", st.Reopens)
	}
}

func openUntilOf(b Breaker, t *testing.T) time.Time {
	st, err := b.Read(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return time.UnixMilli(st.OpenUntil)
}

// ProbeDue: an open breaker from open_until on, a half-open one from the
// end of its probe's lease on; a closed one never.
func TestBreakerStateProbeDue(t *testing.T) {
	now := time.UnixMilli(1_900_000_000_000)
	n := now.UnixMilli()
	for _, c := range []struct {
		s    BreakerState
		want bool
	}{
		{BreakerState{State: BreakerOpen, OpenUntil: n + 1}, false},
		{BreakerState{State: BreakerOpen, OpenUntil: n}, true},
		{BreakerState{State: BreakerOpen, OpenUntil: n - 1}, true},
		{BreakerState{State: BreakerHalfOpen, ProbeUntil: n + 1}, false},
		{BreakerState{State: BreakerHalfOpen, ProbeUntil: n}, true},
		{BreakerState{State: BreakerHalfOpen, ProbeUntil: n - 1, OpenUntil: n + 1}, true},
		{BreakerState{State: BreakerClosed}, false},
	} {
		if got := c.s.ProbeDue(now); got != c.want {
			t.Errorf("%+v: ProbeDue = %v, want %v", c.s, got, c.want)
		}
	}
}
