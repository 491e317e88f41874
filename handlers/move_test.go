package handlers

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/redrive/redrive/config"
	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/dlq/relocation"
	"github.com/redrive/redrive/internal/sqlitetest"
)

// moveAPI is an API whose tickets pipeline has its own database TICKETS_DB,
// with one tickets row left in DB from before the move.
func moveAPI(t *testing.T) (*API, map[string]string) {
	t.Helper()
	ps, problems := config.ParsePipelines(`[
{"name":"beers","queue":"beer-enrichment","dlq":"beer-enrichment-dlq","producer":"ENRICHMENT_QUEUE","key":"/beer_id","labels":[{"name":"beer_name","pointer":"/beer_name"},{"name":"brewer","pointer":"/brewer"}],"consumer":"redrive"},
{"name":"tickets","queue":"tickets","dlq":"tickets-dlq","producer":"TICKETS","key":"/ticket","labels":[{"name":"team","pointer":"/team"}],"consumer":"external","database":"TICKETS_DB"}]`,
		100, 0, 0)
	if len(problems) != 0 {
		t.Fatal(problems)
	}
	api := newAPI(t)
	tickets := sqlitetest.New(t)
	if _, err := tickets.Exec(dlq.SeedIDsSQL("TICKETS_DB")); err != nil {
		t.Fatal(err)
	}
	api.DBs = dlq.NewDatabases(dlq.Store{DB: api.DB}, map[string]dlq.Store{"TICKETS_DB": {DB: tickets}}, ps)
	if _, err := api.DB.Exec(`INSERT INTO dlq_messages(message_id, row_key, label_1, failed_at, source_queue, raw_message, content_type, first_failed_at, updated_at)
		VALUES ('m1', 'T-1', 'infra', 1000, 'tickets', '{"ticket":"T-1","team":"infra"}', 'json', 1000, 1000)`); err != nil {
		t.Fatal(err)
	}
	return api, map[string]string{"X-API-Key": "k", "X-Admin-Secret": "s", "Content-Type": "application/x-ndjson"}
}

func TestImportAndReleaseRoutes(t *testing.T) {
	api, hdr := moveAPI(t)
	h := api.Handler()
	rec, _ := do(h, "GET", "/admin/dlq/export?format=ndjson&include_raw=true&status=all&pipeline=tickets&database=DB", "", hdr)
	line := rec.Body.String()
	if rec.Code != 200 || !strings.Contains(line, `"history":null`) || !strings.Contains(line, `"last_message_id":""`) {
		t.Fatalf("export: %d %s", rec.Code, line)
	}
	for i, want := range []struct{ imported, skipped float64 }{{1, 0}, {0, 1}} {
		rec, env := do(h, "POST", "/admin/dlq/import", line, hdr)
		data, _ := env.Data.(map[string]any)
		if rec.Code != 200 || data["database"] != "TICKETS_DB" || data["imported"] != want.imported || data["skipped"] != want.skipped {
			t.Fatalf("import %d: %d %s", i+1, rec.Code, rec.Body)
		}
	}
	rec, _ = do(h, "GET", "/admin/dlq/export?format=ndjson&include_raw=true&status=all&pipeline=tickets&database=TICKETS_DB", "", hdr)
	if rec.Body.String() != line {
		t.Fatalf("read back from TICKETS_DB:\n%s\nwant\n%s", rec.Body, line)
	}
	rec, env := do(h, "POST", "/admin/dlq/release", `{"pipeline":"tickets","database":"DB"}`, adminHeaders)
	data, _ := env.Data.(map[string]any)
	if rec.Code != 200 || data["released"] != 1.0 || data["remaining"] != 0.0 || data["next_after"] != nil || data["into"] != "TICKETS_DB" {
		t.Fatalf("release: %d %s", rec.Code, rec.Body)
	}
}

// Every bad request is a 4xx envelope and changes nothing.
func TestImportAndReleaseRefuseBadInput(t *testing.T) {
	api, hdr := moveAPI(t)
	h := api.Handler()
	rec, _ := do(h, "GET", "/admin/dlq/export?format=ndjson&include_raw=true&status=all&pipeline=tickets&database=DB", "", hdr)
	line := rec.Body.String()
	var m map[string]any
	json.Unmarshal([]byte(line), &m)
	m["status"] = "lost"
	bad, _ := json.Marshal(m)
	for _, c := range []struct {
		name, method, path, body string
		hdr                      map[string]string
		status                   int
		code, says               string
	}{
		{"no credentials", "POST", "/admin/dlq/import", line, nil, 401, "UNAUTHORIZED", ""},
		{"no secret", "POST", "/admin/dlq/release", `{"pipeline":"tickets","database":"DB"}`, map[string]string{"X-API-Key": "k"}, 403, "FORBIDDEN", ""},
		{"bad second line", "POST", "/admin/dlq/import", line + string(bad) + "\n", hdr, 400, "INVALID_LINE", "line 2: status"},
		{"export without raw", "POST", "/admin/dlq/import", `{"id":1}`, hdr, 400, "INVALID_LINE", "line 1: message_id is missing"},
		{"empty", "POST", "/admin/dlq/import", "", hdr, 400, "INVALID_REQUEST", ""},
		{"too many lines", "POST", "/admin/dlq/import", strings.Repeat("{}\n", relocation.ImportMaxLines+1), hdr, 400, "TOO_MANY_LINES", ""},
		{"too large", "POST", "/admin/dlq/import", strings.Repeat("x", MaxBodyBytes+1), hdr, 413, "PAYLOAD_TOO_LARGE", ""},
		{"unknown database", "GET", "/admin/dlq/export?format=ndjson&database=NOPE", "", hdr, 400, "UNKNOWN_DATABASE", "DB, TICKETS_DB"},
		{"release own", "POST", "/admin/dlq/release", `{"pipeline":"tickets","database":"TICKETS_DB"}`, adminHeaders, 400, "OWN_DATABASE", ""},
		{"release unknown pipeline", "POST", "/admin/dlq/release", `{"pipeline":"nope","database":"DB"}`, adminHeaders, 400, "UNKNOWN_PIPELINE", ""},
		{"release limit", "POST", "/admin/dlq/release", `{"pipeline":"tickets","database":"DB","limit":501}`, adminHeaders, 400, "INVALID_LIMIT", ""},
		{"release unknown field", "POST", "/admin/dlq/release", `{"pipeline":"tickets","database":"DB","all":true}`, adminHeaders, 400, "INVALID_REQUEST", ""},
		{"release negative after", "POST", "/admin/dlq/release", `{"pipeline":"tickets","database":"DB","after":-1}`, adminHeaders, 400, "INVALID_AFTER", ""},
	} {
		rec, env := do(h, c.method, c.path, c.body, c.hdr)
		if rec.Code != c.status || env.Error == nil || env.Error.Code != c.code || !strings.Contains(env.Error.Message, c.says) {
			t.Errorf("%s: %d %s", c.name, rec.Code, rec.Body)
		}
	}
	tickets := api.DBs.All[1].DB
	var n int
	tickets.QueryRow(`SELECT COUNT(*) FROM dlq_messages`).Scan(&n)
	api.DB.QueryRow(`SELECT COUNT(*) + ? FROM dlq_messages`, n*1000).Scan(&n)
	if n != 1 {
		t.Fatalf("rows changed: %d", n)
	}
}

// ticketLines are n import lines for the tickets pipeline (TICKETS_DB),
// made from the export of moveAPI's row: ids from first, message ids
// distinct, joined with a newline after each.
func ticketLines(t *testing.T, api *API, hdr map[string]string, first int64, n int) []string {
	t.Helper()
	rec, _ := do(api.Handler(), "GET", "/admin/dlq/export?format=ndjson&include_raw=true&status=all&pipeline=tickets&database=DB", "", hdr)
	var m map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &m); err != nil {
		t.Fatalf("export: %v %s", err, rec.Body)
	}
	lines := make([]string, n)
	for i := range lines {
		m["id"], m["message_id"] = first+int64(i), fmt.Sprint("moved-", i)
		b, _ := json.Marshal(m)
		lines[i] = string(b) + "\n"
	}
	return lines
}

// rowCounts is the number of rows in DB and in TICKETS_DB.
func rowCounts(t *testing.T, api *API) [2]int64 {
	t.Helper()
	return [2]int64{count(t, api.DB, `SELECT COUNT(*) FROM dlq_messages`), count(t, api.DBs.All[1].DB, `SELECT COUNT(*) FROM dlq_messages`)}
}

// importBody POSTs body to /admin/dlq/import and returns the status, the
// error code ("" on success) and the number of rows imported.
func importBody(t *testing.T, api *API, hdr map[string]string, body string) (int, string, float64) {
	t.Helper()
	rec, env := do(api.Handler(), "POST", "/admin/dlq/import", body, hdr)
	if env.Error != nil {
		return rec.Code, env.Error.Code, 0
	}
	data, _ := env.Data.(map[string]any)
	imported, _ := data["imported"].(float64)
	return rec.Code, "", imported
}

// The limits of one import are inclusive: exactly relocation.ImportMaxLines lines
// and exactly MaxBodyBytes bytes are taken; one line more is a 400
// TOO_MANY_LINES, one byte more a 413 PAYLOAD_TOO_LARGE, and a refused
// request writes nothing.
func TestImportLimitsAtTheirEdges(t *testing.T) {
	api, hdr := moveAPI(t)
	base := dlq.IDBase("TICKETS_DB")
	lines := ticketLines(t, api, hdr, base+1000, relocation.ImportMaxLines+1)
	if status, code, _ := importBody(t, api, hdr, strings.Join(lines, "")); status != 400 || code != "TOO_MANY_LINES" {
		t.Fatalf("%d lines: %d %s", len(lines), status, code)
	}
	if got := rowCounts(t, api); got != [2]int64{1, 0} {
		t.Fatalf("a refused import wrote rows: %v", got)
	}
	if status, code, n := importBody(t, api, hdr, strings.Join(lines[:relocation.ImportMaxLines], "")); status != 200 || n != relocation.ImportMaxLines {
		t.Fatalf("%d lines: %d %s imported %v", relocation.ImportMaxLines, status, code, n)
	}

	// Two lines, the second's raw_message padded to make the body exactly
	// MaxBodyBytes long.
	api, hdr = moveAPI(t)
	two := ticketLines(t, api, hdr, base+1, 2)
	var m map[string]any
	json.Unmarshal([]byte(two[1]), &m)
	m["raw_message"] = ""
	b, _ := json.Marshal(m)
	m["raw_message"] = strings.Repeat("x", MaxBodyBytes-len(two[0])-len(b)-1)
	b, _ = json.Marshal(m)
	exact := two[0] + string(b) + "\n"
	if len(exact) != MaxBodyBytes {
		t.Fatalf("body of %d bytes", len(exact))
	}
	m["raw_message"] = m["raw_message"].(string) + "x"
	b, _ = json.Marshal(m)
	over := two[0] + string(b) + "\n"
	if status, code, _ := importBody(t, api, hdr, over); status != 413 || code != "PAYLOAD_TOO_LARGE" {
		t.Fatalf("%d bytes: %d %s", len(over), status, code)
	}
	if got := rowCounts(t, api); got != [2]int64{1, 0} {
		t.Fatalf("a refused import wrote rows: %v", got)
	}
	if status, code, n := importBody(t, api, hdr, exact); status != 200 || n != 2 {
		t.Fatalf("%d bytes: %d %s imported %v", len(exact), status, code, n)
	}
}

// An import into a database whose ids do not start at its own range yet
// is a 400 DATABASE_NOT_SEEDED; an id past the database's range a 400
// ID_OUT_OF_RANGE (its last id is taken); lines of two databases a 400
// MIXED_DATABASES. None writes anything.
func TestImportRefusesIDsOutsideTheDatabasesRange(t *testing.T) {
	api, hdr := moveAPI(t)
	end := dlq.IDBase("TICKETS_DB") + 1<<40
	past := ticketLines(t, api, hdr, end-1, 2)
	if status, code, _ := importBody(t, api, hdr, strings.Join(past, "")); status != 400 || code != "ID_OUT_OF_RANGE" {
		t.Fatalf("id %d: %d %s", end, status, code)
	}
	var m map[string]any
	json.Unmarshal([]byte(past[1]), &m)
	m["source_queue"] = "beer-enrichment"
	m["id"] = 77
	b, _ := json.Marshal(m)
	if status, code, _ := importBody(t, api, hdr, past[0]+string(b)); status != 400 || code != "MIXED_DATABASES" {
		t.Fatalf("two databases: %d %s", status, code)
	}
	if got := rowCounts(t, api); got != [2]int64{1, 0} {
		t.Fatalf("a refused import wrote rows: %v", got)
	}
	if status, code, n := importBody(t, api, hdr, past[0]); status != 200 || n != 1 {
		t.Fatalf("id %d: %d %s imported %v", end-1, status, code, n)
	}

	api, hdr = moveAPI(t)
	if _, err := api.DBs.All[1].DB.Exec(`DELETE FROM sqlite_sequence`); err != nil {
		t.Fatal(err)
	}
	if status, code, _ := importBody(t, api, hdr, ticketLines(t, api, hdr, 5, 1)[0]); status != 400 || code != "DATABASE_NOT_SEEDED" {
		t.Fatalf("unseeded: %d %s", status, code)
	}
	if got := rowCounts(t, api); got != [2]int64{1, 0} {
		t.Fatalf("a refused import wrote rows: %v", got)
	}
}

// errReader fails every read with a transport error (not a size limit).
type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, errors.New("connection reset") }

// A body that cannot be read (a transport error, not the size limit) is a
// 400 INVALID_REQUEST, not a 413 or a 500.
func TestImportBodyReadErrorIsA400(t *testing.T) {
	api, hdr := moveAPI(t)
	req := httptest.NewRequest("POST", "/admin/dlq/import", errReader{})
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	api.Handler().ServeHTTP(rec, req)
	var env envelope
	json.Unmarshal(rec.Body.Bytes(), &env)
	if rec.Code != 400 || env.Error == nil || env.Error.Code != "INVALID_REQUEST" || !strings.Contains(env.Error.Message, "could not read") {
		t.Fatalf("%d %s", rec.Code, rec.Body)
	}
}
