package dlq

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/alerts"
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
	a := Attempts{DB: db}
	record := func(id, class, errText string) {
		if err := a.Record(ctx, Attempt{MessageID: id, Queue: "beer-enrichment", Attempt: 4, Class: class, Error: errText, At: t0}); err != nil {
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
		if !strings.HasPrefix(s, "[redrive] NEW dlq_new_failure_signature: new failure signature ") || !strings.Contains(s, "e.g. row ") {
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
