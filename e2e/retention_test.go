//go:build e2e

package e2e

import (
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/internal/promtext"
)

// retentionState is what a retention job's last job_runs record says.
type retentionState struct {
	runs        int64
	more        bool
	deleted     int64 // deleted_age (dlq_retention) or expired (audit_retention)
	expiredLeft int64 // -1 when absent
	behindSince int64 // 0 when null
}

func lastRetention(t *testing.T, w *Worker, job string) retentionState {
	t.Helper()
	var s retentionState
	var more int64
	err := w.DB(t).QueryRow(`SELECT runs, COALESCE(last_summary ->> '$.more', 0),
		COALESCE(last_summary ->> '$.deleted_age', last_summary ->> '$.expired', 0),
		COALESCE(last_summary ->> '$.expired_left', -1), COALESCE(last_summary ->> '$.behind_since', 0)
		FROM job_runs WHERE job = ?`, job).Scan(&s.runs, &more, &s.deleted, &s.expiredLeft, &s.behindSince)
	if err != nil {
		t.Fatalf("job_runs of %s: %v", job, err)
	}
	s.more = more == 1
	return s
}

// seedExpiredDLQ inserts n terminal rows that expired 60 days before at
// (half acknowledged, half replayed, 500 beer ids), in one statement.
func seedExpiredDLQ(t *testing.T, w *Worker, prefix string, at time.Time, n int) {
	t.Helper()
	w.Exec(t, fmt.Sprintf(`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < %[3]d)
		INSERT INTO dlq_messages(message_id, last_message_id, row_key, status, failed_at, acknowledged_at, replayed_at, updated_at)
		SELECT '%[1]s-' || i, '', '%[1]s-' || (i %% 500), CASE WHEN i %% 2 = 0 THEN 'acknowledged' ELSE 'replayed' END,
			%[2]d - 61 * %[4]d, %[2]d - 60 * %[4]d, %[2]d - 60 * %[4]d, 0 FROM n`, prefix, at.UnixMilli(), n, dayMS))
}

// With small batches and a one-second budget, the daily retention run
// leaves most of a backlog behind (DLQ rows by age and over the per-key
// cap, attempt records, audit records). The frequent cron continues both
// retention jobs while their last run says more, until nothing expired is
// left; pending and replaying rows are never touched. retention_behind
// (RETENTION_BEHIND_ALERT_MINUTES 5) fires once the backlog has outlived
// 5 minutes of scheduled runs and resolves when the catch-up finishes; the
// metrics show what was left; once done, the frequent cron skips the jobs
// without recording anything. Runs are fired at simulated times 5 minutes
// apart, each waited for by polling job_runs: nothing depends on how fast
// this machine deletes (the backlog is topped up until the alert must fire).
func TestRetentionBacklogIsWorkedOffByTheFrequentCron(t *testing.T) {
	hook := startFakeWebhook(t)
	defer hook.Close()
	w := startWorkerWith(t, Options{Vars: map[string]string{
		"CRON_BATCH_SIZE": "10", "DLQ_RETENTION_BATCH_SIZE": "100", "CRON_JOB_BUDGET_SECONDS": "1",
		"DLQ_MAX_ROWS_PER_KEY": "50", "RETENTION_BEHIND_ALERT_MINUTES": "5", "ALERT_WEBHOOK_URL": hook.URL + "/hook",
	}})
	t0 := cronTime()
	now := t0.UnixMilli()
	seedExpiredDLQ(t, w, "exp", t0, 30_000)
	w.Exec(t, fmt.Sprintf(`
		WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 1100)
		INSERT INTO dlq_messages(message_id, last_message_id, row_key, status, failed_at, acknowledged_at, replayed_at, replaying_at, updated_at)
		SELECT 'keep-' || i, '', 'keep-' || (i %% 7),
			CASE WHEN i <= 1000 THEN 'pending' WHEN i <= 1020 THEN 'replaying' WHEN i %% 2 = 0 THEN 'acknowledged' ELSE 'replayed' END,
			CASE WHEN i <= 1020 THEN %[1]d - 400 * %[2]d ELSE %[1]d - i * 1000 END,
			CASE WHEN i <= 1020 THEN %[1]d - 400 * %[2]d ELSE %[1]d - 60000 END,
			CASE WHEN i <= 1020 THEN %[1]d - 400 * %[2]d ELSE %[1]d - 60000 END,
			CASE WHEN i > 1000 AND i <= 1020 THEN %[1]d + 2 * %[2]d END, 7 FROM n;
		UPDATE dlq_messages SET row_key = 'capped' WHERE message_id LIKE 'keep-%%' AND status IN ('acknowledged', 'replayed');
		WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 400)
		INSERT INTO message_attempts(message_id, queue, attempt, error_class, error, recorded_at)
		SELECT 'att-' || i, 'beer-enrichment', 1, 'transient', 'x', %[1]d - 8 * %[2]d FROM n;
		WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 3000)
		INSERT INTO admin_audit(at, action, request_id, key_fingerprint, outcome)
		SELECT %[1]d - 100 * %[2]d, 'replay', 'old-' || i, 'k', 'ok' FROM n;
		INSERT INTO admin_audit(at, action, request_id, key_fingerprint, outcome) VALUES (%[1]d, 'replay', 'recent', 'k', 'ok');`, now, dayMS))
	// 1000 pending and 20 replaying rows that failed 400 days ago (the
	// replaying ones claimed in the future, out of the rescue's way); 80
	// recent terminal rows of one beer (cap 50).
	if n := w.Int(t, `SELECT COUNT(*) FROM dlq_messages WHERE row_key = 'capped'`); n != 80 {
		t.Fatalf("capped beer rows = %d", n)
	}

	fireAndWait(t, w, cronDaily, "audit_retention", t0)
	daily := lastRetention(t, w, "dlq_retention")
	if !daily.more || daily.behindSince != now || daily.expiredLeft <= 0 || daily.deleted <= 0 {
		t.Fatalf("the daily run did not leave the backlog behind: %+v", daily)
	}
	if a := lastRetention(t, w, "audit_retention"); !a.more || a.behindSince != now {
		t.Fatalf("the daily audit run did not leave records behind: %+v", a)
	}
	page := metricsPage(t, w)
	if got := page.Samples[promtext.Key("redrive_retention_expired_left", "job", "dlq_retention")]; got != float64(daily.expiredLeft) ||
		page.Samples[promtext.Key("redrive_job_last_more", "job", "dlq_retention")] != 1 {
		t.Fatalf("metrics after the daily run: expired_left %v (summary %d), last_more %v", got, daily.expiredLeft,
			page.Samples[promtext.Key("redrive_job_last_more", "job", "dlq_retention")])
	}

	// The alert must fire: keep the backlog at least 4 runs deep until the
	// run 10 minutes after the daily one (5 is exactly the limit: no alert).
	topUp := func(ran retentionState) {
		if left := w.Int(t, `SELECT COUNT(*) FROM dlq_messages WHERE status IN ('acknowledged', 'replayed') AND updated_at = 0`); left < 4*ran.deleted {
			seedExpiredDLQ(t, w, fmt.Sprintf("top%d", ran.runs), t0, int(4*ran.deleted-left))
		}
	}
	topUp(daily)

	var behindFired, behindResolved time.Time
	at, frequent := t0, 0
	for {
		at = at.Add(5 * time.Minute)
		fireAndWait(t, w, cronFrequent, "alerts", at)
		frequent++
		r, a := lastRetention(t, w, "dlq_retention"), lastRetention(t, w, "audit_retention")
		firing := w.Int(t, `SELECT COALESCE((SELECT firing FROM alert_state WHERE name = 'retention_behind'), 0)`) == 1
		if behindFired.IsZero() && firing {
			behindFired = at
		}
		if !behindFired.IsZero() && behindResolved.IsZero() && !firing {
			behindResolved = at
		}
		wantFiring := (r.more && at.UnixMilli()-r.behindSince > 5*60_000) || (a.more && at.UnixMilli()-a.behindSince > 5*60_000)
		if firing != wantFiring {
			t.Fatalf("run at +%s: retention_behind firing %v, want %v (dlq %+v, audit %+v)", at.Sub(t0), firing, wantFiring, r, a)
		}
		if at.Sub(t0) <= 5*time.Minute {
			topUp(r)
		}
		if !r.more && !a.more {
			break
		}
		if frequent >= 300 {
			t.Fatalf("still behind after %d frequent runs: %+v %+v", frequent, r, a)
		}
	}
	t.Logf("caught up in %d frequent runs (dlq_retention ran %d times)", frequent, lastRetention(t, w, "dlq_retention").runs)
	if frequent < 2 || behindFired != t0.Add(10*time.Minute) || behindResolved != at {
		t.Fatalf("frequent runs %d, retention_behind fired at +%s and resolved at +%s (last run +%s)",
			frequent, behindFired.Sub(t0), behindResolved.Sub(t0), at.Sub(t0))
	}
	if got := hook.delivered("retention_behind"); len(got) != 2 || got[0] != "[redrive] FIRING retention_behind" ||
		!strings.HasPrefix(got[1], "[redrive] RESOLVED retention_behind after ") {
		t.Fatalf("retention_behind deliveries %q", got)
	}

	// Nothing expired is left; the cap kept the 50 newest terminal rows of
	// its beer; pending and replaying rows are untouched.
	cutoff := now - 30*dayMS
	for what, q := range map[string]string{
		"expired DLQ rows": fmt.Sprintf(`SELECT COUNT(*) FROM dlq_messages WHERE (status = 'acknowledged' AND acknowledged_at < %[1]d)
			OR (status = 'replayed' AND replayed_at < %[1]d)`, cutoff),
		"expired attempt records": fmt.Sprintf(`SELECT COUNT(*) FROM message_attempts WHERE recorded_at < %d`, now-7*dayMS),
		"expired audit records":   fmt.Sprintf(`SELECT COUNT(*) FROM admin_audit WHERE at < %d`, now-90*dayMS),
	} {
		if n := w.Int(t, q); n != 0 {
			t.Errorf("%d %s left", n, what)
		}
	}
	if n := w.Int(t, `SELECT COUNT(*) FROM dlq_messages WHERE row_key = 'capped'`); n != 50 {
		t.Errorf("capped beer keeps %d terminal rows, want 50", n)
	}
	if n := w.Int(t, `SELECT COUNT(*) FROM dlq_messages WHERE row_key = 'capped' AND CAST(substr(message_id, 6) AS INTEGER) > 1070`); n != 0 {
		t.Errorf("%d of the capped beer's 30 oldest rows survived", n)
	}
	if n := w.Int(t, `SELECT COUNT(*) FROM dlq_messages WHERE status IN ('pending', 'replaying') AND updated_at = 7`); n != 1020 {
		t.Errorf("pending and replaying rows untouched: %d of 1020", n)
	}
	if n := w.Int(t, `SELECT COUNT(*) FROM admin_audit WHERE request_id = 'recent'`); n != 1 {
		t.Error("a recent audit record was deleted")
	}
	page = metricsPage(t, w)
	for _, job := range []string{"dlq_retention", "audit_retention"} {
		if page.Samples[promtext.Key("redrive_retention_expired_left", "job", job)] != 0 || page.Samples[promtext.Key("redrive_job_last_more", "job", job)] != 0 {
			t.Errorf("metrics of %s after the catch-up: expired_left %v, last_more %v", job,
				page.Samples[promtext.Key("redrive_retention_expired_left", "job", job)], page.Samples[promtext.Key("redrive_job_last_more", "job", job)])
		}
	}

	// Caught up: the frequent cron skips both jobs and records nothing.
	before := [2]retentionState{lastRetention(t, w, "dlq_retention"), lastRetention(t, w, "audit_retention")}
	fireAndWait(t, w, cronFrequent, "alerts", at.Add(5*time.Minute))
	if after := [2]retentionState{lastRetention(t, w, "dlq_retention"), lastRetention(t, w, "audit_retention")}; !reflect.DeepEqual(after, before) {
		t.Fatalf("a frequent run with nothing left changed the retention records: %+v, was %+v", after, before)
	}
}

// metricsPage reads and parses /admin/metrics.
func metricsPage(t *testing.T, w *Worker) *promtext.Exposition {
	t.Helper()
	r := w.Admin(t, http.MethodGet, "/admin/metrics", nil)
	if r.Status != http.StatusOK {
		t.Fatalf("metrics: %d %s", r.Status, r.Raw)
	}
	page, err := promtext.Parse(string(r.Raw))
	if err != nil {
		t.Fatalf("%v\n%s", err, r.Raw)
	}
	return page
}

// A retention shorter than the longest (env.e2e: tickets keeps 7 days,
// every other queue 30) deletes its rows from the window between the two,
// and reads that window once: the run after it, with nothing newly due,
// reads no more than a run without pipelines (13 rows in
// TestD1RowsBudget), however many rows of the 30-day queues the window holds.
func TestRetentionPerPipelineReadsTheWindowOnce(t *testing.T) {
	w := startWorker(t, rowsVars)
	at := time.Now()
	p := fmt.Sprintf("pr%d", at.UnixNano())
	const beers, tickets = 20_000, 1_000
	// A first run puts the per-key cap rule's position at now: the rows
	// seeded below have older action times, so it does not look at them,
	// and what the next run reads is the age rules'. The windows' positions
	// are dropped, so the next run scans its window from the 30-day cutoff.
	fireAndWait(t, w, cronDaily, "dlq_retention", at)
	w.Exec(t, `UPDATE job_runs SET last_summary = json_remove(last_summary, '$.age_scanned_to') WHERE job = 'dlq_retention'`)
	at = at.Add(time.Minute)
	// Rows acknowledged or replayed 8 to 22 days before at, one a minute.
	w.Exec(t, fmt.Sprintf(`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < %[3]d)
		INSERT INTO dlq_messages(message_id, last_message_id, row_key, source_queue, status, failed_at, acknowledged_at, replayed_at, updated_at)
		SELECT '%[1]s-' || i, '', '%[1]s-' || (i %% 500), CASE WHEN i %% 21 = 0 THEN 'e2e-tickets' ELSE 'beer-enrichment' END,
			CASE WHEN i %% 2 = 0 THEN 'acknowledged' ELSE 'replayed' END,
			%[2]d - 30 * %[4]d, %[2]d - 8 * %[4]d - i * 60000, %[2]d - 8 * %[4]d - i * 60000, 0 FROM n`, p, at.UnixMilli(), beers+tickets, dayMS))
	wantTickets := w.Int(t, `SELECT COUNT(*) FROM dlq_messages WHERE source_queue = 'e2e-tickets' AND message_id LIKE ?`, p+"-%")
	if wantTickets != tickets {
		t.Fatalf("seeded %d tickets rows, want %d", wantTickets, tickets)
	}

	run := func(label string, at time.Time) int64 {
		t.Helper()
		before := settledUsage(t, w)
		fireAndWait(t, w, cronDaily, "dlq_retention", at)
		d := usageDelta(before, settledUsage(t, w), opIs("cron dlq_retention"))
		t.Logf("dlq_retention, %s: read %d written %d statements %d", label, d.RowsRead, d.RowsWritten, d.Statements)
		return d.RowsRead
	}
	first := run("first run", at)
	if n := w.Int(t, `SELECT COUNT(*) FROM dlq_messages WHERE source_queue = 'e2e-tickets' AND message_id LIKE ?`, p+"-%"); n != 0 {
		t.Fatalf("%d tickets rows older than 7 days left", n)
	}
	if n := w.Int(t, `SELECT COUNT(*) FROM dlq_messages WHERE source_queue = 'beer-enrichment' AND message_id LIKE ?`, p+"-%"); n != beers {
		t.Fatalf("beer rows left %d, want %d (kept 30 days)", n, beers)
	}
	if max := int64(3 * (beers + tickets)); first > max {
		t.Errorf("the window's first run read %d rows, want ≤ %d (3 per row)", first, max)
	}
	second := run("an hour later", at.Add(time.Hour))
	t.Logf("window of %d rows: first run read %d rows (%.1f per row), the next run %d", beers+tickets, first, float64(first)/float64(beers+tickets), second)
	if second > 50 {
		t.Errorf("a run with nothing newly due read %d rows, want ≤ 50", second)
	}
	if n := w.Int(t, `SELECT COUNT(*) FROM dlq_messages WHERE message_id LIKE ?`, p+"-%"); n != beers {
		t.Fatalf("rows left %d, want %d", n, beers)
	}
}
