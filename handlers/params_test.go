package handlers

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"maps"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/enrichment"
	"github.com/redrive/redrive/internal/apicontract"
	"github.com/redrive/redrive/queue/queuetest"
)

// The query parameters each route takes are those its operation declares
// in openapi.json, read from the document itself.
func TestDeclaredQueryIsTheDocuments(t *testing.T) {
	names := func(pattern string) []string { return slices.Sorted(maps.Keys(declaredQuery(pattern))) }
	for pattern, want := range map[string][]string{
		"GET /admin/dlq": {"beer_id", "cursor", "failed_after", "failed_before", "include_raw", "limit", "pipeline", "q",
			"signature", "source_queue", "status", "version", "version_not"},
		"GET /admin/dlq/export": {"beer_id", "cursor", "database", "failed_after", "failed_before", "format", "include_raw",
			"limit", "pipeline", "q", "signature", "source_queue", "status", "version", "version_not"},
		"GET /admin/dlq/groups":        {"class", "cursor", "incident", "limit", "pipeline", "sort", "version"},
		"GET /admin/audit":             {"action", "cursor", "limit", "principal"},
		"GET /admin/dlq/stats":         {"pipeline"},
		"GET /admin/dlq/timeseries":    {"pipeline"},
		"GET /admin/dlq/replay-tasks":  {"limit", "pipeline"},
		"POST /admin/dlq/import":       nil,
		"POST /admin/dlq/replay":       nil,
		"GET /health":                  nil,
		"POST /admin/dlq/{id}/replay":  nil,
		"GET /admin/dlq/{id}":          nil,
		"POST /__dev/send":             nil, // not in the document: none
		"GET /admin/no-such-operation": nil,
	} {
		if got := names(pattern); !slices.Equal(got, want) {
			t.Errorf("%s: declares %v, want %v", pattern, got, want)
		}
	}
	// Every route of the production table is an operation of the document.
	doc := queryParameters(openAPIDocument)
	for _, pattern := range (&API{}).Routes() {
		if _, ok := doc[pattern]; !ok {
			t.Errorf("%s: not read from the document", pattern)
		}
	}
}

// A path's own parameters and parameters given by reference count; header
// and path parameters do not.
func TestQueryParametersOfADocument(t *testing.T) {
	doc := []byte(`{"openapi":"3.1.0","components":{"parameters":{"Limit":{"name":"limit","in":"query"},
		"Key":{"name":"X-Key","in":"header"}}},
	"paths":{"/a/{id}":{"parameters":[{"name":"id","in":"path"},{"name":"shared","in":"query"}],
		"get":{"parameters":[{"$ref":"#/components/parameters/Limit"},{"$ref":"#/components/parameters/Key"},{"name":"q\u0031","in":"query"}]},
		"post":{"responses":{}},"summary":"not an operation"}}}`)
	got := queryParameters(doc)
	want := map[string]map[string]bool{
		"GET /a/{id}":  {"shared": true, "limit": true, "q1": true},
		"POST /a/{id}": {"shared": true},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

// everyRouteAPI is an API with every route enabled (DEV_ROUTES included)
// and something for each to act on: a DLQ row, a replay task, a beer
// registry, a second database to import into.
func everyRouteAPI(t *testing.T) (api *API, line string, senders []*queuetest.Sender) {
	t.Helper()
	api, hdr := moveAPI(t)
	s, dev, beers := &queuetest.Sender{}, &queuetest.Sender{}, &queuetest.Sender{}
	api.Sender, api.DevSender, api.BulkReplayMax, api.BulkAcknowledgeMax = s, dev, 500, 5000
	api.ReplayDestinations = []string{"beer-enrichment", "tickets"}
	api.Beers = &enrichment.Registry{DB: api.DB, Sender: beers}
	api.ReportQueues = func(q string) bool { return q == "tickets" }
	api.DevCron = func(context.Context, string, time.Time) error { return nil }
	rec, _ := do(api.Handler(), "GET", "/admin/dlq/export?format=ndjson&include_raw=true&status=all&pipeline=tickets&database=DB", "", hdr)
	if rec.Code != 200 {
		t.Fatalf("export: %d %s", rec.Code, rec.Body)
	}
	seedRows(t, api.DB, 1) // id 2 (moveAPI's row is 1)
	// A failure group of the beer pipeline ({signature}).
	if _, err := api.DB.Exec(`INSERT INTO dlq_signatures(signature, class, text, pending, first_seen, last_seen, source_queue)
		VALUES (?, 'transient', 'status <n>', 1, 1, 1, 'beer-enrichment')`, routeSignature); err != nil {
		t.Fatal(err)
	}
	if rec, _ := do(api.Handler(), "POST", "/admin/dlq/replay-tasks", `{"filter":{"pipeline":"beers"},"rate_per_minute":60}`, adminHeaders); rec.Code != 202 {
		t.Fatalf("task: %d %s", rec.Code, rec.Body)
	}
	return api, rec.Body.String(), []*queuetest.Sender{s, dev, beers}
}

// routeSignature is everyRouteAPI's failure group, of the beer pipeline.
const routeSignature = "0123456789abcdef"

// routeRequest is a request to pattern that its route would act on:
// {id} is an existing row's or task's, the body a valid one (an import
// line, a replay of a row, a beer to enrich...).
func routeRequest(pattern, importLine string) (method, path, body string) {
	method, path, _ = strings.Cut(pattern, " ")
	id := "2" // the second DLQ row
	if strings.Contains(path, "/replay-tasks/") {
		id = "1" // the task
	}
	path = strings.ReplaceAll(strings.ReplaceAll(path, "{id}", id), "{signature}", routeSignature)
	body = map[string]string{
		"POST /admin/dlq/import":                    importLine,
		"POST /admin/dlq/release":                   `{"pipeline":"tickets","database":"DB"}`,
		"POST /admin/dlq/replay":                    `{"ids":[2]}`,
		"POST /admin/dlq/acknowledge":               `{"ids":[2],"note":"n"}`,
		"POST /admin/dlq/{id}/replay":               `{"body":{"beer_id":"b0"},"note":"n"}`,
		"POST /admin/dlq/replay-tasks":              `{"filter":{"pipeline":"beers"},"rate_per_minute":60}`,
		"POST /admin/enrich":                        `{"beers":[{"beer_id":"new","beer_name":"New","brewer":"B"}]}`,
		"POST /admin/attempts":                      `{"attempts":[{"queue":"tickets","message_id":"x","attempt":1,"error":"e"}]}`,
		"POST /admin/keys":                          `{"name":"made-by-a-key","role":"viewer"}`,
		"POST /admin/dlq/groups/{signature}/status": `{"status":"acknowledged","owner":"alice","note":"n"}`,
		"POST /__dev/send":                          `{"queue":"tickets","messages":[{"body":"x"}]}`,
		"POST /__dev/sql":                           `{"statements":[{"sql":"DELETE FROM dlq_messages"}]}`,
		"POST /__dev/cron":                          `{"cron":"*/5 * * * *"}`,
	}[pattern]
	if method == "POST" && body == "" {
		body = "{}"
	}
	return method, path, body
}

// dbState is every row of every table of the databases, as text.
func dbState(t *testing.T, dbs ...*sql.DB) string {
	t.Helper()
	var b strings.Builder
	for _, db := range dbs {
		tables, err := db.Query(`SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name`)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for tables.Next() {
			var n string
			tables.Scan(&n)
			names = append(names, n)
		}
		tables.Close()
		for _, n := range names {
			rows, err := db.Query(`SELECT * FROM "` + n + `"`)
			if err != nil {
				t.Fatal(err)
			}
			cols, _ := rows.Columns()
			for rows.Next() {
				v := make([]any, len(cols))
				p := make([]any, len(cols))
				for i := range v {
					p[i] = &v[i]
				}
				rows.Scan(p...)
				fmt.Fprintf(&b, "%s %v\n", n, v)
			}
			rows.Close()
		}
	}
	return b.String()
}

// checkedDo is do, failing the test at once when the answer is not one of
// the operation's documented responses (do only records it for TestMain).
func checkedDo(t *testing.T, h *API, method, path, body string, hdr map[string]string) (*httptest.ResponseRecorder, envelope) {
	t.Helper()
	rec, env := do(h.Handler(), method, path, body, hdr)
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	if !strings.HasPrefix(path, "/__dev/") {
		if err := contract.v.Check(req, []byte(body), rec.Code, rec.Header(), rec.Body.Bytes()); err != nil {
			t.Errorf("%s: not in openapi.json: %v", apicontract.Describe(req, rec.Code), err)
		}
	}
	return rec, env
}

// Every route, whatever its method (the list is the route table's, so a new
// route is covered when added), refuses a query parameter it does not
// declare with the 400 envelope, before doing anything: no row, audit entry
// or task changes, nothing is sent. The same request without the parameter
// is acted on (each changes something or answers 2xx). A caller without
// credentials gets the 401 first.
func TestEveryRouteRefusesAnUnknownQueryParameter(t *testing.T) {
	api, line, senders := everyRouteAPI(t)
	all := []*sql.DB{api.DB, api.DBs.All[1].DB}
	routes := api.Routes()
	if len(routes) < 30 {
		t.Fatalf("only %d routes", len(routes))
	}
	for _, pattern := range routes {
		method, path, body := routeRequest(pattern, line)
		before := dbState(t, all...)
		for _, target := range []string{path + "?dry_run=true", path + "?dry_run"} {
			rec, env := checkedDo(t, api, method, target, body, adminHeaders)
			if rec.Code != 400 || env.Success || env.Error == nil || env.Error.Code != "INVALID_REQUEST" ||
				env.Error.Message != `unknown query parameter "dry_run"` || env.RequestID != rec.Header().Get("X-Request-ID") {
				t.Errorf("%s %s: %d %s", method, target, rec.Code, rec.Body)
			}
			if strings.HasPrefix(path, "/health") {
				continue
			}
			if rec, env := checkedDo(t, api, method, target, body, nil); rec.Code != 401 || env.Error == nil || env.Error.Code != "UNAUTHORIZED" {
				t.Errorf("%s %s without credentials: %d %s", method, target, rec.Code, rec.Body)
			}
		}
		// A declared parameter given twice is refused the same way.
		for name := range declaredQuery(pattern) {
			target := path + "?" + name + "=1&" + name + "=1"
			rec, env := checkedDo(t, api, method, target, body, adminHeaders)
			if rec.Code != 400 || env.Error == nil || env.Error.Message != `query parameter "`+name+`" given more than once` {
				t.Errorf("%s %s: %d %s", method, target, rec.Code, rec.Body)
			}
		}
		if after := dbState(t, all...); after != before {
			t.Errorf("%s with an unknown parameter changed the databases:\n%s\nwas\n%s", pattern, after, before)
		}
		for i, s := range senders {
			if s.Calls != 0 {
				t.Errorf("%s with an unknown parameter sent with sender %d", pattern, i)
			}
		}
	}
	// Without the parameter, the writing routes act: the refusal above is
	// the parameter's, not the request's.
	for _, pattern := range []string{"POST /admin/dlq/import", "POST /admin/dlq/acknowledge", "POST /admin/enrichment/breaker/reset",
		"POST /admin/dlq/replay-tasks/{id}/pause"} {
		method, path, body := routeRequest(pattern, line)
		before := dbState(t, all...)
		hdr := adminHeaders
		if strings.HasSuffix(path, "/import") {
			hdr = map[string]string{"X-API-Key": "k", "X-Admin-Secret": "s", "Content-Type": "application/x-ndjson"}
		}
		if rec, _ := checkedDo(t, api, method, path, body, hdr); rec.Code != 200 && rec.Code != 202 {
			t.Errorf("%s %s: %d %s", method, path, rec.Code, rec.Body)
		}
		if dbState(t, all...) == before {
			t.Errorf("%s changed nothing: the test's request does not act", pattern)
		}
	}
}

// POST /admin/dlq/import?dry_run=true is refused, and writes no row: the
// import takes no dry run.
func TestImportRefusesDryRunParameter(t *testing.T) {
	api, hdr := moveAPI(t)
	lines := ticketLines(t, api, hdr, 1<<40, 3)
	before := rowCounts(t, api)
	rec, env := do(api.Handler(), "POST", "/admin/dlq/import?dry_run=true", strings.Join(lines, ""), hdr)
	if rec.Code != 400 || env.Error == nil || env.Error.Code != "INVALID_REQUEST" || !strings.Contains(env.Error.Message, `"dry_run"`) {
		t.Fatalf("import?dry_run=true: %d %s", rec.Code, rec.Body)
	}
	if got := rowCounts(t, api); got != before {
		t.Fatalf("rows %v after a refused import, %v before", got, before)
	}
	var audited int
	api.DB.QueryRow(`SELECT COUNT(*) FROM admin_audit`).Scan(&audited)
	if audited != 0 {
		t.Fatalf("a refused import was audited (%d entries)", audited)
	}
}

// Each status a route answers is one its operation lists: 503 on every
// admin route while the credentials are unset, 413 on every route that
// reads a body. (The contract check of every test's answers, TestMain,
// covers the others.)
func TestEveryRouteDocumentsItsStatuses(t *testing.T) {
	api, line, _ := everyRouteAPI(t)
	var doc struct {
		Paths map[string]map[string]struct {
			RequestBody json.RawMessage `json:"requestBody"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(openAPIDocument, &doc); err != nil {
		t.Fatal(err)
	}
	unset, _, _ := everyRouteAPI(t)
	unset.Auth = Auth{}
	bodies := 0
	for _, pattern := range (&API{}).Routes() {
		method, path, body := routeRequest(pattern, line)
		if strings.HasPrefix(path, "/admin/") {
			rec, env := checkedDo(t, unset, method, path, body, adminHeaders)
			if rec.Code != 503 || env.Error == nil || env.Error.Code != "NOT_CONFIGURED" {
				t.Errorf("%s without credentials set: %d %s", pattern, rec.Code, rec.Body)
			}
		}
		if doc.Paths[path2doc(pattern)][strings.ToLower(method)].RequestBody == nil {
			continue
		}
		bodies++
		big := `{"note":"` + strings.Repeat("x", MaxBodyBytes) + `"}`
		rec, env := checkedDo(t, api, method, path, big, adminHeaders)
		if rec.Code != 413 || env.Error == nil || env.Error.Code != "PAYLOAD_TOO_LARGE" {
			t.Errorf("%s with %d bytes: %d %.300s", pattern, len(big), rec.Code, rec.Body)
		}
	}
	if bodies < 8 {
		t.Fatalf("only %d routes read a body", bodies)
	}
}

// path2doc is the document's path of a route pattern.
func path2doc(pattern string) string {
	_, p, _ := strings.Cut(pattern, " ")
	return p
}
