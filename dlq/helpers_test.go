package dlq

import (
	"context"
	"database/sql"
	"encoding/json"
	"io"
	"log/slog"
	"testing"

	"github.com/redrive/redrive/dlq/dlqtest"
	"github.com/redrive/redrive/internal/text"
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
	fixedClock   = dlqtest.FixedClock
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

func wantCounters(t *testing.T, db *sql.DB, captured, dups, poison int64) {
	t.Helper()
	c := counters(t, db)
	if c[CounterCaptured] != captured || c[CounterDuplicates] != dups || c[CounterPoison] != poison {
		t.Fatalf("counters = %v, want captured %d duplicates %d poison %d", c, captured, dups, poison)
	}
}

func shortRow(r dlqRow) dlqRow {
	r.Raw = text.Clip(r.Raw, 40)
	return r
}

func mustJSON(v any) string { b, _ := json.Marshal(v); return string(b) }
