//go:build e2e

package e2e

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redrive/redrive/outbound"
)

// Outbound answers are read as they stream in, up to outbound.MaxResponseBytes,
// and the rest is cancelled: a provider that streams
// 1 GiB within the timeout, and a webhook that does the same, see the
// worker go away after a few MiB; the webhook's body is not read at all.
// (Response.text() would have read the whole stream into the isolate.)
func TestOutboundAnswersAreCutWhileStreaming(t *testing.T) {
	const huge = 1 << 30
	// The webhook: an endless answer after a 200, counting what it wrote.
	var hookWritten atomic.Int64
	hookDone := make(chan struct{}, 16)
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() { hookDone <- struct{}{} }()
		chunk := []byte(strings.Repeat("x", 64<<10))
		rc := http.NewResponseController(w)
		w.WriteHeader(http.StatusOK)
		for n := 0; n < huge; n += len(chunk) {
			m, err := w.Write(chunk)
			hookWritten.Add(int64(m))
			if err != nil || rc.Flush() != nil {
				return
			}
		}
	}))
	defer hook.Close()
	w := startWorker(t, map[string]string{"ALERT_WEBHOOK_URL": hook.URL + "/hook", "ALERT_PENDING_THRESHOLD": "5"})

	// The provider.
	token := uniq("stream")
	w.Provider.On(token, Behavior{Stream: huge})
	enrich(t, w, beerFor(token))
	var first Call
	Eventually(t, 2*time.Minute, "the streaming provider call ended", func() bool {
		calls := w.Provider.Calls(token)
		if len(calls) == 0 || calls[0].Ended.IsZero() {
			return false
		}
		first = calls[0]
		return true
	})
	t.Logf("the provider wrote %d bytes before the worker went away", first.Written)
	if first.Written >= 64<<20 || first.Written < outbound.MaxResponseBytes {
		t.Errorf("the provider wrote %d bytes of %d: the worker read past %d (or less than it)", first.Written, huge, outbound.MaxResponseBytes)
	}
	w.Provider.On(token, Behavior{Content: "5.0"}) // its retries succeed

	// The webhook: an alert fires (6 pending rows, threshold 5).
	w.Exec(t, fmt.Sprintf(`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 6)
		INSERT INTO dlq_messages(message_id, last_message_id, row_key, status, failed_at)
		SELECT 'stream-' || i, '', 'stream-beer', 'pending', %d FROM n`, time.Now().Add(-time.Hour).UnixMilli()))
	at := cronTime()
	fireAndWait(t, w, cronFrequent, "alerts", at)
	select {
	case <-hookDone:
	case <-time.After(time.Minute):
		t.Fatalf("the webhook is still streaming after %d bytes", hookWritten.Load())
	}
	t.Logf("the webhook wrote %d bytes before the worker went away", hookWritten.Load())
	if n := hookWritten.Load(); n >= 64<<20 {
		t.Errorf("the webhook wrote %d bytes: the worker read its body", n)
	}
	if n := w.Int(t, `SELECT COUNT(*) FROM job_runs WHERE job = 'alerts' AND last_ok = 1`); n != 1 {
		t.Errorf("the alerts run with the streaming webhook did not succeed")
	}
}
