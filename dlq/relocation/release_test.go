package relocation

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/config"
	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/internal/sqlitetest"
	"github.com/redrive/redrive/sqlbatch"
)

// Every bad release request is refused with its own code and deletes
// nothing; the bounds themselves (limit 500, after 0 and 2^53-1, limit 0
// as the default) are accepted.
func TestReleaseRefusesBadRequests(t *testing.T) {
	t.Parallel()
	shared, tickets, dbs := moveTickets(t)
	seedMoved(t, shared, dbs.Pipelines(), 6)
	importLines(t, dbs, exportAll(t, shared, dbs.Pipelines(), "tickets"), ImportMaxLines)
	before := count(t, shared, `SELECT COUNT(*) FROM dlq_messages`)
	for _, c := range []struct {
		name string
		p    ReleaseParams
		code string
		says string
	}{
		{"no pipeline", ReleaseParams{Database: "DB"}, "UNKNOWN_PIPELINE", "pipeline is required"},
		{"unknown pipeline", ReleaseParams{Pipeline: "nope", Database: "DB"}, "UNKNOWN_PIPELINE", "configured pipeline (beers, tickets)"},
		{"unknown database", ReleaseParams{Pipeline: "tickets", Database: "NOPE"}, "UNKNOWN_DATABASE", "(DB, TICKETS_DB)"},
		{"no database", ReleaseParams{Pipeline: "tickets"}, "UNKNOWN_DATABASE", `got ""`},
		{"the pipeline's own database", ReleaseParams{Pipeline: "tickets", Database: "TICKETS_DB"}, "OWN_DATABASE", "TICKETS_DB is pipeline tickets's own"},
		{"the shared database of a pipeline on it", ReleaseParams{Pipeline: "beers", Database: "DB"}, "OWN_DATABASE", "DB is pipeline beers's own"},
		{"negative limit", ReleaseParams{Pipeline: "tickets", Database: "DB", Limit: -1}, "INVALID_LIMIT", "1..500"},
		{"limit over the most", ReleaseParams{Pipeline: "tickets", Database: "DB", Limit: ReleaseMaxLimit + 1}, "INVALID_LIMIT", "1..500"},
		{"negative after", ReleaseParams{Pipeline: "tickets", Database: "DB", After: -1}, "INVALID_AFTER", "non-negative"},
		{"after past the last id", ReleaseParams{Pipeline: "tickets", Database: "DB", After: importMaxID + 1}, "INVALID_AFTER", "non-negative"},
	} {
		t.Run(c.name, func(t *testing.T) {
			res, err := Release{DBs: dbs}.Run(context.Background(), c.p)
			wantInput(t, err, c.code)
			if !strings.Contains(err.Error(), c.says) {
				t.Fatalf("%v does not say %q", err, c.says)
			}
			if res != (ReleaseResult{}) {
				t.Fatalf("a refused release answered %+v", res)
			}
			if got := count(t, shared, `SELECT COUNT(*) FROM dlq_messages`); got != before {
				t.Fatalf("%d rows left of %d", got, before)
			}
		})
	}
	if got := count(t, tickets, `SELECT COUNT(*) FROM dlq_messages`); got != 6 {
		t.Fatalf("the own database holds %d rows", got)
	}
	// The bounds are accepted: after 2^53-1 scans nothing and ends the
	// scan; limit 500 and limit 0 (the default) release everything held.
	res, err := Release{DBs: dbs}.Run(context.Background(), ReleaseParams{Pipeline: "tickets", Database: "DB", After: importMaxID})
	if err != nil || res.Scanned != 0 || res.Released != 0 || res.NextAfter != nil {
		t.Fatalf("after 2^53-1: %+v %v", res, err)
	}
	for _, limit := range []int{ReleaseMaxLimit, 0} {
		res, err := Release{DBs: dbs}.Run(context.Background(), ReleaseParams{Pipeline: "tickets", Database: "DB", Limit: limit})
		if err != nil || res.Pipeline != "tickets" || res.Database != "DB" || res.Into != "TICKETS_DB" || res.NextAfter != nil {
			t.Fatalf("limit %d: %+v %v", limit, res, err)
		}
		if want := map[int]int{ReleaseMaxLimit: 6, 0: 0}[limit]; res.Released != want || res.Scanned != want {
			t.Fatalf("limit %d: released %d of %d scanned, want %d", limit, res.Released, res.Scanned, want)
		}
	}
}

// The scan ends (next_after null) exactly when its window reaches the old
// database's last id, of any queue: a window ending on the last id is the
// last; one ending an id before it is not. A window holds the row at its
// end and not the row at its start (the previous window's end).
func TestReleaseScanEndsAtTheLastID(t *testing.T) {
	t.Parallel()
	shared, _, dbs := moveTickets(t)
	insert := func(id int64, queue string) {
		t.Helper()
		if _, err := shared.Exec(`INSERT INTO dlq_messages(id, message_id, row_key, failed_at, source_queue) VALUES (?, ?, 'k', 1, ?)`,
			id, fmt.Sprintf("%s-%d", queue, id), queue); err != nil {
			t.Fatal(err)
		}
	}
	insert(1, "tickets")
	insert(ReleaseWindow, "tickets") // the last id is the window's end
	rl := Release{DBs: dbs}
	res, err := rl.Run(context.Background(), ReleaseParams{Pipeline: "tickets", Database: "DB"})
	if err != nil || res.Scanned != 2 || res.NotImported != 2 || res.NextAfter != nil {
		t.Fatalf("window ending on the last id: %+v %v", res, err)
	}
	insert(ReleaseWindow+1, "beer-enrichment") // one id past the window
	res, err = rl.Run(context.Background(), ReleaseParams{Pipeline: "tickets", Database: "DB"})
	if err != nil || res.Scanned != 2 || res.NextAfter == nil || *res.NextAfter != ReleaseWindow {
		t.Fatalf("window ending an id before the last: %+v %v", res, err)
	}
	res, err = rl.Run(context.Background(), ReleaseParams{Pipeline: "tickets", Database: "DB", After: ReleaseWindow})
	if err != nil || res.Scanned != 0 || res.NextAfter != nil {
		t.Fatalf("the window after: %+v %v", res, err)
	}
	res, err = rl.Run(context.Background(), ReleaseParams{Pipeline: "tickets", Database: "DB", After: ReleaseWindow - 1})
	if err != nil || res.Scanned != 1 || res.NextAfter != nil {
		t.Fatalf("the window from the last tickets row: %+v %v", res, err)
	}
}

// The queue's attempt records stay until the last window (a message of the
// queue may still be in flight to its consumer) and go with the last
// window even when that window deletes no row; a window that is not the
// last and deletes nothing runs no batch at all (no rows read or written).
func TestReleaseDeletesAttemptRecordsWithTheLastWindow(t *testing.T) {
	t.Parallel()
	shared, _, dbs := moveTickets(t)
	seedMoved(t, shared, dbs.Pipelines(), 4)
	rows, err := ParseImport(exportAll(t, shared, dbs.Pipelines(), "tickets"), ImportMaxLines)
	if err != nil {
		t.Fatal(err)
	}
	var first []ImportRow // ids 1 and 2 (the export is newest first)
	for _, r := range rows {
		if r.ID <= 2 {
			first = append(first, r)
		}
	}
	if _, err := (Import{DBs: dbs}).Run(context.Background(), first); err != nil || len(first) != 2 {
		t.Fatalf("import of %d rows: %v", len(first), err)
	}
	if _, err := shared.Exec(`INSERT INTO message_attempts(message_id, queue, attempt, error_class, error, recorded_at)
		VALUES ('inflight', 'tickets', 1, 'transient', 'x', 1)`); err != nil {
		t.Fatal(err)
	}
	attempts := func() int64 {
		return count(t, shared, `SELECT COUNT(*) FROM message_attempts WHERE queue = 'tickets'`)
	}
	inFlight := attempts()
	var n int
	d := dbs
	d.All = append([]dlq.Database(nil), dbs.All...)
	d.All[0].Batch = recordingBatch{run: sqlbatch.Tx{DB: shared}, n: &n}
	rl := Release{DBs: d}
	// Window 1 (ids 1 and 2, both imported): deleted, attempts kept.
	res, err := rl.Run(context.Background(), ReleaseParams{Pipeline: "tickets", Database: "DB", Limit: 2})
	if err != nil || res.Released != 2 || res.NextAfter == nil {
		t.Fatalf("window 1: %+v %v", res, err)
	}
	if got := attempts(); got != inFlight || got == 0 {
		t.Fatalf("window 1 (not the last) left %d attempt records of %d", got, inFlight)
	}
	// Window 2 (ids 3 and 4, not imported): no batch.
	n = 0
	res, err = rl.Run(context.Background(), ReleaseParams{Pipeline: "tickets", Database: "DB", Limit: 2, After: *res.NextAfter})
	if err != nil || res.Released != 0 || res.NotImported != 2 || res.NextAfter == nil {
		t.Fatalf("window 2: %+v %v", res, err)
	}
	if n != 0 || attempts() != inFlight {
		t.Fatalf("window 2 (nothing held, not the last) ran %d statements; %d attempt records left", n, attempts())
	}
	// Window 3 (the beer row only; the last): nothing deleted, attempts gone.
	res, err = rl.Run(context.Background(), ReleaseParams{Pipeline: "tickets", Database: "DB", Limit: 2, After: *res.NextAfter})
	if err != nil || res.Released != 0 || res.Scanned != 0 || res.NextAfter != nil {
		t.Fatalf("window 3: %+v %v", res, err)
	}
	if got := attempts(); got != 0 {
		t.Fatalf("the last window left %d attempt records", got)
	}
	if got := count(t, shared, `SELECT COUNT(*) FROM dlq_messages WHERE source_queue = 'tickets'`); got != 2 {
		t.Fatalf("%d tickets rows left, want the 2 not imported", got)
	}
}

// A row the own database holds under the same id but another message id is
// not the row's copy: it is not deleted and counts as not imported.
func TestReleaseNeedsTheSameMessageID(t *testing.T) {
	t.Parallel()
	shared, tickets, dbs := moveTickets(t)
	seedMoved(t, shared, dbs.Pipelines(), 2)
	importLines(t, dbs, exportAll(t, shared, dbs.Pipelines(), "tickets"), ImportMaxLines)
	if _, err := tickets.Exec(`UPDATE dlq_messages SET message_id = 'other' WHERE id = 1`); err != nil {
		t.Fatal(err)
	}
	res, err := Release{DBs: dbs}.Run(context.Background(), ReleaseParams{Pipeline: "tickets", Database: "DB"})
	if err != nil || res.Released != 1 || res.NotImported != 1 || res.Changed != 0 {
		t.Fatalf("%+v %v", res, err)
	}
	if got := count(t, shared, `SELECT COUNT(*) FROM dlq_messages WHERE id = 1`); got != 1 {
		t.Fatal("the row whose id the own database holds under another message id was deleted")
	}
	checkMoveCounts(t, shared, "release")
}

// A failure group keeps its row in the old database while any of its rows
// stays there, in whichever status: only a group left with no row goes.
func TestReleaseKeepsAGroupWithRowsLeft(t *testing.T) {
	t.Parallel()
	for status, set := range map[string]string{
		dlq.StatusPending:      `status = 'pending'`,
		dlq.StatusReplaying:    `status = 'replaying', replaying_at = failed_at + 9`,
		dlq.StatusReplayed:     `status = 'replayed', replayed_at = failed_at + 7`,
		dlq.StatusAcknowledged: `status = 'acknowledged', acknowledged_at = failed_at + 5`,
	} {
		t.Run(status, func(t *testing.T) {
			t.Parallel()
			shared, _, dbs := moveTickets(t)
			seedMoved(t, shared, dbs.Pipelines(), 6) // ids 1..6 in groups id % 3
			if _, err := shared.Exec(`UPDATE dlq_messages SET ` + set + ` WHERE source_queue = 'tickets'`); err != nil {
				t.Fatal(err)
			}
			rows, err := ParseImport(exportAll(t, shared, dbs.Pipelines(), "tickets"), ImportMaxLines)
			if err != nil {
				t.Fatal(err)
			}
			var first []ImportRow // ids 1..3: one row of each group
			for _, r := range rows {
				if r.ID <= 3 {
					first = append(first, r)
				}
			}
			if _, err := (Import{DBs: dbs}).Run(context.Background(), first); err != nil {
				t.Fatal(err)
			}
			res, err := Release{DBs: dbs}.Run(context.Background(), ReleaseParams{Pipeline: "tickets", Database: "DB"})
			if err != nil || res.Released != 3 || res.NotImported != 3 {
				t.Fatalf("%+v %v", res, err)
			}
			checkMoveCounts(t, shared, "release")
			if got := count(t, shared, `SELECT COUNT(*) FROM dlq_signatures WHERE source_queue = 'tickets'`); got != 3 {
				t.Fatalf("%d tickets groups left, want the 3 of the rows left", got)
			}
		})
	}
}

// hookBatch runs before just ahead of the batch it wraps: a change landing
// between a release's check and its delete.
type hookBatch struct {
	run    sqlbatch.Runner
	before func()
}

func (h hookBatch) Batch(ctx context.Context, stmts ...sqlbatch.Stmt) ([]json.RawMessage, error) {
	if h.before != nil {
		h.before()
	}
	return h.run.Batch(ctx, stmts...)
}

// A claim and an acknowledge landing in the old database between the
// release's check and its delete keep their rows: the delete holds only
// for the exact version the copy took, and the batch's counts move for
// exactly the rows it deleted.
func TestReleaseKeepsRowsChangedBeforeTheDelete(t *testing.T) {
	t.Parallel()
	shared, _, dbs := moveTickets(t)
	seedMoved(t, shared, dbs.Pipelines(), 8)
	importLines(t, dbs, exportAll(t, shared, dbs.Pipelines(), "tickets"), ImportMaxLines)
	pending := count(t, shared, `SELECT MIN(id) FROM dlq_messages WHERE source_queue = 'tickets' AND status = 'pending'`)
	replayed := count(t, shared, `SELECT MIN(id) FROM dlq_messages WHERE source_queue = 'tickets' AND status = 'replayed'`)
	d := dbs
	d.All = append([]dlq.Database(nil), dbs.All...)
	d.All[0].Batch = hookBatch{run: sqlbatch.Tx{DB: shared}, before: func() {
		for _, s := range []string{
			`UPDATE dlq_messages SET status = 'replaying', replaying_at = updated_at + 1, updated_at = updated_at + 1 WHERE id = ?`,
			`UPDATE dlq_messages SET status = 'acknowledged', acknowledged_at = updated_at + 1, updated_at = updated_at + 1 WHERE id = ?`,
		} {
			id := map[bool]int64{true: pending, false: replayed}[strings.Contains(s, "replaying")]
			if _, err := shared.Exec(s, id); err != nil {
				t.Error(err)
			}
		}
	}}
	res, err := Release{DBs: d}.Run(context.Background(), ReleaseParams{Pipeline: "tickets", Database: "DB"})
	if err != nil || res.Scanned != 8 || res.Released != 6 || res.Changed != 2 || res.NotImported != 0 || res.Remaining != 2 {
		t.Fatalf("%+v %v", res, err)
	}
	checkMoveCounts(t, shared, "release")
	if got := count(t, shared, `SELECT COUNT(*) FROM dlq_messages WHERE id IN (?, ?)`, pending, replayed); got != 2 {
		t.Fatalf("%d of the 2 rows changed before the delete are left", got)
	}
}

// A row replayed in the old database after its export, whose copy is then
// acknowledged in the new one, is not deleted (its replay is recorded
// nowhere else): it is changed. Exported and imported again, the replay
// joins the copy (replay_count), the newer acknowledge stays, and the
// release deletes it.
func TestReleaseKeepsARowReplayedAfterItsExport(t *testing.T) {
	t.Parallel()
	shared, tickets, dbs := moveTickets(t)
	seedMoved(t, shared, dbs.Pipelines(), 4)
	importLines(t, dbs, exportAll(t, shared, dbs.Pipelines(), "tickets"), ImportMaxLines)
	id := count(t, shared, `SELECT MIN(id) FROM dlq_messages WHERE source_queue = 'tickets' AND status = 'pending'`)
	rc := count(t, shared, `SELECT replay_count FROM dlq_messages WHERE id = ?`, id)
	if _, err := shared.Exec(`UPDATE dlq_messages SET status = 'replayed', replay_count = replay_count + 1, replayed_at = updated_at + 1, updated_at = updated_at + 1 WHERE id = ?`, id); err != nil {
		t.Fatal(err)
	}
	if _, err := tickets.Exec(`UPDATE dlq_messages SET status = 'acknowledged', acknowledged_at = updated_at + 2, updated_at = updated_at + 2 WHERE id = ?`, id); err != nil {
		t.Fatal(err)
	}
	rl := Release{DBs: dbs}
	res, err := rl.Run(context.Background(), ReleaseParams{Pipeline: "tickets", Database: "DB"})
	if err != nil || res.Released != 3 || res.Changed != 1 || res.NotImported != 0 {
		t.Fatalf("%+v %v", res, err)
	}
	checkMoveCounts(t, shared, "release")
	again, err := ParseImport(exportAll(t, shared, dbs.Pipelines(), "tickets"), ImportMaxLines)
	if err != nil {
		t.Fatal(err)
	}
	if res, err := (Import{DBs: dbs}).Run(context.Background(), again); err != nil || res.Merged != 1 || res.Imported != 0 {
		t.Fatalf("import again: %+v %v", res, err)
	}
	checkMoveCounts(t, tickets, "import again")
	var status string
	var got int64
	if err := tickets.QueryRow(`SELECT status, replay_count FROM dlq_messages WHERE id = ?`, id).Scan(&status, &got); err != nil {
		t.Fatal(err)
	}
	if status != dlq.StatusAcknowledged || got != rc+1 {
		t.Fatalf("the copy is %s with replay_count %d, want acknowledged and %d", status, got, rc+1)
	}
	res, err = rl.Run(context.Background(), ReleaseParams{Pipeline: "tickets", Database: "DB"})
	if err != nil || res.Released != 1 || res.Changed != 0 || res.Remaining != 0 {
		t.Fatalf("release again: %+v %v", res, err)
	}
	checkMoveCounts(t, shared, "release again")
}

// A DLQ redelivery of a message stored in DB before the switch, captured
// again in the new database, does not keep the move from finishing: the
// import merges the old row into the captured one (one row per message,
// the old replays on it) and the release deletes the old row.
func TestMoveFinishesWithARedeliveryCapturedInTheNewDatabase(t *testing.T) {
	t.Parallel()
	shared, tickets, dbs := moveTickets(t)
	seedMoved(t, shared, dbs.Pipelines(), 3)
	rows, err := ParseImport(exportAll(t, shared, dbs.Pipelines(), "tickets"), ImportMaxLines)
	if err != nil {
		t.Fatal(err)
	}
	var line ImportRow
	for _, r := range rows {
		if r.ReplayCount > 0 {
			line = r
		}
	}
	if line.ID == 0 {
		t.Fatal("no replayed row seeded")
	}
	if err := (dlq.Store{DB: tickets, Pipelines: dbs.Pipelines()}).Put(context.Background(), []dlq.Failure{{MessageID: line.MessageID, SourceQueue: "tickets",
		Body: `{"ticket":"T-x"}`, Class: "permanent", Reason: "status 400: again", FailedAt: time.UnixMilli(line.FailedAt + 1000)}}); err != nil {
		t.Fatal(err)
	}
	res, err := Import{DBs: dbs}.Run(context.Background(), rows)
	if err != nil || res.Imported != 2 || res.Merged != 1 {
		t.Fatalf("import: %+v %v", res, err)
	}
	checkMoveCounts(t, tickets, "import")
	rl, err := Release{DBs: dbs}.Run(context.Background(), ReleaseParams{Pipeline: "tickets", Database: "DB"})
	if err != nil || rl.Released != 3 || rl.NotImported != 0 || rl.Changed != 0 || rl.Remaining != 0 || rl.NextAfter != nil {
		t.Fatalf("release: %+v %v", rl, err)
	}
	checkMoveCounts(t, shared, "release")
	if n := count(t, tickets, `SELECT COUNT(DISTINCT message_id) FROM dlq_messages WHERE source_queue = 'tickets'`); n != 3 ||
		count(t, tickets, `SELECT COUNT(*) FROM dlq_messages`) != 3 {
		t.Fatalf("%d messages in TICKETS_DB, want 3 stored once each", n)
	}
	if got := count(t, tickets, `SELECT replay_count FROM dlq_messages WHERE message_id = ?`, line.MessageID); got != line.ReplayCount {
		t.Fatalf("the merged row's replay_count %d, want the old row's %d", got, line.ReplayCount)
	}
}

// A release from a database other than DB, whose ids start at its own
// range (k·2^40), walks from its first id: one call reaches every row.
func TestReleaseFromAnotherDatabaseReachesItsRows(t *testing.T) {
	t.Parallel()
	ps, problems := config.ParsePipelines(`[
{"name":"beers","queue":"beer-enrichment","dlq":"beer-enrichment-dlq","producer":"ENRICHMENT_QUEUE","key":"/beer_id","labels":[],"consumer":"redrive"},
{"name":"tickets","queue":"tickets","dlq":"tickets-dlq","producer":"TICKETS","key":"/ticket","labels":[],"consumer":"external","database":"TICKETS_DB"},
{"name":"archive","queue":"archive","dlq":"archive-dlq","producer":"ARCHIVE","key":"/id","labels":[],"consumer":"external","database":"ARCHIVE_DB"}]`,
		100, 24*time.Hour, 30*24*time.Hour)
	if len(problems) != 0 {
		t.Fatal(problems)
	}
	shared, tickets, archive := sqlitetest.New(t), sqlitetest.New(t), sqlitetest.New(t)
	for db, name := range map[*sql.DB]string{tickets: "TICKETS_DB", archive: "ARCHIVE_DB"} {
		if _, err := db.Exec(dlq.SeedIDsSQL(name)); err != nil {
			t.Fatal(err)
		}
	}
	dbs := dlq.NewDatabases(dlq.Store{DB: shared}, map[string]dlq.Store{"TICKETS_DB": {DB: tickets}, "ARCHIVE_DB": {DB: archive}}, ps)
	seedMoved(t, archive, dbs.Pipelines(), 6) // the tickets rows, in ARCHIVE_DB before their switch
	if first := count(t, archive, `SELECT MIN(id) FROM dlq_messages`); first != dlq.IDBase("ARCHIVE_DB")+1 {
		t.Fatalf("first id %d", first)
	}
	importLines(t, dbs, exportAll(t, archive, dbs.Pipelines(), "tickets"), ImportMaxLines)
	res, err := Release{DBs: dbs}.Run(context.Background(), ReleaseParams{Pipeline: "tickets", Database: "ARCHIVE_DB"})
	if err != nil || res.Scanned != 6 || res.Released != 6 || res.NextAfter != nil || res.Remaining != 0 {
		t.Fatalf("%+v %v", res, err)
	}
	checkMoveCounts(t, archive, "release")
	if got := count(t, archive, `SELECT COUNT(*) FROM dlq_messages WHERE source_queue = 'tickets'`); got != 0 {
		t.Fatalf("%d tickets rows left in ARCHIVE_DB", got)
	}
}
