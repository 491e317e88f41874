package handlers

import (
	"encoding/json"
	"fmt"
	"testing"
)

// The parameters of the DLQ routes at the edges of what they accept: the
// smallest and largest limit, ids and delays whose digits are 0 or 9, an
// explicit delay of 0. Each accepted value is acted on as given.

func TestListLimitAcceptsOneAndHundred(t *testing.T) {
	api, _ := newDLQAPI(t)
	seedRows(t, api.DB, 3)
	h := api.Handler()
	for _, c := range []struct {
		path            string
		limit, messages int
		more            bool
	}{
		{"/admin/dlq?limit=1", 1, 1, true},
		{"/admin/dlq?limit=100", 100, 3, false},
	} {
		rec, env := do(h, "GET", c.path, "", adminHeaders)
		var p struct {
			Messages []json.RawMessage `json:"messages"`
			Limit    int               `json:"limit"`
			HasMore  bool              `json:"has_more"`
		}
		json.Unmarshal(mustJSON(env.Data), &p)
		if rec.Code != 200 || p.Limit != c.limit || len(p.Messages) != c.messages || p.HasMore != c.more {
			t.Errorf("%s: %d %s", c.path, rec.Code, rec.Body)
		}
	}
	// The audit log reads its limit with the same rule.
	for _, path := range []string{"/admin/audit?limit=1", "/admin/audit?limit=100"} {
		if rec, env := do(h, "GET", path, "", adminHeaders); rec.Code != 200 || !env.Success {
			t.Errorf("%s: %d %s", path, rec.Code, rec.Body)
		}
	}
}

// Ids with several digits, and with the digits 0 and 9, are read as the
// integers they are: the rows they name are replayed.
func TestReplayIDsWithEveryDigit(t *testing.T) {
	api, s := newDLQAPI(t)
	ids := seedRows(t, api.DB, 10)
	if ids[8] != 9 || ids[9] != 10 {
		t.Fatalf("seeded ids %v, want 1..10", ids)
	}
	rec, env := do(api.Handler(), "POST", "/admin/dlq/replay", `{"ids":[9,10],"delay_seconds":0}`, adminHeaders)
	var rep map[string]any
	json.Unmarshal(mustJSON(env.Data), &rep)
	if rec.Code != 200 || rep["replayed_count"] != 2.0 || rep["delay_seconds"] != 0.0 || len(s.Sent["beer-enrichment"]) != 2 {
		t.Fatalf("replay: %d %s", rec.Code, rec.Body)
	}
	var replayed string
	api.DB.QueryRow(`SELECT group_concat(id) FROM (SELECT id FROM dlq_messages WHERE status = 'replayed' ORDER BY id)`).Scan(&replayed)
	if replayed != "9,10" {
		t.Fatalf("replayed rows %q, want 9,10", replayed)
	}
}

// delay_seconds is read as the integer written, 0 and multi-digit values included.
func TestReplayDelaySecondsAsWritten(t *testing.T) {
	for _, delay := range []int{0, 9, 10, 90, 43200} {
		api, s := newDLQAPI(t)
		ids := seedRows(t, api.DB, 1)
		rec, env := do(api.Handler(), "POST", "/admin/dlq/replay", fmt.Sprintf(`{"ids":[%d],"delay_seconds":%d}`, ids[0], delay), adminHeaders)
		var rep map[string]any
		json.Unmarshal(mustJSON(env.Data), &rep)
		sent := s.Sent["beer-enrichment"]
		if rec.Code != 200 || rep["delay_seconds"] != float64(delay) || len(sent) != 1 || sent[0].Delay.Seconds() != float64(delay) {
			t.Errorf("delay %d: %d %s (sent %+v)", delay, rec.Code, rec.Body, sent)
		}
	}
}

// A bulk replay's limit of 1 claims one row.
func TestBulkReplayLimitOne(t *testing.T) {
	api, s := newDLQAPI(t)
	seedRows(t, api.DB, 3)
	rec, env := do(api.Handler(), "POST", "/admin/dlq/replay", `{"filter":{},"limit":1}`, adminHeaders)
	var rep map[string]any
	json.Unmarshal(mustJSON(env.Data), &rep)
	if rec.Code != 200 || rep["claimed_count"] != 1.0 || rep["replayed_count"] != 1.0 || rep["has_more"] != true ||
		len(s.Sent["beer-enrichment"]) != 1 {
		t.Fatalf("replay: %d %s", rec.Code, rec.Body)
	}
}

// A bad bulk limit is refused with one of two messages: not an integer (the
// JSON decoding), or outside 1..DLQ_BULK_REPLAY_MAX (dlq.CheckLimit).
func TestBulkReplayLimitMessages(t *testing.T) {
	api, s := newDLQAPI(t)
	seedRows(t, api.DB, 1)
	h := api.Handler()
	before := tableState(t, api.DB)
	const (
		notInteger = "limit must be an integer"
		notInRange = "limit must be an integer in 1..500 (DLQ_BULK_REPLAY_MAX)"
		aboveMax   = notInRange
	)
	for _, c := range []struct {
		limit, msg string
	}{
		{"1.5", notInteger},
		{"1e2", notInteger},
		{`"5"`, notInteger},
		{"99999999999999999999", notInteger},
		{"-99999999999999999999", notInteger},
		{"0", notInRange},
		{"-1", notInRange},
		{"-10", notInRange},
		{fmt.Sprint(1<<30 + 1), notInRange},
		{fmt.Sprint(1 << 30), aboveMax},
		{"501", aboveMax},
	} {
		rec, env := do(h, "POST", "/admin/dlq/replay", `{"filter":{},"limit":`+c.limit+`}`, adminHeaders)
		if rec.Code != 400 || env.Error == nil || env.Error.Code != "INVALID_LIMIT" || env.Error.Message != c.msg {
			t.Errorf("limit %s: %d %s, want %q", c.limit, rec.Code, rec.Body, c.msg)
		}
	}
	if tableState(t, api.DB) != before || s.Calls != 0 {
		t.Fatal("a rejected limit changed rows or sent messages")
	}
}

// isIntLiteral accepts exactly the JSON integers: an optional minus, then 0
// or digits not starting with 0; no fraction, exponent or plus sign.
func TestIsIntLiteral(t *testing.T) {
	for in, want := range map[string]bool{
		"0": true, "-0": true, "7": true, "9": true, "10": true, "90": true, "-1": true, "-109": true,
		"1234567890": true, "99999999999999999999": true,
		"": false, "-": false, "--1": false, "01": false, "-01": false, "00": false, "+1": false,
		"1.5": false, "1.0": false, "1e2": false, "1E2": false, "a": false, "1a": false, "/": false, ":": false,
	} {
		if got := isIntLiteral([]byte(in)); got != want {
			t.Errorf("isIntLiteral(%q) = %v, want %v", in, got, want)
		}
	}
}
