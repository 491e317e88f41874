package resolve

import (
	"strings"
	"testing"

	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/internal/sqlitetest"
)

// Statements that name their rows (a JSON id list, or a bulk page's ids)
// look those rows up by primary key. Without statistics SQLite would
// otherwise search a status index and test every pending row against the
// list: 20 ms instead of well under 1 ms to acknowledge 99 of 70k pending
// rows natively, and the same for every replay claim and dry run.
func TestKeyListStatementsUsePrimaryKey(t *testing.T) {
	t.Parallel()
	db := sqlitetest.New(t)
	ids := dlq.Selection{IDs: []int64{1, 2, 3}}
	f, err := dlq.Filter{SourceQueue: "beer-enrichment"}.NormalizePending(nil)
	if err != nil {
		t.Fatal(err)
	}
	bulk := dlq.Selection{Filter: &f}
	idsCond, idsArgs := ids.Where(false, nil)
	replayCond, replayArgs := ids.Where(true, &dlq.Position{FailedAt: 5, ID: 9})
	bulkCond, bulkArgs := bulk.Where(false, nil)
	statements := map[string]struct {
		query string
		args  []any
	}{
		"acknowledge ids":  {`UPDATE dlq_messages SET status = 'acknowledged' WHERE ` + idsCond + ` RETURNING id`, idsArgs},
		"replay claim ids": {`UPDATE dlq_messages SET status = 'replaying' WHERE ` + replayCond + ` RETURNING id`, replayArgs},
		"dry run ids":      {`SELECT COUNT(*) FROM dlq_messages WHERE ` + idsCond, idsArgs},
		"bulk page":        {`UPDATE dlq_messages SET status = 'acknowledged' WHERE ` + dlq.NewestFirst(bulkCond), append(bulkArgs, int64(10))},
		"replay settle":    {settleSQL, []any{"[1]", 1, "[1,2]", 1}},
	}
	for name, s := range statements {
		plan := sqlitetest.Plan(t, db, s.query, s.args...)
		if !strings.Contains(plan[0], "dlq_messages USING INTEGER PRIMARY KEY") {
			t.Errorf("%s: rows are not looked up by id:\n%s", name, strings.Join(plan, "\n"))
		}
	}
}
