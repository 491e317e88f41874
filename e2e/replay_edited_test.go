//go:build e2e

package e2e

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// Edit and replay in workerd: the edited value reaches the JavaScript
// consumer (as an object), the row keeps its raw_message; an edited message
// that fails again comes back to its row (lineage by the edited hash).
func TestReplayEditedDeliversTheEditAndKeepsLineage(t *testing.T) {
	w := shared
	tok := unique("edit")
	okRaw := fmt.Sprintf(`{"fail":true,"token":"%s-ok"}`, tok)
	againRaw := fmt.Sprintf(`{"fail":true,"token":"%s-again"}`, tok)
	w.Exec(t, fmt.Sprintf(`INSERT INTO dlq_messages(message_id, row_key, failed_at, source_queue, raw_message, content_type, first_failed_at, updated_at)
		VALUES ('%[1]s-m1', '%[1]s-b1', 1000, 'e2e-js', '%[2]s', 'json', 1000, 1000),
		       ('%[1]s-m2', '%[1]s-b2', 1000, 'e2e-js', '%[3]s', 'json', 1000, 1000)`, tok, okRaw, againRaw))
	id1 := w.Int(t, `SELECT id FROM dlq_messages WHERE message_id = ?`, tok+"-m1")
	id2 := w.Int(t, `SELECT id FROM dlq_messages WHERE message_id = ?`, tok+"-m2")

	edited := fmt.Sprintf(`{"fail":false,"token":"%s-ok","fixed":"yes"}`, tok)
	r := w.Admin(t, http.MethodPost, fmt.Sprintf("/admin/dlq/%d/replay", id1),
		fmt.Sprintf(`{"body": {"fail": false, "token": "%s-ok", "fixed": "yes"}, "note": "the producer set fail by mistake"}`, tok))
	if r.Status != http.StatusOK {
		t.Fatalf("%d %s", r.Status, r.Raw)
	}
	var res struct {
		Replayed         bool   `json:"replayed"`
		QueuedTo         string `json:"queued_to"`
		OriginalBodyHash string `json:"original_body_hash"`
		EditedBodyHash   string `json:"edited_body_hash"`
	}
	r.Decode(t, &res)
	if !res.Replayed || res.QueuedTo != "e2e-js" || res.OriginalBodyHash == res.EditedBodyHash {
		t.Fatalf("%+v", res)
	}
	Eventually(t, 60*time.Second, "the edited value delivered to the JavaScript consumer", func() bool {
		return len(w.jsDeliveries(t, edited)) == 1
	})
	if d := w.jsDeliveries(t, edited); d[0].TypeOf != "object" {
		t.Fatalf("delivered as %s", d[0].TypeOf)
	}
	var raw, status, hash string
	w.DB(t).QueryRow(`SELECT raw_message, status, body_hash FROM dlq_messages WHERE id = ?`, id1).Scan(&raw, &status, &hash)
	if raw != okRaw || status != "replayed" || hash != res.EditedBodyHash {
		t.Fatalf("row: %s %s %s", raw, status, hash)
	}
	if n := len(w.jsDeliveries(t, okRaw)); n != 0 {
		t.Fatalf("the original body was delivered %d times", n)
	}
	// The row's detail shows the audited action with its note.
	d := w.Admin(t, http.MethodGet, fmt.Sprintf("/admin/dlq/%d", id1), nil)
	if d.Status != 200 || !contains(d.Raw, `"replay_edited"`) || !contains(d.Raw, "the producer set fail by mistake") {
		t.Fatalf("detail: %s", d.Raw)
	}

	// Edited, still failing: the consumer retries it into the DLQ and the
	// capture updates row 2 (not a new row); raw_message stays the original.
	r = w.Admin(t, http.MethodPost, fmt.Sprintf("/admin/dlq/%d/replay", id2),
		fmt.Sprintf(`{"body": {"fail": true, "token": "%s-again", "v": 2}, "note": "try v2"}`, tok))
	if r.Status != http.StatusOK {
		t.Fatalf("%d %s", r.Status, r.Raw)
	}
	Eventually(t, 120*time.Second, "the edited message's repeat failure back on its row", func() bool {
		return w.Int(t, `SELECT COUNT(*) FROM dlq_messages WHERE id = ? AND status = 'pending' AND replay_count = 1 AND last_message_id <> message_id`, id2) == 1
	})
	if n := w.Int(t, `SELECT COUNT(*) FROM dlq_messages WHERE instr(raw_message, ?) > 0`, tok+"-again"); n != 1 {
		t.Fatalf("%d rows for the edited message, want its one row", n)
	}
	w.DB(t).QueryRow(`SELECT raw_message FROM dlq_messages WHERE id = ?`, id2).Scan(&raw)
	if raw != againRaw {
		t.Fatalf("raw_message changed: %s", raw)
	}
	// A row that is not pending: 409 INVALID_STATE.
	if r := w.Admin(t, http.MethodPost, fmt.Sprintf("/admin/dlq/%d/replay", id1), `{"body":{},"note":"n"}`); r.Status != 409 || r.Error == nil || r.Error.Code != "INVALID_STATE" {
		t.Fatalf("%d %s", r.Status, r.Raw)
	}
}

func contains(b []byte, s string) bool { return strings.Contains(string(b), s) }
