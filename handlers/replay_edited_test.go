package handlers

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/redrive/redrive/queue"
)

func TestReplayEditedOverHTTP(t *testing.T) {
	api, s := newDLQAPI(t)
	api.ReplayDestinations = []string{"staging"}
	ids := seedRows(t, api.DB, 3)
	api.DB.Exec(`UPDATE dlq_messages SET content_type = 'text', raw_message = 'plain' WHERE id = ?`, ids[2])
	h := api.Handler()
	path := func(id int64) string { return fmt.Sprintf("/admin/dlq/%d/replay", id) }
	before := tableState(t, api.DB)
	for _, c := range []struct {
		path, body string
		status     int
		code       string
	}{
		{path(ids[0]), ``, 400, "INVALID_REQUEST"},
		{path(ids[0]), `{}`, 400, "INVALID_REQUEST"},
		{path(ids[0]), `{"note":"n"}`, 400, "INVALID_REQUEST"},
		{path(ids[0]), `{"body":null,"note":"n"}`, 400, "INVALID_REQUEST"},
		{path(ids[0]), `{"body":{}}`, 400, "INVALID_REQUEST"},
		{path(ids[0]), `{"body":{},"note":""}`, 400, "INVALID_REQUEST"},
		{path(ids[0]), `{"body":{},"note":"n","x":1}`, 400, "INVALID_REQUEST"},
		{path(ids[0]), `{"body":{},"note":"n","body":{}}`, 400, "INVALID_REQUEST"},
		{path(ids[0]), `{"body":{},"note":"n","delay_seconds":-1}`, 400, "INVALID_DELAY"},
		{path(ids[0]), `{"body":{},"note":"n","delay_seconds":"5"}`, 400, "INVALID_DELAY"},
		{path(ids[0]), `{"body":{},"note":"n","destination":"prod"}`, 400, "INVALID_DESTINATION"},
		{path(ids[0]) + "?x=1", `{"body":{},"note":"n"}`, 400, "INVALID_REQUEST"},
		{"/admin/dlq/0/replay", `{"body":{},"note":"n"}`, 404, "NOT_FOUND"},
		{"/admin/dlq/abc/replay", `{"body":{},"note":"n"}`, 404, "NOT_FOUND"},
		{"/admin/dlq/9999/replay", `{"body":{},"note":"n"}`, 404, "NOT_FOUND"},
		{path(ids[2]), `{"body":"x","note":"n"}`, 409, "INVALID_STATE"},
	} {
		rec, env := do(h, "POST", c.path, c.body, adminHeaders)
		if rec.Code != c.status || env.Error == nil || env.Error.Code != c.code {
			t.Errorf("%s %s: %d %s", c.path, c.body, rec.Code, rec.Body)
		}
	}
	if tableState(t, api.DB) != before || s.Calls != 0 {
		t.Fatal("a refused edited replay changed something")
	}

	rec, _ := do(h, "POST", path(ids[0]), `{"body": {"beer_id": "b0", "beer_name": "=fixed"}, "note": "name was lost", "delay_seconds": 30, "destination": "staging"}`, adminHeaders)
	if rec.Code != 200 {
		t.Fatalf("%d %s", rec.Code, rec.Body)
	}
	var res struct {
		Replayed         bool   `json:"replayed"`
		QueuedTo         string `json:"queued_to"`
		OriginalBodyHash string `json:"original_body_hash"`
		EditedBodyHash   string `json:"edited_body_hash"`
	}
	var out struct {
		Data json.RawMessage `json:"data"`
	}
	json.Unmarshal(rec.Body.Bytes(), &out)
	json.Unmarshal(out.Data, &res)
	sent := s.Sent["staging"]
	if !res.Replayed || res.QueuedTo != "staging" || len(sent) != 1 || sent[0].Body != `{"beer_id":"b0","beer_name":"=fixed"}` ||
		sent[0].ContentType != queue.JSON || sent[0].Delay.Seconds() != 30 || res.OriginalBodyHash == res.EditedBodyHash {
		t.Fatalf("%+v sent %+v", res, sent)
	}
	var raw string
	api.DB.QueryRow(`SELECT raw_message FROM dlq_messages WHERE id = ?`, ids[0]).Scan(&raw)
	if raw != `{"beer_id":"b0"}` {
		t.Fatalf("raw_message changed: %s", raw)
	}
	// Again: the row is replayed now.
	if rec, env := do(h, "POST", path(ids[0]), `{"body":{},"note":"n"}`, adminHeaders); rec.Code != 409 || env.Error.Code != "INVALID_STATE" {
		t.Fatalf("%d %s", rec.Code, rec.Body)
	}
	// The audit log has the note and both hashes.
	rec, _ = do(h, "GET", "/admin/audit?action=replay_edited", "", adminHeaders)
	body := rec.Body.String()
	for _, want := range []string{`"note":"name was lost"`, `"original_body_hash":"` + res.OriginalBodyHash, `"edited_body_hash":"` + res.EditedBodyHash,
		`"outcome":"ok"`, `"outcome":"error"`, `"destination":"staging"`} {
		if !strings.Contains(body, want) {
			t.Errorf("audit has no %s: %s", want, body)
		}
	}
	// The row's detail lists the action.
	rec, _ = do(h, "GET", fmt.Sprintf("/admin/dlq/%d", ids[0]), "", adminHeaders)
	if !strings.Contains(rec.Body.String(), `"replay_edited"`) {
		t.Errorf("detail: %s", rec.Body)
	}
}

// An edited replay whose send fails answers 200 with replayed false (the
// row is pending again) and is audited as failed, not ok.
func TestReplayEditedSendFailureIsAuditedAsFailed(t *testing.T) {
	api, s := newDLQAPI(t)
	ids := seedRows(t, api.DB, 1)
	s.Err = errors.New("queue down")
	h := api.Handler()
	rec, env := do(h, "POST", fmt.Sprintf("/admin/dlq/%d/replay", ids[0]), `{"body":{"beer_id":"b0"},"note":"retry by hand"}`, adminHeaders)
	if rec.Code != 200 || env.Error != nil || !strings.Contains(rec.Body.String(), `"replayed":false`) {
		t.Fatalf("edited replay with the queue down: %d %s", rec.Code, rec.Body)
	}
	rec, _ = do(h, "GET", "/admin/audit?action=replay_edited", "", adminHeaders)
	if body := rec.Body.String(); !strings.Contains(body, `"outcome":"failed"`) || strings.Contains(body, `"outcome":"ok"`) {
		t.Fatalf("audit: %s", body)
	}
}
