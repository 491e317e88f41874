package handlers

import (
	"encoding/json"
	"strings"
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
		// The handler's message names all three fields (the store's own
		// check, reached with a field left at 0, names only one).
		if rec.Code != 400 || env.Error == nil || env.Error.Code != "INVALID_CANARY" ||
			!strings.HasPrefix(env.Error.Message, "canary must be {size: 1..") {
			t.Errorf("%s: %d %s", body, rec.Code, rec.Body)
		}
	}
}

// A task id that is not a positive int64 (0, negative, out of range, not a
// number) is a 404 at the door: no database is read (a closed one would
// answer 500).
func TestReplayTaskIDOutOfRangeIsNotFoundWithoutAQuery(t *testing.T) {
	api := newAPI(t)
	api.Sender = &queuetest.Sender{}
	h := api.Handler()
	api.DB.Close()
	for _, id := range []string{"0", "-3", "99999999999999999999", "abc"} {
		for _, r := range []struct{ method, path string }{
			{"GET", "/admin/dlq/replay-tasks/" + id},
			{"POST", "/admin/dlq/replay-tasks/" + id + "/pause"},
		} {
			rec, env := do(h, r.method, r.path, "", adminHeaders)
			if rec.Code != 404 || env.Error == nil || env.Error.Code != "NOT_FOUND" {
				t.Errorf("%s %s: %d %s", r.method, r.path, rec.Code, rec.Body)
			}
		}
	}
}

// GET /admin/dlq/replay-tasks?limit=1 lists one task (pins the default
// limit's condition).
func TestReplayTaskListHonoursItsLimit(t *testing.T) {
	api := newAPI(t)
	api.Sender = &queuetest.Sender{}
	if _, err := api.DB.Exec(`INSERT INTO dlq_messages(message_id, row_key, failed_at, raw_message, last_message_id)
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
