//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// The route × scope matrix in workerd, generated from handlers/openapi.json
// (whose x-pipeline-scope a native test holds to the route table). An
// admin key limited to the tickets pipeline asks every route about a beers
// row and a beers task: a route of every pipeline answers 403; a
// per-pipeline route refuses (400, 403, 404) or answers without a word of
// the beers row, and nothing changes. A beers key reads the row; a key of
// two pipelines names one.
func TestScopeMatrixInWorkerd(t *testing.T) {
	paths, ops := openAPIOperations(t)
	prefix := newPrefix("scope")
	shared.Exec(t, fmt.Sprintf(`INSERT INTO dlq_messages(message_id, %s, label_1, failed_at, source_queue, raw_message, content_type, first_failed_at, updated_at)
		VALUES ('%[2]s-m', '%[2]s-beer', 'Scoped', 1000, 'beer-enrichment', '{"beer_id":"%[2]s-beer"}', 'json', 1000, 1000)`, shared.KeyColumn(), prefix))
	id := shared.Int(t, `SELECT id FROM dlq_messages WHERE message_id = ?`, prefix+"-m")
	status := func() string {
		var s string
		if err := shared.DB(t).QueryRow(`SELECT status || ':' || replay_count FROM dlq_messages WHERE id = ?`, id).Scan(&s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	r := shared.Admin(t, http.MethodPost, "/admin/dlq/replay-tasks", map[string]any{
		"filter": map[string]any{"pipeline": "beers", "beer_id": prefix + "-beer"}, "rate_per_minute": 1})
	var task struct{ ID int64 }
	if r.Status != http.StatusAccepted || json.Unmarshal(r.Data, &task) != nil {
		t.Fatalf("task: %d %s", r.Status, r.Raw)
	}
	if r := shared.Admin(t, http.MethodPost, fmt.Sprintf("/admin/dlq/replay-tasks/%d/cancel", task.ID), nil); r.Status != 200 {
		t.Fatalf("cancel: %d %s", r.Status, r.Raw)
	}
	tickets := map[string]string{"Authorization": "Bearer " + newKey(t, shared, prefix+"-tickets", "admin", "tickets")}
	bodies := map[string]string{
		"/admin/dlq/replay":       fmt.Sprintf(`{"ids":[%d]}`, id),
		"/admin/dlq/acknowledge":  fmt.Sprintf(`{"ids":[%d],"note":"n"}`, id),
		"/admin/dlq/{id}/replay":  `{"body":{"beer_id":"x"},"note":"n"}`,
		"/admin/dlq/replay-tasks": `{"filter":{"pipeline":"beers"},"rate_per_minute":1}`,
		"/admin/attempts":         `{"attempts":[{"queue":"e2e-orders","message_id":"x","attempt":1,"error":"e"}]}`,
	}
	before, checked := status(), 0
	for _, p := range paths {
		for method, op := range ops[p] {
			if op.Permission == "public" || p == "/admin/openapi.json" {
				continue
			}
			path := strings.ReplaceAll(p, "{id}", fmt.Sprint(id))
			if strings.HasPrefix(p, "/admin/dlq/replay-tasks/") {
				path = strings.ReplaceAll(p, "{id}", fmt.Sprint(task.ID))
			}
			hdr := map[string]string{"Authorization": tickets["Authorization"]}
			var body any
			if method == "post" {
				body, hdr["Content-Type"] = bodies[p], "application/json"
				if body == "" {
					body = "{}"
				}
				if p == "/admin/dlq/import" {
					hdr["Content-Type"] = "application/x-ndjson"
				}
			}
			r, err := shared.Do(strings.ToUpper(method), path, body, hdr)
			if err != nil {
				t.Fatal(err)
			}
			text := string(r.Raw)
			switch {
			case op.Scope == "every":
				if r.Status != 403 || !strings.Contains(text, "credentials of every pipeline") {
					t.Errorf("%s %s (every pipeline): %d %.300s", method, path, r.Status, text)
				}
			case r.Status == 400 || r.Status == 403 || r.Status == 404:
			case method == "get" && r.Status == 200 && !strings.Contains(text, prefix+"-beer") && !strings.Contains(text, prefix+"-m") &&
				!strings.Contains(text, "beer-enrichment"):
			default:
				t.Errorf("%s %s as the tickets key: %d %.300s", method, path, r.Status, text)
			}
			checked++
		}
	}
	if after := status(); after != before || checked < 25 {
		t.Fatalf("the beers row went from %s to %s; %d requests", before, after, checked)
	}
	// The beers key reads the row; a key of two pipelines names one.
	as := func(token, path string) *Response {
		r, err := shared.Do("GET", path, nil, map[string]string{"Authorization": "Bearer " + token})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	beers := newKey(t, shared, prefix+"-beers", "viewer", "beers")
	two := newKey(t, shared, prefix+"-two", "viewer", "beers", "tickets")
	if r := as(beers, "/admin/dlq?beer_id="+prefix+"-beer"); r.Status != 200 || !strings.Contains(string(r.Raw), prefix+"-beer") {
		t.Errorf("the beers key's list: %d %.300s", r.Status, r.Raw)
	}
	if r := as(two, "/admin/dlq?beer_id="+prefix+"-beer"); r.Status != 400 || !strings.Contains(string(r.Raw), "PIPELINE_REQUIRED") {
		t.Errorf("two pipelines, none named: %d %.300s", r.Status, r.Raw)
	}
	if r := as(two, "/admin/dlq?pipeline=beers&beer_id="+prefix+"-beer"); r.Status != 200 || !strings.Contains(string(r.Raw), prefix+"-beer") {
		t.Errorf("two pipelines, beers named: %d %.300s", r.Status, r.Raw)
	}
	if r := as(two, "/admin/dlq?pipeline=orders"); r.Status != 403 {
		t.Errorf("two pipelines, orders named: %d %.300s", r.Status, r.Raw)
	}
}
