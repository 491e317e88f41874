package handlers

import (
	"strings"
	"testing"
)

func TestTaskCanaryOverHTTP(t *testing.T) {
	api, _ := newDLQAPI(t)
	seedRows(t, api.DB, 3)
	h := api.Handler()
	for _, body := range []string{
		`{"rate_per_minute":10,"canary":{}}`,
		`{"rate_per_minute":10,"canary":{"size":0,"min_success_ratio":0.5,"observe_minutes":5}}`,
		`{"rate_per_minute":10,"canary":{"size":1.5,"min_success_ratio":0.5,"observe_minutes":5}}`,
		`{"rate_per_minute":10,"canary":{"size":2,"min_success_ratio":"0.5","observe_minutes":5}}`,
		`{"rate_per_minute":10,"canary":{"size":2,"min_success_ratio":2,"observe_minutes":5}}`,
		`{"rate_per_minute":10,"canary":{"size":2,"min_success_ratio":0.5,"observe_minutes":5,"x":1}}`,
		`{"rate_per_minute":10,"canary":{"size":2,"min_success_ratio":0.5}}`,
		`{"rate_per_minute":10,"canary":[1]}`,
	} {
		rec, env := do(h, "POST", "/admin/dlq/replay-tasks", body, adminHeaders)
		if rec.Code != 400 || env.Error == nil || env.Error.Code != "INVALID_CANARY" {
			t.Errorf("%s: %d %s", body, rec.Code, rec.Body)
		}
	}
	rec, _ := do(h, "POST", "/admin/dlq/replay-tasks", `{"rate_per_minute":10,"canary":{"size":2,"min_success_ratio":0.5,"observe_minutes":5}}`, adminHeaders)
	if rec.Code != 202 || !strings.Contains(rec.Body.String(), `"state":"canary"`) ||
		!strings.Contains(rec.Body.String(), `"canary":{"size":2,"min_success_ratio":0.5,"observe_minutes":5}`) || !strings.Contains(rec.Body.String(), `"canary_result":null`) {
		t.Fatalf("%d %s", rec.Code, rec.Body)
	}
	// A canary task can be paused and cancelled.
	if rec, _ := do(h, "POST", "/admin/dlq/replay-tasks/1/pause", "", adminHeaders); rec.Code != 200 {
		t.Fatalf("pause: %d %s", rec.Code, rec.Body)
	}
	rec, _ = do(h, "GET", "/admin/audit?action=replay_task", "", adminHeaders)
	if !strings.Contains(rec.Body.String(), `"canary":{"size":2`) {
		t.Fatalf("audit: %s", rec.Body)
	}
}
