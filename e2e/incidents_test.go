//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/alerts"
	"github.com/redrive/redrive/internal/receiver"
	"github.com/redrive/redrive/metrics"
)

// e2eHookSecret signs the webhook channel's events in these tests.
const (
	e2eHookSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	e2eRoutingKey = "e2e-routing-key"
)

// startReceiver starts the stand-in receiver (internal/receiver) on
// loopback and a worker whose ALERT_CHANNELS are its PagerDuty stand-in
// (group events only) and its Standard Webhooks endpoint (every event).
func startReceiver(t *testing.T, vars map[string]string) (*receiver.Receiver, *Worker) {
	t.Helper()
	rcv, err := receiver.New(receiver.Config{Secret: e2eHookSecret, RoutingKey: e2eRoutingKey})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(rcv)
	t.Cleanup(srv.Close)
	all := map[string]string{
		"ALERT_CHANNELS": fmt.Sprintf(`[{"name":"pd","type":"pagerduty","url":"%s/v2/enqueue","secret":"PD_ROUTING_KEY","events":["group.*"]},`+
			`{"name":"hook","type":"webhook","url":"%s/webhook","secret":"HOOK_SIGNING_SECRET"}]`, srv.URL, srv.URL),
		"PD_ROUTING_KEY": e2eRoutingKey, "HOOK_SIGNING_SECRET": e2eHookSecret,
	}
	for k, v := range vars {
		all[k] = v
	}
	return rcv, startWorker(t, all)
}

// poisonGroup sends n poison bodies to the beer DLQ, waits until the
// worker holds want poison rows, and returns their group's signature.
func poisonGroup(t *testing.T, w *Worker, n int, want int64) string {
	t.Helper()
	bodies := make([]string, n)
	for i := range bodies {
		bodies[i] = "{not json " + uniq("poison")
	}
	w.Send(t, "beer-enrichment-dlq", bodies...)
	Eventually(t, 3*time.Minute, fmt.Sprintf("%d poison rows captured", want), func() bool {
		return w.Int(t, `SELECT COUNT(*) FROM dlq_messages WHERE failure_class = 'poison'`) >= want
	})
	var sig string
	if err := w.DB(t).QueryRow(`SELECT signature FROM dlq_signatures WHERE class = 'poison'`).Scan(&sig); err != nil {
		t.Fatal(err)
	}
	return sig
}

// pdActions are the PagerDuty stand-in's events of dedup key as "action".
func pdActions(rcv *receiver.Receiver, key string) []string {
	var out []string
	for _, e := range rcv.PagerDutyEvents() {
		if e.DedupKey == key {
			out = append(out, e.EventAction)
		}
	}
	return out
}

// hookTypes are the types of the webhook events of dedup key, in order.
func hookTypes(t *testing.T, rcv *receiver.Receiver, key string) []string {
	t.Helper()
	var out []string
	for _, wh := range rcv.Webhooks() {
		ev, err := wh.Event()
		if err != nil {
			t.Fatal(err)
		}
		if ev.DedupKey == key {
			out = append(out, ev.Type)
		}
	}
	return out
}

func setGroupStatus(t *testing.T, w *Worker, sig, status string) {
	t.Helper()
	r := w.Admin(t, http.MethodPost, "/admin/dlq/groups/"+sig+"/status", map[string]any{"status": status, "owner": "oncall"})
	if r.Status != http.StatusOK {
		t.Fatalf("status %s: %d %s", status, r.Status, r.Raw)
	}
}

// A new failure group pages PagerDuty once (a second failure sends
// nothing); resolving it sends a resolve with the same dedup_key; a
// recurrence reopens it and pages again. Every event also reaches the
// Standard Webhooks receiver, whose signature checks pass (it refuses a bad
// one). Then a drill: the receivers are down for 30 minutes while the group
// is resolved and recurs; afterwards each receiver has every event exactly
// once, in order.
func TestIncidentsPageResolveAndSurviveAnOutage(t *testing.T) {
	rcv, w := startReceiver(t, nil)
	at := cronTime()
	fire := func() {
		t.Helper()
		w.FireCron(t, "*/5 * * * *", at)
		at = at.Add(5 * time.Minute)
	}
	sig := poisonGroup(t, w, 1, 1)
	key := alerts.DedupKey("group:" + sig)
	fire()
	if got := pdActions(rcv, key); !slices.Equal(got, []string{"trigger"}) {
		t.Fatalf("PagerDuty after a new group: %q", got)
	}
	poisonGroup(t, w, 1, 2)
	fire()
	if got := pdActions(rcv, key); !slices.Equal(got, []string{"trigger"}) {
		t.Fatalf("PagerDuty after a second failure of the group: %q", got)
	}

	// Resolved from the CLI, as on-call would.
	runCLI(t, context.Background(), cliEnv(w, nil), "", "groups", "resolve", sig, "--owner", "oncall", "--note", "bad body from the importer").
		wantCode(t, 0, "redrive groups resolve")
	if r := runCLI(t, context.Background(), cliEnv(w, nil), "", "groups", "--incident", "resolved"); r.code != 0 || !strings.Contains(r.stdout, sig) {
		t.Fatalf("redrive groups --incident resolved: %d %s %s", r.code, r.stdout, r.stderr)
	}
	fire()
	if got := pdActions(rcv, key); !slices.Equal(got, []string{"trigger", "resolve"}) {
		t.Fatalf("PagerDuty after the group was resolved: %q", got)
	}
	poisonGroup(t, w, 1, 3)
	fire()
	if got := pdActions(rcv, key); !slices.Equal(got, []string{"trigger", "resolve", "trigger"}) {
		t.Fatalf("PagerDuty after a recurrence: %q", got)
	}
	inc := rcv.Incidents()
	if len(inc) != 1 || inc[0].DedupKey != key || inc[0].Opened != 2 || inc[0].State != receiver.StateTriggered {
		t.Fatalf("PagerDuty incidents %+v", inc)
	}
	if got := hookTypes(t, rcv, key); !slices.Equal(got, []string{"group.opened", "group.resolved", "group.reopened"}) {
		t.Fatalf("webhook events %q", got)
	}
	if r := rcv.Received(); r.Refused != 0 || r.WebhookDuplicates != 0 {
		t.Fatalf("the receiver refused %d requests (bad signatures?) and got %d duplicates", r.Refused, r.WebhookDuplicates)
	}
	if n := w.Int(t, `SELECT COUNT(*) FROM admin_audit WHERE action = 'group_status' AND principal = 'admin' AND outcome = 'ok'`); n != 1 {
		t.Fatalf("%d audited status changes by admin, want 1", n)
	}

	// The drill: both receivers answer 503 for 30 minutes.
	if err := rcv.SetFault(http.StatusServiceUnavailable); err != nil {
		t.Fatal(err)
	}
	setGroupStatus(t, w, sig, "resolved")
	fire()
	poisonGroup(t, w, 1, 4)
	for range 6 { // 30 minutes of runs
		fire()
	}
	if got := pdActions(rcv, key); len(got) != 3 || rcv.Received().Faulted == 0 {
		t.Fatalf("during the outage PagerDuty got %q and %d requests were faulted", got, rcv.Received().Faulted)
	}
	if err := rcv.SetFault(0); err != nil {
		t.Fatal(err)
	}
	for range 40 {
		if w.Int(t, `SELECT COUNT(*) FROM alert_deliveries WHERE state = 'pending'`) == 0 {
			break
		}
		fire()
	}
	if n := w.Int(t, `SELECT COUNT(*) FROM alert_deliveries WHERE state <> 'sent' AND state <> 'skipped'`); n != 0 {
		t.Fatalf("%d deliveries not sent after the outage", n)
	}
	if got := pdActions(rcv, key); !slices.Equal(got, []string{"trigger", "resolve", "trigger", "resolve", "trigger"}) {
		t.Fatalf("PagerDuty after the outage: %q", got)
	}
	want := []string{"group.opened", "group.resolved", "group.reopened", "group.resolved", "group.reopened"}
	if got := hookTypes(t, rcv, key); !slices.Equal(got, want) {
		t.Fatalf("webhook events after the outage\n got %q\nwant %q", got, want)
	}
	if r := rcv.Received(); r.WebhookDuplicates != 0 || r.Refused != 0 || r.Incidents[0].Opened != 3 {
		t.Fatalf("after the outage: %d duplicates, %d refused, incident %+v", r.WebhookDuplicates, r.Refused, r.Incidents)
	}
	// The console's and the CLI's list: the events, each delivered to both channels.
	var list alerts.EventList
	w.Admin(t, http.MethodGet, "/admin/alerts/events?limit=100", nil).Decode(t, &list)
	var groupEvents int
	for _, e := range list.Events {
		if e.Event.DedupKey == key {
			groupEvents++
			if len(e.Deliveries) != 2 {
				t.Errorf("%s has %d deliveries, want 2", e.Event.Type, len(e.Deliveries))
			}
		}
	}
	if groupEvents != 5 || len(list.Channels) != 2 || strings.Contains(fmt.Sprint(list.Channels), "127.0.0.1") {
		t.Fatalf("events list: %d group events, channels %+v", groupEvents, list.Channels)
	}
}

// 10,000 failures of one group make one event (and a delivery per
// channel); the alerts run that tells it writes a bounded number of rows.
func TestBurstOfOneGroupIsOneEventInWorkerd(t *testing.T) {
	vars := map[string]string{}
	for k, v := range rowsVars {
		vars[k] = v
	}
	rcv, w := startReceiver(t, vars)
	sig := poisonGroup(t, w, 10_000, 10_000)
	before := d1Usage(t, w)[metrics.CronOp("alerts")]
	w.FireCron(t, "*/5 * * * *", cronTime())
	after := d1Usage(t, w)[metrics.CronOp("alerts")]
	w.FireCron(t, "*/5 * * * *", cronTime().Add(5*time.Minute))
	quiet := d1Usage(t, w)[metrics.CronOp("alerts")]
	t.Logf("an alerts run with nothing to tell or deliver: %d rows read, %d rows written, %d statements",
		quiet.RowsRead-after.RowsRead, quiet.RowsWritten-after.RowsWritten, quiet.Statements-after.Statements)
	key := alerts.DedupKey("group:" + sig)
	if n := w.Int(t, `SELECT COUNT(*) FROM alert_events WHERE dedup_key = ?`, key); n != 1 {
		t.Fatalf("%d events for one group of 10,000 failures", n)
	}
	if got := pdActions(rcv, key); !slices.Equal(got, []string{"trigger"}) {
		t.Fatalf("PagerDuty got %q", got)
	}
	t.Logf("the alerts run that told the group: %d rows read, %d rows written, %d statements",
		after.RowsRead-before.RowsRead, after.RowsWritten-before.RowsWritten, after.Statements-before.Statements)
	if written := after.RowsWritten - before.RowsWritten; written > 40 {
		t.Fatalf("the alerts run wrote %d rows for one new group", written)
	}
}
