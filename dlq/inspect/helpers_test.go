package inspect

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

	"github.com/redrive/redrive/config"
	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/dlq/dlqtest"
	"github.com/redrive/redrive/internal/sqlitetest"
	"github.com/redrive/redrive/queue/queuetest"
)

// testPipelinesJSON is the e2e environment's pipelines and one more.
const testPipelinesJSON = dlqtest.PipelinesJSON

var (
	ctx     = context.Background()
	discard = slog.New(slog.NewTextHandler(io.Discard, nil))

	// withPipelines are the pipelines of testPipelinesJSON.
	withPipelines = dlqtest.Pipelines

	count       = dlqtest.Count
	counter     = dlqtest.Counter
	keyed       = dlqtest.Keyed
	checkCounts = dlqtest.CheckCounts
	flakyDB     = dlqtest.FlakyDB
	mustExec    = dlqtest.MustExec
	seed        = dlqtest.Seed
	insert      = dlqtest.Insert
	generate    = dlqtest.Generate
	fixedClock  = dlqtest.FixedClock
)

type (
	row       = dlqtest.Row
	adminRow  = dlqtest.AdminRow
	fakeClock = dlqtest.FakeClock
	taskClock = dlqtest.TaskClock
)

// wantInput fails unless err is an *dlq.InputError with code.
func wantInput(t *testing.T, err error, code string) {
	t.Helper()
	var in *dlq.InputError
	if !errors.As(err, &in) || in.Code != code {
		t.Fatalf("err = %v, want input error %s", err, code)
	}
}

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

// historyOf reads a row's history, dropped count, signature and version.
func historyOf(t *testing.T, db *sql.DB, where string, args ...any) ([]dlq.HistoryEntry, int64, string, string) {
	t.Helper()
	return dlqtest.HistoryOf[dlq.HistoryEntry](t, db, where, args...)
}

func mustJSON(v any) string { b, _ := json.Marshal(v); return string(b) }

// pipelineCapture is a capture of testPipelinesJSON's pipelines (and a
// queue no pipeline names) into a database of its own; its Stores are
// the Databases of that one database, whose Pipelines are ps.
func pipelineCapture(t *testing.T, ps []config.Pipeline) (*dlq.Capture, *bytes.Buffer) {
	db := sqlitetest.New(t)
	var logs bytes.Buffer
	c := newCapture(db, &logs)
	c.Stores = dlq.NewDatabases(dlq.Store{DB: db}, nil, ps)
	c.SourceQueue = map[string]string{dlqName: "beer-enrichment", "orders-dlq": "orders", "odd-dlq": "odd", "other-dlq": "other"}
	return c, &logs
}

var t0 = time.UnixMilli(1_700_000_000_000)

func failure(id, body string, at time.Time) dlq.Failure {
	return dlq.Failure{MessageID: id, SourceQueue: "beer-enrichment", Body: body, Attempts: 4,
		Class: "transient", Reason: "transient: provider status 500 (" + id + ")", FailedAt: at}
}

func save(t *testing.T, s dlq.Store, fs ...dlq.Failure) map[string]dlq.Outcome {
	t.Helper()
	out, err := s.Save(context.Background(), fs)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// pageJSON is the JSON array of an n-row list page, as messagesJSON builds it.
func pageJSON(b *testing.B, n int) []byte {
	page := make([]dlq.Message, n)
	for i := range page {
		name := fmt.Sprint("Beer ", i)
		page[i] = dlq.Message{ID: int64(i), MessageID: fmt.Sprint("m", i), BeerID: fmt.Sprint(i), BeerName: &name,
			FailedAt: int64(1_700_000_000_000 - i), SourceQueue: "beer-enrichment", Status: "pending"}
	}
	js, err := json.Marshal(page)
	if err != nil {
		b.Fatal(err)
	}
	return js
}
