package handlers

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/redrive/redrive/dlq/resolve"
	"github.com/redrive/redrive/metrics"
	"github.com/redrive/redrive/queue"
	"github.com/redrive/redrive/queue/queuetest"
)

var adminHeaders = map[string]string{"X-API-Key": "k", "X-Admin-Secret": "s"}

func newDLQAPI(t *testing.T) (*API, *queuetest.Sender) {
	api := newAPI(t)
	s := &queuetest.Sender{}
	api.Sender, api.BulkReplayMax, api.BulkAcknowledgeMax = s, 500, 5000
	return api, s
}

func seedRows(t *testing.T, db *sql.DB, n int) []int64 {
	t.Helper()
	var ids []int64
	for i := 0; i < n; i++ {
		var id int64
		err := db.QueryRow(`INSERT INTO dlq_messages(message_id, row_key, label_1, failed_at, raw_message, failure_reason)
			VALUES (?, ?, ?, ?, ?, 'reason') RETURNING id`, fmt.Sprint("m", i), fmt.Sprint("b", i), fmt.Sprint("Beer ", i),
			int64(1000+i), fmt.Sprintf(`{"beer_id":"b%d"}`, i)).Scan(&id)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	return ids
}

func tableState(t *testing.T, db *sql.DB) string {
	t.Helper()
	var s string
	db.QueryRow(`SELECT COALESCE(group_concat(json_array(id, status, replay_count, replayed_at, acknowledged_at, replaying_at), ';'), '')
		FROM dlq_messages`).Scan(&s)
	return s
}

// Every admin route answers 401 without a valid key and 403 without a valid secret.
func TestEveryAdminRouteNeedsBothCredentials(t *testing.T) {
	api, _ := newDLQAPI(t)
	h := api.Handler()
	n := 0
	for _, pattern := range api.Routes() {
		method, path, _ := strings.Cut(pattern, " ")
		if !strings.HasPrefix(path, "/admin/") {
			continue
		}
		n++
		for _, c := range []struct {
			hdr  map[string]string
			code int
		}{
			{nil, 401},
			{map[string]string{"X-API-Key": "wrong", "X-Admin-Secret": "s"}, 401},
			{map[string]string{"X-API-Key": "k"}, 403},
			{map[string]string{"X-API-Key": "k", "X-Admin-Secret": "wrong"}, 403},
		} {
			rec, env := do(h, method, path, `{"ids":[1]}`, c.hdr)
			if rec.Code != c.code || env.Success || env.Error == nil || env.RequestID == "" {
				t.Errorf("%s with %v: %d %s", pattern, c.hdr, rec.Code, rec.Body)
			}
		}
	}
	if n < 6 {
		t.Fatalf("only %d admin routes", n)
	}
}

func TestDLQRoutesRejectBadInputWithoutSideEffects(t *testing.T) {
	api, s := newDLQAPI(t)
	ids := seedRows(t, api.DB, 3)
	h := api.Handler()
	before := tableState(t, api.DB)
	many := func(n int) string {
		var b strings.Builder
		b.WriteString(`{"ids":[`)
		for i := 1; i <= n; i++ {
			if i > 1 {
				b.WriteString(",")
			}
			fmt.Fprint(&b, i)
		}
		b.WriteString("]}")
		return b.String()
	}
	big := `{"ids":[1],"note":"` + strings.Repeat("a", MaxBodyBytes) + `"}`
	cases := []struct {
		method, path, body string
		status             int
		code               string
	}{
		{"POST", "/admin/dlq/replay", "", 400, "INVALID_REQUEST"},
		{"POST", "/admin/dlq/replay", "null", 400, "INVALID_REQUEST"},
		{"POST", "/admin/dlq/replay", "not json", 400, "INVALID_REQUEST"},
		{"POST", "/admin/dlq/replay", "[1,2]", 400, "INVALID_REQUEST"},
		{"POST", "/admin/dlq/replay", `{}`, 400, "INVALID_REQUEST"},
		{"POST", "/admin/dlq/replay", `{"ids":null}`, 400, "INVALID_REQUEST"},
		{"POST", "/admin/dlq/replay", `{"ids":"1,2"}`, 400, "INVALID_REQUEST"},
		{"POST", "/admin/dlq/replay", `{"ids":{"a":1}}`, 400, "INVALID_REQUEST"},
		{"POST", "/admin/dlq/replay", `{"ids":[]}`, 400, "INVALID_REQUEST"},
		{"POST", "/admin/dlq/replay", `{"ids":["1"]}`, 400, "INVALID_REQUEST"},
		{"POST", "/admin/dlq/replay", `{"ids":[1.5]}`, 400, "INVALID_REQUEST"},
		{"POST", "/admin/dlq/replay", `{"ids":[1e2]}`, 400, "INVALID_REQUEST"},
		{"POST", "/admin/dlq/replay", `{"ids":[null]}`, 400, "INVALID_REQUEST"},
		{"POST", "/admin/dlq/replay", `{"ids":[true]}`, 400, "INVALID_REQUEST"},
		{"POST", "/admin/dlq/replay", `{"ids":[0]}`, 400, "INVALID_REQUEST"},
		{"POST", "/admin/dlq/replay", `{"ids":[-3]}`, 400, "INVALID_REQUEST"},
		{"POST", "/admin/dlq/replay", `{"ids":[99999999999999999999]}`, 400, "INVALID_REQUEST"},
		{"POST", "/admin/dlq/replay", `{"ids":[1,1]}`, 400, "INVALID_REQUEST"},
		{"POST", "/admin/dlq/replay", many(51), 400, "INVALID_REQUEST"},
		{"POST", "/admin/dlq/replay", `{"ids":[1],"delay_seconds":-1}`, 400, "INVALID_DELAY"},
		{"POST", "/admin/dlq/replay", `{"ids":[1],"delay_seconds":43201}`, 400, "INVALID_DELAY"},
		{"POST", "/admin/dlq/replay", `{"ids":[1],"delay_seconds":1.5}`, 400, "INVALID_DELAY"},
		{"POST", "/admin/dlq/replay", `{"ids":[1],"delay_seconds":"60"}`, 400, "INVALID_DELAY"},
		{"POST", "/admin/dlq/replay", `{"ids":[1],"unknown":1}`, 400, "INVALID_REQUEST"},
		{"POST", "/admin/dlq/replay", `{"ids":[1],"filter":{}}`, 400, "INVALID_REQUEST"},
		{"POST", "/admin/dlq/replay", `{"filter":[]}`, 400, "INVALID_FILTER"},
		{"POST", "/admin/dlq/replay", `{"filter":{"status":"replayed"}}`, 400, "INVALID_FILTER"},
		{"POST", "/admin/dlq/replay", `{"filter":{"colour":"red"}}`, 400, "INVALID_FILTER"},
		{"POST", "/admin/dlq/replay", `{"filter":{"failed_after":"yesterday"}}`, 400, "INVALID_FILTER"},
		{"POST", "/admin/dlq/replay", `{"filter":{},"limit":0}`, 400, "INVALID_LIMIT"},
		{"POST", "/admin/dlq/replay", `{"filter":{},"limit":501}`, 400, "INVALID_LIMIT"},
		{"POST", "/admin/dlq/replay", `{"filter":{},"cursor":"forged"}`, 400, "INVALID_CURSOR"},
		{"POST", "/admin/dlq/replay", `{"ids":[1],"cursor":"x"}`, 400, "INVALID_REQUEST"},
		{"POST", "/admin/dlq/replay", `{"ids":[1],"dry_run":"yes"}`, 400, "INVALID_REQUEST"},
		{"POST", "/admin/dlq/replay", big, 413, "PAYLOAD_TOO_LARGE"},
		{"POST", "/admin/dlq/acknowledge", "", 400, "INVALID_REQUEST"},
		{"POST", "/admin/dlq/acknowledge", "null", 400, "INVALID_REQUEST"},
		{"POST", "/admin/dlq/acknowledge", `{"ids":[]}`, 400, "INVALID_REQUEST"},
		{"POST", "/admin/dlq/acknowledge", `{"ids":["a"]}`, 400, "INVALID_REQUEST"},
		{"POST", "/admin/dlq/acknowledge", many(101), 400, "INVALID_REQUEST"},
		{"POST", "/admin/dlq/acknowledge", `{"ids":[1],"note":5}`, 400, "INVALID_REQUEST"},
		{"POST", "/admin/dlq/acknowledge", `{"filter":{"status":"all"}}`, 400, "INVALID_FILTER"},
		{"POST", "/admin/dlq/acknowledge", big, 413, "PAYLOAD_TOO_LARGE"},
		{"GET", "/admin/dlq?status=dead", "", 400, "INVALID_STATUS"},
		{"GET", "/admin/dlq?limit=0", "", 400, "INVALID_LIMIT"},
		{"GET", "/admin/dlq?limit=101", "", 400, "INVALID_LIMIT"},
		{"GET", "/admin/dlq?limit=-5", "", 400, "INVALID_LIMIT"},
		{"GET", "/admin/dlq?limit=ten", "", 400, "INVALID_LIMIT"},
		{"GET", "/admin/dlq?limit=99999999999999999999999", "", 400, "INVALID_LIMIT"},
		{"GET", "/admin/dlq?cursor=eyJmYWlsZWRfYXQiOjEsImlkIjoxfQ==", "", 400, "INVALID_CURSOR"},
		{"GET", "/admin/dlq?cursor=%00%01", "", 400, "INVALID_CURSOR"},
		{"GET", "/admin/dlq?include_raw=maybe", "", 400, "INVALID_REQUEST"},
		{"GET", "/admin/dlq?failed_after=yesterday", "", 400, "INVALID_FILTER"},
		{"GET", "/admin/dlq?failed_after=10&failed_before=5", "", 400, "INVALID_FILTER"},
		{"GET", "/admin/dlq?failed_before=tomorrow", "", 400, "INVALID_FILTER"},
		{"GET", "/admin/dlq?failed_before=-1", "", 400, "INVALID_FILTER"},
		{"GET", "/admin/dlq?beerid=1", "", 400, "INVALID_REQUEST"},
		{"GET", "/admin/dlq?status=pending&status=all", "", 400, "INVALID_REQUEST"},
		{"GET", "/admin/dlq?q=%zz", "", 400, "INVALID_REQUEST"},
		{"GET", "/admin/dlq/stats?x=1", "", 400, "INVALID_REQUEST"},
		{"GET", "/admin/audit?limit=0", "", 400, "INVALID_LIMIT"},
		{"GET", "/admin/audit?action=delete", "", 400, "INVALID_FILTER"},
		{"GET", "/admin/audit?cursor=abc", "", 400, "INVALID_CURSOR"},
	}
	for _, c := range cases {
		rec, env := do(h, c.method, c.path, c.body, adminHeaders)
		if rec.Code != c.status || env.Error == nil || env.Error.Code != c.code || env.Success || env.RequestID == "" {
			name := c.body
			if len(name) > 60 {
				name = name[:60]
			}
			t.Errorf("%s %s %s: got %d %.200s", c.method, c.path, name, rec.Code, rec.Body)
		}
	}
	if tableState(t, api.DB) != before || s.Calls != 0 {
		t.Fatal("rejected input changed rows or sent messages")
	}
	var audits int
	api.DB.QueryRow(`SELECT COUNT(*) FROM admin_audit`).Scan(&audits)
	if audits != 0 {
		t.Fatalf("rejected input was audited as an action: %d rows", audits)
	}
	_ = ids
}

func TestReplayAndAcknowledgeOverHTTPAreAudited(t *testing.T) {
	api, s := newDLQAPI(t)
	ids := seedRows(t, api.DB, 5)
	h := api.Handler()

	rec, env := do(h, "POST", "/admin/dlq/replay", fmt.Sprintf(`{"ids":[%d,%d],"delay_seconds":5}`, ids[0], ids[1]), adminHeaders)
	var rep map[string]any
	json.Unmarshal(mustJSON(env.Data), &rep)
	if rec.Code != 200 || rep["requested_count"] != 2.0 || rep["claimed_count"] != 2.0 || rep["replayed_count"] != 2.0 ||
		rep["failed_count"] != 0.0 || rep["queued_to"] != "beer-enrichment" || len(s.Sent["beer-enrichment"]) != 2 {
		t.Fatalf("replay: %d %s", rec.Code, rec.Body)
	}
	replayReq := env.RequestID

	rec, env = do(h, "POST", "/admin/dlq/acknowledge", fmt.Sprintf(`{"ids":[%d,%d,%d],"note":"dup"}`, ids[0], ids[2], ids[3]), adminHeaders)
	var ack map[string]any
	json.Unmarshal(mustJSON(env.Data), &ack)
	if rec.Code != 200 || ack["acknowledged_count"] != 2.0 {
		t.Fatalf("acknowledge: %d %s", rec.Code, rec.Body)
	}

	rec, env = do(h, "POST", "/admin/dlq/replay", `{"filter":{},"dry_run":true}`, adminHeaders)
	var dry map[string]any
	json.Unmarshal(mustJSON(env.Data), &dry)
	if rec.Code != 200 || dry["dry_run"] != true || dry["matched_count"] != 1.0 {
		t.Fatalf("dry run: %d %s", rec.Code, rec.Body)
	}

	// A send failure is a 200 with failed_count, audited as failed.
	api.Sender = &queuetest.Sender{Err: errors.New("down")}
	rec, _ = do(h, "POST", "/admin/dlq/replay", `{"filter":{}}`, adminHeaders)
	if rec.Code != 200 || !strings.Contains(rec.Body.String(), `"failed_count":1`) {
		t.Fatalf("failing replay: %d %s", rec.Code, rec.Body)
	}

	all, err := (metrics.Counters{DB: api.DB}).All(context.Background())
	if err != nil || all[resolve.CounterReplayed] != 2 || all[resolve.CounterAcknowledged] != 2 {
		t.Fatalf("counters after 2 replayed (and 1 failed), 2 acknowledged: %v %v", all, err)
	}

	rec, env = do(h, "GET", "/admin/audit?limit=10", "", adminHeaders)
	var page struct {
		Entries []map[string]any `json:"entries"`
	}
	json.Unmarshal(mustJSON(env.Data), &page)
	if rec.Code != 200 || len(page.Entries) != 4 {
		t.Fatalf("audit: %d %s", rec.Code, rec.Body)
	}
	outcomes := []string{"failed", "ok", "ok", "ok"}
	actions := []string{"replay", "replay", "acknowledge", "replay"}
	for i, e := range page.Entries {
		if e["outcome"] != outcomes[i] || e["action"] != actions[i] || e["key_fingerprint"] != api.Auth.KeyFingerprint("k") {
			t.Errorf("entry %d: %v", i, e)
		}
	}
	first := page.Entries[3]
	if first["request_id"] != replayReq || first["counts"].(map[string]any)["replayed_count"] != 2.0 {
		t.Errorf("replay entry: %v", first)
	}
	if page.Entries[1]["dry_run"] != true || page.Entries[2]["note"] != "dup" {
		t.Errorf("entries: %v", page.Entries)
	}
	if strings.Contains(rec.Body.String(), `"k"`) || strings.Contains(rec.Body.String(), `"s"`) {
		t.Fatalf("audit must not contain credentials: %s", rec.Body)
	}
}

func TestListAndStatsOverHTTP(t *testing.T) {
	api, _ := newDLQAPI(t)
	seedRows(t, api.DB, 7)
	h := api.Handler()
	var all []float64
	cursor := ""
	for {
		path := "/admin/dlq?limit=3&include_raw=true"
		if cursor != "" {
			path += "&cursor=" + cursor
		}
		rec, env := do(h, "GET", path, "", adminHeaders)
		var p struct {
			Messages   []map[string]any `json:"messages"`
			TotalCount int              `json:"total_count"`
			Limit      int              `json:"limit"`
			NextCursor *string          `json:"next_cursor"`
			HasMore    bool             `json:"has_more"`
		}
		json.Unmarshal(mustJSON(env.Data), &p)
		if rec.Code != 200 || p.TotalCount != 7 || p.Limit != 3 {
			t.Fatalf("list: %d %s", rec.Code, rec.Body)
		}
		for _, m := range p.Messages {
			if _, ok := m["raw_message"]; !ok {
				t.Fatalf("include_raw: %v", m)
			}
			all = append(all, m["id"].(float64))
		}
		if !p.HasMore {
			break
		}
		cursor = *p.NextCursor
	}
	if len(all) != 7 || all[0] != 7 || all[6] != 1 {
		t.Fatalf("ids %v", all)
	}
	rec, env := do(h, "GET", "/admin/dlq/stats", "", adminHeaders)
	var st struct {
		ByStatus map[string]int `json:"by_status"`
	}
	json.Unmarshal(mustJSON(env.Data), &st)
	if rec.Code != 200 || len(st.ByStatus) != 4 || st.ByStatus["pending"] != 7 || st.ByStatus["replaying"] != 0 {
		t.Fatalf("stats: %d %s", rec.Code, rec.Body)
	}
}

func TestInternalFailureIsAudited500(t *testing.T) {
	api, _ := newDLQAPI(t)
	var logs strings.Builder
	api.Log = slog.New(slog.NewJSONHandler(&logs, nil))
	ids := seedRows(t, api.DB, 1)
	// D1 fails after the claim and the send: the settle statement is refused.
	api.Sender = senderFunc(func() error {
		_, err := api.DB.Exec(`CREATE TRIGGER no_settle BEFORE UPDATE OF status ON dlq_messages
			WHEN NEW.status IN ('replayed', 'pending') BEGIN SELECT RAISE(ABORT, 'd1 unavailable'); END`)
		return err
	})
	rec, env := do(api.Handler(), "POST", "/admin/dlq/replay", fmt.Sprintf(`{"ids":[%d]}`, ids[0]), adminHeaders)
	if rec.Code != 500 || env.Error == nil || env.Error.Code != "INTERNAL_ERROR" {
		t.Fatalf("got %d %s", rec.Code, rec.Body)
	}
	// The audit entry says what the response said (its code) and where the
	// details are; the error's text goes to the log only.
	_, audit := do(api.Handler(), "GET", "/admin/audit", "", adminHeaders)
	var page struct {
		Entries []struct {
			Outcome string `json:"outcome"`
			Error   *struct {
				Code    string `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		} `json:"entries"`
	}
	json.Unmarshal(mustJSON(audit.Data), &page)
	if len(page.Entries) != 1 || page.Entries[0].Outcome != "error" || page.Entries[0].Error == nil ||
		page.Entries[0].Error.Code != "INTERNAL_ERROR" || !strings.Contains(page.Entries[0].Error.Message, env.RequestID) ||
		strings.Contains(page.Entries[0].Error.Message, "d1 unavailable") {
		t.Fatalf("audit entry %+v", page.Entries)
	}
	if !strings.Contains(logs.String(), "d1 unavailable") || !strings.Contains(logs.String(), env.RequestID) {
		t.Fatalf("the log line lacks the error or the request id: %s", logs.String())
	}
	var status string
	api.DB.QueryRow(`SELECT status FROM dlq_messages`).Scan(&status)
	if status != "replaying" {
		t.Fatalf("row must stay replaying for the rescue job, is %s", status)
	}
}

// senderFunc is a sender whose sends succeed after running f.
type senderFunc func() error

func (f senderFunc) SendBatch(context.Context, string, []queue.Outgoing) error { return f() }

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}
