//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestHealthReportsD1(t *testing.T) {
	r, err := shared.Do(http.MethodGet, "/health", nil, AdminHeaders())
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

// Request bodies of unknown length (chunked) cross the HTTP bridge
// (platform/serve.go, worker.mjs) whole when small and are refused with the
// envelope when over the 1 MB limit; a wrong method is a 405 envelope with Allow.
func TestChunkedBodiesAndWrongMethod(t *testing.T) {
	parts := func(ss ...string) io.Reader {
		rs := make([]io.Reader, len(ss))
		for i, s := range ss {
			rs[i] = strings.NewReader(s)
		}
		return io.MultiReader(rs...)
	}
	r, err := shared.Do(http.MethodPost, "/admin/dlq/acknowledge", parts(`{"ids":`, `[987654321], "dry_run": true}`), AdminHeaders())
	if err != nil {
		t.Fatal(err)
	}
	var dry struct {
		DryRun         bool `json:"dry_run"`
		RequestedCount int  `json:"requested_count"`
	}
	r.Decode(t, &dry)
	if r.Status != http.StatusOK || !dry.DryRun || dry.RequestedCount != 1 {
		t.Fatalf("chunked body: %d %s", r.Status, r.Raw)
	}

	big := strings.Repeat("x", 64<<10)
	chunks := []string{`{"ids":[987654321],"note":"`}
	for range 20 { // 1.25 MB in 64 KB pieces
		chunks = append(chunks, big)
	}
	r, err = shared.Do(http.MethodPost, "/admin/dlq/acknowledge", parts(append(chunks, `"}`)...), AdminHeaders())
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != http.StatusRequestEntityTooLarge || r.Error == nil || r.Error.Code != "PAYLOAD_TOO_LARGE" {
		t.Fatalf("chunked body over 1 MB: %d %s", r.Status, r.Raw)
	}

	r, err = shared.Do(http.MethodDelete, "/admin/dlq", nil, AdminHeaders())
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != http.StatusMethodNotAllowed || r.Error == nil || r.Error.Code != "METHOD_NOT_ALLOWED" || !strings.Contains(r.Header.Get("Allow"), "GET") {
		t.Fatalf("wrong method: %d %v %s", r.Status, r.Header, r.Raw)
	}
}

// A message that keeps failing on the main queue is retried max_retries (3)
// times, and the call that spends its last attempt stores it as a DLQ row.
func TestFailingMessageReachesDLQConsumer(t *testing.T) {
	token := fmt.Sprintf("always-500-%d", time.Now().UnixNano())
	shared.Provider.On(token, Behavior{Status: http.StatusInternalServerError})
	body, _ := json.Marshal(map[string]string{"beer_id": "f-" + token, "beer_name": token, "brewer": "Foundation Brewing"})
	shared.Send(t, "beer-enrichment", string(body))

	Eventually(t, 60*time.Second, "message stored by the DLQ consumer", func() bool {
		return shared.Int(t, `SELECT COUNT(*) FROM dlq_messages WHERE row_key = ?`, "f-"+token) == 1
	})
	if n := len(shared.Provider.Calls(token)); n != 4 {
		t.Fatalf("provider calls = %d, want max_retries+1 = 4", n)
	}
	// The call that spends the last attempt stores the row itself (the
	// queue's own move to the DLQ is the fallback): its failure count is the
	// real calls.
	if n := shared.Int(t, `SELECT failure_count FROM dlq_messages WHERE row_key = ?`, "f-"+token); n != 4 {
		t.Fatalf("failure_count = %d, want the 4 calls", n)
	}
}

// A message on a queue nobody consumes (a consumer in wrangler.jsonc, none
// in main.go) is stored as a DLQ row naming that queue, then acked.
func TestUnroutedQueueMessageIsStored(t *testing.T) {
	body := fmt.Sprintf(`{"hello":%q}`, unique("unrouted"))
	shared.Send(t, "e2e-unrouted", body)
	Eventually(t, 30*time.Second, "unrouted message stored", func() bool {
		return shared.Int(t, `SELECT COUNT(*) FROM dlq_messages WHERE raw_message = ?`, body) == 1
	})
	r := shared.capturedRow(t, `raw_message = ?`, body)
	if r.Source != "e2e-unrouted" || r.Class != "unroutable" || r.Reason.String != "unroutable: no consumer for queue e2e-unrouted" ||
		r.Status != "pending" || r.BeerID != "__unparseable__" {
		t.Fatalf("row %+v", r)
	}
	Eventually(t, 10*time.Second, "stored, then acked", func() bool {
		return strings.Contains(shared.Log(), "QUEUE e2e-unrouted 1/1")
	})
}

// Firing the cron runs the scheduled entry: its jobs record their run in D1.
// The runtime's scheduled event carries the current time (/__scheduled);
// POST /__dev/cron runs the same jobs at a chosen time.
func TestCronFiresScheduledEntry(t *testing.T) {
	before := time.Now().Add(-time.Second).UnixMilli()
	shared.FireScheduled(t, "*/5 * * * *")
	Eventually(t, 20*time.Second, "dlq_rescue run recorded", func() bool {
		return shared.Int(t, `SELECT COUNT(*) FROM job_runs WHERE job = 'dlq_rescue' AND last_run_at >= ?`, before) == 1
	})
	at := time.Date(2030, 1, 2, 3, 5, 0, 0, time.UTC)
	shared.FireCron(t, "*/5 * * * *", at)
	Eventually(t, 20*time.Second, "dlq_rescue run at the chosen time recorded", func() bool {
		return shared.Int(t, `SELECT COUNT(*) FROM job_runs WHERE job = 'dlq_rescue' AND last_run_at = ?`, at.UnixMilli()) == 1
	})
}

// A per-message delay reaches the runtime (syumai's own send request nests
// the delay where it is ignored): a message sent with a 15 s delay is
// overtaken by one sent after it without a delay, and still arrives.
func TestSendDelayIsHonoured(t *testing.T) {
	delayed, prompt := uniq("delayed"), uniq("prompt")
	shared.SendDelayed(t, "beer-enrichment-dlq", 15, fmt.Sprintf(`{"beer_id":%q}`, delayed))
	shared.Send(t, "beer-enrichment-dlq", fmt.Sprintf(`{"beer_id":%q}`, prompt))
	count := func(id string) int64 {
		return shared.Int(t, `SELECT COUNT(*) FROM dlq_messages WHERE row_key = ?`, id)
	}
	Eventually(t, 30*time.Second, "undelayed message stored", func() bool { return count(prompt) == 1 })
	if count(delayed) != 0 {
		t.Fatal("the delayed message arrived before the undelayed one sent after it: its delay was dropped")
	}
	Eventually(t, 60*time.Second, "delayed message stored", func() bool { return count(delayed) == 1 })
}
