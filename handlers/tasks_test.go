package handlers

import (
	"encoding/json"
	"testing"

	"github.com/redrive/redrive/queue/queuetest"
)

func TestReplayTaskRoutes(t *testing.T) {
	api := newAPI(t)
	api.Sender = &queuetest.Sender{}
	api.ReplayDestinations = []string{"beer-enrichment", "staging"}
	if _, err := api.DB.Exec(`INSERT INTO dlq_messages(message_id, row_key, failed_at, raw_message, last_message_id)
		VALUES ('m1', 'b1', 5, '{"beer_id":"b1"}', 'm1')`); err != nil {
		t.Fatal(err)
	}
	h := api.Handler()
	for body, code := range map[string]string{
		`{}`:                      "INVALID_RATE",
		`{"rate_per_minute":0}`:   "INVALID_RATE",
		`{"rate_per_minute":1.5}`: "INVALID_RATE",
		`{"rate_per_minute":10,"delay_seconds":-1}`:        "INVALID_DELAY",
		`{"rate_per_minute":10,"destination":"x"}`:         "INVALID_DESTINATION",
		`{"rate_per_minute":10,"filter":{"status":"all"}}`: "INVALID_FILTER",
		`{"rate_per_minute":10,"extra":1}`:                 "INVALID_REQUEST",
	} {
		rec, env := do(h, "POST", "/admin/dlq/replay-tasks", body, adminHeaders)
		if rec.Code != 400 || env.Error == nil || env.Error.Code != code {
			t.Errorf("%s: %d %s", body, rec.Code, rec.Body)
		}
	}
	rec, env := do(h, "POST", "/admin/dlq/replay-tasks", `{"filter":{"beer_id":"b1"},"rate_per_minute":60,"destination":"staging"}`, adminHeaders)
	if rec.Code != 202 {
		t.Fatalf("create: %d %s", rec.Code, rec.Body)
	}
	var task struct {
		ID      int64  `json:"id"`
		State   string `json:"state"`
		Matched int64  `json:"matched"`
	}
	js, _ := json.Marshal(env.Data)
	json.Unmarshal(js, &task)
	if task.State != "running" || task.Matched != 1 {
		t.Fatalf("task %s", js)
	}
	for _, c := range []struct {
		method, path string
		status       int
	}{
		{"GET", "/admin/dlq/replay-tasks", 200},
		{"GET", "/admin/dlq/replay-tasks?limit=0", 400},
		{"GET", "/admin/dlq/replay-tasks/1", 200},
		{"GET", "/admin/dlq/replay-tasks/2", 404},
		{"GET", "/admin/dlq/replay-tasks/x", 404},
		{"POST", "/admin/dlq/replay-tasks/1/pause", 200},
		{"POST", "/admin/dlq/replay-tasks/1/pause", 409},
		{"POST", "/admin/dlq/replay-tasks/1/resume", 200},
		{"POST", "/admin/dlq/replay-tasks/1/cancel", 200},
		{"POST", "/admin/dlq/replay-tasks/1/resume", 409},
		{"POST", "/admin/dlq/replay-tasks/9/cancel", 404},
		{"GET", "/admin/audit?action=replay_task_cancel", 200},
	} {
		if rec, _ := do(h, c.method, c.path, "", adminHeaders); rec.Code != c.status {
			t.Errorf("%s %s: %d %s", c.method, c.path, rec.Code, rec.Body)
		}
	}
	var actions []string
	rows, _ := api.DB.Query(`SELECT action || ':' || outcome FROM admin_audit ORDER BY id`)
	for rows.Next() {
		var a string
		rows.Scan(&a)
		actions = append(actions, a)
	}
	rows.Close()
	want := "[replay_task:ok replay_task_pause:ok replay_task_pause:error replay_task_resume:ok replay_task_cancel:ok replay_task_resume:error replay_task_cancel:error]"
	if got := jsonString(actions); got != want {
		t.Errorf("audit %s, want %s", got, want)
	}
	if rec, _ := do(h, "POST", "/admin/dlq/replay", `{"ids":[1],"destination":"elsewhere"}`, adminHeaders); rec.Code != 400 {
		t.Errorf("replay to an unbound queue: %d", rec.Code)
	}
}

func jsonString(v []string) string {
	out := "["
	for i, s := range v {
		if i > 0 {
			out += " "
		}
		out += s
	}
	return out + "]"
}
