package upkeep

import (
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/internal/sqlitetest"
)

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
		check{"cap delete", capDeleteSQL, []any{1, 2, 3, 4}, []string{"SEARCH c USING INDEX idx_dlq_beer_id (row_key=?)",
			"SEARCH d USING INDEX idx_dlq_beer_id (row_key=?)",
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

// The announcement of new failure groups finds its work in the partial
// index of unannounced ones.
func TestUnannouncedSignaturesUseTheirIndex(t *testing.T) {
	db := sqlitetest.New(t)
	plan := strings.Join(sqlitetest.Plan(t, db, `SELECT signature FROM dlq_signatures WHERE announced_at IS NULL ORDER BY first_seen LIMIT ?1`,
		int64(20)), "\n")
	if !strings.Contains(plan, "USING INDEX idx_dlq_signatures_unannounced") || strings.Contains(plan, "TEMP B-TREE") {
		t.Errorf("unannounced:\n%s", plan)
	}
}
