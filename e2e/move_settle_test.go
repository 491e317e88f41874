//go:build e2e

package e2e

import (
	"bytes"
	"fmt"
	"net/http"
	"testing"
	"time"

	api "github.com/redrive/redrive/client"
	"github.com/redrive/redrive/dlq/relocation"
)

// seedTicketsSQL inserts n tickets rows into a database (as captured
// there before the switch: pending, every tenth acknowledged, histories
// and bodies of about 600 bytes), message ids prefix-0..n-1.
func seedTicketsSQL(n int, prefix string, now int64) string {
	return fmt.Sprintf(`INSERT INTO dlq_messages(message_id, row_key, failed_at, failure_count, failure_reason, failure_class,
			source_queue, status, raw_message, raw_encoding, content_type, last_message_id, first_failed_at, updated_at,
			history, acknowledged_at)
		WITH RECURSIVE seq(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM seq WHERE i + 1 < %[1]d)
		SELECT '%[2]s-' || i, 'S-' || i, %[3]d - i * 1000, 3, 'permanent: reason ' || (i %% 7), 'permanent',
			'%[4]s', CASE WHEN i %% 10 = 0 THEN 'acknowledged' ELSE 'pending' END,
			json_object('ticket', 'S-' || i, 'team', 'infra', 'pad', hex(zeroblob(250))), 'text', 'json', '%[2]s-' || i,
			%[3]d - i * 1000, %[3]d - i * 1000,
			json_array(json_object('at', %[3]d - i * 1000, 'attempt', 3, 'class', 'permanent', 'error', 'reason ' || (i %% 7))),
			CASE WHEN i %% 10 = 0 THEN %[3]d END
		FROM seq`, n, prefix, now, ticketsQueue)
}

// importNDJSON posts ndjson to POST /admin/dlq/import in chunks and sums the answers.
func importNDJSON(t *testing.T, w *Worker, ndjson []byte) (res relocation.ImportResult) {
	t.Helper()
	chunks, err := api.ImportChunks(ndjson, api.ImportMaxLines, api.ImportMaxBytes)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range chunks {
		r, err := w.Do(http.MethodPost, "/admin/dlq/import", c, map[string]string{"X-API-Key": TestAPIKey,
			"X-Admin-Secret": TestAdminSecret, "Content-Type": "application/x-ndjson"})
		if err != nil || r.Status != http.StatusOK || r.Contract != nil {
			t.Fatalf("import: %v %v %s", err, r.Contract, r.Raw)
		}
		var one relocation.ImportResult
		r.Decode(t, &one)
		res.Database, res.Lines, res.Imported, res.Merged, res.Skipped = one.Database, res.Lines+one.Lines,
			res.Imported+one.Imported, res.Merged+one.Merged, res.Skipped+one.Skipped
	}
	return res
}

// releaseAll walks POST /admin/dlq/release from after 0 and sums the answers.
func releaseAll(t *testing.T, w *Worker, database string) (sum relocation.ReleaseResult) {
	t.Helper()
	after := int64(0)
	for {
		r := w.Admin(t, http.MethodPost, "/admin/dlq/release", map[string]any{"pipeline": "tickets", "database": database, "after": after})
		if r.Status != http.StatusOK {
			t.Fatalf("release: %d %s", r.Status, r.Raw)
		}
		var res relocation.ReleaseResult
		r.Decode(t, &res)
		sum.Scanned, sum.Released, sum.NotImported, sum.Changed = sum.Scanned+res.Scanned, sum.Released+res.Released,
			sum.NotImported+res.NotImported, sum.Changed+res.Changed
		if res.NextAfter == nil {
			sum.Remaining = res.Remaining
			return sum
		}
		after = *res.NextAfter
	}
}

// In workerd, a move settles what happened to its rows meanwhile: a DLQ
// redelivery of a message of DB captured again in TICKETS_DB is merged by
// the import into that row (one row per message); a row replayed in DB
// after its export, its copy acknowledged in TICKETS_DB, is not released
// (changed) until exported and imported again, which puts its replay on
// the copy. At the end DB holds none of the pipeline's rows, TICKETS_DB
// each message once, and every kept count equals counting the rows.
func TestMoveSettlesRedeliveriesAndChangedRows(t *testing.T) {
	vars := map[string]string{"D1_USAGE_FLUSH_SECONDS": "0", "PIPELINES": pipelinesWithTickets(t, TicketsDB)}
	w := startWorkerWith(t, Options{Vars: vars, OwnDatabases: true})
	prefix := unique("settle")
	w.Exec(t, seedTicketsSQL(12, prefix, time.Now().UnixMilli()))
	old := exportNDJSON(t, w, "pipeline=tickets&database=DB")
	if n := bytes.Count(old, []byte("\n")); n != 12 {
		t.Fatalf("%d lines exported", n)
	}
	// A redelivery of prefix-3, captured in TICKETS_DB after the switch.
	w.ExecOf(t, TicketsDB, fmt.Sprintf(`INSERT INTO dlq_messages(message_id, row_key, failed_at, source_queue, raw_message, raw_encoding,
		content_type, last_message_id, first_failed_at, updated_at) VALUES ('%[1]s-3', 'S-3', %[2]d, '%[3]s', '{}', 'text', 'json', '%[1]s-3', %[2]d, %[2]d)`,
		prefix, time.Now().UnixMilli(), ticketsQueue))
	if res := importNDJSON(t, w, old); res.Database != TicketsDB || res.Imported != 11 || res.Merged != 1 || res.Skipped != 0 {
		t.Fatalf("import: %+v", res)
	}
	// prefix-5 replayed in DB after its export; its copy acknowledged in TICKETS_DB.
	w.Exec(t, fmt.Sprintf(`UPDATE dlq_messages SET status = 'replayed', replay_count = replay_count + 1, replayed_at = updated_at + 1,
		updated_at = updated_at + 1 WHERE message_id = '%s-5'`, prefix))
	copyID := w.IntOf(t, TicketsDB, `SELECT id FROM dlq_messages WHERE message_id = ?`, prefix+"-5")
	if r := w.Admin(t, http.MethodPost, "/admin/dlq/acknowledge", map[string]any{"ids": []int64{copyID}}); r.Status != http.StatusOK {
		t.Fatalf("acknowledge: %d %s", r.Status, r.Raw)
	}
	if res := releaseAll(t, w, "DB"); res.Released != 11 || res.Changed != 1 || res.NotImported != 0 || res.Remaining != 1 {
		t.Fatalf("release: %+v", res)
	}
	again := exportNDJSON(t, w, "pipeline=tickets&database=DB")
	if res := importNDJSON(t, w, again); res.Merged != 1 || res.Imported != 0 {
		t.Fatalf("import again: %+v", res)
	}
	if res := releaseAll(t, w, "DB"); res.Released != 1 || res.Changed != 0 || res.NotImported != 0 || res.Remaining != 0 {
		t.Fatalf("release again: %+v", res)
	}
	if n := w.Int(t, `SELECT COUNT(*) FROM dlq_messages WHERE source_queue = ?`, ticketsQueue); n != 0 {
		t.Fatalf("DB keeps %d tickets rows", n)
	}
	tickets := w.DBOf(t, TicketsDB)
	var rows, distinct, acked, replays int64
	if err := tickets.QueryRow(`SELECT COUNT(*), COUNT(DISTINCT message_id), SUM(status = 'acknowledged'),
			SUM(CASE WHEN message_id = ? THEN replay_count END) FROM dlq_messages WHERE message_id LIKE ?`, prefix+"-5", prefix+"-%").
		Scan(&rows, &distinct, &acked, &replays); err != nil {
		t.Fatal(err)
	}
	if rows != 12 || distinct != 12 || acked != 3 || replays != 1 {
		t.Fatalf("TICKETS_DB: %d rows, %d messages, %d acknowledged, replay_count of the replayed row %d", rows, distinct, acked, replays)
	}
	for _, db := range []string{"DB", TicketsDB} {
		for _, st := range []string{"pending", "replaying", "replayed", "acknowledged"} {
			kept := w.IntOf(t, db, `SELECT COALESCE(SUM(n), 0) FROM dlq_tally WHERE source_queue = ? AND status = ?`, ticketsQueue, st)
			held := w.IntOf(t, db, `SELECT COUNT(*) FROM dlq_messages WHERE source_queue = ? AND status = ?`, ticketsQueue, st)
			if kept != held {
				t.Fatalf("%s: %d %s rows kept, %d held", db, kept, st, held)
			}
		}
	}
}
