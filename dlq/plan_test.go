package dlq

import (
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/internal/sqlitetest"
)

// Statements that name their rows (a JSON id list, or a bulk page's ids)
// look those rows up by primary key. Without statistics SQLite would
// otherwise search a status index and test every pending row against the
// list: 20 ms instead of well under 1 ms to acknowledge 99 of 70k pending
// rows natively, and the same for every replay claim and dry run.
func TestKeyListStatementsUsePrimaryKey(t *testing.T) {
	db := sqlitetest.New(t)
	ids := Selection{IDs: []int64{1, 2, 3}}
	f, err := Filter{SourceQueue: "beer-enrichment"}.normalizePending()
	if err != nil {
		t.Fatal(err)
	}
	bulk := Selection{Filter: &f}
	idsCond, idsArgs := ids.where(false, nil)
	replayCond, replayArgs := ids.where(true, &position{FailedAt: 5, ID: 9})
	bulkCond, bulkArgs := bulk.where(false, nil)
	statements := map[string]struct {
		query string
		args  []any
	}{
		"acknowledge ids":  {`UPDATE dlq_messages SET status = 'acknowledged' WHERE ` + idsCond + ` RETURNING id`, idsArgs},
		"replay claim ids": {`UPDATE dlq_messages SET status = 'replaying' WHERE ` + replayCond + ` RETURNING id`, replayArgs},
		"dry run ids":      {`SELECT COUNT(*) FROM dlq_messages WHERE ` + idsCond, idsArgs},
		"bulk page":        {`UPDATE dlq_messages SET status = 'acknowledged' WHERE ` + newestFirst(bulkCond), append(bulkArgs, int64(10))},
		"replay settle":    {settleSQL, []any{"[1]", 1, "[1,2]", 1}},
	}
	for name, s := range statements {
		plan := sqlitetest.Plan(t, db, s.query, s.args...)
		if !strings.Contains(plan[0], "dlq_messages USING INTEGER PRIMARY KEY") {
			t.Errorf("%s: rows are not looked up by id:\n%s", name, strings.Join(plan, "\n"))
		}
	}
}

// Every retention statement reads in proportion to what it deletes (or
// what changed since the previous run), never the whole backlog:
//   - expiry batches (age rule, attempts, audit): the limit-th oldest
//     expired entry from a covering index, then deletes through ranges of
//     the same index (rows before it; rows at its time up to its rowid);
//   - rows without an action time are found in the same indexes (IS NULL),
//     not by visiting every row of the status through idx_dlq_status_failed;
//   - the cap rule finds the rows that became terminal in a time range
//     through the status indexes (a merge for the chunk's end), counts the
//     rows of their beers (up to the cap + 1) and ranks only the beers over
//     it, both through idx_dlq_beer_id: never a scan of dlq_messages;
//   - the bounded count of expired rows left and the backlog reads of
//     job_runs go through indexes too.
func TestRetentionStatementPlans(t *testing.T) {
	db := sqlitetest.New(t)
	type check struct {
		name, query string
		args        []any
		want        []string
	}
	var checks []check
	for _, e := range []struct {
		expiry
		index, eq, key string
	}{
		{expireAcknowledged, "idx_dlq_status_acknowledged_at", "status=? AND ", "acknowledged_at"},
		{expireReplayed, "idx_dlq_status_replayed_at", "status=? AND ", "replayed_at"},
		{expireAttempts, "idx_attempts_recorded_at", "", "recorded_at"},
		{expireAudit, "idx_admin_audit_at", "", "at"},
	} {
		checks = append(checks,
			check{e.what + " boundary", e.boundarySQL, []any{1, 9}, []string{"USING COVERING INDEX " + e.index + " (" + e.eq + e.key + "<?)"}},
			// (a covering index where every column the statement reads is in it)
			check{e.what + " before", e.beforeSQL, []any{1}, []string{"INDEX " + e.index + " (" + e.eq + e.key + "<?)"}},
			check{e.what + " ties", e.tiesSQL, []any{1, 2}, []string{"INDEX " + e.index + " (" + e.eq + e.key + "=? AND rowid<?)"}},
		)
	}
	checks = append(checks,
		check{"untimed rows by age", deleteByAgeUntimedSQL, []any{1, 10}, []string{
			"idx_dlq_status_acknowledged_at (status=? AND acknowledged_at=?)", "idx_dlq_status_replayed_at (status=? AND replayed_at=?)"}},
		check{"expired rows left", `SELECT COUNT(*) FROM (` + expiredRowsSelect + ` LIMIT ?2)`, []any{1, 10}, []string{
			"COVERING INDEX idx_dlq_status_acknowledged_at (status=? AND acknowledged_at<?)", "COVERING INDEX idx_dlq_status_replayed_at (status=? AND replayed_at<?)",
			"idx_dlq_status_acknowledged_at (status=? AND acknowledged_at=?)", "idx_dlq_status_replayed_at (status=? AND replayed_at=?)"}},
		check{"cap chunk", capChunkSQL, []any{1, 10}, []string{"MERGE (UNION ALL)",
			"COVERING INDEX idx_dlq_status_acknowledged_at (status=? AND acknowledged_at>?)", "COVERING INDEX idx_dlq_status_replayed_at (status=? AND replayed_at>?)"}},
		check{"cap delete", capDeleteSQL, []any{1, 2, 3, 4}, []string{"SEARCH c USING INDEX idx_dlq_beer_id (beer_id=?)",
			"SEARCH d USING INDEX idx_dlq_beer_id (beer_id=?)",
			"idx_dlq_status_acknowledged_at (status=? AND acknowledged_at>? AND acknowledged_at<?)",
			"idx_dlq_status_replayed_at (status=? AND replayed_at>? AND replayed_at<?)"}},
		check{"rescans since", rescanSinceSQL, []any{1}, []string{"retention_rescans USING INTEGER PRIMARY KEY (rowid>?)"}},
		check{"forget rescans", rescanForgetSQL, []any{1}, []string{"retention_rescans USING INTEGER PRIMARY KEY (rowid<?)"}},
		check{"retention behind", retentionBehindSQL, []any{"a", "b"}, []string{"job_runs USING INDEX sqlite_autoindex_job_runs_1 (job=?)"}},
	)
	for _, c := range checks {
		plan := strings.Join(sqlitetest.Plan(t, db, c.query, c.args...), "\n")
		for _, w := range c.want {
			if !strings.Contains(plan, w) {
				t.Errorf("%s does not use %s:\n%s", c.name, w, plan)
			}
		}
		for _, bad := range []string{"idx_dlq_status_failed", "SCAN dlq_messages", "SCAN message_attempts", "SCAN admin_audit", "SCAN job_runs", "SCAN retention_rescans"} {
			if strings.Contains(plan, bad) {
				t.Errorf("%s reads more than it needs (%s):\n%s", c.name, bad, plan)
			}
		}
		if strings.HasPrefix(c.name, "cap chunk") || strings.HasSuffix(c.name, "boundary") {
			if strings.Contains(plan, "TEMP B-TREE") {
				t.Errorf("%s sorts instead of reading in index order:\n%s", c.name, plan)
			}
		}
	}
}

// q is a substring test (instr) instead of LIKE, which D1 limits to 50
// bytes: it reads the same rows through the same indexes as the LIKE it
// replaced (same plan for a page, a count and a bulk page).
func TestQReadsTheRowsLikeDid(t *testing.T) {
	db := sqlitetest.New(t)
	five := int64(5)
	like := ` AND (beer_name LIKE ? OR brewer LIKE ? OR failure_reason LIKE ?)`
	for _, f := range []Filter{{}, {Status: StatusAll}, {BeerID: "b"}, {SourceQueue: "s", FailedAfter: &five}} {
		f, err := f.Normalize()
		if err != nil {
			t.Fatal(err)
		}
		withQ := f
		withQ.Q = strings.Repeat("q", MaxFilterText)
		w, a := withQ.where()
		w0, a0 := f.where()
		likeW, likeA := w0+like, append(a0[:len(a0):len(a0)], "%q%", "%q%", "%q%")
		var plans [2][]string
		for i, c := range []struct {
			w    string
			args []any
		}{{likeW, likeA}, {w, a}} {
			for _, q := range []struct {
				sql  string
				args []any
			}{
				{`SELECT * FROM dlq_messages WHERE ` + c.w + ` ORDER BY failed_at DESC, id DESC LIMIT 5`, c.args},
				{`SELECT COUNT(*) FROM dlq_messages WHERE ` + c.w, c.args},
				{`SELECT 1 FROM dlq_messages WHERE ` + newestFirst(c.w), append(c.args[:len(c.args):len(c.args)], int64(5))},
			} {
				plans[i] = append(plans[i], sqlitetest.Plan(t, db, q.sql, q.args...)...)
			}
		}
		if strings.Join(plans[0], "\n") != strings.Join(plans[1], "\n") {
			t.Errorf("%+v: q's plan differs from LIKE's:\nLIKE:\n%s\ninstr:\n%s", f, strings.Join(plans[0], "\n"), strings.Join(plans[1], "\n"))
		}
	}
}

// The 5-minute alerts read no more than they need whatever the backlog:
// the pending count stops at its bound (a range of idx_dlq_status_failed),
// the repeat failures read only pending rows replayed before.
func TestAlertCountsAreBounded(t *testing.T) {
	db := sqlitetest.New(t)
	for name, q := range map[string]struct {
		sql  string
		args []any
		want []string
	}{
		"pending high": {pendingHighSQL, []any{101}, []string{"SEARCH dlq_messages USING COVERING INDEX idx_dlq_status_failed (status=?)"}},
		// (the ?2 entries replayed most, from the covering index; the five
		// rows replayed most)
		"repeat failures": {repeatFailuresSQL, []any{2, 100}, []string{
			"SEARCH dlq_messages USING COVERING INDEX idx_dlq_pending_replay_count (replay_count>?)",
			"SEARCH dlq_messages USING INDEX idx_dlq_pending_replay_count (replay_count>?)"}},
	} {
		var got []string
		for _, d := range sqlitetest.Plan(t, db, q.sql, q.args...) {
			if strings.Contains(d, "dlq_messages") || strings.Contains(d, "TEMP B-TREE") {
				got = append(got, d)
			}
		}
		if strings.Join(got, "\n") != strings.Join(q.want, "\n") {
			t.Errorf("%s reads\n%s\nwant\n%s", name, strings.Join(got, "\n"), strings.Join(q.want, "\n"))
		}
	}
	// Past the bound the detail says so.
	generate(t, db, "many", 150, 1, 1_700_000_000_000)
	mustExec(t, db, `UPDATE dlq_messages SET replay_count = 3`)
	on, detail, err := PendingHigh{DB: db, Threshold: 2}.Check(ctx, time.Now())
	if err != nil || !on || detail != "at least 103 DLQ rows pending (threshold 2)" {
		t.Fatalf("pending high: %v %q %v", on, detail, err)
	}
	on, detail, err = RepeatFailures{DB: db, MaxReplays: 2}.Check(ctx, time.Now())
	if err != nil || !on || !strings.HasPrefix(detail, "at least 100 pending DLQ rows replayed more than 2 times: gen-149 (3 replays), gen-148") {
		t.Fatalf("repeat failures: %v %q %v", on, detail, err)
	}
}

// A page of groups reads the signatures in the order of
// idx_dlq_signatures_pending (no sort of every signature), and the
// announcement finds its work in the partial index of unannounced ones.
func TestSignatureStatementPlans(t *testing.T) {
	db := sqlitetest.New(t)
	for name, s := range map[string]struct {
		query, want string
		args        []any
	}{
		"first page": {groupsSQL("1 = 1", false), "USING INDEX idx_dlq_signatures_pending", []any{int64(51)}},
		"next page": {groupsSQL("(pending < ? OR (pending = ? AND signature > ?))", false), "USING INDEX idx_dlq_signatures_pending",
			[]any{int64(5), int64(5), "0123456789abcdef", int64(51)}},
		"first page, newest first": {groupsSQL("1 = 1", true), "USING INDEX idx_dlq_signatures_first_seen", []any{int64(51)}},
		"next page, newest first": {groupsSQL("(first_seen < ? OR (first_seen = ? AND signature > ?))", true), "USING INDEX idx_dlq_signatures_first_seen",
			[]any{int64(5), int64(5), "0123456789abcdef", int64(51)}},
		"unannounced": {`SELECT signature FROM dlq_signatures WHERE ` + unclaimedSQL + ` ORDER BY first_seen LIMIT ?1`,
			"USING INDEX idx_dlq_signatures_unannounced", []any{int64(20), int64(5), int64(900000)}},
	} {
		plan := strings.Join(sqlitetest.Plan(t, db, s.query, s.args...), "\n")
		if !strings.Contains(plan, s.want) || strings.Contains(plan, "TEMP B-TREE") {
			t.Errorf("%s:\n%s", name, plan)
		}
	}
}
