package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redrive/redrive/internal/sqlitetest"
	"github.com/redrive/redrive/internal/wranglerconfig"
	"github.com/redrive/redrive/jobs"
)

func mustTime(t *testing.T, s string) time.Time {
	t.Helper()
	at, err := time.Parse(time.RFC3339, s)
	if err != nil {
		t.Fatal(err)
	}
	return at
}

// The ticker fires what wrangler.jsonc declares, which are the jobs' crons.
func TestFiresTheCronsOfWranglerConfig(t *testing.T) {
	root, err := sqlitetest.Root()
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := wranglerconfig.Load(root)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(cfg.Triggers.Crons, jobs.Crons) {
		t.Fatalf("wrangler.jsonc crons %q, jobs.Crons %q", cfg.Triggers.Crons, jobs.Crons)
	}
	if _, err := NewTicker(cfg.Triggers.Crons, 1, time.Now()); err != nil {
		t.Fatal(err)
	}
}

// At speed 1 each cron is due at production's times, once each.
func TestDueAtProductionTimes(t *testing.T) {
	start := mustTime(t, "2026-11-26T03:11:30Z")
	tk, err := NewTicker(jobs.Crons, 1, start)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := tk.NextWall(), mustTime(t, "2026-11-26T03:15:00Z"); !got.Equal(want) {
		t.Fatalf("first wake %s, want %s", got, want)
	}
	if e, _ := tk.Due(mustTime(t, "2026-11-26T03:14:59Z")); len(e) != 0 {
		t.Fatalf("due before its time: %q", e)
	}
	var fired []string
	for now := start; now.Before(mustTime(t, "2026-11-26T04:00:00Z")); now = now.Add(time.Second) {
		e, due := tk.Due(now)
		for i := range e {
			fired = append(fired, e[i]+"@"+due[i].Format("15:04"))
		}
	}
	want := []string{}
	for m := 15; m < 60; m += 5 {
		want = append(want, jobs.Frequent+"@03:"+twoDigits(m))
		if m == 15 {
			want = append(want, jobs.Daily+"@03:17")
		}
	}
	if !slices.Equal(fired, want) {
		t.Fatalf("fired %q\nwant %q", fired, want)
	}
}

func twoDigits(n int) string { return string([]byte{byte('0' + n/10), byte('0' + n%10)}) }

// DEV_CRON_SPEED=60 fires the 5-minute cron every 5 s and the daily one every 24 min.
func TestSpeedScalesTheSchedule(t *testing.T) {
	start := mustTime(t, "2026-11-26T00:00:00Z")
	tk, err := NewTicker(jobs.Crons, 60, start)
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]int{}
	for now := start; now.Before(start.Add(48 * time.Minute)); now = now.Add(100 * time.Millisecond) {
		e, _ := tk.Due(now)
		for _, x := range e {
			counts[x]++
		}
	}
	// 48 wall minutes = 48 scaled hours after 00:00: 00:05 to 47:55 is 575
	// five-minute runs, and 03:17 on two days.
	if counts[jobs.Frequent] != 575 || counts[jobs.Daily] != 2 {
		t.Fatalf("counts %v, want 575 frequent and 2 daily", counts)
	}
}

// A ticker that slept through several times fires once, not a burst.
func TestMissedTimesFireOnce(t *testing.T) {
	start := mustTime(t, "2026-11-26T00:00:30Z")
	tk, _ := NewTicker([]string{jobs.Frequent}, 1, start)
	e, _ := tk.Due(start.Add(time.Hour))
	if len(e) != 1 {
		t.Fatalf("after an hour asleep fired %d, want 1", len(e))
	}
	if e, _ := tk.Due(start.Add(time.Hour + time.Second)); len(e) != 0 {
		t.Fatalf("fired again at once: %q", e)
	}
}

func TestRefusesBadInput(t *testing.T) {
	for _, c := range []struct {
		exprs []string
		speed float64
	}{{nil, 1}, {[]string{"*/5 * * *"}, 1}, {[]string{jobs.Frequent}, 0}, {[]string{jobs.Frequent}, -2}, {[]string{jobs.Frequent}, 2e6}} {
		if _, err := NewTicker(c.exprs, c.speed, time.Now()); err == nil {
			t.Errorf("NewTicker(%q, %g) accepted", c.exprs, c.speed)
		}
	}
}

// Run fires /__scheduled?cron= on the server until its context ends.
func TestRunFiresScheduledEvents(t *testing.T) {
	var mu sync.Mutex
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/__scheduled" {
			http.NotFound(w, r)
			return
		}
		mu.Lock()
		got = append(got, r.URL.Query().Get("cron"))
		mu.Unlock()
	}))
	defer srv.Close()
	// 3000x: the 5-minute cron every 100 ms.
	tk, err := NewTicker([]string{jobs.Frequent}, 3000, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		tk.Run(ctx, func(expr string, _ time.Time) {
			if err := Fire(ctx, srv.Client(), srv.URL, expr); err != nil && ctx.Err() == nil {
				t.Error(err)
			}
		})
	}()
	deadline := time.Now().Add(10 * time.Second)
	for {
		mu.Lock()
		n := len(got)
		mu.Unlock()
		if n >= 3 || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	<-done
	mu.Lock()
	defer mu.Unlock()
	if len(got) < 3 {
		t.Fatalf("fired %d times in 10 s at 100 ms intervals", len(got))
	}
	for _, c := range got {
		if c != jobs.Frequent {
			t.Fatalf("fired cron %q", c)
		}
	}
}

func TestFireReportsAFailedEvent(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "no such route", http.StatusNotFound)
	}))
	defer srv.Close()
	if err := Fire(context.Background(), srv.Client(), srv.URL, jobs.Frequent); err == nil {
		t.Fatal("a 404 was taken as a fired event")
	}
}
