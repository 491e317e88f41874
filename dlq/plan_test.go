package dlq

import (
	"strings"
	"testing"

	"github.com/redrive/redrive/internal/sqlitetest"
)

// q is a substring test (instr) instead of LIKE, which D1 limits to 50
// bytes: it reads the same rows through the same indexes as the LIKE it
// replaced (same plan for a page, a count and a bulk page).
func TestQReadsTheRowsLikeDid(t *testing.T) {
	db := sqlitetest.New(t)
	five := int64(5)
	like := ` AND (label_1 LIKE ? OR label_2 LIKE ? OR failure_reason LIKE ?)`
	for _, f := range []Filter{{}, {Status: StatusAll}, {Key: "b"}, {SourceQueue: "s", FailedAfter: &five}} {
		f, err := f.Normalize(nil)
		if err != nil {
			t.Fatal(err)
		}
		withQ := f
		withQ.Q = strings.Repeat("q", MaxFilterText)
		w, a := withQ.Where()
		w0, a0 := f.Where()
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
				{`SELECT 1 FROM dlq_messages WHERE ` + NewestFirst(c.w), append(c.args[:len(c.args):len(c.args)], int64(5))},
			} {
				plans[i] = append(plans[i], sqlitetest.Plan(t, db, q.sql, q.args...)...)
			}
		}
		if strings.Join(plans[0], "\n") != strings.Join(plans[1], "\n") {
			t.Errorf("%+v: q's plan differs from LIKE's:\nLIKE:\n%s\ninstr:\n%s", f, strings.Join(plans[0], "\n"), strings.Join(plans[1], "\n"))
		}
	}
}
