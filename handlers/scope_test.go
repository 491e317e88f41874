package handlers

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/access"
)

// createScopedKey creates a key of role limited to pipelines with the
// pair and returns its token.
func createScopedKey(t *testing.T, api *API, name string, role access.Role, pipelines ...string) string {
	t.Helper()
	body := fmt.Sprintf(`{"name":%q,"role":%q,"pipelines":["%s"]}`, name, role, strings.Join(pipelines, `","`))
	rec, env := checkedDo(t, api, "POST", "/admin/keys", body, adminHeaders)
	var data struct {
		Token     string
		Pipelines []string
	}
	if rec.Code != http.StatusCreated || dataInto(env, &data) != nil || strings.Join(data.Pipelines, ",") != strings.Join(pipelines, ",") {
		t.Fatalf("create %s: %d %s", name, rec.Code, rec.Body)
	}
	return data.Token
}

// The route × scope matrix, generated from the route table. Every request
// of routeRequest is about the beers pipeline (row 2, task 1, a beers
// filter), except the report (a tickets queue). An admin key limited to
// the other pipeline is refused on every everyPipeline route (403), and on
// every perPipeline route changes nothing and reads nothing of the
// request's pipeline: a refusal (400, 403, 404), or an answer that names
// none of its rows, queues or tasks. An admin key limited to the request's
// own pipeline is answered as an unscoped one is.
func TestScopedKeysReachOnlyTheirPipelines(t *testing.T) {
	api, line, _ := everyRouteAPI(t)
	keyOf := map[string]map[string]string{
		"beers":   bearer(createScopedKey(t, api, "only-beers", access.Admin, "beers")),
		"tickets": bearer(createScopedKey(t, api, "only-tickets", access.Admin, "tickets")),
	}
	for _, rt := range api.routeTable() {
		if rt.perm == access.Public || rt.perm == access.Dev {
			continue
		}
		method, path, body := routeRequest(rt.pattern, line)
		own, other, otherQueue := "beers", "tickets", "beer-enrichment"
		if rt.pattern == "POST /admin/attempts" {
			own, other, otherQueue = "tickets", "beers", `"tickets"`
		}
		hdr := keyOf[other]
		if rt.pattern == "POST /admin/dlq/import" {
			hdr = map[string]string{"Authorization": hdr["Authorization"], "Content-Type": "application/x-ndjson"}
		}
		before := dbState(t, api.DBs.All[0].DB, api.DBs.All[1].DB)
		rec, env := checkedDo(t, api, method, path, body, hdr)
		if after := dbState(t, api.DBs.All[0].DB, api.DBs.All[1].DB); after != before && method == "POST" && rec.Code < 300 {
			t.Errorf("%s as a %s key changed the database: %d %s", rt.pattern, other, rec.Code, rec.Body)
		}
		switch {
		case rt.scope == everyPipeline:
			if rec.Code != 403 || env.Error == nil || !strings.Contains(env.Error.Message, "credentials of every pipeline") {
				t.Errorf("%s as a %s key: %d %s, want 403 (every pipeline's route)", rt.pattern, other, rec.Code, rec.Body)
			}
			continue
		case rec.Code == 400 || rec.Code == 403 || rec.Code == 404:
		case rec.Code == 200 && rt.pattern == "GET /admin/openapi.json":
		case rec.Code < 300 && method == "GET" && !strings.Contains(rec.Body.String(), otherQueue) && !strings.Contains(rec.Body.String(), `"`+own+`"`):
		default:
			t.Errorf("%s as a %s key: %d %s", rt.pattern, other, rec.Code, rec.Body)
		}
		if rt.pattern == "POST /admin/dlq/{id}/replay" || rt.pattern == "POST /admin/dlq/replay-tasks/{id}/cancel" {
			continue // the own key's request would change what the next routes act on
		}
		if rec, _ := checkedDo(t, api, method, path, body, keyOf[own]); rec.Code >= 300 {
			t.Errorf("%s as a %s key: %d %s", rt.pattern, own, rec.Code, rec.Body)
		}
	}
}

// A bulk action of a scoped key names its pipeline, even the one it has
// (400 PIPELINE_REQUIRED); a read may leave it implied.
func TestScopedBulkActionsNameTheirPipeline(t *testing.T) {
	api, _, _ := everyRouteAPI(t)
	beers := bearer(createScopedKey(t, api, "only-beers", access.Operator, "beers"))
	for _, c := range []struct {
		path, body string
		want       int
	}{
		{"/admin/dlq/replay", `{"filter":{},"dry_run":true}`, 400},
		{"/admin/dlq/acknowledge", `{"filter":{"q":"x"},"dry_run":true}`, 400},
		{"/admin/dlq/replay-tasks", `{"filter":{},"rate_per_minute":1}`, 400},
		{"/admin/dlq/replay", `{"filter":{"pipeline":"beers"},"dry_run":true}`, 200},
		{"/admin/dlq/acknowledge", `{"filter":{"source_queue":"beer-enrichment"},"dry_run":true}`, 200},
	} {
		rec, env := checkedDo(t, api, "POST", c.path, c.body, beers)
		if rec.Code != c.want || c.want == 400 && env.Error.Code != "PIPELINE_REQUIRED" {
			t.Errorf("%s %s: %d %s", c.path, c.body, rec.Code, rec.Body)
		}
	}
	if rec, _ := checkedDo(t, api, "GET", "/admin/dlq", "", beers); rec.Code != 200 {
		t.Errorf("a read with the pipeline implied: %d %s", rec.Code, rec.Body)
	}
}

// Every audit entry names its principal; ?principal= keeps one principal's
// entries; a scoped key's audit list holds its pipelines' entries alone.
func TestAuditNamesThePrincipal(t *testing.T) {
	api, _, _ := everyRouteAPI(t)
	beers := bearer(createScopedKey(t, api, "only-beers", access.Operator, "beers"))
	tickets := bearer(createScopedKey(t, api, "only-tickets", access.Operator, "tickets"))
	for _, c := range []struct {
		hdr  map[string]string
		body string
	}{{beers, `{"ids":[2],"dry_run":true}`}, {adminHeaders, `{"ids":[2],"dry_run":true}`}, {tickets, `{"filter":{"pipeline":"tickets"},"dry_run":true}`}} {
		if rec, _ := checkedDo(t, api, "POST", "/admin/dlq/replay", c.body, c.hdr); rec.Code != 200 {
			t.Fatalf("replay %s: %d %s", c.body, rec.Code, rec.Body)
		}
	}
	type entry struct {
		Principal *string
		Action    string
	}
	list := func(path string, hdr map[string]string) []entry {
		t.Helper()
		rec, env := checkedDo(t, api, "GET", path, "", hdr)
		var page struct{ Entries []entry }
		if rec.Code != 200 || dataInto(env, &page) != nil {
			t.Fatalf("%s: %d %s", path, rec.Code, rec.Body)
		}
		return page.Entries
	}
	names := func(es []entry) string {
		var out []string
		for _, e := range es {
			if e.Action == "replay" {
				out = append(out, *e.Principal)
			}
		}
		return strings.Join(out, " ")
	}
	if got := names(list("/admin/audit", adminHeaders)); got != "key:only-tickets admin key:only-beers" {
		t.Errorf("every entry: %q", got)
	}
	if got := names(list("/admin/audit?principal=key:only-beers", adminHeaders)); got != "key:only-beers" {
		t.Errorf("?principal=key:only-beers: %q", got)
	}
	if got := names(list("/admin/audit", beers)); got != "key:only-beers" {
		t.Errorf("the beers key's audit: %q", got)
	}
	if got := names(list("/admin/audit", tickets)); got != "key:only-tickets" {
		t.Errorf("the tickets key's audit: %q", got)
	}
	if got := names(list("/admin/audit?principal=admin", tickets)); got != "" {
		t.Errorf("the tickets key sees the pair's replay of a beers row: %q", got)
	}
}

// A client (CF-Connecting-IP) that fails signInBurst sign-ins is refused,
// 429 before any check, its good credentials too, until the bucket refills
// (one a 1/signInPerSecond seconds); another client, and a request without
// the header, are not.
func TestFailedSignInsAreLimitedPerClient(t *testing.T) {
	api, _, _ := everyRouteAPI(t)
	now := time.UnixMilli(1_800_000_000_000)
	api.Clock = func() time.Time { return now }
	good := createKey(t, api, "good", access.Viewer)
	_, _, made, _ := access.NewToken()
	as := func(ip, token string) int {
		hdr := bearer(token)
		if ip != "" {
			hdr["CF-Connecting-IP"] = ip
		}
		rec, _ := checkedDo(t, api, "GET", "/admin/whoami", "", hdr)
		return rec.Code
	}
	for i := 0; i < signInBurst; i++ {
		if code := as("203.0.113.9", made); code != 401 {
			t.Fatalf("failure %d: %d", i+1, code)
		}
	}
	for i := 0; i < signInBurst+1; i++ { // a local run's client: never limited
		for _, ip := range []string{"127.0.0.1", "::1"} {
			if code := as(ip, made); code != 401 {
				t.Fatalf("loopback %s failure %d: %d", ip, i+1, code)
			}
		}
	}
	for ip, want := range map[string]int{"203.0.113.9": 429, "198.51.100.7": 200, "": 200, "127.0.0.1": 200} {
		if code := as(ip, good); code != want {
			t.Errorf("client %q with a good key: %d, want %d", ip, code, want)
		}
	}
	if code := as("198.51.100.7", made); code != 401 {
		t.Errorf("another client's failure: %d", code)
	}
	// The pair's wrong secret (403) counts as a failure too.
	for i := 1; i < signInBurst; i++ {
		rec, _ := checkedDo(t, api, "GET", "/admin/whoami", "", map[string]string{"X-API-Key": "k", "X-Admin-Secret": "wrong", "CF-Connecting-IP": "198.51.100.7"})
		if rec.Code != 403 {
			t.Fatalf("wrong secret %d: %d", i, rec.Code)
		}
	}
	if code := as("198.51.100.7", good); code != 429 {
		t.Errorf("after %d failures of the pair and a key: %d", signInBurst, code)
	}
	now = now.Add(time.Duration(float64(time.Second) / signInPerSecond))
	if code := as("203.0.113.9", good); code != 200 {
		t.Errorf("after a refill, a good key: %d", code)
	}
	if code := as("203.0.113.9", made); code != 401 {
		t.Errorf("after a refill, a made-up key: %d", code)
	}
	if code := as("203.0.113.9", good); code != 429 {
		t.Errorf("the refill spent: %d", code)
	}
}

// A key's pipelines are configured ones, one to access.MaxKeyPipelines of
// them; absent or null is every pipeline.
func TestKeyPipelinesAreChecked(t *testing.T) {
	api, _, _ := everyRouteAPI(t)
	for body, want := range map[string]string{
		`{"name":"a","role":"viewer","pipelines":["nope"]}`:  "UNKNOWN_PIPELINE",
		`{"name":"b","role":"viewer","pipelines":[]}`:        "INVALID_PIPELINES",
		`{"name":"c","role":"viewer","pipelines":[""]}`:      "UNKNOWN_PIPELINE",
		`{"name":"d","role":"viewer","pipelines":null}`:      "",
		`{"name":"e","role":"viewer","pipelines":["beers"]}`: "",
		`{"name":"f","role":"viewer","pipelines":"beers"}`:   "INVALID_REQUEST",
	} {
		rec, env := checkedDo(t, api, "POST", "/admin/keys", body, adminHeaders)
		if want == "" && rec.Code != 201 || want != "" && (rec.Code != 400 || env.Error.Code != want) {
			t.Errorf("%s: %d %s, want %q", body, rec.Code, rec.Body, want)
		}
	}
}

// A key of two pipelines names one of them, or a source_queue of one; a key
// whose stored pipelines are unreadable, or an empty list, reaches no
// pipeline (never every one).
func TestScopesOfSeveralAndOfNone(t *testing.T) {
	api, _, _ := everyRouteAPI(t)
	two := bearer(createScopedKey(t, api, "two", access.Viewer, "beers", "tickets"))
	broken := createScopedKey(t, api, "broken", access.Viewer, "beers")
	empty := createScopedKey(t, api, "empty", access.Viewer, "beers")
	if _, err := api.DB.Exec(`UPDATE api_keys SET pipelines = CASE name WHEN 'broken' THEN 'not json' ELSE '[]' END WHERE name IN ('broken', 'empty')`); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		hdr        map[string]string
		path       string
		status     int
		code, want string
	}{
		{two, "/admin/dlq", 400, "PIPELINE_REQUIRED", ""},
		{two, "/admin/dlq?pipeline=tickets&status=all", 200, "", `"messages":[]`}, // tickets lives in TICKETS_DB, empty
		{two, "/admin/dlq?source_queue=tickets&status=all", 200, "", `"messages":[]`},
		{two, "/admin/dlq/stats", 400, "PIPELINE_REQUIRED", ""},
		{bearer(broken), "/admin/dlq?status=all", 400, "PIPELINE_REQUIRED", ""},
		{bearer(empty), "/admin/dlq?status=all", 400, "PIPELINE_REQUIRED", ""},
		{bearer(empty), "/admin/dlq?pipeline=beers", 403, "FORBIDDEN", ""},
		{bearer(empty), "/admin/metrics", 403, "FORBIDDEN", ""},
	} {
		rec, env := checkedDo(t, api, "GET", c.path, "", c.hdr)
		if rec.Code != c.status || c.code != "" && env.Error.Code != c.code || !strings.Contains(rec.Body.String(), c.want) {
			t.Errorf("%s as %s: %d %.300s", c.path, c.hdr["Authorization"][:30], rec.Code, rec.Body)
		}
	}
}
