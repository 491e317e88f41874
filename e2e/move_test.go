//go:build e2e

package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	api "github.com/redrive/redrive/client"
	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/dlq/relocation"
	"github.com/redrive/redrive/internal/wranglerconfig"
	"github.com/redrive/redrive/metrics"
	"github.com/redrive/redrive/queue"
)

// movedSeed is how many tickets rows the move test seeds besides the ones
// it captures (what the cost per 1,000 rows moved is measured on).
const movedSeed = 1000

// pipelinesWithTickets is env.e2e's PIPELINES with the tickets pipeline's
// database set to database.
func pipelinesWithTickets(t testing.TB, database string) string {
	t.Helper()
	return e2ePipelines(t, func(p map[string]any) {
		if p["name"] == "tickets" {
			p["database"] = database
		}
	})
}

// e2ePipelines is env.e2e's PIPELINES (wrangler.jsonc) with edit applied to
// each entry, as JSON text.
func e2ePipelines(t testing.TB, edit func(p map[string]any)) string {
	t.Helper()
	root, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := wranglerconfig.Load(root + "/..")
	if err != nil {
		t.Fatal(err)
	}
	var ps []map[string]any
	if err := json.Unmarshal([]byte(cfg.Envs["e2e"].Vars["PIPELINES"]), &ps); err != nil {
		t.Fatal(err)
	}
	for _, p := range ps {
		edit(p)
	}
	b, _ := json.Marshal(ps)
	return string(b)
}

// exportNDJSON follows the export's cursor: GET /admin/dlq/export?format=ndjson&include_raw=true&status=all&<query>.
func exportNDJSON(t *testing.T, w *Worker, query string) []byte {
	t.Helper()
	var out []byte
	cursor := ""
	for {
		path := "/admin/dlq/export?format=ndjson&include_raw=true&status=all&" + query
		if cursor != "" {
			path += "&cursor=" + cursor
		}
		r := w.Admin(t, http.MethodGet, path, nil)
		if r.Status != http.StatusOK {
			t.Fatalf("export %s: %d %s", query, r.Status, r.Raw)
		}
		out = append(out, r.Raw...)
		if cursor = r.Header.Get("X-Next-Cursor"); cursor == "" {
			return out
		}
	}
}

// moveUsage is the D1 rows of op since before.
func moveUsage(t *testing.T, w *Worker, before map[string]metrics.Usage, op string) metrics.Usage {
	t.Helper()
	return usageDelta(before, settledUsage(t, w), opIs(op))
}

// Moving the tickets pipeline from DB to its own database TICKETS_DB, as
// docs/operations.md "Move a pipeline to its own database" says: failures
// captured while tickets is on DB, exported with include_raw, the worker
// restarted with tickets on TICKETS_DB (on the same local state), the
// export imported (twice: the second imports nothing) and the old rows
// released. The rows read back from TICKETS_DB are the exported ones, byte
// for byte, ids, bodies and statuses included; DB keeps none and its
// counts are right; a moved row replays its original body. D1's rows read
// and written per 1,000 rows moved are logged (docs/operations.md).
func TestMovePipelineToItsOwnDatabase(t *testing.T) {
	persist, err := os.MkdirTemp("", "redrive-e2e-move-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if os.Getenv("E2E_KEEP_STATE") == "" {
			os.RemoveAll(persist)
		}
	})
	vars := map[string]string{"D1_USAGE_FLUSH_SECONDS": "0", "PIPELINES": pipelinesWithTickets(t, "DB")}
	w := startWorkerWith(t, Options{ExtraConfigs: []string{jsConsumerConfig}, Persist: persist, Vars: vars})

	// Failures captured while tickets is on DB.
	n := time.Now().UnixNano() % 1_000_000_000
	var failing []string
	for i := range 4 {
		failing = append(failing, fmt.Sprintf(`{"ticket":"M-%d-%d","team":"infra","fail":true,"detail":{"é":"🍺","n":%d.5}}`, n, i, i))
	}
	w.sendJSON(t, ticketsQueue, failing...)
	Eventually(t, 120*time.Second, "the failing tickets captured into DB", func() bool {
		return w.Int(t, `SELECT COUNT(*) FROM dlq_messages WHERE source_queue = ?`, ticketsQueue) == int64(len(failing))
	})
	captured := w.Int(t, `SELECT MIN(id) FROM dlq_messages WHERE source_queue = ?`, ticketsQueue)
	if r := w.Admin(t, http.MethodPost, "/admin/dlq/acknowledge", map[string]any{"ids": []int64{captured}, "note": "moved anyway"}); r.Status != http.StatusOK {
		t.Fatalf("acknowledge: %d %s", r.Status, r.Raw)
	}
	exported := exportNDJSON(t, w, "pipeline=tickets")
	w.Stop()

	// movedSeed more rows of the pipeline in DB (as captured, with
	// histories and groups), so that the cost is measured on 1,000 rows.
	rw, err := w.openD1File("mode=rw")
	if err != nil {
		t.Fatal(err)
	}
	seedStart := time.Now().UnixMilli()
	for _, s := range []string{
		fmt.Sprintf(`INSERT INTO dlq_messages(message_id, row_key, label_1, failed_at, failure_count, failure_reason, failure_class,
				source_queue, status, raw_message, raw_encoding, content_type, body_hash, last_message_id, first_failed_at, updated_at,
				history, signature, version, acknowledged_at, acknowledged_note)
			WITH RECURSIVE seq(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM seq WHERE i + 1 < %[1]d)
			SELECT 'seed-' || i, 'S-' || i, 'team' || (i %% 5), %[2]d - i * 1000, 3, 'permanent: reason ' || (i %% 7), 'permanent',
				'%[3]s', CASE WHEN i %% 10 = 0 THEN 'acknowledged' ELSE 'pending' END,
				json_object('ticket', 'S-' || i, 'team', 'team' || (i %% 5), 'fail', json('true'), 'pad', hex(zeroblob(250))),
				'text', 'json', NULL, 'seed-' || i, %[2]d - i * 1000, %[2]d - i * 1000,
				json_array(json_object('at', %[2]d - i * 1000, 'attempt', 3, 'class', 'permanent', 'error', 'reason ' || (i %% 7))),
				printf('%%016x', 4096 + i %% 7), 'seed-version', CASE WHEN i %% 10 = 0 THEN %[2]d END, CASE WHEN i %% 10 = 0 THEN 'old' END
			FROM seq`, movedSeed, seedStart, ticketsQueue),
		// A message replayed before the switch (its replay fails again after it).
		fmt.Sprintf(`INSERT INTO dlq_messages(message_id, row_key, failed_at, failure_count, failure_reason, failure_class, source_queue,
				status, raw_message, raw_encoding, content_type, body_hash, last_message_id, first_failed_at, updated_at, history,
				replay_count, replayed_at)
			VALUES ('lineage-1', 'L-1', %[1]d, 1, 'permanent: first', 'permanent', '%[2]s', 'replayed', '%[3]s', 'text', 'json', '%[4]s',
				'lineage-1', %[1]d, %[1]d + 1, '[{"at":%[1]d,"attempt":1,"class":"permanent","error":"first","message_id":"lineage-1"}]', 1, %[1]d + 1)`,
			seedStart, ticketsQueue, lineageBody, dlq.BodyHash(queue.JSON, lineageBody)),
		fmt.Sprintf(`INSERT INTO dlq_signatures(signature, class, text, pending, acknowledged, first_seen, last_seen, versions, sample_ids, source_queue)
			SELECT signature, 'permanent', 'reason ' || signature, SUM(status = 'pending'), SUM(status = 'acknowledged'),
				MIN(failed_at), MAX(failed_at), '["seed-version"]', json_array(MIN(id)), '%s'
			FROM dlq_messages WHERE message_id LIKE 'seed-%%' GROUP BY signature`, ticketsQueue),
	} {
		if _, err := rw.Exec(s); err != nil {
			rw.Close()
			t.Fatalf("seed: %v", err)
		}
	}
	rw.Close()

	// The pipeline's own database: migrated, its ids from its own range.
	for _, args := range [][]string{
		w.d1Args("migrations", "apply", "tickets-db", "--local", "--persist-to", persist),
		w.d1Args("execute", "tickets-db", "--local", "--persist-to", persist, "--command", dlq.SeedIDsSQL("TICKETS_DB")),
	} {
		if out, err := w.wrangler(2*time.Minute, args...); err != nil {
			t.Fatalf("wrangler %v: %v\n%s", args, err, out)
		}
	}

	// The worker again, tickets on TICKETS_DB, on the same local state.
	vars["PIPELINES"] = pipelinesWithTickets(t, "TICKETS_DB")
	w = startWorkerWith(t, Options{ExtraConfigs: []string{jsConsumerConfig}, Persist: persist, Vars: vars})
	before := settledUsage(t, w)
	old := exportNDJSON(t, w, "pipeline=tickets&database=DB")
	exportCost := moveUsage(t, w, before, "GET /admin/dlq/export")
	lines := bytes.Count(old, []byte("\n"))
	if lines != len(failing)+movedSeed+1 {
		t.Fatalf("the export of DB after the switch: %d lines", lines)
	}
	// The pipeline's rows left in DB are frozen: an action on one is 409
	// ROWS_MOVING (dlq.Databases.Frozen).
	frozen := w.Int(t, `SELECT MIN(id) FROM dlq_messages WHERE source_queue = ? AND status = 'pending'`, ticketsQueue)
	if r := w.Admin(t, http.MethodPost, "/admin/dlq/acknowledge", map[string]any{"ids": []int64{frozen}}); r.Status != http.StatusConflict ||
		!strings.Contains(string(r.Raw), `"code":"ROWS_MOVING"`) {
		t.Fatalf("acknowledge of row %d left in DB: %d %s, want 409 ROWS_MOVING", frozen, r.Status, r.Raw)
	}
	// The replayed message fails again: TICKETS_DB continues its row (its
	// id, message id and replay count), DB's row stays as exported.
	lineage := w.Int(t, `SELECT id FROM dlq_messages WHERE message_id = 'lineage-1'`)
	w.sendJSON(t, "e2e-tickets-dlq", lineageBody)
	Eventually(t, 120*time.Second, "the repeat failure captured into TICKETS_DB as the row's continuation", func() bool {
		return w.IntOf(t, TicketsDB, `SELECT COUNT(*) FROM dlq_messages WHERE id = ? AND message_id = 'lineage-1'
			AND last_message_id <> 'lineage-1' AND status = 'pending' AND replay_count = 1`, lineage) == 1
	})
	if again := exportNDJSON(t, w, "pipeline=tickets&database=DB"); !bytes.Equal(again, old) {
		t.Fatal("DB's rows changed after the repeat failure's capture")
	}
	for _, l := range bytes.SplitAfter(bytes.TrimSuffix(exported, []byte("\n")), []byte("\n")) {
		if !bytes.Contains(old, l) {
			t.Fatalf("a row exported before the switch is not exported the same after it: %s", l)
		}
	}

	// Import, in requests of at most 500 lines and 1 MB, as redrive import sends them.
	chunks, err := api.ImportChunks(old, api.ImportMaxLines, api.ImportMaxBytes)
	if err != nil {
		t.Fatal(err)
	}
	importOnce := func() (imported, merged, skipped int) {
		for _, c := range chunks {
			r, err := w.Do(http.MethodPost, "/admin/dlq/import", c, map[string]string{"X-API-Key": TestAPIKey,
				"X-Admin-Secret": TestAdminSecret, "Content-Type": "application/x-ndjson"})
			if err != nil || r.Status != http.StatusOK || r.Contract != nil {
				t.Fatalf("import: %v %v %s", err, r.Contract, r.Raw)
			}
			var res relocation.ImportResult
			r.Decode(t, &res)
			if res.Database != "TICKETS_DB" {
				t.Fatalf("imported into %s", res.Database)
			}
			imported, merged, skipped = imported+res.Imported, merged+res.Merged, skipped+res.Skipped
		}
		return imported, merged, skipped
	}
	before = settledUsage(t, w)
	importStart := time.Now()
	if imported, merged, skipped := importOnce(); imported != lines-1 || merged != 1 || skipped != 0 {
		t.Fatalf("import: %d imported, %d merged, %d skipped of %d", imported, merged, skipped, lines)
	}
	importTime := time.Since(importStart)
	importCost := moveUsage(t, w, before, "POST /admin/dlq/import")
	if imported, merged, skipped := importOnce(); imported != 0 || merged != 0 || skipped != lines {
		t.Fatalf("second import: %d imported, %d merged, %d skipped", imported, merged, skipped)
	}

	// Release from DB, window by window.
	before = settledUsage(t, w)
	var released int
	after := int64(0)
	for {
		r := w.Admin(t, http.MethodPost, "/admin/dlq/release", map[string]any{"pipeline": "tickets", "database": "DB", "after": after})
		if r.Status != http.StatusOK {
			t.Fatalf("release: %d %s", r.Status, r.Raw)
		}
		var res relocation.ReleaseResult
		r.Decode(t, &res)
		if res.NotImported != 0 || res.Changed != 0 || res.Into != "TICKETS_DB" {
			t.Fatalf("release: %+v", res)
		}
		released += res.Released
		if res.NextAfter == nil {
			if res.Remaining != 0 {
				t.Fatalf("remaining %d", res.Remaining)
			}
			break
		}
		after = *res.NextAfter
	}
	releaseCost := moveUsage(t, w, before, "POST /admin/dlq/release")
	if released != lines {
		t.Fatalf("released %d of %d", released, lines)
	}

	// Read back from the new database: the same bytes, ids, bodies and
	// statuses; DB holds none of the pipeline's rows, groups or counts.
	// (The continued row aside: pending, its repeat failure last; its
	// failure group, which other rows share, counts it too.)
	if moved := exportNDJSON(t, w, "pipeline=tickets&database=TICKETS_DB"); !bytes.Equal(withoutLine(moved, "lineage-1"), withoutLine(old, "lineage-1")) {
		t.Fatalf("the rows read back from TICKETS_DB differ from the export of DB:\n%s", firstDifference(withoutLine(moved, "lineage-1"), withoutLine(old, "lineage-1")))
	}
	var hist string
	if n := w.IntOf(t, TicketsDB, `SELECT COUNT(*) FROM dlq_messages WHERE id = ? AND message_id = 'lineage-1' AND status = 'pending'
			AND replay_count = 1 AND first_failed_at = ?`, lineage, seedStart); n != 1 {
		t.Fatalf("the continued row %d after the move is not pending, replayed once, first failed at %d", lineage, seedStart)
	}
	w.DBOf(t, TicketsDB).QueryRow(`SELECT history FROM dlq_messages WHERE id = ?`, lineage).Scan(&hist)
	if !strings.Contains(hist, `"error":"first"`) {
		t.Fatalf("the continued row's history lacks the attempt before the move: %s", hist)
	}
	if n := w.IntOf(t, TicketsDB, `SELECT COUNT(*) FROM dlq_signatures, json_each(sample_ids) AS s WHERE s.value = ?`, lineage); n != 1 {
		t.Fatalf("the continued row's failure group names it %d times, want once", n)
	}
	tickets := w.DBOf(t, TicketsDB)
	var rows, pending, groups int64
	tickets.QueryRow(`SELECT COUNT(*), SUM(status = 'pending') FROM dlq_messages WHERE source_queue = ?`, ticketsQueue).Scan(&rows, &pending)
	tickets.QueryRow(`SELECT COUNT(*) FROM dlq_signatures WHERE source_queue = ?`, ticketsQueue).Scan(&groups)
	if rows != int64(lines) || groups < 8 || w.Int(t, `SELECT COUNT(*) FROM dlq_messages WHERE source_queue = ?`, ticketsQueue) != 0 ||
		w.Int(t, `SELECT COALESCE(SUM(n), 0) FROM dlq_tally WHERE source_queue = ?`, ticketsQueue) != 0 ||
		w.Int(t, `SELECT COUNT(*) FROM dlq_signatures WHERE source_queue = ?`, ticketsQueue) != 0 {
		t.Fatalf("after the move: %d rows and %d groups in TICKETS_DB; DB keeps %d rows", rows, groups,
			w.Int(t, `SELECT COUNT(*) FROM dlq_messages WHERE source_queue = ?`, ticketsQueue))
	}
	var kept int64
	tickets.QueryRow(`SELECT COALESCE(SUM(n), 0) FROM dlq_tally WHERE source_queue = ? AND status = 'pending'`, ticketsQueue).Scan(&kept)
	if kept != pending {
		t.Fatalf("TICKETS_DB counts %d pending, holds %d", kept, pending)
	}

	per := func(u metrics.Usage) string {
		return fmt.Sprintf("%d statements, %.0f rows read, %.0f written per 1,000 rows", u.Statements,
			float64(u.RowsRead)*1000/float64(lines), float64(u.RowsWritten)*1000/float64(lines))
	}
	t.Logf("moved %d rows (%d chunks, import %s): export %s; import %s; release %s", lines, len(chunks),
		importTime.Round(time.Millisecond), per(exportCost), per(importCost), per(releaseCost))
	// Budgets per 1,000 rows moved (docs/operations.md): what was measured, plus a margin.
	for _, b := range []struct {
		name               string
		u                  metrics.Usage
		maxRead, maxWrites int64
	}{{"export", exportCost, 12000, 0}, {"import", importCost, 19000, 4500}, {"release", releaseCost, 32000, 6000}} {
		if b.u.RowsRead*1000 > b.maxRead*int64(lines) || b.u.RowsWritten*1000 > b.maxWrites*int64(lines) || b.u.Statements == 0 {
			t.Errorf("%s: %s, over its budget of %d read and %d written", b.name, per(b.u), b.maxRead, b.maxWrites)
		}
	}

	// A moved row replays its original body, read from TICKETS_DB.
	var id int64
	var body string
	tickets.QueryRow(`SELECT id, raw_message FROM dlq_messages WHERE source_queue = ? AND status = 'pending' AND message_id NOT LIKE 'seed-%' ORDER BY id LIMIT 1`,
		ticketsQueue).Scan(&id, &body)
	if !strings.Contains(body, `"fail":true`) {
		t.Fatalf("moved row %d: body %q", id, body)
	}
	res := w.Admin(t, http.MethodPost, "/admin/dlq/replay", idsBody([]int64{id}))
	var rr replayResult
	res.Decode(t, &rr)
	if res.Status != http.StatusOK || rr.ReplayedCount != 1 || rr.QueuedTo != ticketsQueue {
		t.Fatalf("replay of moved row %d: %d %s", id, res.Status, res.Raw)
	}
	Eventually(t, 60*time.Second, "the moved row's body delivered again", func() bool {
		return len(w.queueDeliveries(t, ticketsQueue, body)) >= 3 // two attempts before the move, then the replay
	})
}

// lineageBody is the body of the move test's message replayed before the
// switch, which fails again after it.
const lineageBody = `{"ticket":"L-1","team":"infra","fail":true}`

// firstDifference shows the first line where a and b differ.
func firstDifference(a, b []byte) string {
	la, lb := bytes.Split(a, []byte("\n")), bytes.Split(b, []byte("\n"))
	for i := range max(len(la), len(lb)) {
		var x, y []byte
		if i < len(la) {
			x = la[i]
		}
		if i < len(lb) {
			y = lb[i]
		}
		if !bytes.Equal(x, y) {
			return fmt.Sprintf("line %d:\n%s\n---\n%s", i+1, x, y)
		}
	}
	return "(no difference)"
}

// withoutLine is ndjson without the line of message id, and each other
// line without its failure group's sample_ids, versions and first_seen
// (the group of id's row counts it).
func withoutLine(ndjson []byte, id string) []byte {
	var out []byte
	for _, l := range bytes.SplitAfter(ndjson, []byte("\n")) {
		if bytes.Contains(l, []byte(`"message_id":"`+id+`"`)) {
			continue
		}
		var row map[string]any
		if json.Unmarshal(l, &row) == nil {
			if sig, ok := row["signature"].(map[string]any); ok {
				delete(sig, "sample_ids")
				delete(sig, "versions")
				delete(sig, "first_seen")
			}
			l, _ = json.Marshal(row)
			l = append(l, '\n')
		}
		out = append(out, l...)
	}
	return out
}

func firstLines(b []byte, n int) []byte {
	parts := bytes.SplitN(b, []byte("\n"), n+1)
	return bytes.Join(parts[:min(n, len(parts))], []byte("\n"))
}
