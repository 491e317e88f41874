package handlers

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/dlq"
)

// reportAPI is an API whose only external pipeline consumes e2e-orders,
// with REPORT_TOKEN token (empty: unset).
func reportAPI(t *testing.T, token string) *API {
	api := newAPI(t)
	api.Auth.ReportToken = token
	api.ReportQueues = func(q string) bool { return q == "e2e-orders" }
	return api
}

func bearer(token string) map[string]string {
	return map[string]string{"Authorization": "Bearer " + token}
}

// attemptRecord reads one message's attempt record.
func attemptRecord(t *testing.T, api *API, id string) (queue string, attempt int, class, errText string, history []dlq.HistoryEntry, sig string) {
	t.Helper()
	var h string
	if err := api.DB.QueryRow(`SELECT queue, attempt, error_class, error, history, signature FROM message_attempts WHERE message_id = ?`, id).
		Scan(&queue, &attempt, &class, &errText, &h, &sig); err != nil {
		t.Fatalf("record of %s: %v", id, err)
	}
	if err := json.Unmarshal([]byte(h), &history); err != nil {
		t.Fatal(err)
	}
	return
}

// A report with the bearer token lands in message_attempts: every entry,
// its class (unknown by default), history and signature, answered 202
// {"recorded": n}.
func TestReportAttemptsRecordsEveryEntry(t *testing.T) {
	api := reportAPI(t, "s3cr3t")
	h := api.Handler()
	body := `{"attempts":[
		{"queue":"e2e-orders","message_id":"m1","attempt":1,"error":"card declined for order 17","class":"permanent"},
		{"queue":"e2e-orders","message_id":"m2","attempt":1,"error":"warehouse timeout"},
		{"queue":"e2e-orders","message_id":"m1","attempt":2,"error":"card declined for order 17","class":"permanent"}]}`
	rec, env := do(h, "POST", "/admin/attempts", body, bearer("s3cr3t"))
	if rec.Code != 202 || !env.Success || !strings.Contains(rec.Body.String(), `"data":{"recorded":3}`) {
		t.Fatalf("report: %d %s", rec.Code, rec.Body)
	}
	q, n, class, text, hist, sig := attemptRecord(t, api, "m1")
	if q != "e2e-orders" || n != 2 || class != "permanent" || text != "card declined for order 17" || len(hist) != 2 ||
		hist[0].Attempt != 1 || hist[1].Attempt != 2 || hist[1].MessageID != "m1" || sig != dlq.SignatureIn("e2e-orders", "permanent", text).Key {
		t.Fatalf("m1: %s %d %s %q %+v %s", q, n, class, text, hist, sig)
	}
	if _, _, class, _, hist, _ := attemptRecord(t, api, "m2"); class != "unknown" || len(hist) != 1 {
		t.Fatalf("m2: class %s history %+v", class, hist)
	}

	// The admin pair may report too (no Authorization header).
	rec, _ = do(h, "POST", "/admin/attempts", `{"attempts":[{"queue":"e2e-orders","message_id":"m3","attempt":1,"error":"e","class":null}]}`, adminHdr)
	if rec.Code != 202 {
		t.Fatalf("admin pair: %d %s", rec.Code, rec.Body)
	}
}

// Only the token or the admin pair authorises a report; with REPORT_TOKEN
// unset no bearer token does. Nothing is recorded by a refused report.
func TestReportAttemptsAuth(t *testing.T) {
	body := `{"attempts":[{"queue":"e2e-orders","message_id":"m1","attempt":1,"error":"e"}]}`
	for _, c := range []struct {
		name, token string
		hdr         map[string]string
		status      int
		code        string
	}{
		{"right token", "tok", bearer("s3cr3t"), 202, ""},
		{"wrong token", "tok", bearer("s3cr3t2"), 401, "UNAUTHORIZED"},
		{"empty bearer", "tok", bearer(""), 401, "UNAUTHORIZED"},
		{"not bearer", "tok", map[string]string{"Authorization": "Basic dG9r"}, 401, "MALFORMED_CREDENTIAL"},
		{"token unset", "", bearer(""), 401, "UNAUTHORIZED"},
		{"token unset, any bearer", "", bearer("x"), 401, "UNAUTHORIZED"},
		{"nothing", "tok", nil, 401, "UNAUTHORIZED"},
		{"api key only", "tok", map[string]string{"X-API-Key": "k"}, 403, "FORBIDDEN"},
		{"admin pair, token unset", "", adminHdr, 202, ""},
	} {
		api := reportAPI(t, strings.ReplaceAll(c.token, "tok", "s3cr3t"))
		rec, env := do(api.Handler(), "POST", "/admin/attempts", body, c.hdr)
		if rec.Code != c.status || (c.code != "" && (env.Error == nil || env.Error.Code != c.code)) {
			t.Errorf("%s: %d %s", c.name, rec.Code, rec.Body)
		}
		var n int
		api.DB.QueryRow(`SELECT COUNT(*) FROM message_attempts`).Scan(&n)
		if want := map[bool]int{true: 1, false: 0}[c.status == 202]; n != want {
			t.Errorf("%s: %d records, want %d", c.name, n, want)
		}
		if strings.Contains(rec.Body.String(), "s3cr3t") && c.status != 202 {
			t.Errorf("%s: the answer echoes the token: %s", c.name, rec.Body)
		}
	}
}

// Every bad report is a 400 naming the entry and field, and writes nothing
// (a bad entry after good ones too).
func TestReportAttemptsRejectsBadReports(t *testing.T) {
	good := `{"queue":"e2e-orders","message_id":"m1","attempt":1,"error":"e"}`
	entries := func(n int) string {
		return `{"attempts":[` + strings.TrimSuffix(strings.Repeat(good+",", n), ",") + `]}`
	}
	for _, c := range []struct {
		body, code, msg string
	}{
		{`{"attempts":[]}`, "INVALID_REQUEST", "attempts must hold 1..100 entries (got 0)"},
		{`{}`, "INVALID_REQUEST", "attempts must hold 1..100 entries (got 0)"},
		{entries(101), "INVALID_REQUEST", "attempts must hold 1..100 entries (got 101)"},
		{`{"attempts":[` + good + `,{"queue":"beer-enrichment","message_id":"m2","attempt":1,"error":"e"}]}`, "UNKNOWN_QUEUE",
			`attempts[1].queue "beer-enrichment" is not the main queue of a pipeline whose consumer is external`},
		{`{"attempts":[{"message_id":"m2","attempt":1,"error":"e"}]}`, "INVALID_REQUEST", "attempts[0].queue is required"},
		{`{"attempts":[{"queue":"e2e-orders","attempt":1,"error":"e"}]}`, "INVALID_REQUEST", "attempts[0].message_id must be 1..128 bytes"},
		{`{"attempts":[{"queue":"e2e-orders","message_id":"` + strings.Repeat("a", 129) + `","attempt":1,"error":"e"}]}`, "INVALID_REQUEST", "attempts[0].message_id must be 1..128 bytes"},
		{`{"attempts":[{"queue":"e2e-orders","message_id":"a\nb","attempt":1,"error":"e"}]}`, "INVALID_REQUEST", "without control characters"},
		{`{"attempts":[{"queue":"e2e-orders","message_id":"m","attempt":0,"error":"e"}]}`, "INVALID_REQUEST", "attempts[0].attempt must be an integer in 1..10000"},
		{`{"attempts":[{"queue":"e2e-orders","message_id":"m","attempt":10001,"error":"e"}]}`, "INVALID_REQUEST", "attempts[0].attempt must be an integer in 1..10000"},
		{`{"attempts":[{"queue":"e2e-orders","message_id":"m","attempt":1.5,"error":"e"}]}`, "INVALID_REQUEST", "attempts[0].attempt must be an integer"},
		{`{"attempts":[{"queue":"e2e-orders","message_id":"m","attempt":1}]}`, "INVALID_REQUEST", "attempts[0].error must be 1..2000 bytes (got 0)"},
		{`{"attempts":[{"queue":"e2e-orders","message_id":"m","attempt":1,"error":"` + strings.Repeat("é", 1001) + `"}]}`, "INVALID_REQUEST", "attempts[0].error must be 1..2000 bytes (got 2002)"},
		{`{"attempts":[{"queue":"e2e-orders","message_id":"m","attempt":1,"error":"e","class":"poison"}]}`, "INVALID_REQUEST", "attempts[0].class must be one of transient, rate_limited, permanent"},
		{`{"attempts":[{"queue":"e2e-orders","message_id":"m","attempt":1,"error":"e","class":""}]}`, "INVALID_REQUEST", "attempts[0].class must be one of"},
		{`{"attempts":[{"queue":"e2e-orders","message_id":"m","attempt":1,"error":"e","Class":"permanent"}]}`, "INVALID_REQUEST", `unknown field "attempts[0].Class"`},
		{`{"attempts":[{"queue":"e2e-orders","message_id":"m","message_id":"n","attempt":1,"error":"e"}]}`, "INVALID_REQUEST", `duplicate field "attempts[0].message_id"`},
		{`{"attempts":{}}`, "INVALID_REQUEST", "attempts must be an array"},
		{`[]`, "INVALID_REQUEST", "body must be a JSON object"},
	} {
		api := reportAPI(t, "s3cr3t")
		rec, env := do(api.Handler(), "POST", "/admin/attempts", c.body, bearer("s3cr3t"))
		if rec.Code != 400 || env.Error == nil || env.Error.Code != c.code || !strings.Contains(env.Error.Message, c.msg) {
			t.Errorf("%.80s: %d %s", c.body, rec.Code, rec.Body)
		}
		var n int
		api.DB.QueryRow(`SELECT COUNT(*) FROM message_attempts`).Scan(&n)
		if n != 0 {
			t.Errorf("%.80s: a rejected report wrote %d records", c.body, n)
		}
	}
	// No external pipeline configured: every queue is refused.
	api := newAPI(t)
	rec, env := do(api.Handler(), "POST", "/admin/attempts", entries(1), adminHdr)
	if rec.Code != 400 || env.Error == nil || env.Error.Code != "UNKNOWN_QUEUE" {
		t.Fatalf("without ReportQueues: %d %s", rec.Code, rec.Body)
	}
	// A query string is refused like on the other routes.
	rec, _ = do(reportAPI(t, "s3cr3t").Handler(), "POST", "/admin/attempts?x=1", entries(1), bearer("s3cr3t"))
	if rec.Code != 400 {
		t.Fatalf("query string: %d %s", rec.Code, rec.Body)
	}
}

// 100 entries (the most) are one batch of 100 statements; rows written
// 3 per new record (row, primary key, recorded_at index) as RecordSQL says.
func TestReportAttemptsOfAHundredMessages(t *testing.T) {
	api := reportAPI(t, "s3cr3t")
	var es []string
	for i := range 100 {
		es = append(es, fmt.Sprintf(`{"queue":"e2e-orders","message_id":"m%d","attempt":%d,"error":"timeout after %d ms","class":"transient"}`, i, 1+i%3, i))
	}
	start := time.Now()
	rec, _ := do(api.Handler(), "POST", "/admin/attempts", `{"attempts":[`+strings.Join(es, ",")+`]}`, bearer("s3cr3t"))
	if rec.Code != 202 || !strings.Contains(rec.Body.String(), `"recorded":100`) {
		t.Fatalf("100 entries: %d %s", rec.Code, rec.Body)
	}
	var n, sigs int
	api.DB.QueryRow(`SELECT COUNT(*), COUNT(DISTINCT signature) FROM message_attempts`).Scan(&n, &sigs)
	if n != 100 || sigs != 1 {
		t.Fatalf("%d records with %d signatures, want 100 with 1 (numbers normalised)", n, sigs)
	}
	t.Logf("100 entries recorded in %v", time.Since(start))
}

// A reported message id may hold spaces; control characters (below 0x20,
// and DEL) are refused.
func TestReportedMessageIDControlCharacters(t *testing.T) {
	for r, want := range map[rune]bool{' ': false, 'a': false, 0x1f: true, 0: true, '\n': true, 0x7f: true, 0x80: false} {
		if isControl(r) != want {
			t.Errorf("isControl(%U) = %v", r, !want)
		}
	}
}

// A report writes only its own queue's records: the token holder reporting
// on e2e-tickets a message id that e2e-orders has a record of gets a record
// of its own, and the orders record keeps its attempt, error and history.
func TestReportCannotOverwriteAnotherQueuesRecord(t *testing.T) {
	api := reportAPI(t, "s3cr3t")
	api.ReportQueues = func(q string) bool { return q == "e2e-orders" || q == "e2e-tickets" }
	h := api.Handler()
	for _, body := range []string{
		`{"attempts":[{"queue":"e2e-orders","message_id":"m1","attempt":2,"error":"card declined","class":"permanent"}]}`,
		`{"attempts":[{"queue":"e2e-tickets","message_id":"m1","attempt":9,"error":"forged","class":"transient"}]}`,
	} {
		if rec, _ := do(h, "POST", "/admin/attempts", body, bearer("s3cr3t")); rec.Code != 202 {
			t.Fatalf("report %s: %d %s", body, rec.Code, rec.Body)
		}
	}
	var n int
	var attempt int
	var errText, history string
	if err := api.DB.QueryRow(`SELECT (SELECT COUNT(*) FROM message_attempts WHERE message_id = 'm1'), attempt, error, history
		FROM message_attempts WHERE queue = 'e2e-orders' AND message_id = 'm1'`).Scan(&n, &attempt, &errText, &history); err != nil {
		t.Fatal(err)
	}
	if n != 2 || attempt != 2 || errText != "card declined" || strings.Contains(history, "forged") {
		t.Fatalf("%d records of m1; the orders record: attempt %d, error %q, history %s", n, attempt, errText, history)
	}
}
