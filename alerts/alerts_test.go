package alerts

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redrive/redrive/internal/sqlitetest"
	"github.com/redrive/redrive/outbound"
	"github.com/redrive/redrive/sqlbatch"
)

// recorder is a Slack-compatible receiver (an outbound.Doer) that records
// texts and answers 500 while failing is set.
type recorder struct {
	mu      sync.Mutex
	texts   []string
	failing bool
	calls   int
}

func (r *recorder) Do(_ context.Context, req outbound.Request) (outbound.Response, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls++
	if r.failing {
		return outbound.Response{Status: 500}, nil
	}
	var body struct{ Text string }
	if err := json.Unmarshal(req.Body, &body); err != nil {
		return outbound.Response{Status: 400}, nil
	}
	r.texts = append(r.texts, body.Text)
	return outbound.Response{Status: 200}, nil
}

func (r *recorder) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.texts
	r.texts = nil
	return out
}

// switchCond is a condition whose state the test sets.
type switchCond struct {
	name   string
	firing bool
	err    error
	wait   *sync.WaitGroup // when set, Check waits for every run to reach it
}

func (c *switchCond) Name() string { return c.name }
func (c *switchCond) Check(context.Context, time.Time) (bool, string, error) {
	if c.wait != nil {
		c.wait.Done()
		c.wait.Wait()
	}
	return c.firing, "detail of " + c.name, c.err
}

func newAlerts(t *testing.T, conds ...Condition) (*Engine, *recorder) {
	rec := &recorder{}
	db := sqlitetest.New(t)
	o := &Outbox{DB: db, Batch: sqlbatch.Tx{DB: db}, Doer: rec, Log: discard, Attempts: 3, Jitter: func() float64 { return 0 },
		Channels: []Channel{{Name: "hook", Type: ChannelSlack, URL: "http://127.0.0.1:9/hook"}}}
	return &Engine{DB: db, Log: discard, Conditions: conds, Outbox: o, Reminder: time.Hour}, rec
}

func mustRun(t *testing.T, a *Engine, at time.Time) map[string]any {
	t.Helper()
	sum, err := a.Run(ctx, at)
	if err != nil {
		t.Fatalf("run at %s: %v", at, err)
	}
	return sum
}

func expectTexts(t *testing.T, rec *recorder, prefixes ...string) {
	t.Helper()
	got := rec.take()
	if len(got) != len(prefixes) {
		t.Fatalf("notifications %q, want %d starting with %q", got, len(prefixes), prefixes)
	}
	for i, p := range prefixes {
		if !strings.HasPrefix(got[i], p) {
			t.Fatalf("notification %d = %q, want prefix %q", i, got[i], p)
		}
	}
}

var alertT0 = time.Date(2030, 6, 1, 10, 0, 0, 0, time.UTC)

func TestAlertNotifiesOnceWhenItStartsAndOnceWhenItResolves(t *testing.T) {
	c := &switchCond{name: "x", firing: true}
	a, rec := newAlerts(t, c)
	sum := mustRun(t, a, alertT0)
	expectTexts(t, rec, "[redrive] FIRING x: detail of x")
	if sum["notified"] != 1 || len(sum["firing"].([]string)) != 1 {
		t.Fatalf("summary %v", sum)
	}
	mustRun(t, a, alertT0.Add(5*time.Minute))
	mustRun(t, a, alertT0.Add(10*time.Minute))
	expectTexts(t, rec)

	c.firing = false
	mustRun(t, a, alertT0.Add(15*time.Minute))
	expectTexts(t, rec, "[redrive] RESOLVED x after 15m0s: detail of x")
	mustRun(t, a, alertT0.Add(20*time.Minute))
	expectTexts(t, rec)

	c.firing = true
	mustRun(t, a, alertT0.Add(25*time.Minute))
	expectTexts(t, rec, "[redrive] FIRING x")
	if n := count(t, a.DB, `SELECT notifications FROM alert_state WHERE name = 'x' AND firing = 1 AND since = ?`, alertT0.Add(25*time.Minute).UnixMilli()); n != 3 {
		t.Fatalf("notifications = %d, want 3", n)
	}
}

func TestAlertRemindsWhileFiring(t *testing.T) {
	c := &switchCond{name: "x", firing: true}
	a, rec := newAlerts(t, c)
	mustRun(t, a, alertT0)
	expectTexts(t, rec, "[redrive] FIRING x")
	mustRun(t, a, alertT0.Add(59*time.Minute))
	expectTexts(t, rec)
	mustRun(t, a, alertT0.Add(60*time.Minute))
	expectTexts(t, rec, "[redrive] STILL FIRING x (since 2030-06-01T10:00:00Z, 1h0m0s): detail of x")
	mustRun(t, a, alertT0.Add(61*time.Minute))
	expectTexts(t, rec)
	mustRun(t, a, alertT0.Add(125*time.Minute))
	expectTexts(t, rec, "[redrive] STILL FIRING x")
}

// Two runs that read the state before either claims a transition: exactly
// one of them notifies, for the start and for the resolve.
func TestAlertOverlappingRunsNotifyOnce(t *testing.T) {
	var wg sync.WaitGroup
	c := &switchCond{name: "x", firing: true, wait: &wg}
	a, rec := newAlerts(t, c)
	run := func(at time.Time) {
		wg.Add(2)
		var errs [2]error
		var done sync.WaitGroup
		for i := range 2 {
			done.Add(1)
			go func() {
				defer done.Done()
				_, errs[i] = (&Engine{DB: a.DB, Log: discard, Conditions: []Condition{c}, Outbox: a.Outbox, Reminder: time.Hour}).Run(ctx, at)
			}()
		}
		done.Wait()
		if errs[0] != nil || errs[1] != nil {
			t.Fatal(errs)
		}
	}
	run(alertT0)
	expectTexts(t, rec, "[redrive] FIRING x")
	run(alertT0.Add(2 * time.Hour)) // reminder due for both
	expectTexts(t, rec, "[redrive] STILL FIRING x")
	c.firing = false
	run(alertT0.Add(3 * time.Hour))
	expectTexts(t, rec, "[redrive] RESOLVED x")
}

// A failed delivery leaves the transition recorded and fails the run; the
// outbox delivers it on a later run, once its backoff passed. This holds
// for the start, the reminder and the resolve.
func TestAlertFailedDeliveryIsRetriedByALaterRun(t *testing.T) {
	c := &switchCond{name: "x", firing: true}
	a, rec := newAlerts(t, c)
	rec.failing = true
	if _, err := a.Run(ctx, alertT0); err == nil || !strings.Contains(err.Error(), "status 500") {
		t.Fatalf("run with failing webhook: err = %v", err)
	}
	if n := count(t, a.DB, `SELECT COUNT(*) FROM alert_state WHERE name = 'x' AND firing = 1`); n != 1 {
		t.Fatal("the start was not recorded")
	}
	if n := count(t, a.DB, `SELECT COUNT(*) FROM alert_deliveries WHERE state = 'pending' AND attempts = 1 AND last_status = 500`); n != 1 {
		t.Fatal("the failed delivery is not pending with its attempt")
	}
	rec.failing = false
	mustRun(t, a, alertT0.Add(5*time.Minute))
	expectTexts(t, rec, "[redrive] FIRING x")

	rec.failing = true
	if _, err := a.Run(ctx, alertT0.Add(65*time.Minute)); err == nil {
		t.Fatal("failed reminder did not fail the run")
	}
	rec.failing = false
	mustRun(t, a, alertT0.Add(70*time.Minute))
	expectTexts(t, rec, "[redrive] STILL FIRING x")

	c.firing = false
	rec.failing = true
	if _, err := a.Run(ctx, alertT0.Add(75*time.Minute)); err == nil {
		t.Fatal("failed resolve did not fail the run")
	}
	rec.failing = false
	mustRun(t, a, alertT0.Add(80*time.Minute))
	expectTexts(t, rec, "[redrive] RESOLVED x after 1h15m0s")
	if n := count(t, a.DB, `SELECT notifications FROM alert_state WHERE name = 'x' AND firing = 0`); n != 3 {
		t.Fatalf("notifications = %d, want 3", n)
	}
	if n := count(t, a.DB, `SELECT COUNT(*) FROM alert_deliveries WHERE state = 'sent' AND attempts = 2`); n != 3 {
		t.Fatalf("%d deliveries sent at their second attempt, want 3", n)
	}
}

// A condition that cannot be checked neither starts nor resolves its alert;
// the other conditions still run and the run fails.
func TestAlertCheckErrorKeepsState(t *testing.T) {
	bad := &switchCond{name: "bad", firing: true}
	good := &switchCond{name: "good", firing: true}
	a, rec := newAlerts(t, bad, good)
	mustRun(t, a, alertT0)
	expectTexts(t, rec, "[redrive] FIRING bad", "[redrive] FIRING good")
	bad.err, bad.firing, good.firing = errors.New("d1 down"), false, false
	if _, err := a.Run(ctx, alertT0.Add(5*time.Minute)); err == nil || !strings.Contains(err.Error(), "d1 down") {
		t.Fatalf("err = %v", err)
	}
	expectTexts(t, rec, "[redrive] RESOLVED good")
	if n := count(t, a.DB, `SELECT firing FROM alert_state WHERE name = 'bad'`); n != 1 {
		t.Fatal("an unchecked condition was resolved")
	}
}

func TestAlertWithoutChannelsStillRecordsEvents(t *testing.T) {
	c := &switchCond{name: "x", firing: true}
	a, rec := newAlerts(t, c)
	a.Outbox.Channels = nil
	if sum := mustRun(t, a, alertT0); sum["notified"] != 1 {
		t.Fatalf("summary %v", sum)
	}
	if sum := mustRun(t, a, alertT0.Add(time.Minute)); sum["notified"] != 0 {
		t.Fatalf("summary %v", sum)
	}
	if n := count(t, a.DB, `SELECT COUNT(*) FROM alert_events WHERE type = 'alert.firing'`); n != 1 {
		t.Fatalf("%d events recorded, want 1", n)
	}
	if n := count(t, a.DB, `SELECT COUNT(*) FROM alert_deliveries`); n != 0 || rec.calls != 0 {
		t.Fatalf("%d deliveries and %d calls without a channel", n, rec.calls)
	}
}

func TestWebhookPayloadIsSlackJSON(t *testing.T) {
	var p map[string]string
	if err := json.Unmarshal(WebhookPayload(`a <b> & "c"`), &p); err != nil {
		t.Fatal(err)
	}
	if len(p) != 1 || p["text"] != `a &lt;b&gt; &amp; "c"` {
		t.Fatalf("payload %v", p)
	}
}

var (
	ctx     = context.Background()
	discard = slog.New(slog.DiscardHandler)
)

// count runs a COUNT query.
func count(t *testing.T, db *sql.DB, query string, args ...any) int64 {
	t.Helper()
	var n int64
	if err := db.QueryRow(query, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return n
}

// An alerts job without a positive reminder interval refuses to run and
// notifies nothing.
func TestAlertsNeedAPositiveReminder(t *testing.T) {
	for _, reminder := range []time.Duration{0, -time.Minute} {
		a, rec := newAlerts(t, &switchCond{name: "c", firing: true})
		a.Reminder = reminder
		if _, err := a.Run(ctx, alertT0); err == nil || err.Error() != "alerts: Reminder must be positive" {
			t.Errorf("reminder %v: err %v", reminder, err)
		}
		if n := count(t, a.DB, `SELECT COUNT(*) FROM alert_state`); n != 0 || len(rec.take()) != 0 {
			t.Errorf("reminder %v: %d alert rows", reminder, n)
		}
	}
}
