//go:build e2e

package e2e

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/dlq"
)

// ticketsDB is the e2e environment's database of the tickets pipeline
// (wrangler.jsonc env.e2e; docs/pipelines.md "Its own database").
const ticketsDB = TicketsDB

// A worker of the e2e environment as declared: the tickets pipeline on
// TICKETS_DB (Options.OwnDatabases).
func TestMultiDB(t *testing.T) {
	w := startWorkerWith(t, Options{OwnDatabases: true, Vars: map[string]string{"D1_USAGE_FLUSH_SECONDS": "0"}})
	t.Run("CaptureIDsStartAtTheBase", func(t *testing.T) { checkCaptureIDsStartAtTheBase(t, w) })
	t.Run("CronJobsRunOnEachDatabase", func(t *testing.T) { checkCronJobsRunOnEachDatabase(t, w) })
	t.Run("ActionsRunInTheDatabaseOfTheirRows", func(t *testing.T) { checkActionsRunInTheDatabaseOfTheirRows(t, w) })
}

// Row and task actions find their rows' database in workerd: acknowledge
// by ids of TICKETS_DB changes the row and writes its audit entry there;
// ids of two databases and a bulk filter naming no pipeline are 400 and
// change nothing; a tickets replay task lives in TICKETS_DB (id from its
// base), is read and paused by that id, and the task list merges both
// databases' tasks.
func checkActionsRunInTheDatabaseOfTheirRows(t *testing.T, w *Worker) {
	p := fmt.Sprintf("act%d", time.Now().UnixNano())
	w.sendJSON(t, "e2e-tickets-dlq", fmt.Sprintf(`{"ticket":"%s-1","team":"infra"}`, p), fmt.Sprintf(`{"ticket":"%s-2","team":"infra"}`, p))
	w.Send(t, "beer-enrichment-dlq", fmt.Sprintf(`{"beer_id":"%s-b"}`, p))
	Eventually(t, 60*time.Second, "two tickets in TICKETS_DB and a beer in DB", func() bool {
		return w.IntOf(t, ticketsDB, `SELECT COUNT(*) FROM dlq_messages WHERE row_key LIKE ?`, p+"-%") == 2 &&
			w.Int(t, `SELECT COUNT(*) FROM dlq_messages WHERE row_key = ?`, p+"-b") == 1
	})
	t1 := w.IntOf(t, ticketsDB, `SELECT id FROM dlq_messages WHERE row_key = ?`, p+"-1")
	b := w.Int(t, `SELECT id FROM dlq_messages WHERE row_key = ?`, p+"-b")
	for _, c := range []struct {
		body any
		code string
	}{
		{map[string]any{"ids": []int64{t1, b}}, "IDS_IN_SEVERAL_DATABASES"},
		{map[string]any{"filter": map[string]any{"status": "pending"}}, "PIPELINE_REQUIRED"},
	} {
		for _, route := range []string{"/admin/dlq/acknowledge", "/admin/dlq/replay"} {
			if r := w.Admin(t, http.MethodPost, route, c.body); r.Status != http.StatusBadRequest || r.Error == nil || r.Error.Code != c.code {
				t.Errorf("%s %v: %d %s", route, c.body, r.Status, r.Raw)
			}
		}
	}
	if n := w.IntOf(t, ticketsDB, `SELECT COUNT(*) FROM dlq_messages WHERE row_key LIKE ? AND status = 'pending'`, p+"-%"); n != 2 {
		t.Fatalf("a refused action changed tickets rows: %d pending", n)
	}
	if r := w.Admin(t, http.MethodPost, "/admin/dlq/acknowledge", map[string]any{"ids": []int64{t1}, "note": p}); r.Status != http.StatusOK {
		t.Fatalf("acknowledge: %d %s", r.Status, r.Raw)
	}
	if w.IntOf(t, ticketsDB, `SELECT COUNT(*) FROM dlq_messages WHERE id = ? AND status = 'acknowledged'`, t1) != 1 ||
		w.IntOf(t, ticketsDB, `SELECT COUNT(*) FROM admin_audit WHERE action = 'acknowledge' AND note = ?`, p) != 1 ||
		w.Int(t, `SELECT COUNT(*) FROM admin_audit WHERE note = ?`, p) != 0 {
		t.Fatal("the acknowledgement or its audit entry is not in TICKETS_DB alone")
	}
	r := w.Admin(t, http.MethodPost, "/admin/dlq/replay-tasks", map[string]any{"filter": map[string]any{"pipeline": "tickets"}, "rate_per_minute": 1})
	var task struct {
		ID      int64 `json:"id"`
		Matched int64 `json:"matched"`
	}
	r.Decode(t, &task)
	// The second ticket is pending: the task matches it.
	if r.Status != http.StatusAccepted || task.ID < dlq.IDBase(ticketsDB) || task.Matched < 1 {
		t.Fatalf("tickets task: %d %s", r.Status, r.Raw)
	}
	if w.IntOf(t, ticketsDB, `SELECT COUNT(*) FROM replay_tasks WHERE id = ?`, task.ID) != 1 {
		t.Fatal("the tickets task is not in TICKETS_DB")
	}
	if r := w.Admin(t, http.MethodPost, fmt.Sprintf("/admin/dlq/replay-tasks/%d/pause", task.ID), nil); r.Status != http.StatusOK ||
		w.IntOf(t, ticketsDB, `SELECT COUNT(*) FROM replay_tasks WHERE id = ? AND state = 'paused'`, task.ID) != 1 {
		t.Fatalf("pause: %d %s", r.Status, r.Raw)
	}
	if r := w.Admin(t, http.MethodPost, "/admin/dlq/replay-tasks", map[string]any{"filter": map[string]any{"pipeline": "beers"}, "rate_per_minute": 1}); r.Status != http.StatusAccepted {
		t.Fatalf("beers task: %d %s", r.Status, r.Raw)
	}
	var list struct {
		Tasks []struct {
			ID int64 `json:"id"`
		} `json:"tasks"`
	}
	w.Admin(t, http.MethodGet, "/admin/dlq/replay-tasks?limit=100", nil).Decode(t, &list)
	found := false
	for _, x := range list.Tasks {
		found = found || x.ID == task.ID
	}
	if !found || len(list.Tasks) < 2 {
		t.Fatalf("the task list of every database: %+v", list.Tasks)
	}
}

// After the harness's migrations (internal/d1migrate, as make
// migrate-local) TICKETS_DB counts its ids from its own base: a tickets
// failure captured by the worker lands there, with an id at least
// dlq.IDBase(TICKETS_DB), and nothing of it in DB.
func checkCaptureIDsStartAtTheBase(t *testing.T, w *Worker) {
	ticket := fmt.Sprintf("T-ids-%d", time.Now().UnixNano())
	w.sendJSON(t, "e2e-tickets-dlq", fmt.Sprintf(`{"ticket":%q,"team":"infra"}`, ticket))
	Eventually(t, 60*time.Second, "the ticket captured into TICKETS_DB", func() bool {
		return w.IntOf(t, ticketsDB, `SELECT COUNT(*) FROM dlq_messages WHERE row_key = ?`, ticket) == 1
	})
	id := w.IntOf(t, ticketsDB, `SELECT id FROM dlq_messages WHERE row_key = ?`, ticket)
	if base := dlq.IDBase(ticketsDB); id < base || id > base+1000 {
		t.Fatalf("id %d, want within [%d, %d]", id, base, base+1000)
	}
	if n := w.Int(t, `SELECT COUNT(*) FROM dlq_messages WHERE row_key = ?`, ticket); n != 0 {
		t.Fatalf("%d rows of the ticket in DB", n)
	}
	if r := w.Admin(t, http.MethodGet, fmt.Sprintf("/admin/dlq/%d", id), nil); r.Status != http.StatusOK ||
		!strings.Contains(string(r.Raw), ticket) {
		t.Fatalf("GET /admin/dlq/%d: %d %s", id, r.Status, r.Raw)
	}
}

// The crons run on each database: the daily cron deletes a tickets row
// past its pipeline's 7 days from TICKETS_DB (and keeps a younger one),
// recorded in DB's job_runs as dlq_retention:TICKETS_DB; the 5-minute cron
// raises the tickets pipeline's pending alert (read in TICKETS_DB) and
// TICKETS_DB's repeat-failures alert, kept in DB's alert_state; DB's
// repeat-failures alert, whose database has no such row, stays quiet.
// The rows each per-database job read are logged from /admin/metrics.
func checkCronJobsRunOnEachDatabase(t *testing.T, w *Worker) {
	at := cronTime()
	now := at.UnixMilli()
	p := fmt.Sprintf("mdb%d", time.Now().UnixNano())
	// 101 pending tickets rows (the pending threshold is 100), one of them
	// replayed 3 times; two acknowledged ones, 8 and 6 days ago.
	w.ExecOf(t, ticketsDB, fmt.Sprintf(`
		WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 101)
		INSERT INTO dlq_messages(message_id, last_message_id, row_key, source_queue, status, failed_at, replay_count, updated_at)
		SELECT '%[1]s-p-' || i, '%[1]s-p-' || i, '%[1]s-p-' || i, 'e2e-tickets', 'pending', %[2]d - %[3]d, CASE WHEN i = 1 THEN 3 ELSE 0 END, 7 FROM n;
		INSERT INTO dlq_messages(message_id, last_message_id, row_key, source_queue, status, failed_at, acknowledged_at, updated_at) VALUES
			('%[1]s-ack-8d', '', '%[1]s-aged', 'e2e-tickets', 'acknowledged', %[2]d - 9 * %[3]d, %[2]d - 8 * %[3]d, 7),
			('%[1]s-ack-6d', '', '%[1]s-aged', 'e2e-tickets', 'acknowledged', %[2]d - 9 * %[3]d, %[2]d - 6 * %[3]d, 7);`, p, now, dayMS))

	fireAndWait(t, w, cronDaily, "dlq_tally:"+ticketsDB, at)
	left := w.IntOf(t, ticketsDB, `SELECT COUNT(*) FROM dlq_messages WHERE row_key = ?`, p+"-aged")
	kept := w.IntOf(t, ticketsDB, `SELECT COUNT(*) FROM dlq_messages WHERE message_id = ?`, p+"-ack-6d")
	if left != 1 || kept != 1 {
		t.Fatalf("TICKETS_DB keeps %d aged rows (the 6-day one: %d), want the 6-day one only", left, kept)
	}
	var deleted int64
	if err := w.DB(t).QueryRow(`SELECT last_summary ->> '$.deleted_age' FROM job_runs WHERE job = ? AND last_ok = 1`,
		"dlq_retention:"+ticketsDB).Scan(&deleted); err != nil || deleted != 1 {
		t.Fatalf("dlq_retention:TICKETS_DB in DB's job_runs: deleted_age %d %v", deleted, err)
	}
	if n := w.IntOf(t, ticketsDB, `SELECT COUNT(*) FROM job_runs`); n != 0 {
		t.Fatalf("%d job_runs rows in TICKETS_DB", n)
	}
	for _, job := range []string{"dlq_retention", "audit_retention", "dlq_tally", "audit_retention:" + ticketsDB} {
		if n := w.Int(t, `SELECT COUNT(*) FROM job_runs WHERE job = ? AND last_run_at = ? AND last_ok = 1`, job, now); n != 1 {
			t.Errorf("no successful run of %s recorded", job)
		}
	}

	at2 := at.Add(5 * time.Minute)
	fireAndWait(t, w, cronFrequent, "alerts", at2)
	firing := func(name string) int64 {
		return w.Int(t, `SELECT COALESCE((SELECT firing FROM alert_state WHERE name = ?), 0)`, name)
	}
	if firing("dlq_pending_high:tickets") != 1 || firing("dlq_repeat_failures:"+ticketsDB) != 1 {
		t.Fatalf("alerts: dlq_pending_high:tickets %d, dlq_repeat_failures:TICKETS_DB %d, want both firing",
			firing("dlq_pending_high:tickets"), firing("dlq_repeat_failures:"+ticketsDB))
	}
	if firing("dlq_repeat_failures") != 0 {
		t.Fatal("DB's dlq_repeat_failures fired: its database has no row replayed more than twice")
	}
	for _, job := range []string{"dlq_rescue", "dlq_rescue:" + ticketsDB} {
		if n := w.Int(t, `SELECT COUNT(*) FROM job_runs WHERE job = ? AND last_run_at = ?`, job, at2.UnixMilli()); n != 1 {
			t.Errorf("no run of %s recorded", job)
		}
	}
	usage := d1Usage(t, w)
	for _, job := range []string{"dlq_rescue", "alerts", "dlq_retention", "dlq_tally", "audit_retention"} {
		shared, own := usage["cron "+job], usage["cron "+job+":"+ticketsDB]
		t.Logf("cron %-16s DB: read %4d written %4d (%d statements); TICKETS_DB: read %4d written %4d (%d statements)",
			job, shared.RowsRead, shared.RowsWritten, shared.Statements, own.RowsRead, own.RowsWritten, own.Statements)
	}
}

// A pipeline naming a D1 binding the worker lacks is off, logged at
// ERROR: GET /admin/pipelines leaves it out, and a message on its DLQ is
// stored in DB as unroutable (never lost), naming that DLQ.
func TestPipelineWithAMissingDatabaseIsOff(t *testing.T) {
	vars := map[string]string{"PIPELINES": pipelinesWithTickets(t, "NO_SUCH_DB")}
	w := startWorkerWith(t, Options{Vars: vars})
	Eventually(t, 30*time.Second, "an ERROR line naming the missing binding", func() bool {
		return strings.Contains(w.Log(), "a pipeline's database binding is missing") && strings.Contains(w.Log(), "NO_SUCH_DB")
	})
	r := w.Admin(t, http.MethodGet, "/admin/pipelines", nil)
	if r.Status != http.StatusOK || strings.Contains(string(r.Raw), `"name":"tickets"`) || !strings.Contains(string(r.Raw), `"name":"orders"`) {
		t.Fatalf("pipelines: %d %s", r.Status, r.Raw)
	}
	body := fmt.Sprintf(`{"ticket":"T-off-%d","team":"infra"}`, time.Now().UnixNano())
	w.sendJSON(t, "e2e-tickets-dlq", body)
	Eventually(t, 60*time.Second, "the ticket stored in DB", func() bool {
		return w.Int(t, `SELECT COUNT(*) FROM dlq_messages WHERE raw_message = ?`, body) == 1
	})
	if n := w.Int(t, `SELECT COUNT(*) FROM dlq_messages WHERE raw_message = ? AND failure_class = 'unroutable' AND source_queue = 'e2e-tickets-dlq'`, body); n != 1 {
		t.Fatalf("the ticket's row is not an unroutable row of e2e-tickets-dlq")
	}
}
