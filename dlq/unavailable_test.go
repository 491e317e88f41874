package dlq

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/internal/sqlitetest"
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
	Vars   map[string]string `json:"vars"`
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
	if r := readRow(t, db, `message_id = 'u2'`); r.BeerID != "7" {
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
