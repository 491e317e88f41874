package handlers

import (
	"encoding/json"
	"testing"

	"github.com/redrive/redrive/queue/queuetest"
)

// A canary missing any one of its three fields is a 400 INVALID_CANARY (pins
// each term of handlers/tasks.go's check; a missing ratio was a nil pointer).
func TestReplayTaskCanaryNeedsEveryField(t *testing.T) {
	api := newAPI(t)
	api.Sender = &queuetest.Sender{}
	h := api.Handler()
	for _, canary := range []string{
		`{"min_success_ratio":0.8,"observe_minutes":10}`,
		`{"size":5,"observe_minutes":10}`,
		`{"size":5,"min_success_ratio":0.8}`,
	} {
		body := `{"rate_per_minute":10,"canary":` + canary + `}`
		rec, env := do(h, "POST", "/admin/dlq/replay-tasks", body, adminHeaders)
		if rec.Code != 400 || env.Error == nil || env.Error.Code != "INVALID_CANARY" {
			t.Errorf("%s: %d %s", body, rec.Code, rec.Body)
		}
	}
}

// GET /admin/dlq/replay-tasks?limit=1 lists one task (pins the default
// limit's condition).
func TestReplayTaskListHonoursItsLimit(t *testing.T) {
	api := newAPI(t)
	api.Sender = &queuetest.Sender{}
	if _, err := api.DB.Exec(`INSERT INTO dlq_messages(message_id, beer_id, failed_at, raw_message, last_message_id)
		VALUES ('m1', 'b1', 5, '{"beer_id":"b1"}', 'm1')`); err != nil {
		t.Fatal(err)
	}
	h := api.Handler()
	for i := 0; i < 2; i++ {
		if rec, _ := do(h, "POST", "/admin/dlq/replay-tasks", `{"filter":{"beer_id":"b1"},"rate_per_minute":60}`, adminHeaders); rec.Code != 202 {
			t.Fatalf("create: %d %s", rec.Code, rec.Body)
		}
	}
	count := func(q string) int {
		rec, _ := do(h, "GET", "/admin/dlq/replay-tasks"+q, "", adminHeaders)
		var out struct {
			Data struct {
				Tasks []json.RawMessage `json:"tasks"`
			} `json:"data"`
		}
		if rec.Code != 200 || json.Unmarshal(rec.Body.Bytes(), &out) != nil {
			t.Fatalf("list%s: %d %s", q, rec.Code, rec.Body)
		}
		return len(out.Data.Tasks)
	}
	if n := count("?limit=1"); n != 1 {
		t.Errorf("limit=1 listed %d tasks", n)
	}
	if n := count(""); n != 2 {
		t.Errorf("the default limit listed %d tasks, want 2", n)
	}
}
