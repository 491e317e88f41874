package relocation

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/internal/sqlitetest"
)

// Every check of an import line at its bounds: the last accepted value
// passes, the first refused one does not (the switch cases of
// ImportRow.check, which gremlins does not mutate).
func TestImportRowCheckBounds(t *testing.T) {
	valid := func() ImportRow {
		return ImportRow{ID: 1, MessageID: "m", SourceQueue: "q", Status: dlq.StatusPending, ContentType: "json",
			RawEncoding: "text", History: json.RawMessage("null"),
			Signature: &dlq.ImportSignature{Signature: "ab", Class: "c", Versions: json.RawMessage("[]"), SampleIDs: json.RawMessage("[]")}}
	}
	i64 := func(v int64) *int64 { return &v }
	str := func(n int) *string { s := strings.Repeat("x", n); return &s }
	type edit = func(r *ImportRow)
	ok := map[string]edit{
		"as built":              func(r *ImportRow) {},
		"id 1":                  func(r *ImportRow) { r.ID = 1 },
		"id 2^53-1":             func(r *ImportRow) { r.ID = 1<<53 - 1 },
		"message_id 1024 bytes": func(r *ImportRow) { r.MessageID = *str(importMaxName) },
		"source_queue 1024":     func(r *ImportRow) { r.SourceQueue = *str(importMaxName) },
		"beer_id 64 KiB":        func(r *ImportRow) { r.BeerID = *str(importMaxReason) },
		"last_message_id 1024":  func(r *ImportRow) { r.LastMessageID = *str(importMaxName) },
		"replaying":             func(r *ImportRow) { r.Status = dlq.StatusReplaying },
		"replayed":              func(r *ImportRow) { r.Status = dlq.StatusReplayed },
		"acknowledged":          func(r *ImportRow) { r.Status = dlq.StatusAcknowledged },
		"times 0":               func(r *ImportRow) { r.ReplayedAt, r.AcknowledgedAt, r.ReplayingAt = i64(0), i64(0), i64(0) },
		"counts 0":              func(r *ImportRow) { r.FailureCount = i64(0) },
		"text":                  func(r *ImportRow) { r.ContentType = "text" },
		"bytes":                 func(r *ImportRow) { r.ContentType = "bytes" },
		"v8":                    func(r *ImportRow) { r.ContentType = "v8" },
		"base64":                func(r *ImportRow) { r.RawEncoding = "base64" },
		"body_edited 0":         func(r *ImportRow) { r.BodyEdited = i64(0) },
		"body_edited 1":         func(r *ImportRow) { r.BodyEdited = i64(1) },
		"body_hash 1024":        func(r *ImportRow) { r.BodyHash = str(importMaxName) },
		"version 1024":          func(r *ImportRow) { r.Version = str(importMaxName) },
		"failure_class 1024":    func(r *ImportRow) { r.FailureClass = str(importMaxName) },
		"failure_reason 64 KiB": func(r *ImportRow) { r.FailureReason = str(importMaxReason) },
		"note 64 KiB":           func(r *ImportRow) { r.AcknowledgedNote = str(importMaxReason) },
		"beer_name 64 KiB":      func(r *ImportRow) { r.BeerName = str(importMaxReason) },
		"brewer 64 KiB":         func(r *ImportRow) { r.Brewer = str(importMaxReason) },
		"history []":            func(r *ImportRow) { r.History = json.RawMessage(" [ ] ") },
		"no signature":          func(r *ImportRow) { r.Signature = nil },
		"signature 64 digits":   func(r *ImportRow) { r.Signature.Signature = strings.Repeat("0123456789abcdef", 4) },
		"signature class 1024":  func(r *ImportRow) { r.Signature.Class = *str(importMaxName) },
		"signature text 64 KiB": func(r *ImportRow) { r.Signature.Text = *str(importMaxReason) },
		"signature queue 1024":  func(r *ImportRow) { r.Signature.SourceQueue = *str(importMaxName) },
		"signature announced 0": func(r *ImportRow) { r.Signature.AnnouncedAt = i64(0) },
		"signature arrays given": func(r *ImportRow) {
			r.Signature.Versions, r.Signature.SampleIDs = json.RawMessage(`["v"]`), json.RawMessage(`[1]`)
		},
	}
	refused := map[string]edit{
		"id 0":                         func(r *ImportRow) { r.ID = 0 },
		"id 2^53":                      func(r *ImportRow) { r.ID = 1 << 53 },
		"no message_id":                func(r *ImportRow) { r.MessageID = "" },
		"message_id 1025":              func(r *ImportRow) { r.MessageID = *str(importMaxName + 1) },
		"no source_queue":              func(r *ImportRow) { r.SourceQueue = "" },
		"source_queue 1025":            func(r *ImportRow) { r.SourceQueue = *str(importMaxName + 1) },
		"beer_id 64 KiB + 1":           func(r *ImportRow) { r.BeerID = *str(importMaxReason + 1) },
		"last_message_id 1025":         func(r *ImportRow) { r.LastMessageID = *str(importMaxName + 1) },
		"status":                       func(r *ImportRow) { r.Status = "gone" },
		"failed_at -1":                 func(r *ImportRow) { r.FailedAt = -1 },
		"first_failed_at -1":           func(r *ImportRow) { r.FirstFailedAt = -1 },
		"updated_at -1":                func(r *ImportRow) { r.UpdatedAt = -1 },
		"replayed_at -1":               func(r *ImportRow) { r.ReplayedAt = i64(-1) },
		"acknowledged_at -1":           func(r *ImportRow) { r.AcknowledgedAt = i64(-1) },
		"replaying_at -1":              func(r *ImportRow) { r.ReplayingAt = i64(-1) },
		"replay_count -1":              func(r *ImportRow) { r.ReplayCount = -1 },
		"history_dropped -1":           func(r *ImportRow) { r.HistoryDropped = -1 },
		"failure_count -1":             func(r *ImportRow) { r.FailureCount = i64(-1) },
		"content_type":                 func(r *ImportRow) { r.ContentType = "xml" },
		"raw_encoding":                 func(r *ImportRow) { r.RawEncoding = "hex" },
		"body_edited 2":                func(r *ImportRow) { r.BodyEdited = i64(2) },
		"body_edited -1":               func(r *ImportRow) { r.BodyEdited = i64(-1) },
		"body_hash 1025":               func(r *ImportRow) { r.BodyHash = str(importMaxName + 1) },
		"version 1025":                 func(r *ImportRow) { r.Version = str(importMaxName + 1) },
		"failure_class 1025":           func(r *ImportRow) { r.FailureClass = str(importMaxName + 1) },
		"failure_reason 64 KiB + 1":    func(r *ImportRow) { r.FailureReason = str(importMaxReason + 1) },
		"note 64 KiB + 1":              func(r *ImportRow) { r.AcknowledgedNote = str(importMaxReason + 1) },
		"beer_name 64 KiB + 1":         func(r *ImportRow) { r.BeerName = str(importMaxReason + 1) },
		"brewer 64 KiB + 1":            func(r *ImportRow) { r.Brewer = str(importMaxReason + 1) },
		"history object":               func(r *ImportRow) { r.History = json.RawMessage(`{}`) },
		"history missing":              func(r *ImportRow) { r.History = nil },
		"history broken":               func(r *ImportRow) { r.History = json.RawMessage(`[1,`) },
		"no signature digits":          func(r *ImportRow) { r.Signature.Signature = "" },
		"signature 65 digits":          func(r *ImportRow) { r.Signature.Signature = strings.Repeat("0", 65) },
		"signature upper case":         func(r *ImportRow) { r.Signature.Signature = "AB" },
		"no signature class":           func(r *ImportRow) { r.Signature.Class = "" },
		"signature class 1025":         func(r *ImportRow) { r.Signature.Class = *str(importMaxName + 1) },
		"signature text 64 KiB + 1":    func(r *ImportRow) { r.Signature.Text = *str(importMaxReason + 1) },
		"signature queue 1025":         func(r *ImportRow) { r.Signature.SourceQueue = *str(importMaxName + 1) },
		"signature first_seen -1":      func(r *ImportRow) { r.Signature.FirstSeen = -1 },
		"signature announced -1":       func(r *ImportRow) { r.Signature.AnnouncedAt = i64(-1) },
		"signature versions object":    func(r *ImportRow) { r.Signature.Versions = json.RawMessage(`{}`) },
		"signature versions missing":   func(r *ImportRow) { r.Signature.Versions = nil },
		"signature sample_ids object":  func(r *ImportRow) { r.Signature.SampleIDs = json.RawMessage(`{}`) },
		"signature sample_ids missing": func(r *ImportRow) { r.Signature.SampleIDs = nil },
	}
	for name, e := range ok {
		r := valid()
		e(&r)
		if err := r.check(); err != nil {
			t.Errorf("%s: refused: %v", name, err)
		}
	}
	for name, e := range refused {
		r := valid()
		e(&r)
		if err := r.check(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// lowerHex takes exactly 0-9 and a-f: the characters either side of each
// range are refused.
func TestLowerHexBounds(t *testing.T) {
	for _, c := range "0123456789abcdef" {
		if !lowerHex(string(c)) {
			t.Errorf("%q refused", c)
		}
	}
	for _, c := range "/:`gAF" {
		if lowerHex("0" + string(c)) {
			t.Errorf("%q accepted", c)
		}
	}
}

// ParseImport takes exactly maxLines lines (a last newline is no line) and
// refuses one more; a line that is not a JSON object says so.
func TestParseImportLineBounds(t *testing.T) {
	line := func(id int) string {
		return fmt.Sprintf(`{"id":%d,"message_id":"m%d","beer_id":"k","failed_at":1,"source_queue":"q","status":"pending","replay_count":0,`+
			`"first_failed_at":1,"updated_at":1,"content_type":"json","raw_message":"{}","raw_encoding":"text","last_message_id":"m",`+
			`"body_hash":null,"history":null,"history_dropped":0,"signature":null,"replaying_at":0,"failure_count":0}`, id, id)
	}
	rows, err := ParseImport([]byte(line(1)+"\n"+line(2)+"\n"), 2)
	if err != nil || len(rows) != 2 || rows[1].ID != 2 || *rows[0].ReplayingAt != 0 {
		t.Fatalf("two lines of at most two: %+v %v", rows, err)
	}
	_, err = ParseImport([]byte(line(1)+"\n"+line(2)+"\n"+line(3)), 2)
	wantInput(t, err, "TOO_MANY_LINES")
	for _, bad := range []string{"[]", "1", `"s"`, "null", "{", `{"id":1,}`} {
		_, err := ParseImport([]byte(bad), 2)
		wantInput(t, err, "INVALID_LINE")
		if !strings.Contains(err.Error(), "line 1: not a JSON object") {
			t.Errorf("%s: %v", bad, err)
		}
	}
}

// AddMoveFields leaves a row it finds no fields for (gone between the
// list and its statement) as the list wrote it, and appends the fields of
// a row whose fields are longer than the row itself.
func TestAddMoveFieldsOfGoneAndLongRows(t *testing.T) {
	db := sqlitetest.New(t)
	history := "[" + strings.Repeat(`{"at":1,"attempt":1,"class":"transient","error":"a long error text of an attempt"},`, 60) + `{"at":2}]`
	if _, err := db.Exec(`INSERT INTO dlq_messages(id, message_id, row_key, failed_at, source_queue, history) VALUES (5, 'm', 'k', 1, 'q', ?)`, history); err != nil {
		t.Fatal(err)
	}
	gone, long := json.RawMessage(`{"id":4,"message_id":"x"}`), json.RawMessage(`{"id":5} `)
	rows := []json.RawMessage{gone, long}
	if err := dlq.AddMoveFields(context.Background(), db, rows); err != nil {
		t.Fatal(err)
	}
	if string(rows[0]) != string(gone) {
		t.Fatalf("the gone row became %s", rows[0])
	}
	var got map[string]json.RawMessage
	if err := json.Unmarshal(rows[1], &got); err != nil {
		t.Fatalf("%s: %v", rows[1], err)
	}
	if string(got["id"]) != "5" || string(got["history"]) != history || string(got["last_message_id"]) != `""` || len(got) != 1+len(dlq.MoveFieldNames) {
		t.Fatalf("the long row became %.200s…", rows[1])
	}
}
