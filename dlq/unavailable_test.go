package dlq

import (
	"bytes"
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/internal/sqlitetest"
	"github.com/redrive/redrive/internal/wranglerconfig"
	"github.com/redrive/redrive/queue"
	"github.com/redrive/redrive/queue/queuetest"
)

func TestRetryDelayDoublesUpToTwelveHours(t *testing.T) {
	base := 300 * time.Second
	want := []time.Duration{300, 600, 1200, 2400, 4800, 9600, 19200, 38400, 43200, 43200, 43200}
	for i, w := range want {
		if got := RetryDelay(base, i+1); got != w*time.Second {
			t.Errorf("attempt %d: %v, want %v", i+1, got, w*time.Second)
		}
	}
	if got := RetryDelay(0, 1); got != time.Second {
		t.Errorf("zero base: %v", got)
	}
	if got := RetryDelay(time.Second, 1000); got != 12*time.Hour {
		t.Errorf("huge attempt: %v", got)
	}
	if got := SurvivableOutage(300*time.Second, 10); got != 162900*time.Second {
		t.Errorf("survivable outage = %v, want 45h15m", got)
	}
}

// jsonc strips // comments (outside strings) so encoding/json reads wrangler.jsonc.
func jsonc(t *testing.T, src []byte) []byte {
	t.Helper()
	var out bytes.Buffer
	inString, escaped := false, false
	for i := 0; i < len(src); i++ {
		ch := src[i]
		switch {
		case inString:
			out.WriteByte(ch)
			if escaped {
				escaped = false
			} else if ch == '\\' {
				escaped = true
			} else if ch == '"' {
				inString = false
			}
		case ch == '"':
			inString = true
			out.WriteByte(ch)
		case ch == '/' && i+1 < len(src) && src[i+1] == '/':
			for i < len(src) && src[i] != '\n' {
				i++
			}
			out.WriteByte('\n')
		default:
			out.WriteByte(ch)
		}
	}
	return out.Bytes()
}

type wranglerEnv struct {
	Vars   wranglerconfig.Vars `json:"vars"`
	Queues struct {
		Consumers []struct {
			Queue      string `json:"queue"`
			MaxRetries int    `json:"max_retries"`
			RetryDelay int    `json:"retry_delay"`
		} `json:"consumers"`
	} `json:"queues"`
}

// The shipped DLQ consumer (wrangler.jsonc: its max_retries and
// D1_RETRY_BASE_SECONDS) rides out a D1 outage of at least 24 hours; the e2e
// environment sets the var too.
func TestShippedSettingsSurviveADayOfD1Outage(t *testing.T) {
	root, err := sqlitetest.Root()
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(root, "wrangler.jsonc"))
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		wranglerEnv
		Env map[string]wranglerEnv `json:"env"`
	}
	if err := json.Unmarshal(jsonc(t, raw), &cfg); err != nil {
		t.Fatalf("wrangler.jsonc: %v", err)
	}
	for name, env := range map[string]wranglerEnv{"top level": cfg.wranglerEnv, "e2e": cfg.Env["e2e"]} {
		secs, err := strconv.Atoi(env.Vars["D1_RETRY_BASE_SECONDS"])
		if err != nil {
			t.Fatalf("%s: D1_RETRY_BASE_SECONDS: %v", name, err)
		}
		if name != "top level" {
			continue
		}
		found := false
		for _, c := range env.Queues.Consumers {
			if c.Queue != queue.EnrichmentDLQ {
				continue
			}
			found = true
			outage := SurvivableOutage(time.Duration(secs)*time.Second, c.MaxRetries)
			if outage < 24*time.Hour {
				t.Fatalf("DLQ consumer (max_retries %d, base %d s) survives a D1 outage of %v only", c.MaxRetries, secs, outage)
			}
			t.Logf("shipped DLQ consumer: max_retries %d, base %d s: survives a D1 outage of %v", c.MaxRetries, secs, outage)
		}
		if !found {
			t.Fatal("no DLQ consumer in wrangler.jsonc")
		}
	}
}

// A batch from a queue without a consumer is stored (class unroutable, the
// reason naming the queue, source_queue = that queue) and acked.
func TestUnroutableCaptureStoresAndAcks(t *testing.T) {
	db := sqlitetest.New(t)
	var logs bytes.Buffer
	c := Unroutable(db, newCapture(db, &logs).Log, time.Minute)
	c.Clock = func() time.Time { return t0 }
	m1, m2 := queuetest.New("u1", `{"hello":"unrouted"}`), queuetest.New("u2", beer("7"))
	m2.Type = queue.JSON
	if err := c.ConsumeBatch(context.Background(), "new-queue", queuetest.Batch(m1, m2)); err != nil {
		t.Fatal(err)
	}
	for _, m := range []*queuetest.Message{m1, m2} {
		if !m.Acked || m.Retried {
			t.Fatalf("%s: %+v", m.MsgID, m)
		}
		r := readRow(t, db, `message_id = ?`, m.MsgID)
		if r.SourceQueue != "new-queue" || r.Class.String != "unroutable" || r.Reason.String != "unroutable: no consumer for queue new-queue" ||
			r.Raw != m.Text || r.Status != "pending" {
			t.Fatalf("%s row %+v", m.MsgID, r)
		}
	}
	if r := readRow(t, db, `message_id = 'u2'`); r.Key != "7" {
		t.Fatalf("beer id of a well-formed body: %+v", r)
	}
	if !strings.Contains(logs.String(), `"source_queue":"new-queue"`) {
		t.Fatalf("summary: %s", logs.String())
	}

	// D1 unavailable: retried with backoff, never acked.
	db.Close()
	m3 := queuetest.New("u3", "x")
	if err := c.ConsumeBatch(context.Background(), "new-queue", queuetest.Batch(m3)); err != nil || m3.Acked || m3.RetryDelay != time.Minute {
		t.Fatalf("err %v message %+v", err, m3)
	}
}

// With D1 unavailable, each retried message is logged with its attempt and
// its delay in seconds, and the batch's error line counts the messages
// retried.
func TestCaptureD1UnavailableLogsEachRetryAndTheCount(t *testing.T) {
	db := sqlitetest.New(t)
	db.Close()
	var logs bytes.Buffer
	c := newCapture(db, &logs)
	c.RetryBase = 300 * time.Second
	m1, m2, m3 := queuetest.New("m1", beer("1")), queuetest.New("m2", beer("2")), queuetest.New("m3", beer("3"))
	m2.Attempt, m3.Attempt = 3, 10
	if err := c.ConsumeBatch(context.Background(), dlqName, queuetest.Batch(m1, m2, m3)); err != nil {
		t.Fatalf("ConsumeBatch: %v", err)
	}
	delays := map[string]float64{}
	var counted []float64
	for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		var e map[string]any
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		switch e["msg"] {
		case "dlq: D1 unavailable; message retried later":
			delays[e["message_id"].(string)] = e["delay_s"].(float64)
		case "dlq: D1 unavailable; unstored messages retried with backoff":
			counted = append(counted, e["messages"].(float64))
		}
	}
	if want := map[string]float64{"m1": 300, "m2": 1200, "m3": 43200}; !reflect.DeepEqual(delays, want) {
		t.Errorf("logged delays %v, want %v", delays, want)
	}
	if len(counted) != 1 || counted[0] != 3 {
		t.Errorf("error lines counted %v, want one line of 3 messages; logs:\n%s", counted, logs.String())
	}
}

// A store statement that fails while its rows are read (D1 reset mid-read)
// fails the probe: the capture then retries instead of storing one by one.
func TestProbeFailsWhenReadingTheStoreStatementFails(t *testing.T) {
	plain, dsn := schemaFile(t)
	if err := probeStore(ctx, plain); err != nil {
		t.Fatalf("probe of a working database: %v", err)
	}
	failing := sql.OpenDB(readFailConnector{drv: plain.Driver(), dsn: dsn, query: putSQL})
	t.Cleanup(func() { failing.Close() })
	if err := probeStore(ctx, failing); err == nil || !strings.Contains(err.Error(), "reset mid-read") {
		t.Fatalf("probe = %v, want the read's error", err)
	}
}

// readFailConnector opens connections whose statement query fails while
// its rows are read.
type readFailConnector struct {
	drv   driver.Driver
	dsn   string
	query string
}

func (c readFailConnector) Connect(context.Context) (driver.Conn, error) {
	conn, err := c.drv.Open(c.dsn)
	if err != nil {
		return nil, err
	}
	return readFailConn{Conn: conn, query: c.query}, nil
}

func (c readFailConnector) Driver() driver.Driver { return c.drv }

type readFailConn struct {
	driver.Conn
	query string
}

func (c readFailConn) Prepare(query string) (driver.Stmt, error) {
	st, err := c.Conn.Prepare(query)
	if err != nil || query != c.query {
		return st, err
	}
	return readFailStmt{st}, nil
}

type readFailStmt struct{ driver.Stmt }

func (s readFailStmt) Query(args []driver.Value) (driver.Rows, error) {
	rows, err := s.Stmt.Query(args) //nolint:staticcheck // the wrapped driver's Query is what database/sql calls here
	if err != nil {
		return nil, err
	}
	return readFailRows{rows}, nil
}

type readFailRows struct{ driver.Rows }

func (readFailRows) Next([]driver.Value) error { return errors.New("D1_ERROR: reset mid-read") }
