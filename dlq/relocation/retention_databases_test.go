package relocation

import (
	"database/sql"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/config"
	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/dlq/upkeep"
	"github.com/redrive/redrive/internal/sqlitetest"
	"github.com/redrive/redrive/jobs"
)

// movingPipelines configures beers (DLQ_RETENTION_DAYS, 30 days), tickets
// (90 days) and pages (7 days), both of the latter on TICKETS_DB, and
// returns the Upkeep of the two databases (each Retention's template
// limits set).
func movingPipelines(t *testing.T) (shared, own *sql.DB, u upkeep.Schedule) {
	t.Helper()
	shared, own = sqlitetest.New(t), sqlitetest.New(t)
	if _, err := own.Exec(dlq.SeedIDsSQL("TICKETS_DB")); err != nil {
		t.Fatal(err)
	}
	tickets := config.Pipeline{Name: "tickets", Queue: "tickets", DLQ: "tickets-dlq", Key: "/ticket", Consumer: config.ConsumerExternal,
		Database: "TICKETS_DB", Retention: 90 * day}
	pages := config.Pipeline{Name: "pages", Queue: "pages", DLQ: "pages-dlq", Key: "/page", Consumer: config.ConsumerExternal,
		Database: "TICKETS_DB", Retention: 7 * day}
	ps := []config.Pipeline{config.BeerPipeline(), tickets, pages}
	dbs := dlq.NewDatabases(dlq.Store{DB: shared}, map[string]dlq.Store{"TICKETS_DB": {DB: own}}, ps)
	u = upkeep.Schedule{DBs: dbs, Pipelines: ps, Retention: upkeep.Retention{Log: discard, MaxAge: 30 * day, MaxRowsPerKey: 1000,
		AttemptMaxAge: 7 * day, Limits: jobs.Limits{ChunkRows: 100, Budget: 10 * time.Second}}}
	return shared, own, u
}

// insertActed inserts a terminal (or pending) row of queue and key whose
// action was at acted.
func insertActed(t *testing.T, db *sql.DB, msgID, queue, key, status string, acted time.Time) {
	t.Helper()
	var ack, replayed any
	switch status {
	case dlq.StatusAcknowledged:
		ack = acted.UnixMilli()
	case dlq.StatusReplayed:
		replayed = acted.UnixMilli()
	}
	if _, err := db.Exec(`INSERT INTO dlq_messages(message_id, last_message_id, row_key, source_queue, status, failed_at,
		acknowledged_at, replayed_at, raw_message, content_type, updated_at)
		VALUES (?1, ?1, ?2, ?3, ?4, ?5, ?6, ?7, '{}', 'json', ?5)`,
		msgID, key, queue, status, acted.Add(-time.Hour).UnixMilli(), ack, replayed); err != nil {
		t.Fatal(err)
	}
}

func leftIDs(t *testing.T, db *sql.DB) []string {
	t.Helper()
	rows, err := db.Query(`SELECT message_id FROM dlq_messages ORDER BY message_id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := []string{}
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	return out
}

// A queue's retention is its pipeline's wherever its rows lie: the rows a
// moving pipeline left in the shared database keep its 90 days there (not
// DLQ_RETENTION_DAYS's 30), a 7-day pipeline's rows left there go after 7,
// and rows of the shared database's own queues, or of queues no pipeline
// names, in another database follow DLQ_RETENTION_DAYS there too.
func TestRetentionAppliesEachPipelinesRetentionInEveryDatabase(t *testing.T) {
	t.Parallel()
	shared, own, u := movingPipelines(t)
	now := time.Date(2030, 6, 1, 3, 17, 0, 0, time.UTC)
	for _, db := range []*sql.DB{shared, own} {
		insertActed(t, db, "t-ack-60d", "tickets", "T-1", dlq.StatusAcknowledged, now.Add(-60*day))
		insertActed(t, db, "t-replayed-88d", "tickets", "T-1", dlq.StatusReplayed, now.Add(-88*day))
		insertActed(t, db, "t-ack-91d", "tickets", "T-1", dlq.StatusAcknowledged, now.Add(-91*day))
		insertActed(t, db, "p-ack-8d", "pages", "P-1", dlq.StatusAcknowledged, now.Add(-8*day))
		insertActed(t, db, "p-replayed-6d", "pages", "P-1", dlq.StatusReplayed, now.Add(-6*day))
		insertActed(t, db, "b-ack-31d", config.BeerQueue, "1", dlq.StatusAcknowledged, now.Add(-31*day))
		insertActed(t, db, "b-ack-28d", config.BeerQueue, "1", dlq.StatusAcknowledged, now.Add(-28*day))
		insertActed(t, db, "o-ack-31d", "other", "9", dlq.StatusAcknowledged, now.Add(-31*day))
		insertActed(t, db, "o-ack-8d", "other", "9", dlq.StatusAcknowledged, now.Add(-8*day))
	}
	want := []string{"b-ack-28d", "o-ack-8d", "p-replayed-6d", "t-ack-60d", "t-replayed-88d"}
	rs := u.Retentions()
	for _, r := range rs {
		// Each database holds rows of the other's pipelines here: neither
		// waits for moves into it (TestRetentionWaitsWhileAMoveIntoItsDatabaseIsUnderWay).
		r.Moving = nil
	}
	for _, r := range rs {
		sum := runRecorded(t, r, shared, now)
		if sum["deleted_age"] != int64(4) || sum["more"] != false {
			t.Errorf("%s: summary %v", r.Name(), sum)
		}
		if left := leftIDs(t, r.DB); !reflect.DeepEqual(left, want) {
			t.Errorf("%s left %v, want %v", r.Name(), left, want)
		}
	}
	// A day later: the 60-day tickets rows are still there, the 7-day
	// pages row of 6 days went, in both databases.
	want = []string{"b-ack-28d", "o-ack-8d", "t-ack-60d", "t-replayed-88d"}
	for _, r := range rs {
		runRecorded(t, r, shared, now.Add(day+time.Hour))
		if left := leftIDs(t, r.DB); !reflect.DeepEqual(left, want) {
			t.Errorf("%s a day later left %v, want %v", r.Name(), left, want)
		}
	}
}

// A database's retention waits while a pipeline stored there still has
// rows in another (a move into it under way): a copy deleted there before
// its original is released would come back with the original's next
// import. It deletes nothing, says what it waits for and keeps its
// positions; once the old database holds none of those rows, it runs as
// before. The shared database's retention meanwhile deletes what is due,
// moving rows included.
func TestRetentionWaitsWhileAMoveIntoItsDatabaseIsUnderWay(t *testing.T) {
	t.Parallel()
	shared, own, u := movingPipelines(t)
	now := time.Date(2030, 6, 1, 3, 17, 0, 0, time.UTC)
	insertActed(t, shared, "t-ack-91d", "tickets", "T-1", dlq.StatusAcknowledged, now.Add(-91*day))
	insertActed(t, shared, "t-pending", "tickets", "T-2", dlq.StatusPending, now.Add(-time.Hour))
	insertActed(t, own, "t-ack-92d", "tickets", "T-1", dlq.StatusAcknowledged, now.Add(-92*day))
	rs := u.Retentions()
	for i, want := range [][]string{{"t-pending"}, {"t-ack-92d"}} {
		sum := runRecorded(t, rs[i], shared, now)
		if left := leftIDs(t, rs[i].DB); !reflect.DeepEqual(left, want) {
			t.Errorf("%s left %v, want %v (summary %v)", rs[i].Name(), left, want, sum)
		}
		if i == 1 && !reflect.DeepEqual(sum["waiting_for_moves"], []string{"tickets"}) {
			t.Errorf("%s: summary %v, want waiting_for_moves [tickets]", rs[i].Name(), sum)
		}
	}
	// The last row of tickets leaves DB (released) and the daily cron's
	// dlq_tally counts DB's rows again: the next run deletes.
	if _, err := shared.Exec(`DELETE FROM dlq_messages WHERE source_queue = 'tickets'`); err != nil {
		t.Fatal(err)
	}
	for _, j := range u.TallyChecks() {
		if _, err := j.Run(ctx, now); err != nil {
			t.Fatal(err)
		}
	}
	sum := runRecorded(t, rs[1], shared, now.Add(time.Hour))
	if left := leftIDs(t, own); len(left) != 0 || sum["deleted_age"] != int64(1) || sum["waiting_for_moves"] != nil {
		t.Errorf("after the move: %s left %v (summary %v)", rs[1].Name(), left, sum)
	}
}

// The cap is per queue and key: order 42 and ticket 42 have a cap each,
// and so have each pipeline's poison rows (__unparseable__). cap_keys names
// the queue of each key it evicted from (queue:key).
func TestRetentionCapIsPerQueueAndKey(t *testing.T) {
	r := newRetention(t)
	r.MaxRowsPerKey = 2
	now := time.Date(2030, 6, 1, 3, 17, 0, 0, time.UTC)
	for _, q := range []string{config.BeerQueue, "tickets"} {
		for _, key := range []string{"42", "__unparseable__"} {
			for i, at := range []time.Duration{3 * time.Hour, 2 * time.Hour} {
				insertActed(t, r.DB, q+"/"+key+"/"+string(rune('a'+i)), q, key, dlq.StatusAcknowledged, now.Add(-at))
			}
		}
	}
	sum := runRecorded(t, r, r.DB, now)
	if sum["deleted_cap"] != int64(0) || len(sum["cap_keys"].([]string)) != 0 {
		t.Fatalf("at the cap in every queue: summary %v, left %v", sum, leftIDs(t, r.DB))
	}
	// One more row of ticket 42 and of the tickets' poison rows: each
	// evicts its own queue's oldest, not the beer queue's.
	insertActed(t, r.DB, "tickets/42/c", "tickets", "42", dlq.StatusAcknowledged, now.Add(30*time.Second))
	insertActed(t, r.DB, "tickets/__unparseable__/c", "tickets", "__unparseable__", dlq.StatusReplayed, now.Add(30*time.Second))
	sum = runRecorded(t, r, r.DB, now.Add(time.Minute))
	if sum["deleted_cap"] != int64(2) || !reflect.DeepEqual(sum["cap_keys"], []string{"tickets:42", "tickets:__unparseable__"}) {
		t.Fatalf("summary %v", sum)
	}
	want := []string{
		"beer-enrichment/42/a", "beer-enrichment/42/b", "beer-enrichment/__unparseable__/a", "beer-enrichment/__unparseable__/b",
		"tickets/42/b", "tickets/42/c", "tickets/__unparseable__/b", "tickets/__unparseable__/c"}
	if left := leftIDs(t, r.DB); !reflect.DeepEqual(left, want) {
		t.Fatalf("left %v, want %v", left, want)
	}
	if n := counter(t, r.DB, upkeep.CounterRetentionCap); n != 2 {
		t.Fatalf("cap counter %d", n)
	}
}

// Imported rows keep their action times, which lie behind the positions
// the age windows and the cap rule continue from: the run after an import
// still deletes the imported rows past a shorter retention and trims
// imported keys over the cap, then goes back to reading only what changed.
func TestRetentionCoversImportedRows(t *testing.T) {
	t.Parallel()
	shared, own, u := movingPipelines(t)
	now := time.Date(2030, 6, 1, 3, 17, 0, 0, time.UTC)
	var r *upkeep.Retention
	for _, x := range u.Retentions() {
		if x.Database == "TICKETS_DB" {
			r = x
		}
	}
	r.MaxRowsPerKey = 2
	// TICKETS_DB's retention has run: its positions are at now.
	runRecorded(t, r, shared, now)
	// The pages pipeline's rows left in the shared database: two past its
	// 7 days, three of one key acknowledged 2 days ago (one over the cap).
	insertActed(t, shared, "p-ack-10d", "pages", "P-1", dlq.StatusAcknowledged, now.Add(-10*day))
	insertActed(t, shared, "p-replayed-9d", "pages", "P-2", dlq.StatusReplayed, now.Add(-9*day))
	insertActed(t, shared, "p-ack-6d", "pages", "P-3", dlq.StatusAcknowledged, now.Add(-6*day))
	for i, at := range []time.Duration{50 * time.Hour, 49 * time.Hour, 48 * time.Hour} {
		insertActed(t, shared, "p-cap-"+string(rune('a'+i)), "pages", "P-4", dlq.StatusAcknowledged, now.Add(-at))
	}
	insertActed(t, shared, "p-pending", "pages", "P-4", dlq.StatusPending, now.Add(-20*day))
	if imported, _ := importLines(t, u.DBs, exportAll(t, shared, u.DBs.Pipelines(), "pages"), 100); imported != 7 {
		t.Fatalf("imported %d", imported)
	}
	later := now.Add(time.Hour)
	sum := runRecorded(t, r, shared, later)
	if sum["deleted_age"] != int64(2) || sum["deleted_cap"] != int64(1) || !reflect.DeepEqual(sum["cap_keys"], []string{"pages:P-4"}) {
		t.Errorf("run after the import: summary %v", sum)
	}
	if want := []string{"p-ack-6d", "p-cap-b", "p-cap-c", "p-pending"}; !reflect.DeepEqual(leftIDs(t, own), want) {
		t.Errorf("left %v, want %v", leftIDs(t, own), want)
	}
	// The next run has nothing to look at again: the positions are back
	// where they were, and a repeated import (all skipped) rewinds nothing
	// it has not covered.
	sum = runRecorded(t, r, shared, later.Add(time.Hour))
	if sum["deleted_age"] != int64(0) || sum["deleted_cap"] != int64(0) || sum["cap_scanned_to"] != later.Add(time.Hour).UnixMilli() {
		t.Errorf("next run: summary %v", sum)
	}
	if n := count(t, own, `SELECT COUNT(*) FROM retention_rescans`); n != 1 {
		t.Errorf("%d rescan rows kept, want the import's", n)
	}
	// A second import: its run applies its rescan only (the cap looks
	// back to its earliest time, not to the first import's) and forgets
	// the first one's, which the recorded run before applied.
	if _, err := shared.Exec(`DELETE FROM dlq_messages WHERE source_queue = 'pages'`); err != nil { // released
		t.Fatal(err)
	}
	insertActed(t, shared, "p-cap2-a", "pages", "P-5", dlq.StatusAcknowledged, now.Add(-30*time.Hour))
	insertActed(t, shared, "p-cap2-b", "pages", "P-5", dlq.StatusAcknowledged, now.Add(-29*time.Hour))
	insertActed(t, shared, "p-cap2-c", "pages", "P-5", dlq.StatusAcknowledged, now.Add(-28*time.Hour))
	if imported, skipped := importLines(t, u.DBs, exportAll(t, shared, u.DBs.Pipelines(), "pages"), 100); imported != 3 || skipped != 0 {
		t.Fatalf("second import: %d imported, %d skipped", imported, skipped)
	}
	third := later.Add(2 * time.Hour)
	sum = runRecorded(t, r, shared, third)
	if sum["deleted_cap"] != int64(1) || !reflect.DeepEqual(sum["cap_keys"], []string{"pages:P-5"}) || sum["rescan_seq"] != int64(2) {
		t.Errorf("run after the second import: summary %v", sum)
	}
	if n := count(t, own, `SELECT COUNT(*) FROM retention_rescans WHERE seq = 2`); n != 1 || count(t, own, `SELECT COUNT(*) FROM retention_rescans`) != 1 {
		t.Errorf("rescans kept: %d of seq 2, want only it", n)
	}
	sum = runRecorded(t, r, shared, third.Add(time.Hour))
	if sum["rescan_seq"] != int64(2) || sum["deleted_cap"] != int64(0) {
		t.Errorf("run after that: summary %v", sum)
	}
}

// A run that cannot read the rescans says so (an error, recorded with the
// run) and keeps the previous rescan_seq, so the next run applies them.
func TestRetentionReportsAFailingRescan(t *testing.T) {
	r := newRetention(t)
	now := time.Date(2030, 6, 1, 3, 17, 0, 0, time.UTC)
	if _, err := r.DB.Exec(`INSERT INTO retention_rescans(seq, since) VALUES (7, ?)`, now.Add(-day).UnixMilli()); err != nil {
		t.Fatal(err)
	}
	if sum := runRecorded(t, r, r.DB, now); sum["rescan_seq"] != int64(7) {
		t.Fatalf("summary %v", sum)
	}
	if _, err := r.DB.Exec(`DROP TABLE retention_rescans`); err != nil {
		t.Fatal(err)
	}
	sum, err := r.Run(ctx, now.Add(time.Hour))
	if err == nil || !strings.Contains(err.Error(), "rescans") || sum["rescan_seq"] != int64(7) {
		t.Fatalf("run without retention_rescans: %v, summary %v", err, sum)
	}
}

// A run whose rescans cannot be forgotten reports it; it has applied the
// new ones all the same (its positions were moved back), so its summary
// names the newest.
func TestRetentionReportsAFailingForget(t *testing.T) {
	r := newRetention(t)
	now := time.Date(2030, 6, 1, 3, 17, 0, 0, time.UTC)
	if _, err := r.DB.Exec(`INSERT INTO retention_rescans(seq, since) VALUES (1, ?)`, now.Add(-day).UnixMilli()); err != nil {
		t.Fatal(err)
	}
	runRecorded(t, r, r.DB, now)
	if _, err := r.DB.Exec(`INSERT INTO retention_rescans(seq, since) VALUES (2, ?);
		CREATE TRIGGER keep_rescans BEFORE DELETE ON retention_rescans BEGIN SELECT RAISE(FAIL, 'kept'); END;`, now.Add(-day).UnixMilli()); err != nil {
		t.Fatal(err)
	}
	sum, err := r.Run(ctx, now.Add(time.Hour))
	if err == nil || !strings.Contains(err.Error(), "forget rescans") || sum["rescan_seq"] != int64(2) {
		t.Fatalf("run whose forget fails: %v, summary %v", err, sum)
	}
}
