package upkeep

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/dlq/dlqtest"
	"github.com/redrive/redrive/dlq/resolve"
	"github.com/redrive/redrive/queue"
	"github.com/redrive/redrive/queue/queuetest"
)

// testPipelinesJSON is the e2e environment's pipelines and one more.
const testPipelinesJSON = dlqtest.PipelinesJSON

var (
	ctx     = context.Background()
	discard = slog.New(slog.NewTextHandler(io.Discard, nil))

	// withPipelines are the pipelines of testPipelinesJSON.
	withPipelines = dlqtest.Pipelines

	count        = dlqtest.Count
	counter      = dlqtest.Counter
	keyed        = dlqtest.Keyed
	tallyRows    = dlqtest.TallyRows
	wantTally    = dlqtest.WantTally
	activityRows = dlqtest.ActivityRows
	wantActivity = dlqtest.WantActivity
	checkCounts  = dlqtest.CheckCounts
	runRecorded  = dlqtest.RunRecorded
	flakyDB      = dlqtest.FlakyDB
	schemaFile   = dlqtest.SchemaFile
	mustExec     = dlqtest.MustExec
	seed         = dlqtest.Seed
	insert       = dlqtest.Insert
	generate     = dlqtest.Generate
)

type (
	row       = dlqtest.Row
	adminRow  = dlqtest.AdminRow
	fakeClock = dlqtest.FakeClock
	taskClock = dlqtest.TaskClock
)

// historyOf reads a row's history, dropped count, signature and version.
func historyOf(t *testing.T, db *sql.DB, where string, args ...any) ([]dlq.HistoryEntry, int64, string, string) {
	t.Helper()
	return dlqtest.HistoryOf[dlq.HistoryEntry](t, db, where, args...)
}

// wantInput fails unless err is an *dlq.InputError with code.
func wantInput(t *testing.T, err error, code string) {
	t.Helper()
	var in *dlq.InputError
	if !errors.As(err, &in) || in.Code != code {
		t.Fatalf("err = %v, want input error %s", err, code)
	}
}

var t0 = time.UnixMilli(1_700_000_000_000)

const dlqName = "beer-enrichment-dlq"

func newCapture(db *sql.DB, logs *bytes.Buffer) *dlq.Capture {
	return &dlq.Capture{DB: db, Log: slog.New(slog.NewJSONHandler(logs, nil)),
		SourceQueue: map[string]string{dlqName: "beer-enrichment"}, Clock: func() time.Time { return t0 }}
}

func consume(t *testing.T, c *dlq.Capture, msgs ...*queuetest.Message) {
	t.Helper()
	if err := c.ConsumeBatch(context.Background(), dlqName, queuetest.Batch(msgs...)); err != nil {
		t.Fatalf("ConsumeBatch: %v", err)
	}
}

func beer(id string) string {
	return fmt.Sprintf(`{"beer_id":%q,"beer_name":"Beer %s","brewer":"Brewer"}`, id, id)
}

var taskT0 = time.UnixMilli(1_750_000_000_000)

func newTasks(db *sql.DB, s queue.Sender, now time.Time) resolve.ReplayTasks {
	r := newReplay(db, s)
	r.Clock = func() time.Time { return now }
	r.Destinations = []string{"beer-enrichment", "staging"}
	return resolve.ReplayTasks{Replay: r}
}

func seedPending(t *testing.T, db *sql.DB, n int, failedAt int64) []int64 {
	t.Helper()
	rows := make([]adminRow, n)
	for i := range rows {
		rows[i] = adminRow{Key: fmt.Sprint(i), Label1: fmt.Sprintf("Beer %d", i), FailedAt: failedAt + int64(i)}
	}
	return insert(t, db, rows...)
}

var fixedClock = func() time.Time { return time.UnixMilli(1_750_000_000_000) }

func newReplay(db *sql.DB, s queue.Sender) resolve.Replay {
	return resolve.Replay{DB: db, Sender: s, Log: discard, Cursors: dlq.NewCursors("s"), BulkMax: 500, Clock: fixedClock}
}

func failure(id, body string, at time.Time) dlq.Failure {
	return dlq.Failure{MessageID: id, SourceQueue: "beer-enrichment", Body: body, Attempts: 4,
		Class: "transient", Reason: "transient: provider status 500 (" + id + ")", FailedAt: at}
}

// IDsJSON is ids as a JSON array.
func idsJSON(ids []int64) string {
	b, _ := json.Marshal(ids)
	return string(b)
}
