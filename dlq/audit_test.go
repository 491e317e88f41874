package dlq

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/redrive/redrive/internal/sqlitetest"
)

func TestAuditRecordsAndPagesNewestFirst(t *testing.T) {
	db := sqlitetest.New(t)
	a := Audit{DB: db, Cursors: NewCursors("s"), Clock: fixedClock}
	var ids []int64
	for i := 0; i < 7; i++ {
		start := AuditStart{Action: ActionReplay, Requester: Requester{RequestID: "req-" + string(rune('a'+i)), KeyFingerprint: "fp"}, IDs: []int64{int64(i + 1), 99}}
		if i%2 == 1 {
			start = AuditStart{Action: ActionAcknowledge, Requester: Requester{RequestID: "req", KeyFingerprint: "fp"}, DryRun: true,
				Filter: &Filter{Key: "b"}, Note: "n"}
		}
		id, err := a.Begin(ctx, start)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
		if i != 6 { // the last one stays "started"
			if err := a.Finish(ctx, id, OutcomeOK, map[string]int{"claimed_count": i}, nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	var got []AuditEntry
	cursor := ""
	for {
		p, err := a.Page(ctx, AuditParams{Limit: 3, Cursor: cursor})
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, p.Entries...)
		if !p.HasMore {
			break
		}
		cursor = *p.NextCursor
	}
	if len(got) != 7 || got[0].ID != ids[6] || got[6].ID != ids[0] {
		t.Fatalf("entries %+v", got)
	}
	if got[0].Outcome != OutcomeStarted || got[0].FinishedAt != nil || string(got[0].Counts) != "null" {
		t.Fatalf("unfinished entry %+v", got[0])
	}
	last := got[6]
	var counts map[string]int
	json.Unmarshal(last.Counts, &counts)
	if last.Action != ActionReplay || string(last.IDs) != "[1,99]" || string(last.Filter) != "null" || last.RequestID != "req-a" ||
		last.KeyFingerprint != "fp" || last.Outcome != OutcomeOK || counts["claimed_count"] != 0 || last.At != fixedClock().UnixMilli() {
		t.Fatalf("first entry %+v", last)
	}
	ack := got[1]
	if ack.Action != ActionAcknowledge || !ack.DryRun || string(ack.Filter) != `{"beer_id":"b"}` || *ack.Note != "n" {
		t.Fatalf("acknowledge entry %+v", ack)
	}
	p, err := a.Page(ctx, AuditParams{Action: ActionAcknowledge})
	if err != nil || len(p.Entries) != 3 {
		t.Fatalf("action filter: %d %v", len(p.Entries), err)
	}
	_, err = a.Page(ctx, AuditParams{Action: ActionReplay, Cursor: cursor})
	wantInput(t, err, "INVALID_CURSOR")
	_, err = a.Page(ctx, AuditParams{Action: "delete"})
	wantInput(t, err, "INVALID_FILTER")
	_, err = a.Page(ctx, AuditParams{Limit: 1000})
	wantInput(t, err, "INVALID_LIMIT")
}

// An entry's error is a code and a message, never the error's own text;
// entries written before errors had codes (their text) show neither.
func TestAuditErrorIsACodeAndAMessage(t *testing.T) {
	db := sqlitetest.New(t)
	a := Audit{DB: db, Cursors: NewCursors("s"), Clock: fixedClock}
	start := AuditStart{Action: ActionReplay, Requester: Requester{RequestID: "req-1", KeyFingerprint: "fp"}, IDs: []int64{1}}
	id, err := a.Begin(ctx, start)
	if err != nil {
		t.Fatal(err)
	}
	want := &AuditError{Code: "INTERNAL_ERROR", Message: "internal error; see the worker log for request req-1"}
	if err := a.Finish(ctx, id, OutcomeError, nil, want); err != nil {
		t.Fatal(err)
	}
	start.RequestID = "req-2"
	if err := a.Record(ctx, start, OutcomeError, nil, &AuditError{Code: "INVALID_CURSOR", Message: "bad cursor"}); err != nil {
		t.Fatal(err)
	}
	if err := a.Record(ctx, start, OutcomeOK, nil, nil); err != nil {
		t.Fatal(err)
	}
	legacy, err := a.Begin(ctx, AuditStart{Action: ActionReplay, Requester: Requester{RequestID: "req-old"}})
	if err != nil {
		t.Fatal(err)
	}
	db.Exec(`UPDATE admin_audit SET outcome = 'error', error = 'dlq list: D1_ERROR: LIKE or GLOB pattern too complex' WHERE id = ?`, legacy)

	p, err := a.Page(ctx, AuditParams{})
	if err != nil || len(p.Entries) != 4 {
		t.Fatalf("%+v %v", p, err)
	}
	js, _ := json.Marshal(p.Entries)
	if strings.Contains(string(js), "D1_ERROR") || strings.Contains(string(js), "LIKE") {
		t.Fatalf("an entry shows an error's text: %s", js)
	}
	got := []*AuditError{p.Entries[3].Error, p.Entries[2].Error, p.Entries[1].Error, p.Entries[0].Error}
	wants := []*AuditError{want, {Code: "INVALID_CURSOR", Message: "bad cursor"}, nil,
		{Code: "INTERNAL_ERROR", Message: "see the worker log for request req-old"}}
	for i := range wants {
		if !reflect.DeepEqual(got[i], wants[i]) {
			t.Errorf("entry %d: error %+v, want %+v", i, got[i], wants[i])
		}
	}
	if !strings.Contains(string(js), `"error":{"code":"INTERNAL_ERROR","message":"internal error; see the worker log for request req-1"}`) ||
		!strings.Contains(string(js), `"error":null`) {
		t.Fatalf("JSON shape: %s", js)
	}
}

// What a page shows of stored values that are not what the code writes
// today: an error that is JSON but has no code (null, an object without
// one) shows as INTERNAL_ERROR with the request id, as text does; ids,
// filter or counts that are not JSON show as null. Counts recorded with
// Record are shown as given, and no counts are stored as NULL.
func TestAuditPageShowsOnlyWellFormedStoredValues(t *testing.T) {
	db := sqlitetest.New(t)
	a := Audit{DB: db, Cursors: NewCursors("s"), Clock: fixedClock}
	start := AuditStart{Action: ActionAcknowledge, Requester: Requester{RequestID: "req-counts", KeyFingerprint: "fp"}, DryRun: true}
	if err := a.Record(ctx, start, OutcomeOK, map[string]int{"matched_count": 3}, nil); err != nil {
		t.Fatal(err)
	}
	start.RequestID = "req-none"
	if err := a.Record(ctx, start, OutcomeOK, nil, nil); err != nil {
		t.Fatal(err)
	}
	if n := count(t, db, `SELECT COUNT(*) FROM admin_audit WHERE request_id = 'req-none' AND counts IS NULL`); n != 1 {
		t.Fatal("no counts are not stored as NULL")
	}
	for _, stored := range []string{`null`, `{"message":"no code"}`, `text`} {
		id, err := a.Begin(ctx, AuditStart{Action: ActionReplay, Requester: Requester{RequestID: "req-" + stored}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.Exec(`UPDATE admin_audit SET outcome = 'error', error = ?, ids = '[1,', filter = 'x', counts = '{' WHERE id = ?`, stored, id); err != nil {
			t.Fatal(err)
		}
	}
	p, err := a.Page(ctx, AuditParams{})
	if err != nil || len(p.Entries) != 5 {
		t.Fatalf("%+v %v", p, err)
	}
	js, err := json.Marshal(p.Entries)
	if err != nil {
		t.Fatal(err)
	}
	for i, stored := range []string{`text`, `{"message":"no code"}`, `null`} {
		e := p.Entries[i]
		want := &AuditError{Code: "INTERNAL_ERROR", Message: "see the worker log for request req-" + stored}
		if !reflect.DeepEqual(e.Error, want) || string(e.IDs) != "null" || string(e.Filter) != "null" || string(e.Counts) != "null" {
			t.Errorf("stored error %s: shown as error %+v, ids %s, filter %s, counts %s", stored, e.Error, e.IDs, e.Filter, e.Counts)
		}
	}
	if string(p.Entries[3].Counts) != "null" || string(p.Entries[4].Counts) != `{"matched_count":3}` {
		t.Errorf("recorded counts: %s", js)
	}
}
