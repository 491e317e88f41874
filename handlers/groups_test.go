package handlers

import (
	"encoding/json"
	"testing"

	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/dlq/inspect"
	"github.com/redrive/redrive/version"
)

// GET /admin/dlq/groups pages the kept counts; the signature and version
// filters reach the list and bulk actions; the stats name the live version.
func TestGroupsRouteAndFilters(t *testing.T) {
	api := newAPI(t)
	api.Running = version.Info{ID: "v-live", Tag: "t1", Build: "abc"}
	h := api.Handler()
	sig := dlq.SignatureOf("permanent", "status 400: bad model").Key
	if _, err := api.DB.Exec(`INSERT INTO dlq_signatures(signature, class, text, pending, acknowledged, first_seen, last_seen, versions, sample_ids)
		VALUES (?, 'permanent', 'status <n>: bad model', 2, 1, 5, 9, '["v-old"]', '[1,2]')`, sig); err != nil {
		t.Fatal(err)
	}
	if _, err := api.DB.Exec(`INSERT INTO dlq_messages(message_id, row_key, failed_at, last_message_id, signature, version)
		VALUES ('m1', 'b1', 5, 'm1', ?, 'v-old'), ('m2', 'b2', 6, 'm2', ?, 'v-live'), ('m3', 'b3', 7, 'm3', NULL, NULL)`, sig, sig); err != nil {
		t.Fatal(err)
	}
	rec, env := do(h, "GET", "/admin/dlq/groups?limit=10", "", adminHeaders)
	var p inspect.GroupsPage
	if js, _ := json.Marshal(env.Data); rec.Code != 200 || json.Unmarshal(js, &p) != nil || len(p.Groups) != 1 ||
		p.Groups[0].Counts != (inspect.GroupCounts{Pending: 2, Acknowledged: 1}) || !p.Groups[0].ReplayWillFail || p.Groups[0].Total != 3 {
		t.Fatalf("groups: %d %s", rec.Code, rec.Body)
	}
	rec, env = do(h, "GET", "/admin/dlq/groups?limit=10&sort=first_seen", "", adminHeaders)
	if js, _ := json.Marshal(env.Data); rec.Code != 200 || json.Unmarshal(js, &p) != nil || len(p.Groups) != 1 || p.Groups[0].FirstSeen != 5 {
		t.Fatalf("groups newest first: %d %s", rec.Code, rec.Body)
	}
	for _, q := range []string{"limit=0", "limit=101", "cursor=nope", "bogus=1", "sort=size"} {
		if rec, _ := do(h, "GET", "/admin/dlq/groups?"+q, "", adminHeaders); rec.Code != 400 {
			t.Errorf("groups?%s: %d %s", q, rec.Code, rec.Body)
		}
	}
	for q, want := range map[string]float64{"signature=" + sig: 2, "version=v-old&signature=" + sig: 1, "version_not=v-live": 2} {
		rec, env := do(h, "GET", "/admin/dlq?"+q, "", adminHeaders)
		if got := env.Data.(map[string]any)["total_count"]; rec.Code != 200 || got != want {
			t.Errorf("list ?%s: %d total %v, want %v", q, rec.Code, got, want)
		}
	}
	if rec, env := do(h, "GET", "/admin/dlq?signature=XYZ", "", adminHeaders); rec.Code != 400 || env.Error.Code != "INVALID_FILTER" {
		t.Errorf("bad signature: %d %s", rec.Code, rec.Body)
	}
	rec, env = do(h, "POST", "/admin/dlq/acknowledge", `{"filter":{"signature":"`+sig+`"},"dry_run":true}`, adminHeaders)
	if rec.Code != 200 || env.Data.(map[string]any)["matched_count"] != float64(2) {
		t.Errorf("dry run by signature: %d %s", rec.Code, rec.Body)
	}
	rec, env = do(h, "GET", "/admin/dlq/stats", "", adminHeaders)
	cv, _ := env.Data.(map[string]any)["current_version"].(map[string]any)
	if rec.Code != 200 || cv["stamp"] != "v-live" || cv["tag"] != "t1" || cv["build"] != "abc" {
		t.Errorf("stats current_version: %v", cv)
	}
}
