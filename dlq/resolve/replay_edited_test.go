package resolve

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/internal/sqlitetest"
	"github.com/redrive/redrive/queue"
	"github.com/redrive/redrive/queue/queuetest"
)

// An edited replay sends the edited value (compact, json), keeps
// raw_message, makes the edited hash the row's lineage key: the edited
// message failing again comes back to the row. A plain replay after it
// sends the stored body and moves the key back.
func TestReplayEditedSendsTheEditAndKeepsLineage(t *testing.T) {
	db := sqlitetest.New(t)
	ids := insert(t, db, adminRow{Key: "1", FailedAt: 1, ContentType: "json"}, adminRow{Key: "2", FailedAt: 2, Raw: "plain", ContentType: "text"})
	var raw, origHash string
	db.QueryRow(`SELECT raw_message, body_hash FROM dlq_messages WHERE id = ?`, ids[0]).Scan(&raw, &origHash)
	s := &queuetest.Sender{}
	r := newReplay(db, s)
	res, err := r.RunEdited(ctx, EditedReplayRequest{ID: ids[0], Body: json.RawMessage(`{ "beer_id": "1", "beer_name": "Fixed" }`), Note: "fix name"})
	if err != nil || !res.Replayed || res.QueuedTo != "beer-enrichment" {
		t.Fatalf("%+v %v", res, err)
	}
	sent := s.Sent["beer-enrichment"]
	edited := `{"beer_id":"1","beer_name":"Fixed"}`
	if len(sent) != 1 || sent[0].Body != edited || sent[0].ContentType != queue.JSON {
		t.Fatalf("sent %+v", sent)
	}
	if res.EditedBodyHash != dlq.BodyHash(queue.JSON, edited) || res.OriginalBodyHash != dlq.BodyHash(queue.JSON, raw) || (origHash != "" && origHash != res.OriginalBodyHash) {
		t.Fatalf("hashes %+v (stored %q)", res, origHash)
	}
	var nowRaw, nowHash, status string
	var replays int64
	db.QueryRow(`SELECT raw_message, body_hash, status, replay_count FROM dlq_messages WHERE id = ?`, ids[0]).Scan(&nowRaw, &nowHash, &status, &replays)
	if nowRaw != raw || nowHash != res.EditedBodyHash || status != dlq.StatusReplayed || replays != 1 {
		t.Fatalf("row: raw %q hash %q %s %d", nowRaw, nowHash, status, replays)
	}
	// The edited message fails again: the same row, pending again.
	c := newCapture(db, &bytes.Buffer{})
	consume(t, c, &queuetest.Message{MsgID: "again-1", Attempt: 4, Text: edited, Type: queue.JSON})
	if n := count(t, db, `SELECT COUNT(*) FROM dlq_messages`); n != 2 {
		t.Fatalf("%d rows: the repeat failure of the edited message made a new row", n)
	}
	if n := count(t, db, `SELECT COUNT(*) FROM dlq_messages WHERE id = ? AND status = 'pending' AND last_message_id = 'again-1' AND raw_message = ?`, ids[0], raw); n != 1 {
		t.Fatal("the repeat failure did not come back to the row (or changed raw_message)")
	}
	// A plain replay sends the stored body and its hash is the key again.
	if res, err := r.Run(ctx, ReplayRequest{Selection: dlq.Selection{IDs: ids[:1]}}); err != nil || res.ReplayedCount != 1 {
		t.Fatalf("%+v %v", res, err)
	}
	consume(t, c, &queuetest.Message{MsgID: "again-2", Attempt: 4, Text: raw, Type: queue.JSON})
	if n := count(t, db, `SELECT COUNT(*) FROM dlq_messages WHERE id = ? AND status = 'pending' AND last_message_id = 'again-2' AND replay_count = 2`, ids[0]); n != 1 {
		t.Fatal("the plain replay's repeat failure did not come back to the row")
	}

	// Not pending, not json, missing: nothing changes, nothing is sent.
	r.Run(ctx, ReplayRequest{Selection: dlq.Selection{IDs: ids[:1]}})
	before := s.Calls
	var se *RowStateError
	if _, err := r.RunEdited(ctx, EditedReplayRequest{ID: ids[0], Body: json.RawMessage(`{}`), Note: "n"}); !errors.As(err, &se) || se.Status != dlq.StatusReplayed {
		t.Fatalf("replayed row: %v", err)
	}
	if _, err := r.RunEdited(ctx, EditedReplayRequest{ID: ids[1], Body: json.RawMessage(`"x"`), Note: "n"}); !errors.As(err, &se) || se.ContentType != "text" {
		t.Fatalf("text row: %v", err)
	}
	if _, err := r.RunEdited(ctx, EditedReplayRequest{ID: 999, Body: json.RawMessage(`{}`), Note: "n"}); !errors.Is(err, ErrRowNotFound) {
		t.Fatalf("missing row: %v", err)
	}
	if s.Calls != before || count(t, db, `SELECT COUNT(*) FROM dlq_messages WHERE id = ? AND status = 'pending'`, ids[1]) != 1 {
		t.Fatal("a refused edited replay changed something")
	}
}

func TestReplayEditedChecksItsInput(t *testing.T) {
	r := newReplay(sqlitetest.New(t), &queuetest.Sender{})
	r.Destinations = []string{"staging"}
	for _, c := range []struct {
		req  EditedReplayRequest
		code string
	}{
		{EditedReplayRequest{ID: 1, Note: "n"}, "INVALID_REQUEST"},
		{EditedReplayRequest{ID: 1, Body: json.RawMessage(`null`), Note: "n"}, "INVALID_REQUEST"},
		{EditedReplayRequest{ID: 1, Body: json.RawMessage(`{"a":`), Note: "n"}, "INVALID_REQUEST"},
		{EditedReplayRequest{ID: 1, Body: json.RawMessage(`{}`)}, "INVALID_REQUEST"},
		{EditedReplayRequest{ID: 1, Body: json.RawMessage(`"` + string(bytes.Repeat([]byte("x"), MaxEditedBody)) + `"`), Note: "n"}, "INVALID_REQUEST"},
		{EditedReplayRequest{ID: 1, Body: json.RawMessage(`{}`), Note: "n", DelaySeconds: -1}, "INVALID_DELAY"},
		{EditedReplayRequest{ID: 1, Body: json.RawMessage(`{}`), Note: "n", Destination: "prod"}, "INVALID_DESTINATION"},
	} {
		_, err := r.CheckEdited(c.req)
		var ie *dlq.InputError
		if !errors.As(err, &ie) || ie.Code != c.code {
			t.Errorf("%+v: %v, want %s", c.req.Note, err, c.code)
		}
	}
	if body, err := r.CheckEdited(EditedReplayRequest{ID: 1, Body: json.RawMessage(" [1, 2] "), Note: "n", Destination: "staging"}); err != nil || body != "[1,2]" {
		t.Fatalf("%q %v", body, err)
	}
}

// Every limit of an edited replay is accepted at its edge and refused one
// past it; an id outside 1..2^53-1 is no row.
func TestReplayEditedLimitsAtTheirEdges(t *testing.T) {
	r := newReplay(sqlitetest.New(t), &queuetest.Sender{})
	str := func(n int) json.RawMessage { return json.RawMessage(`"` + strings.Repeat("x", n-2) + `"`) } // n bytes of JSON
	ok := []EditedReplayRequest{
		{ID: 1, Body: str(MaxEditedBody), Note: "n"},
		{ID: dlq.MaxSafeInteger, Body: json.RawMessage(`{}`), Note: strings.Repeat("n", dlq.MaxNoteLength)},
		{ID: 1, Body: json.RawMessage(`{}`), Note: "n", DelaySeconds: 0},
		{ID: 1, Body: json.RawMessage(`{}`), Note: "n", DelaySeconds: dlq.MaxDelaySeconds},
	}
	for _, req := range ok {
		if _, err := r.CheckEdited(req); err != nil {
			t.Errorf("id %d, %d-byte body, %d-byte note, delay %d: %v", req.ID, len(req.Body), len(req.Note), req.DelaySeconds, err)
		}
	}
	bad := []EditedReplayRequest{
		{ID: 1, Body: str(MaxEditedBody + 1), Note: "n"},
		{ID: 1, Body: json.RawMessage(`{}`), Note: strings.Repeat("n", dlq.MaxNoteLength+1)},
		{ID: 1, Body: json.RawMessage(`{}`), Note: "n", DelaySeconds: dlq.MaxDelaySeconds + 1},
	}
	for _, req := range bad {
		var ie *dlq.InputError
		if _, err := r.CheckEdited(req); !errors.As(err, &ie) {
			t.Errorf("%d-byte body, %d-byte note, delay %d: %v, want an input error", len(req.Body), len(req.Note), req.DelaySeconds, err)
		}
	}
	for _, id := range []int64{0, dlq.MaxSafeInteger + 1} {
		if _, err := r.CheckEdited(EditedReplayRequest{ID: id, Body: json.RawMessage(`{}`), Note: "n"}); !errors.Is(err, ErrRowNotFound) {
			t.Errorf("id %d: %v, want ErrRowNotFound", id, err)
		}
	}
}

// A second edited replay of a row whose first edited message failed again
// reports the stored body's hash as original_body_hash, not the first
// edit's (which is the row's body_hash by then).
func TestReplayEditedTwiceReportsTheStoredBodysHash(t *testing.T) {
	db := sqlitetest.New(t)
	ids := insert(t, db, adminRow{Key: "1", FailedAt: 1, ContentType: "json"})
	var raw string
	db.QueryRow(`SELECT raw_message FROM dlq_messages WHERE id = ?`, ids[0]).Scan(&raw)
	want := dlq.BodyHash(queue.JSON, raw)
	r := newReplay(db, &queuetest.Sender{})
	c := newCapture(db, &bytes.Buffer{})
	for i, edit := range []string{`{"beer_id":"1","beer_name":"First"}`, `{"beer_id":"1","beer_name":"Second"}`} {
		res, err := r.RunEdited(ctx, EditedReplayRequest{ID: ids[0], Body: json.RawMessage(edit), Note: "fix"})
		if err != nil || !res.Replayed {
			t.Fatalf("edit %d: %+v %v", i+1, res, err)
		}
		if res.OriginalBodyHash != want || res.EditedBodyHash != dlq.BodyHash(queue.JSON, edit) {
			t.Fatalf("edit %d: original %s (want the stored body's %s), edited %s", i+1, res.OriginalBodyHash, want, res.EditedBodyHash)
		}
		// The edited message fails again and comes back to the row.
		consume(t, c, &queuetest.Message{MsgID: "again-" + edit[len(edit)-8:], Attempt: 4, Text: edit, Type: queue.JSON})
		if n := count(t, db, `SELECT COUNT(*) FROM dlq_messages WHERE id = ? AND status = 'pending'`, ids[0]); n != 1 {
			t.Fatalf("edit %d: the repeat failure did not come back to the row", i+1)
		}
	}
}

// The edited message goes out with the delay asked for, in seconds, and
// the result says it.
func TestReplayEditedSendsWithItsDelay(t *testing.T) {
	db := sqlitetest.New(t)
	ids := insert(t, db, adminRow{Key: "1", FailedAt: 1, ContentType: "json"})
	s := &queuetest.Sender{}
	res, err := newReplay(db, s).RunEdited(ctx, EditedReplayRequest{ID: ids[0], Body: json.RawMessage(`{"beer_id":"1"}`), Note: "later", DelaySeconds: 90})
	if err != nil || !res.Replayed || res.DelaySeconds != 90 {
		t.Fatalf("%+v %v", res, err)
	}
	if sent := s.Messages("beer-enrichment"); len(sent) != 1 || sent[0].Delay != 90*time.Second {
		t.Fatalf("sent %+v, want one message delayed 90 s", sent)
	}
}

// A refused edited replay says why: the row's status when it is not
// pending, else its content type (the 409 INVALID_STATE message).
func TestRowStateErrorSaysWhy(t *testing.T) {
	for err, want := range map[*RowStateError]string{
		{ID: 7, Status: dlq.StatusReplayed, ContentType: "json"}: "row 7 is replayed; only a pending row can be replayed edited",
		{ID: 8, Status: dlq.StatusPending, ContentType: "text"}:  "row 8 has content type text; only a json row can be replayed edited",
	} {
		if got := err.Error(); got != want {
			t.Errorf("%q, want %q", got, want)
		}
	}
}
