//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestHealthReportsD1(t *testing.T) {
	r, err := shared.Do(http.MethodGet, "/health", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Status  string `json:"status"`
		Version string `json:"version"`
		D1      struct {
			OK bool `json:"ok"`
		} `json:"d1"`
	}
	r.Decode(t, &d)
	if r.Status != http.StatusOK || !r.Success || d.Status != "ok" || !d.D1.OK || d.Version == "" {
		t.Fatalf("health: %d %s", r.Status, r.Raw)
	}
	if r.Header.Get("X-Request-ID") == "" || r.Header.Get("X-Request-ID") != r.ReqID {
		t.Fatalf("request id header %q vs body %q", r.Header.Get("X-Request-ID"), r.ReqID)
	}
}

func TestUnknownRouteIsEnvelope404(t *testing.T) {
	r, err := shared.Do(http.MethodGet, "/nope", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != http.StatusNotFound || r.Success || r.Error == nil || r.Error.Code != "NOT_FOUND" {
		t.Fatalf("got %d %s", r.Status, r.Raw)
	}
}

// A message that keeps failing on the main queue is retried max_retries (3)
// times and then reaches the DLQ consumer, which stores it.
func TestFailingMessageReachesDLQConsumer(t *testing.T) {
	token := fmt.Sprintf("always-500-%d", time.Now().UnixNano())
	shared.Provider.On(token, Behavior{Status: http.StatusInternalServerError})
	body, _ := json.Marshal(map[string]string{"beer_id": "f-" + token, "beer_name": token, "brewer": "Foundation Brewing"})
	shared.Send(t, "beer-enrichment", string(body))

	Eventually(t, 60*time.Second, "message stored by the DLQ consumer", func() bool {
		return shared.Int(t, `SELECT COUNT(*) FROM dlq_messages WHERE beer_id = ?`, "f-"+token) == 1
	})
	if n := len(shared.Provider.Calls(token)); n != 4 {
		t.Fatalf("provider calls = %d, want max_retries+1 = 4", n)
	}
	if !strings.Contains(shared.Log(), `to dead letter queue "beer-enrichment-dlq"`) {
		t.Fatalf("wrangler did not report the move to the DLQ")
	}
}

// A message on a queue nobody consumes is acked (not retried into oblivion).
func TestUnroutedQueueMessageIsAcked(t *testing.T) {
	shared.Send(t, "e2e-unrouted", `{"hello":"unrouted"}`)
	Eventually(t, 30*time.Second, "unrouted message acked", func() bool {
		log := shared.Log()
		return strings.Contains(log, "queue: acked unroutable message") && strings.Contains(log, "QUEUE e2e-unrouted 1/1")
	})
}

// Firing the cron runs the scheduled entry: its jobs record their run in D1.
func TestCronFiresScheduledEntry(t *testing.T) {
	at := time.Date(2030, 1, 2, 3, 5, 0, 0, time.UTC)
	shared.FireCron(t, "*/5 * * * *", at)
	Eventually(t, 20*time.Second, "dlq_rescue run recorded", func() bool {
		return shared.Int(t, `SELECT COUNT(*) FROM job_runs WHERE job = 'dlq_rescue' AND last_run_at = ?`, at.UnixMilli()) == 1
	})
}

// A per-message delay reaches the runtime: the message is not delivered
// before it (syumai's own send request nests the delay where it is ignored).
func TestSendDelayIsHonoured(t *testing.T) {
	token := fmt.Sprintf("delayed-%d", time.Now().UnixNano())
	sent := time.Now()
	shared.SendDelayed(t, "beer-enrichment-dlq", 3, fmt.Sprintf(`{"beer_id":%q}`, token))
	Eventually(t, 30*time.Second, "delayed message stored", func() bool {
		return shared.Int(t, `SELECT COUNT(*) FROM dlq_messages WHERE beer_id = ?`, token) == 1
	})
	stored := time.UnixMilli(shared.Int(t, `SELECT failed_at FROM dlq_messages WHERE beer_id = ?`, token))
	if stored.Sub(sent) < 3*time.Second {
		t.Fatalf("delivered %s after sending, before its 3 s delay", stored.Sub(sent))
	}
}
