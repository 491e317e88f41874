package upkeep

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/alerts"
	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/internal/sqlitetest"
	"github.com/redrive/redrive/queue/queuetest"
)

type flakyNotifier struct {
	sent []string
	fail bool
}

func (f *flakyNotifier) Notify(_ context.Context, text string) error {
	if f.fail {
		return errors.New("webhook down")
	}
	f.sent = append(f.sent, text)
	return nil
}

// dlq_new_failure_signature is sent once per signature, the first run after
// it is first seen, with its text and a sample id; a failed notification is
// sent again by the next run.
func TestNewFailureSignatureIsAnnouncedOncePerSignature(t *testing.T) {
	db := sqlitetest.New(t)
	var logs bytes.Buffer
	c := newCapture(db, &logs)
	a := dlq.Attempts{DB: db}
	record := func(id, class, errText string) {
		if err := a.Record(ctx, dlq.Attempt{MessageID: id, Queue: "beer-enrichment", Attempt: 4, Class: class, Error: errText, At: t0}); err != nil {
			t.Fatal(err)
		}
	}
	record("m1", "transient", "status 500: boom 17")
	record("m2", "transient", "status 503: boom 99")
	record("m3", "permanent", "status 400: model \"x\" unknown")
	consume(t, c, queuetest.New("m1", beer("1")), queuetest.New("m2", beer("2")), queuetest.New("m3", beer("3")))
	n := &flakyNotifier{}
	e := &alerts.Engine{DB: db, Log: discard, Notifier: n, Reminder: time.Hour, Announcers: []alerts.Announcer{NewFailureSignature{DB: db}}}
	run := func(at time.Time) error {
		_, err := e.Run(ctx, at)
		return err
	}
	if err := run(t0.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if len(n.sent) != 2 {
		t.Fatalf("sent %q, want one per signature (2)", n.sent)
	}
	for _, s := range n.sent {
		if !strings.HasPrefix(s, "[redrive] NEW dlq_new_failure_signature: new failure signature ") || !strings.Contains(s, "e.g. row ") || !strings.Contains(s, ") in pipeline beers: ") {
			t.Errorf("message %q", s)
		}
	}
	if !strings.Contains(strings.Join(n.sent, "\n"), `"status <n>: model <q> unknown"`) || !strings.Contains(strings.Join(n.sent, "\n"), "fails again") {
		t.Errorf("messages lack the text or the permanent note: %q", n.sent)
	}
	if err := run(t0.Add(2 * time.Minute)); err != nil || len(n.sent) != 2 {
		t.Fatalf("second run sent again: %q (%v)", n.sent, err)
	}
	// More rows of a known signature: nothing; a new signature: once, after
	// the failed notification is retried.
	record("m4", "transient", "status 500: boom 4")
	record("m5", "rate_limited", "status 429: slow down")
	consume(t, c, queuetest.New("m4", beer("4")), queuetest.New("m5", beer("5")))
	n.fail = true
	if err := run(t0.Add(3 * time.Minute)); err == nil {
		t.Fatal("a failed notification must fail the run")
	}
	n.fail = false
	if err := run(t0.Add(4 * time.Minute)); err != nil {
		t.Fatal(err)
	}
	if len(n.sent) != 3 || !strings.Contains(n.sent[2], "(rate_limited)") {
		t.Fatalf("sent %q", n.sent)
	}
	if got := count(t, db, `SELECT COUNT(*) FROM dlq_signatures WHERE announced_at IS NULL`); got != 0 {
		t.Errorf("%d signatures not announced", got)
	}
	if got := count(t, db, `SELECT notifications FROM alert_state WHERE name = 'dlq_new_failure_signature'`); got != 3 {
		t.Errorf("alert_state counts %d announcements", got)
	}
}

// countingNotifier counts its calls and fails while down.
type countingNotifier struct {
	calls int
	sent  []string
	down  bool
}

func (c *countingNotifier) Notify(_ context.Context, text string) error {
	c.calls++
	if c.down {
		return errors.New("webhook down")
	}
	c.sent = append(c.sent, text)
	return nil
}

// newSignatures captures n rows of n distinct signatures.
func newSignatures(t *testing.T, n int) *sql.DB {
	t.Helper()
	db := sqlitetest.New(t)
	c := newCapture(db, &bytes.Buffer{})
	a := dlq.Attempts{DB: db}
	var msgs []*queuetest.Message
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("m%d", i)
		if err := a.Record(ctx, dlq.Attempt{MessageID: id, Queue: "beer-enrichment", Attempt: 4, Class: "transient",
			Error: "cause " + strings.Repeat("x", i+1), At: t0}); err != nil {
			t.Fatal(err)
		}
		msgs = append(msgs, queuetest.New(id, beer(fmt.Sprint(i+1))))
	}
	consume(t, c, msgs...)
	return db
}

// A run that claims new signatures and dies before sending them does not
// lose them: a later run (once the claim lapsed) announces them.
func TestNewFailureSignatureSurvivesARunThatDies(t *testing.T) {
	db := newSignatures(t, 3)
	if items, err := (NewFailureSignature{DB: db}).Claim(ctx, t0.Add(time.Minute)); err != nil || len(items) != 3 {
		t.Fatalf("claim: %d items, %v", len(items), err)
	}
	// ... and the run dies here. An overlapping run sends nothing while the
	// claim holds; a run after it lapsed sends all three, once.
	n := &countingNotifier{}
	e := &alerts.Engine{DB: db, Log: discard, Notifier: n, Reminder: time.Hour, Announcers: []alerts.Announcer{NewFailureSignature{DB: db}}}
	if _, err := e.Run(ctx, t0.Add(2*time.Minute)); err != nil || n.calls != 0 {
		t.Fatalf("a run during the claim sent %d (%v)", n.calls, err)
	}
	for _, at := range []time.Time{t0.Add(time.Hour), t0.Add(2 * time.Hour)} {
		if _, err := e.Run(ctx, at); err != nil {
			t.Fatal(err)
		}
	}
	if len(n.sent) != 3 {
		t.Fatalf("sent %d announcements after the run that died, want 3: %q", len(n.sent), n.sent)
	}
	if got := count(t, db, `SELECT COUNT(*) FROM dlq_signatures WHERE announced_at IS NULL`); got != 0 {
		t.Errorf("%d signatures not announced", got)
	}
}

// A webhook that fails is tried once per run, not once per claimed
// signature; every claim is given back, and the next run sends them all.
func TestNewFailureSignatureStopsAtAFailingWebhook(t *testing.T) {
	db := newSignatures(t, 5)
	n := &countingNotifier{down: true}
	e := &alerts.Engine{DB: db, Log: discard, Notifier: n, Reminder: time.Hour, Announcers: []alerts.Announcer{NewFailureSignature{DB: db}}}
	if _, err := e.Run(ctx, t0.Add(time.Minute)); err == nil || n.calls != 1 {
		t.Fatalf("the failing webhook was called %d times (want 1), run error %v", n.calls, err)
	}
	n.down = false
	if _, err := e.Run(ctx, t0.Add(2*time.Minute)); err != nil || len(n.sent) != 5 {
		t.Fatalf("the next run sent %d, want 5 (%v)", len(n.sent), err)
	}
}

// Claim, Done and Release directly: a claim holds for announceLease and
// only the claim it names is released; a signature without sample rows
// says so; a database error is an error of each.
func TestNewFailureSignatureClaimDoneRelease(t *testing.T) {
	db := sqlitetest.New(t)
	mustExec(t, db, `INSERT INTO dlq_signatures(signature, class, text, first_seen, last_seen) VALUES
		('00000000000000a1', 'permanent', 'bad model', 1, 1), ('00000000000000a2', 'transient', 'busy', 2, 2)`)
	n := NewFailureSignature{DB: db}
	at := t0
	items, err := n.Claim(ctx, at)
	if err != nil || len(items) != 2 || !strings.Contains(items[0].Detail, "no row yet") || !strings.Contains(items[0].Detail, "fails again") {
		t.Fatalf("claim: %+v %v", items, err)
	}
	if again, err := n.Claim(ctx, at.Add(announceLease-time.Millisecond)); err != nil || len(again) != 0 {
		t.Fatalf("claimed again within the lease: %+v %v", again, err)
	}
	if err := n.Release(ctx, []string{"00000000000000a1"}, at.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	if err := n.Release(ctx, []string{"00000000000000a1"}, at); err != nil {
		t.Fatal(err)
	}
	if err := n.Done(ctx, "00000000000000a2", at); err != nil {
		t.Fatal(err)
	}
	if got := count(t, db, `SELECT COUNT(*) FROM dlq_signatures WHERE signature = '00000000000000a1' AND announce_claimed_at IS NULL AND announced_at IS NULL`); got != 1 {
		t.Error("the released claim still holds (or a release of another claim time took it)")
	}
	if got := count(t, db, `SELECT COUNT(*) FROM dlq_signatures WHERE signature = '00000000000000a2' AND announce_claimed_at IS NULL AND announced_at = ?`, at.UnixMilli()); got != 1 {
		t.Error("done did not mark the signature announced")
	}
	if again, err := n.Claim(ctx, at.Add(time.Minute)); err != nil || len(again) != 1 || again[0].Key != "00000000000000a1" {
		t.Fatalf("after release and done: %+v %v", again, err)
	}
	mustExec(t, db, `DROP TABLE dlq_signatures`)
	if _, err := n.Claim(ctx, at); err == nil {
		t.Error("claim without its table: no error")
	}
	if err := n.Done(ctx, "00000000000000a1", at); err == nil {
		t.Error("done without its table: no error")
	}
	if err := n.Release(ctx, []string{"00000000000000a1"}, at); err == nil {
		t.Error("release without its table: no error")
	}
}
