//go:build e2e

package e2e

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redrive/redrive/internal/promtext"
	"github.com/redrive/redrive/jobs"
)

// Cron expressions of the worker (jobs.Crons; wrangler.jsonc lists the same).
const (
	cronFrequent = jobs.Frequent
	cronDaily    = jobs.Daily
)

const dayMS = int64(24 * time.Hour / time.Millisecond)

// fireAndWait fires cron at `at` and waits until job (the last job of that
// cron) has recorded its run at that time: everything the cron did is done.
func fireAndWait(t testing.TB, w *Worker, cron, job string, at time.Time) {
	t.Helper()
	w.FireCron(t, cron, at)
	Eventually(t, 30*time.Second, fmt.Sprintf("%s run at %s recorded", job, at), func() bool {
		return w.Int(t, `SELECT COUNT(*) FROM job_runs WHERE job = ? AND last_run_at = ?`, job, at.UnixMilli()) == 1
	})
}

func counterValue(t *testing.T, w *Worker, name string) int64 {
	t.Helper()
	return w.Int(t, `SELECT COALESCE((SELECT value FROM counters WHERE name = ?), 0)`, name)
}

// cronTime is a cron time (whole seconds, as the runtime passes them) that no
// earlier run of this worker used.
func cronTime() time.Time { return time.Now().UTC().Truncate(time.Second) }

// The daily retention deletes terminal rows by age and by the per-key cap,
// expires attempt records, and never touches pending or replaying rows.
func TestRetentionDeletesByAgeAndCapButNeverPending(t *testing.T) {
	w := shared
	p := fmt.Sprintf("ret%d", time.Now().UnixNano())
	at := cronTime()
	now := at.UnixMilli()
	ageBefore, capBefore := counterValue(t, w, "dlq_retention_deleted_age_total"), counterValue(t, w, "dlq_retention_deleted_cap_total")
	attBefore := counterValue(t, w, "attempts_expired_total")

	// Beer P-capped: 1010 recent terminal rows (cap 1000: the 10 oldest go)
	// and 5 pending rows older than all of them. Beer P-aged: by age.
	w.Exec(t, fmt.Sprintf(`
		WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 1015)
		INSERT INTO dlq_messages(message_id, last_message_id, row_key, status, failed_at, acknowledged_at, replayed_at, updated_at)
		SELECT '%[1]s-cap-' || i, '%[1]s-cap-' || i, '%[1]s-capped',
			CASE WHEN i > 1010 THEN 'pending' WHEN i %% 2 = 0 THEN 'acknowledged' ELSE 'replayed' END,
			%[2]d - i * 1000, %[2]d - 1000, %[2]d - 1000, 7 FROM n;
		INSERT INTO dlq_messages(message_id, last_message_id, row_key, status, failed_at, acknowledged_at, replayed_at, replaying_at, updated_at) VALUES
			('%[1]s-ack-old', '', '%[1]s-aged', 'acknowledged', %[2]d - 40 * %[3]d, %[2]d - 31 * %[3]d, NULL, NULL, 7),
			('%[1]s-ack-new', '', '%[1]s-aged', 'acknowledged', %[2]d - 100 * %[3]d, %[2]d - 29 * %[3]d, NULL, NULL, 7),
			('%[1]s-replayed-old', '', '%[1]s-aged', 'replayed', %[2]d - 40 * %[3]d, NULL, %[2]d - 31 * %[3]d, NULL, 7),
			('%[1]s-replayed-new', '', '%[1]s-aged', 'replayed', %[2]d - 40 * %[3]d, NULL, %[2]d - %[3]d, NULL, 7),
			('%[1]s-pending-old', '', '%[1]s-aged', 'pending', %[2]d - 400 * %[3]d, NULL, NULL, NULL, 7),
			('%[1]s-replaying-old', '', '%[1]s-aged', 'replaying', %[2]d - 400 * %[3]d, NULL, NULL, %[2]d - 400 * %[3]d, 7);
		-- The tickets pipeline keeps 7 days (retention_days in wrangler.jsonc), beers 30.
		INSERT INTO dlq_messages(message_id, last_message_id, row_key, source_queue, status, failed_at, acknowledged_at, replayed_at, updated_at) VALUES
			('%[1]s-t-ack-8d', '', '%[1]s-aged', 'e2e-tickets', 'acknowledged', %[2]d - 9 * %[3]d, %[2]d - 8 * %[3]d, NULL, 7),
			('%[1]s-t-ack-6d', '', '%[1]s-aged', 'e2e-tickets', 'acknowledged', %[2]d - 9 * %[3]d, %[2]d - 6 * %[3]d, NULL, 7),
			('%[1]s-t-replayed-8d', '', '%[1]s-aged', 'e2e-tickets', 'replayed', %[2]d - 9 * %[3]d, NULL, %[2]d - 8 * %[3]d, 7),
			('%[1]s-b-ack-8d', '', '%[1]s-aged', 'beer-enrichment', 'acknowledged', %[2]d - 9 * %[3]d, %[2]d - 8 * %[3]d, NULL, 7);
		INSERT INTO message_attempts(message_id, queue, attempt, error_class, error, recorded_at) VALUES
			('%[1]s-att-old', 'beer-enrichment', 1, 'transient', 'x', %[2]d - 8 * %[3]d),
			('%[1]s-att-new', 'beer-enrichment', 1, 'transient', 'x', %[2]d - 6 * %[3]d);`, p, now, dayMS))

	fireAndWait(t, w, cronDaily, "dlq_retention", at)

	if n := w.Int(t, `SELECT COUNT(*) FROM dlq_messages WHERE row_key = ? AND status IN ('acknowledged', 'replayed')`, p+"-capped"); n != 1000 {
		t.Fatalf("terminal rows of the capped beer = %d, want 1000", n)
	}
	// The newest 1000 (i = 1..1000) are kept, the oldest 10 evicted.
	if n := w.Int(t, `SELECT COUNT(*) FROM dlq_messages WHERE row_key = ? AND status <> 'pending'
		AND CAST(substr(message_id, length(?) + 6) AS INTEGER) > 1000`, p+"-capped", p); n != 0 {
		t.Fatalf("%d of the oldest terminal rows survived the cap", n)
	}
	if n := w.Int(t, `SELECT COUNT(*) FROM dlq_messages WHERE row_key = ? AND status = 'pending' AND updated_at = 7`, p+"-capped"); n != 5 {
		t.Fatalf("pending rows of the capped beer = %d, want 5 untouched", n)
	}
	var left []string
	rows, err := w.DB(t).Query(`SELECT substr(message_id, length(?) + 2) FROM dlq_messages WHERE row_key = ? AND updated_at = 7 ORDER BY message_id`, p, p+"-aged")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var s string
		rows.Scan(&s)
		left = append(left, s)
	}
	rows.Close()
	if want := []string{"ack-new", "b-ack-8d", "pending-old", "replayed-new", "replaying-old", "t-ack-6d"}; !reflect.DeepEqual(left, want) {
		t.Fatalf("aged beer rows left %v, want %v", left, want)
	}
	if n := w.Int(t, `SELECT COUNT(*) FROM message_attempts WHERE message_id LIKE ?`, p+"-att-%"); n != 1 {
		t.Fatalf("attempt records left = %d, want 1", n)
	}

	// Counters grew by what this run reports (other tests' rows may count too).
	var age, capped, att int64
	if err := w.DB(t).QueryRow(`SELECT last_summary ->> '$.deleted_age', last_summary ->> '$.deleted_cap', last_summary ->> '$.attempts_expired'
		FROM job_runs WHERE job = 'dlq_retention'`).Scan(&age, &capped, &att); err != nil {
		t.Fatal(err)
	}
	if age < 4 || capped < 10 || att < 1 {
		t.Fatalf("summary: deleted_age %d deleted_cap %d attempts_expired %d", age, capped, att)
	}
	if d := counterValue(t, w, "dlq_retention_deleted_age_total") - ageBefore; d != age {
		t.Errorf("age counter grew by %d, run deleted %d", d, age)
	}
	if d := counterValue(t, w, "dlq_retention_deleted_cap_total") - capBefore; d != capped {
		t.Errorf("cap counter grew by %d, run deleted %d", d, capped)
	}
	if d := counterValue(t, w, "attempts_expired_total") - attBefore; d != att {
		t.Errorf("attempts counter grew by %d, run deleted %d", d, att)
	}

	// A second run at the same time deletes nothing more of these rows.
	before := w.Int(t, `SELECT COUNT(*) FROM dlq_messages WHERE row_key LIKE ?`, p+"-%")
	at2 := at.Add(time.Second)
	fireAndWait(t, w, cronDaily, "dlq_retention", at2)
	if after := w.Int(t, `SELECT COUNT(*) FROM dlq_messages WHERE row_key LIKE ?`, p+"-%"); after != before {
		t.Fatalf("second run deleted %d more rows", before-after)
	}
}

// A row left in `replaying` longer than DLQ_REPLAY_STUCK_MINUTES (10) goes
// back to pending on the frequent cron; a younger one stays.
func TestRescueReturnsStuckReplayingRowToPending(t *testing.T) {
	w := shared
	p := fmt.Sprintf("resc%d", time.Now().UnixNano())
	at := cronTime()
	now := at.UnixMilli()
	before := counterValue(t, w, "dlq_rescued_total")
	w.Exec(t, fmt.Sprintf(`INSERT INTO dlq_messages(message_id, last_message_id, row_key, status, failed_at, replaying_at) VALUES
		('%[1]s-stuck', '', '%[1]s', 'replaying', %[2]d - 3600000, %[2]d - 11 * 60000),
		('%[1]s-fresh', '', '%[1]s', 'replaying', %[2]d - 3600000, %[2]d - 2 * 60000)`, p, now))

	fireAndWait(t, w, cronFrequent, "alerts", at)

	if n := w.Int(t, `SELECT COUNT(*) FROM dlq_messages WHERE message_id = ? AND status = 'pending' AND replaying_at IS NULL AND updated_at = ?`, p+"-stuck", now); n != 1 {
		t.Fatal("the stuck row was not rescued")
	}
	if n := w.Int(t, `SELECT COUNT(*) FROM dlq_messages WHERE message_id = ? AND status = 'replaying'`, p+"-fresh"); n != 1 {
		t.Fatal("a replay younger than the limit was rescued")
	}
	rescued := w.Int(t, `SELECT last_summary ->> '$.rescued' FROM job_runs WHERE job = 'dlq_rescue'`)
	if rescued < 1 || counterValue(t, w, "dlq_rescued_total")-before != rescued {
		t.Fatalf("rescued %d, counter grew by %d", rescued, counterValue(t, w, "dlq_rescued_total")-before)
	}
	Eventually(t, 10*time.Second, "the rescue is logged with the message id", func() bool {
		return strings.Contains(w.Log(), `"message_id":"`+p+`-stuck"`)
	})
}

// fakeWebhook is a Slack-style incoming webhook on 127.0.0.1.
type fakeWebhook struct {
	*httptest.Server
	mu     sync.Mutex
	status int
	got    []webhookCall
}

type webhookCall struct {
	ContentType, Text string
	Status            int
}

func startFakeWebhook(t *testing.T) *fakeWebhook {
	h := &fakeWebhook{status: http.StatusOK}
	h.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var p map[string]string
		if err := json.Unmarshal(body, &p); err != nil || len(p) != 1 {
			t.Errorf("webhook body is not {\"text\": ...}: %s", body)
		}
		h.mu.Lock()
		defer h.mu.Unlock()
		h.got = append(h.got, webhookCall{ContentType: r.Header.Get("Content-Type"), Text: p["text"], Status: h.status})
		w.WriteHeader(h.status)
	}))
	return h
}

func (h *fakeWebhook) setStatus(s int) {
	h.mu.Lock()
	h.status = s
	h.mu.Unlock()
}

// delivered returns the heads (text before the first ": ") of the messages
// about alert that were answered 2xx, in order.
func (h *fakeWebhook) delivered(alert string) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for _, c := range h.got {
		if c.Status < 300 && alertName(c.Text) == alert {
			out = append(out, strings.SplitN(c.Text, ": ", 2)[0])
		}
	}
	return out
}

// alertName is the word after the first FIRING or RESOLVED of a message.
func alertName(text string) string {
	f := strings.Fields(text)
	for i := 0; i+1 < len(f); i++ {
		if f[i] == "FIRING" || f[i] == "RESOLVED" {
			return strings.TrimSuffix(f[i+1], ":")
		}
	}
	return ""
}

func (h *fakeWebhook) calls() []webhookCall {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]webhookCall(nil), h.got...)
}

// An alert reaches the webhook once when it starts, is not repeated on the
// next runs, is reminded after ALERT_REMINDER_MINUTES and resolves once
// when the condition clears. A failing webhook fails the alerts job without
// failing the cron call (no panic); the next run delivers the alert.
func TestAlertReachesWebhookOnceAndResolves(t *testing.T) {
	hook := startFakeWebhook(t)
	defer hook.Close()
	w := startWorkerWith(t, Options{Vars: map[string]string{"ALERT_WEBHOOK_URL": hook.URL + "/hook", "ALERT_PENDING_THRESHOLD": "5"}})
	t0 := cronTime()
	w.Exec(t, fmt.Sprintf(`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 6)
		INSERT INTO dlq_messages(message_id, last_message_id, row_key, status, failed_at)
		SELECT 'alert-' || i, '', 'alert-beer', 'pending', %d FROM n`, t0.Add(-time.Hour).UnixMilli()))

	// 1. The webhook answers 500: the alerts job fails, the cron call does not.
	hook.setStatus(http.StatusInternalServerError)
	fireAndWait(t, w, cronFrequent, "alerts", t0)
	if n := w.Int(t, `SELECT COUNT(*) FROM job_runs WHERE job = 'alerts' AND last_ok = 0 AND failures = 1 AND last_error LIKE '%status 500%'`); n != 1 {
		var ok, failures int64
		var lastErr string
		w.DB(t).QueryRow(`SELECT last_ok, failures, COALESCE(last_error, '') FROM job_runs WHERE job = 'alerts'`).Scan(&ok, &failures, &lastErr)
		t.Fatalf("the failed notification is not recorded as a failed alerts run: last_ok %d failures %d error %q", ok, failures, lastErr)
	}
	if calls := hook.calls(); len(calls) != 1 || !strings.HasPrefix(calls[0].Text, "[redrive] FIRING dlq_pending_high: 6 DLQ rows pending (threshold 5)") ||
		calls[0].ContentType != "application/json" {
		t.Fatalf("webhook calls %+v", calls)
	}
	Eventually(t, 10*time.Second, "the failed job is logged at ERROR", func() bool {
		return strings.Contains(w.Log(), `"level":"ERROR","msg":"cron: job failed","service":"redrive","job":"alerts"`)
	})

	// 2. The webhook works again: the alert is delivered, and so is the failed run.
	hook.setStatus(http.StatusOK)
	fireAndWait(t, w, cronFrequent, "alerts", t0.Add(5*time.Minute))
	// 3..4. Nothing repeats; job_failing resolves after a successful run.
	fireAndWait(t, w, cronFrequent, "alerts", t0.Add(10*time.Minute))
	fireAndWait(t, w, cronFrequent, "alerts", t0.Add(15*time.Minute))
	if got := hook.delivered("dlq_pending_high"); !reflect.DeepEqual(got, []string{"[redrive] FIRING dlq_pending_high"}) {
		t.Fatalf("dlq_pending_high deliveries %q", got)
	}
	if got := hook.delivered("job_failing"); !reflect.DeepEqual(got, []string{"[redrive] FIRING job_failing", "[redrive] RESOLVED job_failing after 5m0s"}) {
		t.Fatalf("job_failing deliveries %q", got)
	}

	// 5. Still firing after ALERT_REMINDER_MINUTES (360) since the last message: one reminder.
	fireAndWait(t, w, cronFrequent, "alerts", t0.Add(5*time.Minute+6*time.Hour))
	fireAndWait(t, w, cronFrequent, "alerts", t0.Add(10*time.Minute+6*time.Hour))
	if got := hook.delivered("dlq_pending_high"); len(got) != 2 || !strings.HasPrefix(got[1], "[redrive] STILL FIRING dlq_pending_high (since ") {
		t.Fatalf("dlq_pending_high deliveries %q", got)
	}

	// 6. The condition clears: resolved once.
	w.Exec(t, fmt.Sprintf(`UPDATE dlq_messages SET status = 'acknowledged', acknowledged_at = %d WHERE row_key = 'alert-beer'`, t0.UnixMilli()))
	fireAndWait(t, w, cronFrequent, "alerts", t0.Add(15*time.Minute+6*time.Hour))
	fireAndWait(t, w, cronFrequent, "alerts", t0.Add(20*time.Minute+6*time.Hour))
	got := hook.delivered("dlq_pending_high")
	// The start was recorded at t0 (a failed delivery is retried, it does
	// not undo the transition): it fired for 6h15m.
	if len(got) != 3 || got[2] != "[redrive] RESOLVED dlq_pending_high after 6h15m0s" {
		t.Fatalf("dlq_pending_high deliveries %q", got)
	}
	if n := len(hook.calls()); n != 6 {
		t.Fatalf("webhook calls = %d, want 6 (1 failed + 5 delivered): %+v", n, hook.calls())
	}
	if n := w.Int(t, `SELECT COUNT(*) FROM alert_state WHERE firing = 1`); n != 0 {
		t.Fatalf("%d alerts still firing", n)
	}
}

// /admin/metrics is valid Prometheus text and its numbers are D1's.
func TestAdminMetricsMatchD1(t *testing.T) {
	w := shared
	fireAndWait(t, w, cronFrequent, "alerts", cronTime().Add(-time.Second)) // job runs and alert state exist
	if r, _ := w.Do(http.MethodGet, "/admin/metrics", nil, nil); r == nil || r.Status != http.StatusUnauthorized {
		t.Fatalf("metrics without credentials: %+v", r)
	}

	// D1 may change while the shared worker consumes leftovers of other tests:
	// compare a page read between two identical snapshots of D1.
	var page *promtext.Exposition
	var want map[string]float64
	var oldest, askedAt, answeredAt int64
	err := Poll(60*time.Second, func() (bool, error) {
		before, oldestBefore := expectedSeries(t, w)
		askedAt = time.Now().UnixMilli()
		req, _ := http.NewRequest(http.MethodGet, w.URL+"/admin/metrics", nil)
		for k, v := range AdminHeaders() {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false, err
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		answeredAt = time.Now().UnixMilli()
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/plain; version=0.0.4; charset=utf-8" {
			return false, fmt.Errorf("metrics: %d %q %s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
		}
		if page, err = promtext.Parse(string(body)); err != nil {
			return false, fmt.Errorf("%v\n%s", err, body)
		}
		after, oldestAfter := expectedSeries(t, w)
		want, oldest = after, oldestAfter
		return reflect.DeepEqual(before, after) && oldestBefore == oldestAfter, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range want {
		if got, ok := page.Samples[k]; !ok || got != v {
			t.Errorf("%s = %v (present %v), D1 says %v", k, got, ok, v)
		}
	}
	for k := range page.Samples {
		if _, ok := want[k]; !ok && !strings.HasPrefix(k, "redrive_dlq_messages{") && k != "redrive_dlq_oldest_pending_age_seconds" {
			t.Errorf("series %s is not in D1", k)
		}
	}
	age := page.Samples["redrive_dlq_oldest_pending_age_seconds"]
	if oldest == 0 && age != 0 {
		t.Errorf("oldest pending age %v with no pending rows", age)
	}
	if oldest > 0 {
		// The worker computed the age at some instant between the request and
		// its answer (whole seconds may be truncated: 1 s of slack each way).
		if lo, hi := float64(askedAt-oldest)/1000-1, float64(answeredAt-oldest)/1000+1; age < lo || age > hi {
			t.Errorf("oldest pending age %v s, want between %v and %v (D1's oldest pending row, at request and at answer)", age, lo, hi)
		}
	}
	if page.Samples[promtext.Key("redrive_job_runs_total", "job", "alerts")] < 1 || page.Types["redrive_job_runs_total"] != "counter" {
		t.Errorf("job runs of alerts missing: %v", page.Types)
	}
}

// expectedSeries reads D1 directly into the series /admin/metrics must show.
func expectedSeries(t *testing.T, w *Worker) (map[string]float64, int64) {
	t.Helper()
	db := w.DB(t)
	want := map[string]float64{}
	add := func(query string, f func(rows interface{ Scan(...any) error })) {
		rows, err := db.Query(query)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		for rows.Next() {
			f(rows)
		}
	}
	add(`SELECT status, source_queue, COUNT(*) FROM dlq_messages GROUP BY 1, 2`, func(r interface{ Scan(...any) error }) {
		var st, src string
		var n float64
		r.Scan(&st, &src, &n)
		// The pipelines of env.e2e (PIPELINES) label their queues' samples.
		if p, ok := map[string]string{"beer-enrichment": "beers", "e2e-js": "js", "e2e-orders": "orders", "e2e-tickets": "tickets"}[src]; ok {
			want[promtext.Key("redrive_dlq_messages", "pipeline", p, "source_queue", src, "status", st)] = n
			return
		}
		want[promtext.Key("redrive_dlq_messages", "source_queue", src, "status", st)] = n
	})
	add(`SELECT name, value FROM counters`, func(r interface{ Scan(...any) error }) {
		var name string
		var v float64
		r.Scan(&name, &v)
		want["redrive_"+name] = v
	})
	// dlq_captured_total is kept in dlq_activity (migrations/0012).
	add(`SELECT SUM(events) FROM dlq_activity WHERE kind = 'failed' HAVING COUNT(*) > 0`, func(r interface{ Scan(...any) error }) {
		var v float64
		r.Scan(&v)
		want["redrive_dlq_captured_total"] = v
	})
	// D1 rows read and written per operation, as flushed by the isolates.
	add(`SELECT j.key, j.value ->> 0, j.value ->> 1, j.value ->> 2 FROM d1_usage, json_each(d1_usage.ops) AS j`, func(r interface{ Scan(...any) error }) {
		var op string
		var stmts, read, written float64
		r.Scan(&op, &stmts, &read, &written)
		want[promtext.Key("redrive_d1_statements_total", "op", op)] = stmts
		want[promtext.Key("redrive_d1_rows_read_total", "op", op)] = read
		want[promtext.Key("redrive_d1_rows_written_total", "op", op)] = written
	})
	add(`SELECT name, firing FROM alert_state`, func(r interface{ Scan(...any) error }) {
		var name string
		var v float64
		r.Scan(&name, &v)
		want[promtext.Key("redrive_alert_firing", "alert", name)] = v
	})
	add(`SELECT job, last_run_at, last_duration_ms, last_ok, runs, failures, COALESCE(last_summary ->> '$.more', 0) = 1,
		last_summary ->> '$.expired_left' FROM job_runs`, func(r interface{ Scan(...any) error }) {
		var job string
		var at, dur, ok, runs, failures, more float64
		var left sql.NullFloat64
		r.Scan(&job, &at, &dur, &ok, &runs, &failures, &more, &left)
		want[promtext.Key("redrive_job_last_run_timestamp_seconds", "job", job)] = at / 1000
		want[promtext.Key("redrive_job_last_duration_seconds", "job", job)] = dur / 1000
		want[promtext.Key("redrive_job_last_success", "job", job)] = ok
		want[promtext.Key("redrive_job_runs_total", "job", job)] = runs
		want[promtext.Key("redrive_job_failures_total", "job", job)] = failures
		want[promtext.Key("redrive_job_last_more", "job", job)] = more
		if left.Valid {
			want[promtext.Key("redrive_retention_expired_left", "job", job)] = left.Float64
		}
	})
	want["redrive_enrichment_breaker_open"] = float64(w.Int(t, `SELECT COALESCE(MAX(state <> 'closed'), 0) FROM enrichment_breaker`))
	add(`SELECT COALESCE(last_summary ->> '$.lateness_max_ms', 0), COALESCE(last_summary ->> '$.lateness_median_ms', 0)
		FROM job_runs WHERE job = 'enrichment_catchup'`, func(r interface{ Scan(...any) error }) {
		var mx, md float64
		r.Scan(&mx, &md)
		want["redrive_catchup_last_lateness_max_seconds"] = mx / 1000
		want["redrive_catchup_last_lateness_median_seconds"] = md / 1000
	})
	return want, w.Int(t, `SELECT COALESCE(MIN(failed_at), 0) FROM dlq_messages WHERE status = 'pending'`)
}
