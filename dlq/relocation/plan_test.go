package relocation

import (
	"strings"
	"testing"

	"github.com/redrive/redrive/internal/sqlitetest"
)

// Every statement of a release batch finds the rows it names by id: with
// the status condition it could search idx_dlq_status_failed instead and
// read every replayed and acknowledged row of the old database (610,640
// rows read for 500 released in workerd, before +status).
func TestReleaseStatementsUsePrimaryKey(t *testing.T) {
	db := sqlitetest.New(t)
	for name, q := range map[string]string{"tally": releaseTallySQL, "activity": releaseActivitySQL,
		"signatures": releaseSignaturesSQL, "rows": releaseRowsSQL, "scan": releaseScanSQL} {
		var args []any
		for range strings.Count(q, "?") {
			args = append(args, "[]")
		}
		for _, line := range sqlitetest.Plan(t, db, q, args...) {
			if strings.Contains(line, "dlq_messages") && !strings.Contains(line, "dlq_messages USING INTEGER PRIMARY KEY") {
				t.Errorf("%s: %s", name, line)
			}
		}
	}
}
