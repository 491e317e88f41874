package handlers

import (
	"encoding/json"
	"testing"
)

// auditEntries reads GET /admin/audit?action=action.
func auditEntries(t *testing.T, api *API, action string, hdr map[string]string) []map[string]any {
	t.Helper()
	rec, env := do(api.Handler(), "GET", "/admin/audit?action="+action, "", hdr)
	if rec.Code != 200 || !env.Success {
		t.Fatalf("audit list %s: %d %s", action, rec.Code, rec.Body)
	}
	var page struct {
		Data struct {
			Entries []map[string]any `json:"entries"`
		} `json:"data"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &page); err != nil {
		t.Fatal(err)
	}
	return page.Data.Entries
}

func countsOf(t *testing.T, e map[string]any) map[string]any {
	t.Helper()
	c, ok := e["counts"].(map[string]any)
	if !ok {
		t.Fatalf("entry without counts: %v", e)
	}
	return c
}

// Import and release leave an audit entry each, in the database they acted
// on, with their counts and windows, listed by GET /admin/audit.
func TestImportAndReleaseAreAudited(t *testing.T) {
	api, hdr := moveAPI(t)
	h := api.Handler()
	rec, _ := do(h, "GET", "/admin/dlq/export?format=ndjson&include_raw=true&status=all&pipeline=tickets&database=DB", "", hdr)
	line := rec.Body.String()
	for range 2 {
		if rec, _ := do(h, "POST", "/admin/dlq/import", line, hdr); rec.Code != 200 {
			t.Fatalf("import: %d %s", rec.Code, rec.Body)
		}
	}
	if rec, _ := do(h, "POST", "/admin/dlq/release", `{"pipeline":"tickets","database":"DB","limit":10}`, adminHeaders); rec.Code != 200 {
		t.Fatalf("release: %d %s", rec.Code, rec.Body)
	}
	imp := auditEntries(t, api, "import", adminHeaders)
	if len(imp) != 2 || imp[0]["outcome"] != "ok" || imp[1]["outcome"] != "ok" || imp[0]["key_fingerprint"] == "" {
		t.Fatalf("import entries: %v", imp)
	}
	if c := countsOf(t, imp[1]); c["database"] != "TICKETS_DB" || c["lines"] != 1.0 || c["imported"] != 1.0 || c["skipped"] != 0.0 {
		t.Fatalf("first import counts: %v", c)
	}
	if c := countsOf(t, imp[0]); c["imported"] != 0.0 || c["skipped"] != 1.0 {
		t.Fatalf("second import counts: %v", c)
	}
	rel := auditEntries(t, api, "release", adminHeaders)
	if len(rel) != 1 || rel[0]["outcome"] != "ok" {
		t.Fatalf("release entries: %v", rel)
	}
	c := countsOf(t, rel[0])
	for k, want := range map[string]any{"pipeline": "tickets", "database": "DB", "into": "TICKETS_DB", "after": 0.0, "limit": 10.0,
		"next_after": nil, "scanned": 1.0, "released": 1.0, "not_imported": 0.0, "changed": 0.0} {
		if got, ok := c[k]; !ok || got != want {
			t.Errorf("release counts %s = %v, want %v (%v)", k, got, want, c)
		}
	}
	// Each entry sits in the database its action acted on.
	var n int
	if err := api.DBs.All[0].DB.QueryRow(`SELECT COUNT(*) FROM admin_audit WHERE action = 'release'`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("release entries in DB: %d %v", n, err)
	}
	for _, d := range api.DBs.All {
		if d.Name == "TICKETS_DB" {
			if err := d.DB.QueryRow(`SELECT COUNT(*) FROM admin_audit WHERE action = 'import'`).Scan(&n); err != nil || n != 2 {
				t.Fatalf("import entries in TICKETS_DB: %d %v", n, err)
			}
		}
	}
	// A release the service refuses is recorded with its error code.
	if rec, _ := do(h, "POST", "/admin/dlq/release", `{"pipeline":"tickets","database":"TICKETS_DB"}`, adminHeaders); rec.Code != 400 {
		t.Fatalf("release from the own database: %d %s", rec.Code, rec.Body)
	}
	rel = auditEntries(t, api, "release", adminHeaders)
	if len(rel) != 2 || rel[0]["outcome"] != "error" || rel[0]["error"].(map[string]any)["code"] != "OWN_DATABASE" {
		t.Fatalf("refused release: %v", rel)
	}
	// ...in the database it named.
	for _, d := range api.DBs.All {
		if d.Name == "TICKETS_DB" {
			if err := d.DB.QueryRow(`SELECT COUNT(*) FROM admin_audit WHERE action = 'release' AND outcome = 'error'`).Scan(&n); err != nil || n != 1 {
				t.Fatalf("refused release entries in TICKETS_DB: %d %v", n, err)
			}
		}
	}
}

// POST /admin/enrich leaves an audit entry with how many beers it enqueued.
func TestEnrichIsAudited(t *testing.T) {
	api, _ := newEnrichAPI(t)
	body := `{"beers":[{"beer_id":"1","beer_name":"a"},{"beer_id":"2","beer_name":"b"}]}`
	if rec, _ := do(api.Handler(), "POST", "/admin/enrich", body, adminHeaders); rec.Code != 200 {
		t.Fatalf("enrich: %d %s", rec.Code, rec.Body)
	}
	if rec, _ := do(api.Handler(), "POST", "/admin/enrich", body, adminHeaders); rec.Code != 200 {
		t.Fatalf("enrich again: %d %s", rec.Code, rec.Body)
	}
	es := auditEntries(t, api, "enrich", adminHeaders)
	if len(es) != 2 || es[0]["outcome"] != "ok" || es[1]["outcome"] != "ok" {
		t.Fatalf("enrich entries: %v", es)
	}
	first, second := countsOf(t, es[1]), countsOf(t, es[0])
	if first["received"] != 2.0 || first["queued"] != 2.0 || first["already_queued"] != 0.0 || first["already_done"] != 0.0 {
		t.Fatalf("first enrich counts: %v", first)
	}
	if second["queued"] != 0.0 || second["already_queued"] != 2.0 {
		t.Fatalf("second enrich counts: %v", second)
	}
}
