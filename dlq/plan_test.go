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

// Retention by age reads the index of each status and action time; the
// rows without an action time are found there too (acknowledged_at IS
// NULL), not by visiting every row of the status through idx_dlq_status_failed.
func TestRetentionByAgeUsesActionTimeIndexes(t *testing.T) {
	db := sqlitetest.New(t)
	plan := strings.Join(sqlitetest.Plan(t, db, deleteByAgeSQL, 1, 10), "\n")
	for _, want := range []string{
		"idx_dlq_status_acknowledged_at (status=? AND acknowledged_at<?)", "idx_dlq_status_acknowledged_at (status=? AND acknowledged_at=?)",
		"idx_dlq_status_replayed_at (status=? AND replayed_at<?)", "idx_dlq_status_replayed_at (status=? AND replayed_at=?)",
	} {
		if !strings.Contains(plan, want) {
			t.Errorf("retention by age does not use %s:\n%s", want, plan)
		}
	}
	if strings.Contains(plan, "idx_dlq_status_failed") {
		t.Errorf("retention by age visits a whole status:\n%s", plan)
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
