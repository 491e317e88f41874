package alerts

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redrive/redrive/internal/sqlitetest"
	"github.com/redrive/redrive/outbound"
	"github.com/redrive/redrive/sqlbatch"
)

// receiver answers each channel's requests with its status (200 by
// default) and records the events of the 2xx ones, per channel.
type receiver struct {
	mu     sync.Mutex
	status map[string]int
	got    map[string][]Event
	calls  map[string]int
}

func newReceiver() *receiver {
	return &receiver{status: map[string]int{}, got: map[string][]Event{}, calls: map[string]int{}}
}

func (r *receiver) Do(_ context.Context, req outbound.Request) (outbound.Response, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	ch := req.URL[len("http://127.0.0.1:9/"):]
	r.calls[ch]++
	if s := r.status[ch]; s != 0 && s != 200 {
		return outbound.Response{Status: s}, nil
	}
	var ev Event
	if err := json.Unmarshal(req.Body, &ev); err != nil {
		return outbound.Response{Status: 400}, nil
	}
	r.got[ch] = append(r.got[ch], ev)
	return outbound.Response{Status: 202}, nil
}

func (r *receiver) ids(ch string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, e := range r.got[ch] {
		out = append(out, e.ID)
	}
	return out
}

func webhookChannel(name string) Channel {
	return Channel{Name: name, Type: ChannelWebhook, URL: "http://127.0.0.1:9/" + name,
		Secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}
}

func newOutbox(t *testing.T, r *receiver, chans ...Channel) *Outbox {
	db := sqlitetest.New(t)
	return &Outbox{DB: db, Batch: sqlbatch.Tx{DB: db}, Doer: r, Log: discard, Attempts: 4, Jitter: func() float64 { return 0 },
		Channels: chans}
}

func testEvent(dedup string, n int) Keyed {
	return Keyed{Event: Event{ID: EventID(dedup, fmt.Sprint(n)), Type: AlertFiring, Timestamp: Timestamp(alertT0), Severity: "error",
		DedupKey: DedupKey(dedup), Summary: fmt.Sprintf("%s #%d", dedup, n), Data: map[string]any{}}}
}

func deliverAt(t *testing.T, o *Outbox, at time.Time) DeliveryReport {
	t.Helper()
	rep, _ := o.Deliver(ctx, at)
	return rep
}

// A receiver that is down for 30 minutes gets every event exactly once
// afterwards, in order per incident, though events of the same incident
// were written while it was down; another channel is not held up.
func TestOutboxDeliversInOrderPerIncidentAfterAnOutage(t *testing.T) {
	r := newReceiver()
	o := newOutbox(t, r, webhookChannel("down"), webhookChannel("up"))
	o.Attempts = 12 // ALERT_DELIVERY_ATTEMPTS' default
	r.status["down"] = 503
	var want []string
	at := alertT0
	for i := range 6 {
		for _, inc := range []string{"group:a", "group:b"} {
			ev := testEvent(inc, i)
			if err := o.Write(ctx, []Keyed{ev}, at); err != nil {
				t.Fatal(err)
			}
			if inc == "group:a" {
				want = append(want, ev.ID)
			}
		}
		deliverAt(t, o, at)
		at = at.Add(5 * time.Minute)
	}
	if got := len(r.ids("up")); got != 12 {
		t.Fatalf("the working channel got %d events during the outage, want 12", got)
	}
	if calls := r.calls["down"]; calls > 6 {
		t.Fatalf("the down channel was called %d times in 6 runs: more than once a run", calls)
	}
	// A run claims one delivery of a channel first: the deliveries waiting
	// behind a receiver that is down are not claimed and given back each run.
	if n := count(t, o.DB, `SELECT COUNT(*) FROM alert_deliveries WHERE channel = 'down' AND attempts > 0`); n > 2 {
		t.Fatalf("%d deliveries of the down channel were attempted, want at most the two incidents' first", n)
	}
	if n := count(t, o.DB, `SELECT COUNT(*) FROM alert_deliveries d JOIN alert_events e ON e.id = d.event_id
		WHERE d.channel = 'down' AND d.attempts = 0 AND d.next_at <> e.created_at`); n != 0 {
		t.Fatalf("%d deliveries waiting behind the down channel were claimed and given back (rows written each run)", n)
	}
	r.status["down"] = 0 // the receiver is back after 30 minutes
	for ; at.Before(alertT0.Add(3 * time.Hour)); at = at.Add(5 * time.Minute) {
		deliverAt(t, o, at)
	}
	var gotA []string
	for _, e := range r.got["down"] {
		if e.DedupKey == DedupKey("group:a") {
			gotA = append(gotA, e.ID)
		}
	}
	if fmt.Sprint(gotA) != fmt.Sprint(want) {
		t.Fatalf("incident a's events after the outage\n got %v\nwant %v", gotA, want)
	}
	if n := len(r.ids("down")); n != 12 {
		t.Fatalf("the receiver got %d events, want each of 12 exactly once", n)
	}
	if n := count(t, o.DB, `SELECT COUNT(*) FROM alert_deliveries WHERE state <> 'sent'`); n != 0 {
		t.Fatalf("%d deliveries not sent", n)
	}
}

// After its last attempt a delivery fails for good: counted, listed, and
// never sent again.
func TestOutboxFailsADeliveryAfterItsLastAttempt(t *testing.T) {
	r := newReceiver()
	o := newOutbox(t, r, webhookChannel("down"))
	r.status["down"] = 500
	if err := o.Write(ctx, []Keyed{testEvent("group:a", 1)}, alertT0); err != nil {
		t.Fatal(err)
	}
	for at := alertT0; at.Before(alertT0.Add(6 * time.Hour)); at = at.Add(5 * time.Minute) {
		deliverAt(t, o, at)
	}
	if r.calls["down"] != o.Attempts {
		t.Fatalf("%d attempts, want %d", r.calls["down"], o.Attempts)
	}
	if n := count(t, o.DB, `SELECT value FROM counters WHERE name = ?`, FailedCounter); n != 1 {
		t.Fatalf("%s = %d, want 1", FailedCounter, n)
	}
	l, err := o.List(ctx, 10, true)
	if err != nil || len(l.Events) != 1 || l.Failed != 1 || l.Events[0].Deliveries[0].State != "failed" ||
		*l.Events[0].Deliveries[0].LastStatus != 500 {
		t.Fatalf("failed list %+v %v", l, err)
	}
}

// PagerDuty's 400 refuses an event for good: its delivery fails at the
// first attempt (counted and listed as failed); a webhook's 400 is retried.
func TestOutboxFailsARefusedEventAtOnce(t *testing.T) {
	r := newReceiver()
	pd := Channel{Name: "pd", Type: ChannelPagerDuty, URL: "http://127.0.0.1:9/pd", Secret: "R0UT1NGKEY"}
	o := newOutbox(t, r, pd, webhookChannel("hook"))
	r.status["pd"], r.status["hook"] = 400, 400
	ev := testEvent("group:a", 1)
	ev.Type = GroupOpened
	if err := o.Write(ctx, []Keyed{ev}, alertT0); err != nil {
		t.Fatal(err)
	}
	for at := alertT0; at.Before(alertT0.Add(15 * time.Minute)); at = at.Add(5 * time.Minute) {
		deliverAt(t, o, at)
	}
	if r.calls["pd"] != 1 || r.calls["hook"] < 2 {
		t.Fatalf("calls %v: want pagerduty once, the webhook again", r.calls)
	}
	l, err := o.List(ctx, 10, true)
	if err != nil || l.Failed != 1 || count(t, o.DB, `SELECT value FROM counters WHERE name = ?`, FailedCounter) != 1 {
		t.Fatalf("failed list %+v %v", l, err)
	}
	for _, d := range l.Events[0].Deliveries {
		if d.Channel == "pd" && (d.State != "failed" || !strings.Contains(*d.LastError, "refused")) {
			t.Errorf("pagerduty delivery %+v", d)
		}
	}
}

// The backoff doubles from a minute up to an hour, and jitter takes off at
// most half.
func TestBackoffDoublesAndIsBounded(t *testing.T) {
	for attempt, want := range map[int]time.Duration{1: time.Minute, 2: 2 * time.Minute, 3: 4 * time.Minute, 6: 32 * time.Minute,
		7: time.Hour, 8: time.Hour, 30: time.Hour, 0: time.Hour} {
		if got := Backoff(attempt, 0.999999); got > want || got < want-time.Second {
			t.Errorf("Backoff(%d, ~1) = %s, want %s", attempt, got, want)
		}
		if got := Backoff(attempt, 0); got != want/2 {
			t.Errorf("Backoff(%d, 0) = %s, want %s", attempt, got, want/2)
		}
	}
}

// A receiver that answers 410 is disabled: its pending deliveries fail,
// the other channels get channel.disabled, and no later event is queued
// for it until it is enabled again.
func TestOutboxDisablesAGoneReceiver(t *testing.T) {
	r := newReceiver()
	o := newOutbox(t, r, webhookChannel("gone"), webhookChannel("other"))
	r.status["gone"] = 410
	if err := o.Write(ctx, []Keyed{testEvent("group:a", 1), testEvent("group:b", 1)}, alertT0); err != nil {
		t.Fatal(err)
	}
	rep, err := o.Deliver(ctx, alertT0)
	if err == nil || len(rep.Disabled) != 1 || rep.Disabled[0] != "gone" {
		t.Fatalf("report %+v, err %v", rep, err)
	}
	deliverAt(t, o, alertT0.Add(time.Minute))
	var types []string
	for _, e := range r.got["other"] {
		types = append(types, e.Type)
	}
	if fmt.Sprint(types) != "[alert.firing alert.firing channel.disabled]" {
		t.Fatalf("the other channel got %v", types)
	}
	if r.calls["gone"] != 1 {
		t.Fatalf("the gone receiver was called %d times, want 1", r.calls["gone"])
	}
	l, err := o.List(ctx, 10, false)
	if err != nil || len(l.Channels) != 2 || l.Channels[0].DisabledAt == nil || l.Channels[1].DisabledAt != nil ||
		!strings.Contains(*l.Channels[0].Reason, "410") || l.Failed != 2 {
		t.Fatalf("list after the 410: %+v %v", l, err)
	}
	for _, e := range l.Events {
		for _, d := range e.Deliveries {
			if (d.State == "sent") != (d.LastStatus != nil && *d.LastStatus == 202) || (d.DoneAt == nil) != (d.State == "pending") {
				t.Errorf("%s to %s: %+v", e.Event.Type, d.Channel, d)
			}
		}
	}
	if err := o.Write(ctx, []Keyed{testEvent("group:c", 1)}, alertT0.Add(2*time.Minute)); err != nil {
		t.Fatal(err)
	}
	if n := count(t, o.DB, `SELECT COUNT(*) FROM alert_deliveries WHERE channel = 'gone' AND state = 'pending'`); n != 0 {
		t.Fatalf("%d deliveries queued for a disabled channel", n)
	}
	if ok, err := o.Enable(ctx, "gone"); !ok || err != nil {
		t.Fatalf("enable: %v %v", ok, err)
	}
	r.status["gone"] = 0
	if err := o.Write(ctx, []Keyed{testEvent("group:d", 1)}, alertT0.Add(3*time.Minute)); err != nil {
		t.Fatal(err)
	}
	deliverAt(t, o, alertT0.Add(3*time.Minute))
	if ids := r.ids("gone"); len(ids) != 1 || ids[0] != testEvent("group:d", 1).ID {
		t.Fatalf("after enable the receiver got %v", ids)
	}
}

// An occurrence written twice is one event and one delivery per channel;
// routing leaves out the channels whose filters do not match.
func TestOutboxWritesAnOccurrenceOnceAndRoutes(t *testing.T) {
	r := newReceiver()
	pd := webhookChannel("groups-only")
	pd.Events = []string{"group.*"}
	o := newOutbox(t, r, webhookChannel("all"), pd)
	ev := testEvent("alert:x", 1)
	for range 3 {
		if err := o.Write(ctx, []Keyed{ev}, alertT0); err != nil {
			t.Fatal(err)
		}
	}
	if n := count(t, o.DB, `SELECT COUNT(*) FROM alert_events`); n != 1 {
		t.Fatalf("%d events, want 1", n)
	}
	if n := count(t, o.DB, `SELECT COUNT(*) FROM alert_deliveries`); n != 1 {
		t.Fatalf("%d deliveries, want 1 (the group-only channel routes no alert.firing)", n)
	}
	deliverAt(t, o, alertT0)
	deliverAt(t, o, alertT0.Add(time.Hour))
	if len(r.ids("all")) != 1 || len(r.ids("groups-only")) != 0 {
		t.Fatalf("got %v and %v", r.ids("all"), r.ids("groups-only"))
	}
}

// Old events are pruned with their deliveries; a pending one is kept.
func TestOutboxPrunesOldEvents(t *testing.T) {
	r := newReceiver()
	o := newOutbox(t, r, webhookChannel("c"))
	if err := o.Write(ctx, []Keyed{testEvent("a", 1), testEvent("b", 1)}, alertT0); err != nil {
		t.Fatal(err)
	}
	deliverAt(t, o, alertT0)
	r.status["c"] = 500
	if err := o.Write(ctx, []Keyed{testEvent("c", 1)}, alertT0); err != nil {
		t.Fatal(err)
	}
	n, err := o.Prune(ctx, alertT0.Add(31*24*time.Hour))
	if err != nil || n != 2 {
		t.Fatalf("pruned %d %v, want 2", n, err)
	}
	if left := count(t, o.DB, `SELECT COUNT(*) FROM alert_events`); left != 1 {
		t.Fatalf("%d events left, want the pending one", left)
	}
}

// A receiver that is down costs one attempt a run: the deliveries of other
// incidents waiting for it are not claimed and given back (rows written).
func TestOutboxTriesADownChannelOnceARun(t *testing.T) {
	r := newReceiver()
	o := newOutbox(t, r, webhookChannel("down"))
	r.status["down"] = 503
	var evs []Keyed
	for i := range 10 {
		evs = append(evs, testEvent(fmt.Sprint("group:", i), 0))
	}
	if err := o.Write(ctx, evs, alertT0); err != nil {
		t.Fatal(err)
	}
	deliverAt(t, o, alertT0.Add(time.Minute))
	if r.calls["down"] != 1 {
		t.Fatalf("%d calls in one run", r.calls["down"])
	}
	if n := count(t, o.DB, `SELECT COUNT(*) FROM alert_deliveries d JOIN alert_events e ON e.id = d.event_id
		WHERE d.attempts = 0 AND d.next_at <> e.created_at`); n != 0 {
		t.Fatalf("%d deliveries were claimed and given back", n)
	}
}

// A run starts after its scheduled second: an event recorded in between
// (an operator's change) is delivered by that run, not the next.
func TestOutboxDeliversWhatWasRecordedSinceTheScheduledTime(t *testing.T) {
	r := newReceiver()
	o := newOutbox(t, r, webhookChannel("c"))
	o.Clock = func() time.Time { return alertT0.Add(900 * time.Millisecond) }
	if err := o.Write(ctx, []Keyed{testEvent("group:a", 1)}, alertT0.Add(300*time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	if rep := deliverAt(t, o, alertT0); rep.Sent != 1 {
		t.Fatalf("report %+v: the event recorded after the scheduled second waits for the next run", rep)
	}
}
