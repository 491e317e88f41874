package handlers

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/redrive/redrive/config"
	"github.com/redrive/redrive/dlq"
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
	dlq.SetPipelines(ps)
	t.Cleanup(func() { dlq.SetPipelines([]config.Pipeline{config.BeerPipeline()}) })
	api := newAPI(t)
	tickets := sqlitetest.New(t)
	if _, err := tickets.Exec(dlq.SeedIDsSQL("TICKETS_DB")); err != nil {
		t.Fatal(err)
	}
	api.DBs = dlq.NewDatabases(dlq.Store{DB: api.DB}, map[string]dlq.Store{"TICKETS_DB": {DB: tickets}}, ps)
	if _, err := api.DB.Exec(`INSERT INTO dlq_messages(message_id, beer_id, beer_name, failed_at, source_queue, raw_message, content_type, first_failed_at, updated_at)
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
		{"too many lines", "POST", "/admin/dlq/import", strings.Repeat("{}\n", dlq.ImportMaxLines+1), hdr, 400, "TOO_MANY_LINES", ""},
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
