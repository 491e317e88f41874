package dlq

import (
	"context"
	"database/sql"
	"io"
	"log/slog"
	"testing"

	"github.com/redrive/redrive/dlq/dlqtest"
)

var discard = slog.New(slog.NewTextHandler(io.Discard, nil))

var ctx = context.Background()

var (
	count        = dlqtest.Count
	counter      = dlqtest.Counter
	keyed        = dlqtest.Keyed
	tallyRows    = dlqtest.TallyRows
	wantTally    = dlqtest.WantTally
	activityRows = dlqtest.ActivityRows
	wantActivity = dlqtest.WantActivity
	checkCounts  = dlqtest.CheckCounts
	flakyDB      = dlqtest.FlakyDB
	schemaFile   = dlqtest.SchemaFile
	mustExec     = dlqtest.MustExec
)

// taskClock is a test clock that moves only when told (as the Workers
// runtime's clock moves only across I/O).
type taskClock = dlqtest.TaskClock

// historyOf reads a row's history, dropped count, signature and version.
func historyOf(t *testing.T, db *sql.DB, where string, args ...any) ([]HistoryEntry, int64, string, string) {
	t.Helper()
	return dlqtest.HistoryOf[HistoryEntry](t, db, where, args...)
}

type (
	row       = dlqtest.Row
	adminRow  = dlqtest.AdminRow
	fakeClock = dlqtest.FakeClock
)

var (
	seed     = dlqtest.Seed
	insert   = dlqtest.Insert
	generate = dlqtest.Generate
)
