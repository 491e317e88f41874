package dlq

import (
	"strings"
	"testing"

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

// A page of groups reads the signatures in the order of
// idx_dlq_signatures_pending (no sort of every signature).
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
	} {
		plan := strings.Join(sqlitetest.Plan(t, db, s.query, s.args...), "\n")
		if !strings.Contains(plan, s.want) || strings.Contains(plan, "TEMP B-TREE") {
			t.Errorf("%s:\n%s", name, plan)
		}
	}
}
