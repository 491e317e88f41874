package enrichment

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redrive/redrive/internal/sqlitetest"
)

func TestQuotaRefusesAtTheLimitAndResetsDaily(t *testing.T) {
	ctx := context.Background()
	q := Quota{DB: sqlitetest.New(t), Limit: 2}
	day1 := time.Date(2030, 1, 1, 23, 59, 0, 0, time.UTC)
	for want := int64(1); want <= 2; want++ {
		ok, used, err := q.Reserve(ctx, day1)
		if err != nil || !ok || used != want {
			t.Fatalf("reservation %d: ok=%v used=%d err=%v", want, ok, used, err)
		}
	}
	ok, _, err := q.Reserve(ctx, day1)
	if err != nil || ok {
		t.Fatalf("third reservation must be refused: ok=%v err=%v", ok, err)
	}
	var used int64
	q.DB.QueryRow(`SELECT used FROM enrichment_quota WHERE day = '2030-01-01'`).Scan(&used)
	if used != 2 {
		t.Fatalf("a refusal must not spend anything: used = %d", used)
	}
	// The next UTC day has a fresh budget, whatever the local zone says.
	day2 := time.Date(2030, 1, 2, 0, 0, 1, 0, time.UTC).In(time.FixedZone("PST", -8*3600))
	if ok, used, _ := q.Reserve(ctx, day2); !ok || used != 1 {
		t.Fatalf("new day: ok=%v used=%d", ok, used)
	}
}

// Concurrent reservations never exceed the limit (one conditional statement).
func TestQuotaReserveIsAtomic(t *testing.T) {
	ctx := context.Background()
	q := Quota{DB: sqlitetest.New(t), Limit: 5}
	now := time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)
	var granted atomic.Int64
	var wg sync.WaitGroup
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ok, _, err := q.Reserve(ctx, now)
			if err != nil {
				t.Error(err)
			}
			if ok {
				granted.Add(1)
			}
		}()
	}
	wg.Wait()
	if granted.Load() != 5 {
		t.Fatalf("granted %d reservations, limit 5", granted.Load())
	}
}

func TestResetAt(t *testing.T) {
	for in, want := range map[time.Time]time.Time{
		time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC):                        time.Date(2030, 1, 2, 0, 0, 0, 0, time.UTC),
		time.Date(2030, 12, 31, 23, 59, 59, 0, time.UTC):                   time.Date(2031, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(2030, 3, 1, 20, 0, 0, 0, time.FixedZone("EST", -5*3600)): time.Date(2030, 3, 3, 0, 0, 0, 0, time.UTC),
	} {
		if got := ResetAt(in); !got.Equal(want) {
			t.Errorf("ResetAt(%v) = %v, want %v", in, got, want)
		}
	}
}

// A refused call (auth) gives its reservation back to the day it was taken
// from, never below zero; the budget can then be spent again.
func TestQuotaReleaseGivesBackOneCall(t *testing.T) {
	ctx := context.Background()
	q := Quota{DB: sqlitetest.New(t), Limit: 1}
	late := time.Date(2030, 1, 1, 23, 59, 59, 0, time.UTC)
	if ok, _, _ := q.Reserve(ctx, late); !ok {
		t.Fatal("first reservation refused")
	}
	if ok, _, _ := q.Reserve(ctx, late); ok {
		t.Fatal("limit not enforced")
	}
	if err := q.Release(ctx, late); err != nil {
		t.Fatal(err)
	}
	if ok, used, _ := q.Reserve(ctx, late); !ok || used != 1 {
		t.Fatalf("after release: ok=%v used=%d", ok, used)
	}
	// Released twice: never negative; another day's row is untouched.
	q.Release(ctx, late)
	q.Release(ctx, late)
	var used int64
	q.DB.QueryRow(`SELECT used FROM enrichment_quota WHERE day = '2030-01-01'`).Scan(&used)
	if used != 0 {
		t.Fatalf("used = %d", used)
	}
	if err := q.Release(ctx, late.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
}
