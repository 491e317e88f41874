//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/dlq/relocation"
	"github.com/redrive/redrive/dlq/upkeep"
)

// retentionPipelines is env.e2e's PIPELINES with tickets on TICKETS_DB
// keeping 90 days and orders (on DB) keeping 7: every database then holds
// rows of a pipeline whose own database is the other one.
func retentionPipelines(t testing.TB) string {
	t.Helper()
	return e2ePipelines(t, func(p map[string]any) {
		switch p["name"] {
		case "tickets":
			p["database"], p["retention_days"] = TicketsDB, 90
		case "orders":
			p["retention_days"] = 7
		}
	})
}

// startRetentionWorker runs env.e2e with retentionPipelines on its two
// databases, a per-key cap of 2 and its D1 usage flushed after every
// operation.
func startRetentionWorker(t *testing.T) *Worker {
	t.Helper()
	return startWorkerWith(t, Options{OwnDatabases: true, Vars: map[string]string{
		"PIPELINES": retentionPipelines(t), "DLQ_MAX_ROWS_PER_KEY": "2", "D1_USAGE_FLUSH_SECONDS": "0"}})
}

// actedRowSQL is the INSERT of one terminal row of queue and key whose
// action (acknowledge, replay) was at acted (ms), failed an hour before.
func actedRowSQL(msgID, queue, key, status string, acted int64) string {
	col := "acknowledged_at"
	if status == "replayed" {
		col = "replayed_at"
	}
	return fmt.Sprintf(`INSERT INTO dlq_messages(message_id, last_message_id, row_key, source_queue, status, failed_at, %s, raw_message, content_type, updated_at)
		VALUES ('%[2]s', '%[2]s', '%[3]s', '%[4]s', '%[5]s', %[6]d, %[7]d, '{}', 'json', %[7]d);`, col, msgID, key, queue, status, acted-3_600_000, acted)
}

// importLine is one NDJSON line of POST /admin/dlq/import: a row of queue
// and key as an export with include_raw writes it.
func importLine(id int64, msgID, queue, key, status string, failed int64, acted *int64) string {
	m := map[string]any{"id": id, "message_id": msgID, "beer_id": key, "failed_at": failed, "source_queue": queue, "status": status,
		"replay_count": 0, "first_failed_at": failed, "updated_at": failed, "content_type": "json", "raw_message": `{"ticket":"` + key + `"}`,
		"raw_encoding": "text", "last_message_id": msgID, "body_hash": nil, "history": nil, "history_dropped": 0, "signature": nil,
		"acknowledged_at": nil, "replayed_at": nil, "beer_name": nil, "brewer": nil, "failure_count": 3, "failure_reason": "permanent: boom",
		"failure_class": "permanent", "replaying_at": nil, "acknowledged_note": nil, "pipeline": "tickets", "key": key,
		"labels": map[string]any{"team": nil}}
	if acted != nil {
		m[status+"_at"] = *acted
	}
	b, _ := json.Marshal(m)
	return string(b)
}

// Retention across two databases in workerd: a queue's retention is its
// pipeline's wherever its rows lie, the per-key cap is per queue and key,
// and rows imported with old action times are still looked at by
// retention's windows and cap.
func TestRetentionAcrossDatabases(t *testing.T) {
	w := startRetentionWorker(t)
	// The rows a moved pipeline left behind, measured on the first runs
	// (checkRowsFigure); the checks below run 10 days later.
	first := cronTime()
	for _, f := range leftBehindRetentionRows(t, w, 10_000, first) {
		checkRowsFigure(t, f)
	}
	at := first.Add(10 * 24 * time.Hour)
	now := at.UnixMilli()
	p := fmt.Sprintf("rdb%d", time.Now().UnixNano())
	ago := func(days float64) int64 { return now - int64(days*float64(dayMS)) }
	var shared, own strings.Builder
	// Tickets (90 days, on TICKETS_DB) left behind in DB; orders (7 days,
	// on DB) left in TICKETS_DB; each database's own rows beside them.
	shared.WriteString(actedRowSQL(p+"-t-60d", ticketsQueue, p+"-t", "acknowledged", ago(60)))
	shared.WriteString(actedRowSQL(p+"-t-91d", ticketsQueue, p+"-t", "replayed", ago(91)))
	shared.WriteString(actedRowSQL(p+"-o-8d", "e2e-orders", p+"-o", "acknowledged", ago(8)))
	shared.WriteString(actedRowSQL(p+"-o-6d", "e2e-orders", p+"-o", "acknowledged", ago(6)))
	own.WriteString(actedRowSQL(p+"-o-8d", "e2e-orders", p+"-o", "acknowledged", ago(8)))
	own.WriteString(actedRowSQL(p+"-o-6d", "e2e-orders", p+"-o", "replayed", ago(6)))
	own.WriteString(actedRowSQL(p+"-t-60d", ticketsQueue, p+"-t", "acknowledged", ago(60)))
	// The cap (2): key 42 and the poison key, two rows each in the beer
	// queue and in orders: every (queue, key) is at the cap, none over.
	for _, q := range []string{"beer-enrichment", "e2e-orders"} {
		for _, key := range []string{p + "-42", "__unparseable__"} {
			for i := 1; i <= 2; i++ {
				shared.WriteString(actedRowSQL(fmt.Sprintf("%s-%s-%s-%d", p, q, key, i), q, key, "acknowledged", now-int64(3-i)*3_600_000))
			}
		}
	}
	w.Exec(t, shared.String())
	w.ExecOf(t, ticketsDB, own.String())

	daily := func(at time.Time) { // one run of each database's retention, both recorded
		t.Helper()
		fireAndWait(t, w, cronDaily, "dlq_retention:"+ticketsDB, at)
		Eventually(t, 30*time.Second, "dlq_retention recorded", func() bool {
			return w.Int(t, `SELECT COUNT(*) FROM job_runs WHERE job = 'dlq_retention' AND last_run_at = ?`, at.UnixMilli()) == 1
		})
	}
	daily(at)
	has := func(binding, msgID string) bool {
		return w.IntOf(t, binding, `SELECT COUNT(*) FROM dlq_messages WHERE message_id = ?`, msgID) == 1
	}
	type kept struct {
		binding, msgID string
		kept           bool
	}
	check := func(cs []kept) {
		t.Helper()
		for _, c := range cs {
			if has(c.binding, c.msgID) != c.kept {
				t.Errorf("%s: %s kept = %v, want %v", c.binding, c.msgID, !c.kept, c.kept)
			}
		}
	}
	// DB applies each pipeline's retention to the rows it holds; TICKETS_DB
	// waits while DB still holds tickets rows (the move is not over).
	check([]kept{{"DB", p + "-t-60d", true}, {"DB", p + "-t-91d", false}, {"DB", p + "-o-8d", false}, {"DB", p + "-o-6d", true},
		{ticketsDB, p + "-o-8d", true}, {ticketsDB, p + "-o-6d", true}, {ticketsDB, p + "-t-60d", true}})
	var waiting string
	if err := w.DB(t).QueryRow(`SELECT COALESCE(last_summary ->> '$.waiting_for_moves', '') FROM job_runs WHERE job = ?`, "dlq_retention:"+ticketsDB).
		Scan(&waiting); err != nil || waiting != `["`+ticketsQueue+`"]` {
		t.Errorf("TICKETS_DB's retention while DB holds tickets rows: waiting_for_moves %q (%v), want [%s]", waiting, err, ticketsQueue)
	}
	// The move ends (as a release leaves DB: no tickets row, none counted).
	w.Exec(t, fmt.Sprintf(`DELETE FROM dlq_messages WHERE source_queue = '%[1]s'; UPDATE dlq_tally SET n = 0 WHERE source_queue = '%[1]s';`, ticketsQueue))
	daily(at.Add(10 * time.Minute))
	check([]kept{{ticketsDB, p + "-o-8d", false}, {ticketsDB, p + "-o-6d", true}, {ticketsDB, p + "-t-60d", true}})
	if n := w.Int(t, `SELECT COUNT(*) FROM dlq_messages WHERE message_id LIKE ? AND row_key IN (?, '__unparseable__')`, p+"-%", p+"-42"); n != 8 {
		t.Errorf("%d of the 8 rows at the cap of their queue and key kept", n)
	}
	summary := func(job string) (capped int64, keys string) {
		if err := w.DB(t).QueryRow(`SELECT last_summary ->> '$.deleted_cap', last_summary ->> '$.cap_keys' FROM job_runs WHERE job = ?`, job).
			Scan(&capped, &keys); err != nil {
			t.Fatalf("%s summary: %v", job, err)
		}
		return capped, keys
	}
	if capped, keys := summary("dlq_retention"); capped != 0 {
		t.Errorf("DB's cap evicted %d rows (%s) at the cap of each queue and key", capped, keys)
	}

	// One more order 42 (acknowledged after the run): orders' oldest 42 is
	// evicted, the beer queue's 42 stays. Tickets imported into TICKETS_DB
	// with their old action times: three of one key acknowledged 10 days
	// ago (one over the cap).
	w.Exec(t, actedRowSQL(p+"-e2e-orders-"+p+"-42-3", "e2e-orders", p+"-42", "acknowledged", now+30*60_000))
	var lines []string
	for i := range 3 {
		acted := ago(10) + int64(i)*60_000
		lines = append(lines, importLine(int64(7_000_000+i), fmt.Sprintf("%s-imp-%d", p, i), ticketsQueue, p+"-imp", "acknowledged", acted-60_000, &acted))
	}
	lines = append(lines, importLine(7_000_100, p+"-imp-pending", ticketsQueue, p+"-imp", "pending", ago(20), nil))
	r, err := w.Do(http.MethodPost, "/admin/dlq/import", strings.Join(lines, "\n")+"\n", map[string]string{"X-API-Key": TestAPIKey,
		"X-Admin-Secret": TestAdminSecret, "Content-Type": "application/x-ndjson"})
	var res relocation.ImportResult
	if err != nil || r.Status != http.StatusOK {
		t.Fatalf("import: %v %v", err, r)
	}
	if r.Decode(t, &res); res.Imported != 4 || res.Database != ticketsDB {
		t.Fatalf("import: %s", r.Raw)
	}
	later := at.Add(time.Hour)
	daily(later)
	if capped, keys := summary("dlq_retention"); capped != 1 || keys != fmt.Sprintf(`["e2e-orders:%s-42"]`, p) {
		t.Errorf("DB's cap: %d evicted from %s, want order 42's oldest", capped, keys)
	}
	if has("DB", fmt.Sprintf("%s-e2e-orders-%s-42-1", p, p)) || !has("DB", fmt.Sprintf("%s-beer-enrichment-%s-42-1", p, p)) {
		t.Error("the cap evicted another queue's key 42, or not orders' oldest")
	}
	if capped, keys := summary("dlq_retention:" + ticketsDB); capped != 1 || keys != fmt.Sprintf(`["%s:%s-imp"]`, ticketsQueue, p) {
		t.Errorf("TICKETS_DB's cap after the import: %d evicted from %s, want the imported key's oldest", capped, keys)
	}
	if has(ticketsDB, p+"-imp-0") || !has(ticketsDB, p+"-imp-1") || !has(ticketsDB, p+"-imp-2") || !has(ticketsDB, p+"-imp-pending") {
		t.Error("TICKETS_DB after the import's retention: want the imported key's two newest terminal rows and its pending one")
	}
	if n := w.IntOf(t, ticketsDB, `SELECT COUNT(*) FROM retention_rescans`); n != 1 {
		t.Errorf("%d retention_rescans rows in TICKETS_DB, want the import's", n)
	}
}

// leftBehindRetentionRows measures dlq_retention of DB holding n rows a
// 90-day pipeline left there when it moved (tickets, now on TICKETS_DB;
// acknowledged 31 to 82 days before at, all kept) and n/10 of the beer
// queue's in the same span (30 days: deleted), on a fresh worker of
// startRetentionWorker: its first daily run at at (no previous position:
// each shorter retention's window and the cap start from the longest
// cutoff, as once after an upgrade or a changed PIPELINES), and the run
// an hour later, with nothing new due.
func leftBehindRetentionRows(t *testing.T, w *Worker, n int, at time.Time) []rowsFigure {
	t.Helper()
	now := at.UnixMilli()
	p := unique("left")
	w.Exec(t, fmt.Sprintf(`WITH RECURSIVE seq(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM seq WHERE i < %[1]d)
		INSERT INTO dlq_messages(message_id, last_message_id, row_key, source_queue, status, failed_at, acknowledged_at, replayed_at, raw_message, content_type, updated_at)
		SELECT '%[2]s-' || i, '%[2]s-' || i, '%[2]s-k' || i, CASE WHEN i %% 11 = 0 THEN 'beer-enrichment' ELSE '%[3]s' END,
			CASE WHEN i %% 2 = 0 THEN 'acknowledged' ELSE 'replayed' END, %[4]d - 31 * %[5]d - i * 400000,
			CASE WHEN i %% 2 = 0 THEN %[4]d - 31 * %[5]d - i * 400000 + 1000 END,
			CASE WHEN i %% 2 = 1 THEN %[4]d - 31 * %[5]d - i * 400000 + 1000 END, '{}', 'json', %[4]d FROM seq`,
		n+n/10, p, ticketsQueue, now, dayMS))
	beers := w.Int(t, `SELECT COUNT(*) FROM dlq_messages WHERE message_id LIKE ? AND source_queue = 'beer-enrichment'`, p+"-%")
	var out []rowsFigure
	for i, name := range []string{
		fmt.Sprintf("daily dlq_retention of DB holding %d rows of a 90-day pipeline moved to TICKETS_DB (first run)", n),
		"daily dlq_retention of DB, the next run (nothing new due)",
	} {
		before := settledUsage(t, w)
		fireAndWait(t, w, cronDaily, "dlq_retention", at.Add(time.Duration(i)*time.Hour))
		d := usageDelta(before, settledUsage(t, w), opIs("cron "+upkeep.RetentionJobName))
		f := rowsFigure{Name: name, Rows: n + n/10, Read: d.RowsRead, Written: d.RowsWritten, Statements: d.Statements}
		if i == 0 {
			// No previous position: both shorter retentions' windows
			// (7 and 30 days) read each row about twice, and the cap's
			// first pass from the longest cutoff about five times (106,032
			// read at 11,000 rows in workerd).
			f.MaxRead, f.MaxWritten = 11*int64(n+n/10)+1_000, 3*beers+100
		} else {
			f.MaxRead, f.MaxWritten = 1_000, 100
		}
		out = append(out, f)
	}
	if left := w.Int(t, `SELECT COUNT(*) FROM dlq_messages WHERE message_id LIKE ? AND source_queue = ?`, p+"-%", ticketsQueue); left != int64(n+n/10)-beers {
		t.Errorf("%d of the moved pipeline's %d rows kept", left, int64(n+n/10)-beers)
	}
	if left := w.Int(t, `SELECT COUNT(*) FROM dlq_messages WHERE message_id LIKE ? AND source_queue = 'beer-enrichment'`, p+"-%"); left != 0 {
		t.Errorf("%d beer rows past 30 days kept", left)
	}
	return out
}

// checkRowsFigure logs f and checks it against its budget.
func checkRowsFigure(t *testing.T, f rowsFigure) {
	t.Helper()
	t.Logf("%-60s read %8d written %6d statements %3d", f.Name, f.Read, f.Written, f.Statements)
	if f.MaxRead > 0 && f.Read > f.MaxRead {
		t.Errorf("%s read %d rows, budget %d", f.Name, f.Read, f.MaxRead)
	}
	if f.MaxWritten > 0 && f.Written > f.MaxWritten {
		t.Errorf("%s wrote %d rows, budget %d", f.Name, f.Written, f.MaxWritten)
	}
	if f.Statements == 0 {
		t.Errorf("%s: no statement measured", f.Name)
	}
}
