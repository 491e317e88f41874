package handlers

import (
	"encoding/json"
	"fmt"
	"testing"
)

// A replay's audit entry names its destination in its counts when it had
// one, and has no destination otherwise (pins handlers/dlq.go's check).
func TestReplayAuditCountsNameTheDestination(t *testing.T) {
	api, _ := newDLQAPI(t)
	api.ReplayDestinations = []string{"beer-enrichment", "staging"}
	ids := seedRows(t, api.DB, 2)
	h := api.Handler()
	for _, body := range []string{
		fmt.Sprintf(`{"ids":[%d],"destination":"staging"}`, ids[0]),
		fmt.Sprintf(`{"ids":[%d]}`, ids[1]),
	} {
		if rec, _ := do(h, "POST", "/admin/dlq/replay", body, adminHeaders); rec.Code != 200 {
			t.Fatalf("%s: %d %s", body, rec.Code, rec.Body)
		}
	}
	rec, _ := do(h, "GET", "/admin/audit?action=replay", "", adminHeaders)
	var out struct {
		Data struct {
			Entries []struct {
				Counts map[string]any `json:"counts"`
			} `json:"entries"`
		} `json:"data"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil || len(out.Data.Entries) != 2 {
		t.Fatalf("audit: %v %s", err, rec.Body)
	}
	// Newest first: the replay without a destination, then the one with.
	if d, ok := out.Data.Entries[0].Counts["destination"]; ok {
		t.Errorf("replay without a destination audited destination %v", d)
	}
	if d := out.Data.Entries[1].Counts["destination"]; d != "staging" {
		t.Errorf("replay to staging audited destination %v", d)
	}
}

// An edited replay of an id that is not a row id answers 404 before its
// body is read (pins the id check of handlers/dlq.go's dlqReplayEdited).
func TestReplayEditedOfANonRowIDIsNotFound(t *testing.T) {
	api, _ := newDLQAPI(t)
	h := api.Handler()
	for _, id := range []string{"0", "-5", "abc"} {
		rec, env := do(h, "POST", "/admin/dlq/"+id+"/replay", `not json`, adminHeaders)
		if rec.Code != 404 || env.Error == nil || env.Error.Code != "NOT_FOUND" {
			t.Errorf("id %s: %d %s", id, rec.Code, rec.Body)
		}
	}
}
