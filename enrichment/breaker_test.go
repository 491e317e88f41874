package enrichment

import (
	"context"
	"database/sql"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redrive/redrive/internal/sqlitetest"
)

func breakerState(t *testing.T, b Breaker) (state string, failures int64) {
	t.Helper()
	if err := b.DB.QueryRow(`SELECT state, failures FROM enrichment_breaker WHERE name = 'provider'`).Scan(&state, &failures); err != nil {
		t.Fatal(err)
	}
	return state, failures
}

func mustAdmit(t *testing.T, b Breaker, now time.Time) Admission {
	t.Helper()
	a, err := b.Admit(context.Background(), now)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func TestBreakerOpensAfterThresholdAndProbeCloses(t *testing.T) {
	ctx := context.Background()
	b := Breaker{DB: sqlitetest.New(t), Threshold: 3, Cooldown: 30 * time.Second, ProbeLease: 20 * time.Second}
	t0 := time.UnixMilli(1_900_000_000_000)

	if a := mustAdmit(t, b, t0); !a.Allowed || a.Probe || !a.Clean {
		t.Fatalf("fresh breaker must admit cleanly: %+v", a)
	}
	for i := 1; i <= 2; i++ {
		opened, _, err := b.Failed(ctx, t0)
		if err != nil || opened {
			t.Fatalf("failure %d: opened=%v err=%v", i, opened, err)
		}
	}
	if a := mustAdmit(t, b, t0); !a.Allowed || a.Clean {
		t.Fatalf("closed with failures counted must admit, not clean: %+v", a)
	}
	opened, until, err := b.Failed(ctx, t0)
	if err != nil || !opened || !until.Equal(t0.Add(30*time.Second)) {
		t.Fatalf("third failure: opened=%v until=%v err=%v", opened, until, err)
	}
	// A late failure of a call admitted before the breaker opened neither
	// reports a new opening nor extends the cooldown.
	if opened, until, _ := b.Failed(ctx, t0.Add(10*time.Second)); opened || !until.Equal(t0.Add(30*time.Second)) {
		t.Fatalf("late failure: opened=%v until=%v", opened, until)
	}

	a := mustAdmit(t, b, t0.Add(29*time.Second))
	if a.Allowed || !a.RetryAt.Equal(t0.Add(30*time.Second)) {
		t.Fatalf("open breaker must refuse until the cooldown ends: %+v", a)
	}
	probe := mustAdmit(t, b, t0.Add(30*time.Second))
	if !probe.Allowed || !probe.Probe {
		t.Fatalf("after the cooldown one probe must be admitted: %+v", probe)
	}
	other := mustAdmit(t, b, t0.Add(31*time.Second))
	if other.Allowed || other.RetryAt.After(t0.Add(50*time.Second)) || !other.RetryAt.After(t0.Add(31*time.Second)) {
		t.Fatalf("while the probe is in flight others wait: %+v", other)
	}
	closed, err := b.Succeeded(ctx, t0.Add(32*time.Second))
	if err != nil || !closed {
		t.Fatalf("probe success must close: closed=%v err=%v", closed, err)
	}
	if st, f := breakerState(t, b); st != BreakerClosed || f != 0 {
		t.Fatalf("state %s failures %d", st, f)
	}
	if closed, _ := b.Succeeded(ctx, t0.Add(33*time.Second)); closed {
		t.Fatal("a second success must not report another closing")
	}
}

func TestBreakerFailedProbeReopens(t *testing.T) {
	ctx := context.Background()
	b := Breaker{DB: sqlitetest.New(t), Threshold: 1, Cooldown: 10 * time.Second, ProbeLease: 5 * time.Second}
	t0 := time.UnixMilli(1_900_000_000_000)
	if opened, _, _ := b.Failed(ctx, t0); !opened {
		t.Fatal("threshold 1: the first failure opens")
	}
	if a := mustAdmit(t, b, t0.Add(10*time.Second)); !a.Probe {
		t.Fatalf("probe expected: %+v", a)
	}
	opened, until, err := b.Failed(ctx, t0.Add(11*time.Second))
	if err != nil || !opened || !until.Equal(t0.Add(21*time.Second)) {
		t.Fatalf("failed probe must reopen for a new cooldown: opened=%v until=%v err=%v", opened, until, err)
	}
	if a := mustAdmit(t, b, t0.Add(20*time.Second)); a.Allowed {
		t.Fatalf("reopened breaker admitted: %+v", a)
	}
}

// A probe whose instance died (no success or failure recorded) is given up
// after its lease: then another caller may probe.
func TestBreakerAbandonedProbeIsReclaimed(t *testing.T) {
	ctx := context.Background()
	b := Breaker{DB: sqlitetest.New(t), Threshold: 1, Cooldown: 10 * time.Second, ProbeLease: 5 * time.Second}
	t0 := time.UnixMilli(1_900_000_000_000)
	b.Failed(ctx, t0)
	if a := mustAdmit(t, b, t0.Add(10*time.Second)); !a.Probe {
		t.Fatalf("probe expected: %+v", a)
	}
	if a := mustAdmit(t, b, t0.Add(14*time.Second)); a.Allowed {
		t.Fatalf("lease still running: %+v", a)
	}
	if a := mustAdmit(t, b, t0.Add(15*time.Second)); !a.Probe {
		t.Fatalf("expired lease must be reclaimable: %+v", a)
	}
}

// Many concurrent callers after the cooldown: exactly one becomes the probe.
func TestBreakerProbeClaimIsAtomic(t *testing.T) {
	ctx := context.Background()
	b := Breaker{DB: sqlitetest.New(t), Threshold: 1, Cooldown: time.Second, ProbeLease: time.Minute}
	t0 := time.UnixMilli(1_900_000_000_000)
	b.Failed(ctx, t0)
	var probes, refused atomic.Int64
	var wg sync.WaitGroup
	for i := 0; i < 16; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			a, err := b.Admit(ctx, t0.Add(2*time.Second))
			if err != nil {
				t.Error(err)
				return
			}
			if a.Probe {
				probes.Add(1)
			} else if !a.Allowed {
				refused.Add(1)
			}
		}()
	}
	wg.Wait()
	if probes.Load() != 1 || refused.Load() != 15 {
		t.Fatalf("probes=%d refused=%d, want 1 and 15", probes.Load(), refused.Load())
	}
}

// Any answer resets the count of consecutive failures.
func TestBreakerSuccessResetsConsecutiveCount(t *testing.T) {
	ctx := context.Background()
	b := Breaker{DB: sqlitetest.New(t), Threshold: 2, Cooldown: time.Minute, ProbeLease: time.Minute}
	t0 := time.UnixMilli(1_900_000_000_000)
	b.Failed(ctx, t0)
	if closed, err := b.Succeeded(ctx, t0); err != nil || closed {
		t.Fatalf("reset of a closed breaker is not a closing: %v %v", closed, err)
	}
	if opened, _, _ := b.Failed(ctx, t0); opened {
		t.Fatal("failures are not consecutive: must not open")
	}
	if st, f := breakerState(t, b); st != BreakerClosed || f != 1 {
		t.Fatalf("state %s failures %d", st, f)
	}
}

// Trip opens the breaker at once with its cause; an open breaker keeps its
// cooldown; a transient failure of the half-open probe keeps cause auth; a
// success closes it and clears the cause.
func TestBreakerTripOpensAtOnceWithItsCause(t *testing.T) {
	ctx := context.Background()
	b := Breaker{DB: sqlitetest.New(t), Threshold: 5, Cooldown: 30 * time.Second, ProbeLease: 20 * time.Second}
	t0 := time.UnixMilli(1_900_000_000_000)
	cause := func() string {
		var c sql.NullString
		b.DB.QueryRow(`SELECT cause FROM enrichment_breaker`).Scan(&c)
		return c.String
	}
	opened, until, err := b.Trip(ctx, t0, CauseAuth)
	if err != nil || !opened || !until.Equal(t0.Add(30*time.Second)) || cause() != CauseAuth {
		t.Fatalf("trip: %v %v %v cause %q", opened, until, err, cause())
	}
	if st, failures := breakerState(t, b); st != BreakerOpen || failures != 0 {
		t.Fatalf("state %s failures %d", st, failures)
	}
	if a := mustAdmit(t, b, t0.Add(time.Second)); a.Allowed || a.Cause != CauseAuth || !a.RetryAt.Equal(t0.Add(30*time.Second)) {
		t.Fatalf("admission while open: %+v", a)
	}
	// A late auth failure neither reopens nor extends it.
	if opened, until, _ := b.Trip(ctx, t0.Add(5*time.Second), CauseAuth); opened || !until.Equal(t0.Add(30*time.Second)) {
		t.Fatalf("late trip: %v %v", opened, until)
	}
	// The probe fails transiently: open again, still because of auth.
	if a := mustAdmit(t, b, t0.Add(31*time.Second)); !a.Probe {
		t.Fatalf("no probe: %+v", a)
	}
	if opened, _, _ := b.Failed(ctx, t0.Add(32*time.Second)); !opened || cause() != CauseAuth {
		t.Fatalf("failed probe: opened %v cause %q", opened, cause())
	}
	// A probe that is refused again re-trips it from half-open.
	mustAdmit(t, b, t0.Add(70*time.Second))
	if opened, until, _ := b.Trip(ctx, t0.Add(71*time.Second), CauseAuth); !opened || !until.Equal(t0.Add(101*time.Second)) {
		t.Fatalf("refused probe: %v %v", opened, until)
	}
	mustAdmit(t, b, t0.Add(102*time.Second))
	if closed, _ := b.Succeeded(ctx, t0.Add(103*time.Second)); !closed || cause() != "" {
		t.Fatalf("closed %v cause %q", closed, cause())
	}
	// Opened by the threshold: cause transient.
	for range 5 {
		b.Failed(ctx, t0.Add(200*time.Second))
	}
	if st, _ := breakerState(t, b); st != BreakerOpen || cause() != CauseTransient {
		t.Fatalf("threshold: %s %q", st, cause())
	}
	// Auth on top of a transient opening takes the cause, keeps the cooldown.
	if opened, until, _ := b.Trip(ctx, t0.Add(201*time.Second), CauseAuth); opened || !until.Equal(t0.Add(230*time.Second)) || cause() != CauseAuth {
		t.Fatalf("auth over transient: %v %v %q", opened, until, cause())
	}
}
