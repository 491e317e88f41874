package alerts

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// fakeAnnouncer hands out its items once and records Done and Release.
type fakeAnnouncer struct {
	name      string
	items     []Announcement
	claimErr  error
	doneErr   error
	relErr    error
	claims    int
	done      []string
	released  [][]string
	releaseAt []time.Time
}

func (f *fakeAnnouncer) Name() string { return f.name }
func (f *fakeAnnouncer) Claim(context.Context, time.Time) ([]Announcement, error) {
	f.claims++
	if f.claimErr != nil {
		return nil, f.claimErr
	}
	out := f.items
	f.items = nil
	return out, nil
}
func (f *fakeAnnouncer) Done(_ context.Context, key string, _ time.Time) error {
	f.done = append(f.done, key)
	return f.doneErr
}
func (f *fakeAnnouncer) Release(_ context.Context, keys []string, now time.Time) error {
	f.released, f.releaseAt = append(f.released, keys), append(f.releaseAt, now)
	return f.relErr
}

// notifierFunc is a Notifier of a function.
type notifierFunc func(ctx context.Context, text string) error

func (f notifierFunc) Notify(ctx context.Context, text string) error { return f(ctx, text) }

func items(keys ...string) []Announcement {
	var out []Announcement
	for _, k := range keys {
		out = append(out, Announcement{Key: k, Detail: "detail " + k})
	}
	return out
}

// Each item is sent, then marked done; the run counts them and keeps the
// latest in alert_state.
func TestAnnounceSendsThenMarksDone(t *testing.T) {
	e, rec := newAlerts(t)
	a := &fakeAnnouncer{name: "news", items: items("k1", "k2")}
	e.Announcers = []Announcer{a}
	at := time.UnixMilli(1_000_000)
	out, err := e.Run(ctx, at)
	if err != nil || out["announced"] != 2 {
		t.Fatalf("%v %v", out, err)
	}
	if got := rec.take(); len(got) != 2 || got[0] != "[redrive] NEW news: detail k1" || got[1] != "[redrive] NEW news: detail k2" {
		t.Errorf("sent %q", got)
	}
	if strings.Join(a.done, ",") != "k1,k2" || len(a.released) != 0 {
		t.Errorf("done %v, released %v", a.done, a.released)
	}
	var n, last int64
	var detail string
	if err := e.DB.QueryRow(`SELECT notifications, last_notified_at, detail FROM alert_state WHERE name = 'news'`).Scan(&n, &last, &detail); err != nil ||
		n != 2 || last != at.UnixMilli() || detail != "detail k2" {
		t.Errorf("alert_state: %d %d %q %v", n, last, detail, err)
	}
}

// A failing webhook is tried once per run: the item and every one after it
// are released in one call (with the claim time), nothing is marked done,
// later announcers claim nothing, and the run fails.
func TestAnnounceStopsAtTheFirstFailedNotification(t *testing.T) {
	e, rec := newAlerts(t)
	calls := 0
	e.Notifier = notifierFunc(func(ctx context.Context, text string) error {
		calls++
		if calls == 2 {
			return errors.New("webhook: status 500")
		}
		return rec.Notify(ctx, text)
	})
	a := &fakeAnnouncer{name: "news", items: items("k1", "k2", "k3", "k4")}
	b := &fakeAnnouncer{name: "other", items: items("x")}
	e.Announcers = []Announcer{a, b}
	at := time.UnixMilli(2_000_000)
	out, err := e.Run(ctx, at)
	if err == nil || !strings.Contains(err.Error(), "alert news: notify") || out["announced"] != 1 {
		t.Fatalf("%v %v", out, err)
	}
	if calls != 2 || strings.Join(a.done, ",") != "k1" {
		t.Errorf("%d notifications, done %v", calls, a.done)
	}
	if len(a.released) != 1 || strings.Join(a.released[0], ",") != "k2,k3,k4" || !a.releaseAt[0].Equal(at) {
		t.Errorf("released %v at %v", a.released, a.releaseAt)
	}
	if b.claims != 0 {
		t.Errorf("another announcer claimed %d times after the webhook failed", b.claims)
	}
	// A release that fails too is part of the run's error.
	a.items, a.relErr, calls = items("k5"), errors.New("d1 down"), 1
	if _, err := e.Run(ctx, at.Add(time.Minute)); err == nil || !strings.Contains(err.Error(), "release: d1 down") {
		t.Errorf("run error %v, want the release error in it", err)
	}
}

// Without a notifier items are logged and marked done; a claim that fails
// is an error of the run and the next announcer still runs; a Done that
// fails is an error but the item counts as sent.
func TestAnnounceWithoutNotifierAndErrors(t *testing.T) {
	e, _ := newAlerts(t)
	e.Notifier = nil
	bad := &fakeAnnouncer{name: "bad", claimErr: errors.New("d1 down")}
	a := &fakeAnnouncer{name: "news", items: items("k1"), doneErr: errors.New("d1 blip")}
	e.Announcers = []Announcer{bad, a}
	out, err := e.Run(ctx, time.UnixMilli(3_000_000))
	if err == nil || !strings.Contains(err.Error(), "alert bad: claim") || !strings.Contains(err.Error(), "alert news: done") || out["announced"] != 1 {
		t.Fatalf("%v %v", out, err)
	}
	if a.claims != 1 || strings.Join(a.done, ",") != "k1" {
		t.Errorf("claims %d, done %v", a.claims, a.done)
	}
}
