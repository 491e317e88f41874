package inspect

import (
	"strings"
	"testing"

	"github.com/redrive/redrive/internal/sqlitetest"
)

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
