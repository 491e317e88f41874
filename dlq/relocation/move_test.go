package relocation

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/config"
	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/dlq/inspect"
	"github.com/redrive/redrive/internal/sqlitetest"
	"github.com/redrive/redrive/queue"
	"github.com/redrive/redrive/queue/queuetest"
	"github.com/redrive/redrive/sqlbatch"
)

// moveTickets configures the beer pipeline and a tickets pipeline whose
// own database is TICKETS_DB, and returns the shared database (holding the
// tickets rows captured before the move, and beer rows) and the tickets one;
// dbs carries the pipelines (dbs.Pipelines()).
func moveTickets(t *testing.T) (shared, tickets *sql.DB, dbs dlq.Databases) {
	t.Helper()
	ps, problems := config.ParsePipelines(`[
{"name":"beers","queue":"beer-enrichment","dlq":"beer-enrichment-dlq","producer":"ENRICHMENT_QUEUE","key":"/beer_id","labels":[{"name":"beer_name","pointer":"/beer_name"},{"name":"brewer","pointer":"/brewer"}],"consumer":"redrive"},
{"name":"tickets","queue":"tickets","dlq":"tickets-dlq","producer":"TICKETS","key":"/ticket","labels":[{"name":"team","pointer":"/team"}],"consumer":"external","database":"TICKETS_DB"}]`,
		100, 24*time.Hour, 30*24*time.Hour)
	if len(problems) != 0 {
		t.Fatal(problems)
	}
	shared, tickets = sqlitetest.New(t), sqlitetest.New(t)
	if _, err := tickets.Exec(dlq.SeedIDsSQL("TICKETS_DB")); err != nil {
		t.Fatal(err)
	}
	dbs = dlq.NewDatabases(dlq.Store{DB: shared}, map[string]dlq.Store{"TICKETS_DB": {DB: tickets}}, ps)
	return shared, tickets, dbs
}

// seedMoved fills db (the tickets pipeline still on it) with n tickets
// failures of every kind — three failure groups with histories and
// versions, JSON, text and binary bodies, unicode, control characters and
// a body without a trailing newline — then acknowledges, replays and
// claims some, and adds beer rows that must stay where they are. The
// bodies are read as the pipelines ps say.
func seedMoved(t *testing.T, db *sql.DB, ps dlq.Pipelines, n int) {
	t.Helper()
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	clock := func() time.Time { return now }
	capture := &dlq.Capture{DB: db, Log: discard, Clock: clock, Version: "v-capture", Stores: dlq.Store{DB: db, Pipelines: ps},
		SourceQueue: map[string]string{"tickets-dlq": "tickets", dlqName: "beer-enrichment"}}
	var msgs []*queuetest.Message
	for i := range n {
		id := fmt.Sprintf("tm-%03d", i)
		history := fmt.Sprintf(`[{"at":%d,"attempt":1,"class":"transient","status":503,"error":"upstream é \"%d\"","duration_ms":12,"message_id":%q}]`,
			now.UnixMilli()-int64(i), i, id)
		if _, err := db.Exec(`INSERT INTO message_attempts(message_id, queue, attempt, error_class, error, recorded_at, history, signature, signature_text, version)
			VALUES (?, 'tickets', 3, ?, ?, ?, ?, ?, ?, ?)`, id, []string{"transient", "permanent", "rate_limited"}[i%3],
			fmt.Sprintf("reason %d", i%3), now.UnixMilli(), history, fmt.Sprintf("%016x", 0xabc0+i%3), fmt.Sprintf("reason %d", i%3),
			fmt.Sprintf("v%d", i%2)); err != nil {
			t.Fatal(err)
		}
		m := &queuetest.Message{MsgID: id, Attempt: 1, SentAt: now,
			Text: fmt.Sprintf(`{"ticket":"T-%d","team":"infra","n":%d.50,"s":"<&>\u00e9🍺"}`, i, i), Type: queue.JSON}
		switch i % 5 {
		case 1:
			m.Text, m.Type = fmt.Sprintf("plain text %d\r\n\x01 ' = tab\t", i), queue.Text
		case 2:
			m.Text, m.Type = base64.StdEncoding.EncodeToString([]byte{0, 1, 2, 255, byte(i)}), queue.Bytes
		}
		msgs = append(msgs, m)
		now = now.Add(17 * time.Minute)
	}
	if err := capture.ConsumeBatch(context.Background(), "tickets-dlq", queuetest.Batch(msgs...)); err != nil {
		t.Fatal(err)
	}
	if err := capture.ConsumeBatch(context.Background(), dlqName, queuetest.Batch(
		&queuetest.Message{MsgID: "beer-1", Attempt: 3, SentAt: now, Text: beer("b1")})); err != nil {
		t.Fatal(err)
	}
	// Acknowledge, replay and claim some tickets rows (by hand: the
	// triggers keep the counts, as for any change).
	for _, s := range []string{
		`UPDATE dlq_messages SET status = 'acknowledged', acknowledged_at = failed_at + 5, acknowledged_note = 'dup ''x''' WHERE source_queue = 'tickets' AND id % 4 = 1`,
		`UPDATE dlq_messages SET status = 'replayed', replayed_at = failed_at + 7, replay_count = 2, body_hash = 'h' || id WHERE source_queue = 'tickets' AND id % 4 = 2`,
		`UPDATE dlq_messages SET status = 'replaying', replaying_at = failed_at + 9, body_edited = 1 WHERE source_queue = 'tickets' AND id % 7 = 3`,
	} {
		if _, err := db.Exec(s); err != nil {
			t.Fatal(err)
		}
	}
}

// exportAll is GET /admin/dlq/export?format=ndjson&include_raw=true&status=all
// of pipeline on db (the pipelines ps configured), as the handler writes it.
func exportAll(t *testing.T, db *sql.DB, ps dlq.Pipelines, pipeline string) []byte {
	t.Helper()
	var buf bytes.Buffer
	p := inspect.ListParams{Filter: dlq.Filter{Status: dlq.StatusAll, Pipeline: pipeline}, IncludeRaw: true}
	one := dlq.Single(dlq.Store{DB: db, Pipelines: ps})
	res, err := inspect.Export{List: inspect.List{DBs: one, Cursors: dlq.NewCursors("k")}, MoveFields: true}.Run(context.Background(), p, func(rows []json.RawMessage) error {
		for _, r := range rows {
			buf.Write(r)
			buf.WriteByte('\n')
		}
		return nil
	})
	if err != nil || res.NextCursor != nil {
		t.Fatalf("export: %+v %v", res, err)
	}
	return buf.Bytes()
}

// importLines posts lines in requests of at most per lines.
func importLines(t *testing.T, dbs dlq.Databases, ndjson []byte, per int) (imported, skipped int) {
	t.Helper()
	lines := bytes.SplitAfter(bytes.TrimSuffix(ndjson, []byte("\n")), []byte("\n"))
	for len(lines) > 0 {
		k := min(per, len(lines))
		rows, err := ParseImport(bytes.Join(lines[:k], nil), ImportMaxLines)
		if err != nil {
			t.Fatal(err)
		}
		res, err := Import{DBs: dbs}.Run(context.Background(), rows)
		if err != nil {
			t.Fatal(err)
		}
		imported, skipped = imported+res.Imported, skipped+res.Skipped
		lines = lines[k:]
	}
	return imported, skipped
}

// signatureCounts reads dlq_signatures' counts (got) and counts them from the rows (want).
func signatureCounts(t *testing.T, db *sql.DB) (got, want map[string]int64) {
	t.Helper()
	got = keyed(t, db, `SELECT signature || '|pending', pending FROM dlq_signatures WHERE pending <> 0
		UNION ALL SELECT signature || '|replaying', replaying FROM dlq_signatures WHERE replaying <> 0
		UNION ALL SELECT signature || '|replayed', replayed FROM dlq_signatures WHERE replayed <> 0
		UNION ALL SELECT signature || '|acknowledged', acknowledged FROM dlq_signatures WHERE acknowledged <> 0`)
	want = keyed(t, db, `SELECT signature || '|' || status, COUNT(*) FROM dlq_messages WHERE signature IS NOT NULL GROUP BY 1`)
	return got, want
}

func checkMoveCounts(t *testing.T, db *sql.DB, step string) {
	t.Helper()
	checkCounts(t, db, 0, step)
	if got, want := signatureCounts(t, db); !reflect.DeepEqual(got, want) {
		t.Fatalf("after %s: dlq_signatures\n got %v\nwant %v", step, got, want)
	}
}

// Export, import into the pipeline's own database, export again: the same
// bytes, every field (ids, message ids, bodies and content types,
// statuses, times, replay counts, histories, signatures and versions); the
// new database's kept counts match its rows; a second import writes
// nothing.
func TestImportCopiesEveryFieldAndIsIdempotent(t *testing.T) {
	t.Parallel()
	shared, tickets, dbs := moveTickets(t)
	seedMoved(t, shared, dbs.Pipelines(), 40)
	before := exportAll(t, shared, dbs.Pipelines(), "tickets")
	if n := bytes.Count(before, []byte("\n")); n != 40 {
		t.Fatalf("%d lines exported, want 40", n)
	}
	for _, want := range []string{`"raw_encoding":"base64"`, `"status":"acknowledged"`, `"status":"replayed"`, `"status":"replaying"`,
		`"history":[{`, `"signature":{"signature":"000000000000abc0"`, `"body_edited":1`, `"version":"v1"`, `"content_type":"bytes"`} {
		if !bytes.Contains(before, []byte(want)) {
			t.Fatalf("the export lacks %s:\n%s", want, before)
		}
	}
	imported, skipped := importLines(t, dbs, before, 7)
	if imported != 40 || skipped != 0 {
		t.Fatalf("imported %d skipped %d", imported, skipped)
	}
	after := exportAll(t, tickets, dbs.Pipelines(), "tickets")
	if !bytes.Equal(before, after) {
		t.Fatalf("export after import differs:\nbefore %s\nafter  %s", before, after)
	}
	checkMoveCounts(t, tickets, "import")
	// The groups are the old database's, whole.
	groupsOf := func(db *sql.DB) map[string]int64 {
		return keyed(t, db, `SELECT json_array(signature, class, text, source_queue, pending, replaying, replayed, acknowledged,
			first_seen, last_seen, versions, sample_ids, announced_at) AS g, 1 AS one FROM dlq_signatures WHERE source_queue = 'tickets'`)
	}
	if old, moved := groupsOf(shared), groupsOf(tickets); len(old) < 3 || !reflect.DeepEqual(old, moved) {
		t.Fatalf("groups:\nold %v\nnew %v", old, moved)
	}
	// A repeated run (after a failure, or the whole file again) writes nothing.
	var changes int64
	tickets.QueryRow(`SELECT total_changes()`).Scan(&changes)
	imported, skipped = importLines(t, dbs, before, ImportMaxLines)
	if imported != 0 || skipped != 40 {
		t.Fatalf("again: imported %d skipped %d", imported, skipped)
	}
	if again := exportAll(t, tickets, dbs.Pipelines(), "tickets"); !bytes.Equal(again, before) {
		t.Fatal("a second import changed rows")
	}
	checkMoveCounts(t, tickets, "second import")
	// New failures captured in the new database get ids of its own range.
	if got := count(t, tickets, `SELECT seq FROM sqlite_sequence WHERE name = 'dlq_messages'`); got != dlq.IDBase("TICKETS_DB") {
		t.Fatalf("the new database's sequence moved to %d", got)
	}
}

// Release deletes from the old database only the rows the new one holds
// (same id and message_id) as they are (a row changed after its export
// stays), keeps the old database's counts right, removes
// the groups left empty and the queue's attempt records, and leaves the
// other pipelines' rows.
func TestReleaseDeletesOnlyImportedRows(t *testing.T) {
	t.Parallel()
	shared, tickets, dbs := moveTickets(t)
	seedMoved(t, shared, dbs.Pipelines(), 30)
	lines := bytes.SplitAfter(exportAll(t, shared, dbs.Pipelines(), "tickets"), []byte("\n"))
	importLines(t, dbs, bytes.Join(lines[:20], nil), 20) // 10 rows not imported
	if _, err := shared.Exec(`INSERT INTO message_attempts(message_id, queue, attempt, error_class, error, recorded_at) VALUES ('inflight', 'tickets', 1, 'transient', 'x', 1), ('beer', 'beer-enrichment', 1, 'transient', 'x', 1)`); err != nil {
		t.Fatal(err)
	}
	// The beer pipeline's own database is DB: there is nothing to release.
	_, err := Release{DBs: dbs}.Run(context.Background(), ReleaseParams{Pipeline: "tickets", Database: "TICKETS_DB"})
	wantInput(t, err, "OWN_DATABASE")
	_, err = Release{DBs: dbs}.Run(context.Background(), ReleaseParams{Pipeline: "tickets", Database: "NOPE"})
	wantInput(t, err, "UNKNOWN_DATABASE")
	_, err = Release{DBs: dbs}.Run(context.Background(), ReleaseParams{Pipeline: "nope", Database: "DB"})
	wantInput(t, err, "UNKNOWN_PIPELINE")
	_, err = Release{DBs: dbs}.Run(context.Background(), ReleaseParams{Pipeline: "tickets", Database: "DB", Limit: ReleaseMaxLimit + 1})
	wantInput(t, err, "INVALID_LIMIT")

	// One imported row changes in DB after its export: its copy is older,
	// so it stays.
	changedID := count(t, tickets, `SELECT MIN(id) FROM dlq_messages WHERE status = 'pending'`)
	const touch = `UPDATE dlq_messages SET status = 'acknowledged', acknowledged_at = updated_at + 1, updated_at = updated_at + 1 WHERE id = ?`
	if _, err := shared.Exec(touch, changedID); err != nil {
		t.Fatal(err)
	}
	var total, notImported, changed int
	p := ReleaseParams{Pipeline: "tickets", Database: "DB", Limit: 8}
	for i := 0; ; i++ {
		res, err := Release{DBs: dbs}.Run(context.Background(), p)
		if err != nil {
			t.Fatal(err)
		}
		checkMoveCounts(t, shared, fmt.Sprintf("release %d", i))
		total, notImported, changed = total+res.Released, notImported+res.NotImported, changed+res.Changed
		if res.NextAfter == nil {
			if res.Remaining != 11 {
				t.Fatalf("remaining %d, want the 10 rows not imported and the changed one", res.Remaining)
			}
			break
		}
		p.After = *res.NextAfter
	}
	if total != 19 || notImported != 10 || changed != 1 {
		t.Fatalf("released %d, not imported %d, changed %d", total, notImported, changed)
	}
	if got := count(t, shared, `SELECT COUNT(*) FROM dlq_messages WHERE source_queue = 'tickets'`); got != 11 {
		t.Fatalf("%d tickets rows left in DB", got)
	}
	if got := count(t, shared, `SELECT COUNT(*) FROM dlq_messages WHERE source_queue = 'beer-enrichment'`); got != 1 {
		t.Fatalf("the beer row went: %d", got)
	}
	if got := count(t, shared, `SELECT COUNT(*) FROM message_attempts WHERE queue = 'tickets'`); got != 0 {
		t.Fatalf("%d tickets attempt records left", got)
	}
	if got := count(t, shared, `SELECT COUNT(*) FROM message_attempts`); got != 1 {
		t.Fatalf("the beer attempt record went")
	}
	if got := count(t, tickets, `SELECT COUNT(*) FROM dlq_messages`); got != 20 {
		t.Fatalf("the new database holds %d rows", got)
	}
	// The rest imported, and what DB still holds exported and imported
	// again: the changed row's newer version is merged into its copy
	// (acknowledged there too), the others' versions were taken already.
	importLines(t, dbs, bytes.Join(lines[20:], nil), 100)
	again, err := ParseImport(exportAll(t, shared, dbs.Pipelines(), "tickets"), ImportMaxLines)
	if err != nil {
		t.Fatal(err)
	}
	if res, err := (Import{DBs: dbs}).Run(context.Background(), again); err != nil || res.Merged != 1 || res.Skipped != 10 || res.Imported != 0 {
		t.Fatalf("import again: %+v %v", res, err)
	}
	if got := count(t, tickets, `SELECT COUNT(*) FROM dlq_messages WHERE id = ? AND status = 'acknowledged'`, changedID); got != 1 {
		t.Fatal("the changed row's acknowledge is not on its copy")
	}
	checkMoveCounts(t, tickets, "import again")
	res, err := Release{DBs: dbs}.Run(context.Background(), ReleaseParams{Pipeline: "tickets", Database: "DB"})
	if err != nil || res.Released != 11 || res.Changed != 0 || res.NotImported != 0 || res.Remaining != 0 || res.NextAfter != nil {
		t.Fatalf("release: %+v %v", res, err)
	}
	checkMoveCounts(t, shared, "last release")
	if got := count(t, shared, `SELECT COUNT(*) FROM dlq_signatures WHERE source_queue = 'tickets'`); got != 0 {
		t.Fatalf("%d tickets groups left in DB", got)
	}
	checkMoveCounts(t, tickets, "import of the rest")
}

// A release whose window holds more than limit rows continues after the
// last one it read; one whose window holds none continues after the window.
func TestReleaseWindows(t *testing.T) {
	t.Parallel()
	shared, _, dbs := moveTickets(t)
	seedMoved(t, shared, dbs.Pipelines(), 3)
	if _, err := shared.Exec(`UPDATE sqlite_sequence SET seq = seq + 12000 WHERE name = 'dlq_messages'`); err != nil {
		t.Fatal(err)
	}
	seedMoved(t, shared, dbs.Pipelines(), 0)
	if _, err := shared.Exec(`INSERT INTO dlq_messages(message_id, row_key, failed_at, source_queue) VALUES ('late', 'k', 1, 'tickets')`); err != nil {
		t.Fatal(err)
	}
	rl := Release{DBs: dbs}
	res, err := rl.Run(context.Background(), ReleaseParams{Pipeline: "tickets", Database: "DB", Limit: 2})
	if err != nil || res.Scanned != 2 || res.NotImported != 2 || res.NextAfter == nil || *res.NextAfter != 2 {
		t.Fatalf("first: %+v %v", res, err)
	}
	res, err = rl.Run(context.Background(), ReleaseParams{Pipeline: "tickets", Database: "DB", Limit: 2, After: 2})
	if err != nil || res.Scanned != 1 || res.NextAfter == nil || *res.NextAfter != 2+ReleaseWindow {
		t.Fatalf("second: %+v %v", res, err)
	}
	// The ids between are a gap: the next window starts at the late row.
	var scanned []int
	for res.NextAfter != nil && len(scanned) < 5 {
		if res, err = rl.Run(context.Background(), ReleaseParams{Pipeline: "tickets", Database: "DB", Limit: 2, After: *res.NextAfter}); err != nil {
			t.Fatal(err)
		}
		scanned = append(scanned, res.Scanned)
	}
	if !reflect.DeepEqual(scanned, []int{1}) {
		t.Fatalf("rows scanned per window after the first two: %v", scanned)
	}
}

// Lines from two databases are refused: a request is one batch.
func TestImportRefusesLinesOfTwoDatabases(t *testing.T) {
	t.Parallel()
	shared, _, dbs := moveTickets(t)
	seedMoved(t, shared, dbs.Pipelines(), 2)
	beers := exportAll(t, shared, dbs.Pipelines(), "beers")
	ticketLines := exportAll(t, shared, dbs.Pipelines(), "tickets")
	rows, err := ParseImport(append(append([]byte{}, ticketLines...), beers...), ImportMaxLines)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Import{DBs: dbs}.Run(context.Background(), rows)
	wantInput(t, err, "MIXED_DATABASES")
	if !strings.Contains(err.Error(), "line 3") {
		t.Fatalf("the error names no line: %v", err)
	}
}

// Every bad line is refused with the line's number, and nothing is written.
func TestParseImportRefusesBadLines(t *testing.T) {
	t.Parallel()
	shared, tickets, dbs := moveTickets(t)
	seedMoved(t, shared, dbs.Pipelines(), 2)
	good := bytes.Split(bytes.TrimSuffix(exportAll(t, shared, dbs.Pipelines(), "tickets"), []byte("\n")), []byte("\n"))
	edit := func(f func(m map[string]any)) string {
		var m map[string]any
		json.Unmarshal(good[1], &m)
		f(m)
		b, _ := json.Marshal(m)
		return string(b)
	}
	for name, bad := range map[string]string{
		"empty line":      "",
		"not JSON":        "{",
		"array":           "[]",
		"trailing data":   string(good[1]) + " {}",
		"unknown field":   edit(func(m map[string]any) { m["extra"] = 1 }),
		"no raw_message":  edit(func(m map[string]any) { delete(m, "raw_message") }),
		"no history":      edit(func(m map[string]any) { delete(m, "history") }),
		"duplicate key":   strings.Replace(string(good[1]), `{"id":`, `{"status":"pending","id":`, 1),
		"zero id":         edit(func(m map[string]any) { m["id"] = 0 }),
		"fractional id":   edit(func(m map[string]any) { m["id"] = 1.5 }),
		"huge id":         edit(func(m map[string]any) { m["id"] = 1 << 60 }),
		"string id":       edit(func(m map[string]any) { m["id"] = "1" }),
		"status":          edit(func(m map[string]any) { m["status"] = "gone" }),
		"content type":    edit(func(m map[string]any) { m["content_type"] = "xml" }),
		"encoding":        edit(func(m map[string]any) { m["raw_encoding"] = "hex" }),
		"negative time":   edit(func(m map[string]any) { m["failed_at"] = -1 }),
		"history object":  edit(func(m map[string]any) { m["history"] = map[string]any{} }),
		"empty queue":     edit(func(m map[string]any) { m["source_queue"] = "" }),
		"empty message":   edit(func(m map[string]any) { m["message_id"] = "" }),
		"signature hex":   edit(func(m map[string]any) { m["signature"].(map[string]any)["signature"] = "XYZ" }),
		"signature class": edit(func(m map[string]any) { m["signature"].(map[string]any)["class"] = "" }),
		"versions":        edit(func(m map[string]any) { m["signature"].(map[string]any)["versions"] = "v1" }),
		"body_edited":     edit(func(m map[string]any) { m["body_edited"] = 2 }),
		"same id":         strings.Replace(string(good[1]), `"message_id":"`, `"message_id":"other-`, 1),
		"same message id": edit(func(m map[string]any) { m["id"] = 999 }),
		"not UTF-8":       strings.Replace(string(good[1]), `"status"`, "\"st\xffatus\"", 1),
	} {
		t.Run(name, func(t *testing.T) {
			body := string(good[0]) + "\n" + bad + "\n"
			if name == "same id" || name == "same message id" {
				body = string(good[1]) + "\n" + bad + "\n"
			}
			_, err := ParseImport([]byte(body), ImportMaxLines)
			wantInput(t, err, "INVALID_LINE")
			if !strings.Contains(err.Error(), "line 2:") {
				t.Fatalf("error does not name line 2: %v", err)
			}
		})
	}
	_, err := ParseImport([]byte(strings.Repeat(string(good[0])+"\n", ImportMaxLines+1)), ImportMaxLines)
	wantInput(t, err, "TOO_MANY_LINES")
	_, err = ParseImport([]byte("\n"), ImportMaxLines)
	wantInput(t, err, "INVALID_REQUEST")
	if got := count(t, tickets, `SELECT COUNT(*) FROM dlq_messages`); got != 0 {
		t.Fatalf("%d rows written", got)
	}
	_ = dbs
}

// What an import and a release statement read and write, per row moved
// (natively; the e2e test measures D1's own figures).
func TestImportBatchIsSixStatements(t *testing.T) {
	t.Parallel()
	shared, tickets, dbs := moveTickets(t)
	seedMoved(t, shared, dbs.Pipelines(), 5)
	rows, err := ParseImport(exportAll(t, shared, dbs.Pipelines(), "tickets"), ImportMaxLines)
	if err != nil {
		t.Fatal(err)
	}
	var n int
	rec := recordingBatch{run: sqlbatch.Tx{DB: tickets}, n: &n}
	d := dbs
	d.All = append([]dlq.Database(nil), dbs.All...)
	d.All[1].Batch = rec
	if res, err := (Import{DBs: d}).Run(context.Background(), rows); err != nil || res.Imported != 5 || res.Database != "TICKETS_DB" {
		t.Fatalf("%+v %v", res, err)
	}
	if n != 6 {
		t.Fatalf("%d statements in the batch, want 6", n)
	}
}

type recordingBatch struct {
	run sqlbatch.Runner
	n   *int
}

func (r recordingBatch) Batch(ctx context.Context, stmts ...sqlbatch.Stmt) ([]json.RawMessage, error) {
	*r.n += len(stmts)
	return r.run.Batch(ctx, stmts...)
}

// An import keeps the databases' ids apart: a database whose ids were not
// seeded to its own range takes nothing, and no id past the target's range
// is taken (it would move the target's sequence into another range).
func TestImportKeepsIDRangesApart(t *testing.T) {
	t.Parallel()
	shared, tickets, dbs := moveTickets(t)
	seedMoved(t, shared, dbs.Pipelines(), 2)
	rows, err := ParseImport(exportAll(t, shared, dbs.Pipelines(), "tickets"), ImportMaxLines)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tickets.Exec(`DELETE FROM sqlite_sequence`); err != nil {
		t.Fatal(err)
	}
	_, err = Import{DBs: dbs}.Run(context.Background(), rows)
	wantInput(t, err, "DATABASE_NOT_SEEDED")
	if _, err := tickets.Exec(dlq.SeedIDsSQL("TICKETS_DB")); err != nil {
		t.Fatal(err)
	}
	rows[1].ID = dlq.IDBase("TICKETS_DB") + 1<<40
	_, err = Import{DBs: dbs}.Run(context.Background(), rows)
	wantInput(t, err, "ID_OUT_OF_RANGE")
	if !strings.Contains(err.Error(), "line 2") || !strings.Contains(err.Error(), fmt.Sprintf("(below %d)", dlq.IDBase("TICKETS_DB")+1<<40)) {
		t.Fatalf("the error names no line or not the range's end: %v", err)
	}
	rows[1].ID = dlq.IDBase("TICKETS_DB") + 1<<40 - 1 // the last id of its own range
	if res, err := (Import{DBs: dbs}).Run(context.Background(), rows); err != nil || res.Imported != 2 {
		t.Fatalf("%+v %v", res, err)
	}
	if got := count(t, tickets, `SELECT COUNT(*) FROM dlq_messages`); got != 2 {
		t.Fatalf("%d rows", got)
	}
}

// A line whose message_id the database already holds under another id (a
// redelivery captured there after the switch) is merged into that row:
// its replays and history join the row's, which keeps its id and its
// newer status; a line whose id it holds with another message_id is
// skipped. The kept counts (dlq_tally, dlq_activity, dlq_signatures) add
// nothing for either (pins import.go's NOT EXISTS guards).
func TestImportMergesARedeliveryAndSkipsAnotherMessagesID(t *testing.T) {
	t.Parallel()
	shared, tickets, dbs := moveTickets(t)
	seedMoved(t, shared, dbs.Pipelines(), 3)
	rows, err := ParseImport(exportAll(t, shared, dbs.Pipelines(), "tickets"), ImportMaxLines)
	if err != nil || len(rows) != 3 {
		t.Fatal(len(rows), err)
	}
	// rows[1]'s message, captured again in TICKETS_DB: a row of its own range.
	reason := "status 400: captured again"
	if err := (dlq.Store{DB: tickets, Pipelines: dbs.Pipelines()}).Put(context.Background(), []dlq.Failure{{MessageID: rows[1].MessageID, SourceQueue: "tickets",
		Body: `{"ticket":"T-1"}`, Class: "permanent", Reason: reason, FailedAt: time.UnixMilli(rows[1].FailedAt)}}); err != nil {
		t.Fatal(err)
	}
	// rows[2]'s id, taken in TICKETS_DB by another message.
	other := rows[2]
	other.MessageID = "another-message"
	if res, err := (Import{DBs: dbs}).Run(context.Background(), []ImportRow{other}); err != nil || res.Imported != 1 {
		t.Fatalf("%+v %v", res, err)
	}
	checkMoveCounts(t, tickets, "the setup")
	res, err := Import{DBs: dbs}.Run(context.Background(), rows)
	if err != nil || res.Lines != 3 || res.Imported != 1 || res.Merged != 1 || res.Skipped != 1 {
		t.Fatalf("%+v %v", res, err)
	}
	checkMoveCounts(t, tickets, "the import")
	var rc, hist, status string
	if err := tickets.QueryRow(`SELECT replay_count, json_array_length(history), status FROM dlq_messages WHERE message_id = ?`,
		rows[1].MessageID).Scan(&rc, &hist, &status); err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprint(rows[1].ReplayCount); rc != want || hist != "1" || status != dlq.StatusPending {
		t.Fatalf("merged row: replay_count %s (want %s), %s history entries (want the line's 1), status %s", rc, want, hist, status)
	}
	again, err := Import{DBs: dbs}.Run(context.Background(), rows)
	if err != nil || again.Imported != 0 || again.Merged != 0 || again.Skipped != 3 {
		t.Fatalf("a second import: %+v %v", again, err)
	}
	got := keyed(t, tickets, `SELECT message_id || '=' || (id >= ?) || ':' || COALESCE(failure_reason, '') AS k, 1 AS one FROM dlq_messages`, dlq.IDBase("TICKETS_DB"))
	want := map[string]int64{
		rows[0].MessageID + "=0:" + *rows[0].FailureReason: 1,
		rows[1].MessageID + "=1:" + reason:                 1,
		"another-message=0:" + *rows[2].FailureReason:      1,
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("rows\n got %v\nwant %v", got, want)
	}
}

// Beer rows (a brewer on some, pending, acknowledged and replayed, failed
// in different hours) imported into another deployment's shared database:
// every field as exported, and its kept counts, the per-brewer pending
// count included, equal counting its rows.
func TestImportBeerRowsKeepsTheBrewerCounts(t *testing.T) {
	t.Parallel()
	from, to := sqlitetest.New(t), sqlitetest.New(t)
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	capture := &dlq.Capture{DB: from, Log: discard, Clock: func() time.Time { return now }, SourceQueue: map[string]string{dlqName: "beer-enrichment"}}
	var msgs []*queuetest.Message
	for i := range 12 {
		body := fmt.Sprintf(`{"beer_id":"b%d","beer_name":"Beer %d","brewer":"Brewer %d"}`, i, i, i%3)
		if i%4 == 3 {
			body = fmt.Sprintf(`{"beer_id":"b%d","beer_name":"Beer %d"}`, i, i)
		}
		msgs = append(msgs, &queuetest.Message{MsgID: fmt.Sprintf("bm-%d", i), Attempt: 3, SentAt: now.Add(time.Duration(i) * 41 * time.Minute), Text: body})
	}
	if err := capture.ConsumeBatch(context.Background(), dlqName, queuetest.Batch(msgs...)); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{
		`UPDATE dlq_messages SET failed_at = failed_at + id * 2460000`,
		`UPDATE dlq_messages SET status = 'acknowledged', acknowledged_at = failed_at + 7200000 WHERE id % 4 = 1`,
		`UPDATE dlq_messages SET status = 'replayed', replayed_at = failed_at + 3600000, replay_count = 1 WHERE id % 4 = 2`,
	} {
		if _, err := from.Exec(s); err != nil {
			t.Fatal(err)
		}
	}
	if brewers := count(t, from, `SELECT COUNT(DISTINCT label_2) FROM dlq_messages WHERE status = 'pending'`); brewers < 2 {
		t.Fatalf("fixture: %d brewers pending", brewers)
	}
	before := exportAll(t, from, nil, "beers")
	imported, skipped := importLines(t, dlq.Single(dlq.Store{DB: to}), before, ImportMaxLines)
	if imported != 12 || skipped != 0 {
		t.Fatalf("imported %d skipped %d", imported, skipped)
	}
	if after := exportAll(t, to, nil, "beers"); !bytes.Equal(before, after) {
		t.Fatalf("export after import differs:\nbefore %s\nafter  %s", before, after)
	}
	checkMoveCounts(t, to, "import")
}

// An import into a database that already has some of the lines' groups
// (captured there first, or by an earlier request of the same import)
// keeps each group whole: counts added up, first_seen the earlier,
// last_seen the later, announced_at the database's when it has one, else
// the lines'; a line without a signature (a row captured before
// signatures) makes no group (pins import.go's dlq_signatures upsert).
func TestImportMergesIntoTheGroupsTheDatabaseHas(t *testing.T) {
	t.Parallel()
	from, to := sqlitetest.New(t), sqlitetest.New(t)
	t0 := time.Date(2030, 3, 1, 0, 0, 0, 0, time.UTC)
	put := func(db *sql.DB, id, reason string, at time.Duration) {
		t.Helper()
		if err := (dlq.Store{DB: db}).Put(context.Background(), []dlq.Failure{{MessageID: id, SourceQueue: "beer-enrichment", Body: beer(id),
			Class: "permanent", Reason: reason, FailedAt: t0.Add(at)}}); err != nil {
			t.Fatal(err)
		}
	}
	const a, b, c = "status 400: no abv", "status 422: bad name", "status 404: gone"
	for i := range 6 {
		put(from, fmt.Sprint("a", i), a, time.Duration(i+1)*time.Hour)
	}
	for i := range 3 {
		put(from, fmt.Sprint("b", i), b, time.Duration(2*i+2)*time.Hour)
		put(from, fmt.Sprint("c", i), c, time.Duration(3*i+1)*time.Hour)
	}
	// to's own rows have ids apart from the lines'.
	if _, err := to.Exec(`INSERT INTO sqlite_sequence(name, seq) VALUES ('dlq_messages', 1000)`); err != nil {
		t.Fatal(err)
	}
	put(to, "a-early", a, 0)           // before every line of a
	put(to, "a-late", a, 10*time.Hour) // after every line of a
	put(to, "b-mid", b, 3*time.Hour)   // among b's lines
	sig := func(reason string) string { return dlq.SignatureIn("beer-enrichment", "permanent", reason).Key }
	for _, s := range []struct {
		db     *sql.DB
		reason string
		at     int64
	}{{from, a, 111}, {from, c, 333}, {to, b, 222}} {
		if _, err := s.db.Exec(`UPDATE dlq_signatures SET announced_at = ? WHERE signature = ?`, s.at, sig(s.reason)); err != nil {
			t.Fatal(err)
		}
	}
	// b0 was captured before signatures: no group.
	if _, err := from.Exec(`UPDATE dlq_messages SET signature = NULL WHERE message_id = 'b0'`); err != nil {
		t.Fatal(err)
	}
	type group struct {
		Pending, First, Last int64
		Announced            int64 // 0: not announced
	}
	read := func(db *sql.DB) map[string]group {
		rows, err := db.Query(`SELECT signature, pending, first_seen, last_seen, COALESCE(announced_at, 0) AS announced FROM dlq_signatures`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		out := map[string]group{}
		for rows.Next() {
			var s sql.NullString
			var g group
			if err := rows.Scan(&s, &g.Pending, &g.First, &g.Last, &g.Announced); err != nil {
				t.Fatal(err)
			}
			out[fmt.Sprintf("%s/%v", s.String, s.Valid)] = g
		}
		return out
	}
	ms := func(d time.Duration) int64 { return t0.Add(d).UnixMilli() }
	want := map[string]group{
		sig(a) + "/true": {Pending: 8, First: ms(0), Last: ms(10 * time.Hour), Announced: 111},
		sig(b) + "/true": {Pending: 3, First: ms(2 * time.Hour), Last: ms(6 * time.Hour), Announced: 222},
		sig(c) + "/true": {Pending: 3, First: ms(time.Hour), Last: ms(7 * time.Hour), Announced: 333},
	}
	// Five lines a request: c's newest two lines (7 h, 4 h) come in the
	// first, its oldest in the last; a's and b's meet the database's copy.
	imported, skipped := importLines(t, dlq.Single(dlq.Store{DB: to}), exportAll(t, from, nil, "beers"), 5)
	if imported != 12 || skipped != 0 {
		t.Fatalf("imported %d skipped %d", imported, skipped)
	}
	if got := read(to); !reflect.DeepEqual(got, want) {
		t.Fatalf("groups\n got %+v\nwant %+v", got, want)
	}
	checkMoveCounts(t, to, "import")
}
