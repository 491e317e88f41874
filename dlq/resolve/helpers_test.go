package resolve

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
	"github.com/redrive/redrive/dlq/inspect"
	"github.com/redrive/redrive/internal/text"
	"github.com/redrive/redrive/metrics"
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

// decoded returns a page's messages.
func decoded(t *testing.T, p inspect.Page) []dlq.Message {
	t.Helper()
	msgs, err := p.Messages.Decode()
	if err != nil {
		t.Fatal(err)
	}
	return msgs
}

var t0 = time.UnixMilli(1_700_000_000_000)

func failure(id, body string, at time.Time) dlq.Failure {
	return dlq.Failure{MessageID: id, SourceQueue: "beer-enrichment", Body: body, Attempts: 4,
		Class: "transient", Reason: "transient: provider status 500 (" + id + ")", FailedAt: at}
}

func readRow(t *testing.T, db *sql.DB, where string, args ...any) dlqRow {
	t.Helper()
	var r dlqRow
	err := db.QueryRow(`SELECT id, failed_at, first_failed_at, updated_at, failure_count, replay_count, message_id,
		last_message_id, row_key, status, source_queue, raw_message, raw_encoding, label_1, label_2, failure_reason, failure_class
		FROM dlq_messages WHERE `+where, args...).Scan(&r.ID, &r.FailedAt, &r.FirstFailedAt, &r.UpdatedAt, &r.FailureCount,
		&r.ReplayCount, &r.MessageID, &r.LastMessageID, &r.Key, &r.Status, &r.SourceQueue, &r.Raw, &r.Encoding,
		&r.Label1, &r.Label2, &r.Reason, &r.Class)
	if err != nil {
		t.Fatalf("read row %s %v: %v", where, args, err)
	}
	return r
}

func save(t *testing.T, s dlq.Store, fs ...dlq.Failure) map[string]dlq.Outcome {
	t.Helper()
	out, err := s.Save(context.Background(), fs)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func wantCounters(t *testing.T, db *sql.DB, captured, dups, poison int64) {
	t.Helper()
	c := counters(t, db)
	if c[dlq.CounterCaptured] != captured || c[dlq.CounterDuplicates] != dups || c[dlq.CounterPoison] != poison {
		t.Fatalf("counters = %v, want captured %d duplicates %d poison %d", c, captured, dups, poison)
	}
}

func shortRow(r dlqRow) dlqRow {
	r.Raw = text.Clip(r.Raw, 40)
	return r
}

// fuzzTypes are the content types FuzzCaptureBody's ct byte picks from.
var fuzzTypes = []queue.ContentType{queue.JSON, queue.Text, queue.Bytes, queue.V8}

// asciiUpper upper-cases ASCII letters only (strings.ToUpper would change ï too).
func asciiUpper(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'a' <= c && c <= 'z' {
			b[i] = c - 'a' + 'A'
		}
	}
	return string(b)
}

func mustJSON(v any) string { b, _ := json.Marshal(v); return string(b) }
func counters(t *testing.T, db *sql.DB) map[string]int64 {
	t.Helper()
	all, err := metrics.Counters{DB: db}.All(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return all
}

// dlqRow is a dlq_messages row as tests read it.
type dlqRow struct {
	ID, FailedAt, FirstFailedAt, UpdatedAt, FailureCount, ReplayCount int64
	MessageID, LastMessageID, Key, Status, SourceQueue, Raw, Encoding string
	Label1, Label2, Reason, Class                                     sql.NullString
}
