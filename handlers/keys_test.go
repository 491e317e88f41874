package handlers

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/redrive/redrive/access"
)

// createKey creates a key with the pair and returns its token.
func createKey(t *testing.T, api *API, name string, role access.Role) string {
	t.Helper()
	rec, env := checkedDo(t, api, "POST", "/admin/keys", fmt.Sprintf(`{"name":%q,"role":%q}`, name, role), adminHeaders)
	var data struct {
		Token, Name string
		Role        access.Role
		CreatedBy   string `json:"created_by"`
	}
	if rec.Code != http.StatusCreated || dataInto(env, &data) != nil || data.Name != name || data.Role != role || data.CreatedBy != "admin" {
		t.Fatalf("create %s: %d %s", name, rec.Code, rec.Body)
	}
	return data.Token
}

// roleSpec is what each role may do, as docs/admin-api.md states it: the
// expectation of the matrix, written apart from access's own table.
var roleSpec = map[access.Role]string{
	access.Reporter: "self report",
	access.Viewer:   "self read",
	access.Operator: "self read read_body replay acknowledge edit tasks",
	access.Admin:    "self read read_body replay acknowledge edit tasks move enrich breaker keys report",
}

// The route × role matrix, generated from the route table: a key of each
// role reaches exactly the routes whose permission its role holds
// (roleSpec); every other answers 403 FORBIDDEN naming the permission. The
// development routes answer the pair alone.
func TestEachRoleReachesExactlyItsRoutes(t *testing.T) {
	api, line, _ := everyRouteAPI(t)
	tokens := map[access.Role]string{}
	for _, role := range access.Roles {
		tokens[role] = createKey(t, api, "matrix-"+string(role), role)
	}
	for _, rt := range api.routeTable() {
		method, path, body := routeRequest(rt.pattern, line)
		for _, role := range access.Roles {
			hdr := bearer(tokens[role])
			if rt.pattern == "POST /admin/dlq/import" {
				hdr["Content-Type"] = "application/x-ndjson"
			}
			rec, env := checkedDo(t, api, method, path, body, hdr)
			forbidden := rec.Code == http.StatusForbidden && env.Error != nil && env.Error.Code == "FORBIDDEN" &&
				strings.Contains(env.Error.Message, "the "+string(rt.perm)+" permission")
			switch {
			case rt.perm == access.Dev:
				if rec.Code != http.StatusUnauthorized {
					t.Errorf("%s as %s: %d %s, want 401 (the pair alone)", rt.pattern, role, rec.Code, rec.Body)
				}
			case rt.perm == access.Public:
				if rec.Code >= 400 {
					t.Errorf("%s as %s: %d %s", rt.pattern, role, rec.Code, rec.Body)
				}
			case slices.Contains(strings.Fields(roleSpec[role]), string(rt.perm)) == forbidden || rec.Code == http.StatusUnauthorized:
				t.Errorf("%s (%s) as %s: %d %s", rt.pattern, rt.perm, role, rec.Code, rec.Body)
			}
		}
	}
}

// A parameter or a part of an answer that needs more than its route's
// permission: a viewer lists rows but not their bodies, exports without
// bodies but not one database's rows, and opens no row's payload.
func TestViewerSeesNoBodies(t *testing.T) {
	api, _, _ := everyRouteAPI(t)
	viewer, operator := bearer(createKey(t, api, "v", access.Viewer)), bearer(createKey(t, api, "o", access.Operator))
	for _, c := range []struct {
		path string
		perm access.Permission // "" when a viewer may
	}{
		{"/admin/dlq?status=all", ""},
		{"/admin/dlq?status=all&include_raw=true", access.ReadBody},
		{"/admin/dlq/export?format=csv&status=all", ""},
		{"/admin/dlq/export?format=ndjson&status=all&include_raw=true", access.ReadBody},
		{"/admin/dlq/export?format=ndjson&status=all&pipeline=tickets&database=DB", access.Move},
		{"/admin/dlq/2", access.ReadBody},
	} {
		rec, env := checkedDo(t, api, "GET", c.path, "", viewer)
		if c.perm == "" && rec.Code != 200 || c.perm != "" && (rec.Code != 403 || !strings.Contains(env.Error.Message, string(c.perm))) {
			t.Errorf("viewer %s: %d %s", c.path, rec.Code, rec.Body)
		}
		rec, _ = checkedDo(t, api, "GET", c.path, "", operator)
		if want := map[bool]int{true: 403, false: 200}[c.perm == access.Move]; rec.Code != want {
			t.Errorf("operator %s: %d, want %d", c.path, rec.Code, want)
		}
	}
}

// A key is created, used, listed without its secret, revoked; refused
// credentials say why; the audit log records key actions without the
// token, and an action by a key under that key's own fingerprint.
func TestNamedKeyLifecycle(t *testing.T) {
	api, _, _ := everyRouteAPI(t)
	token := createKey(t, api, "ci-bot", access.Admin)
	second := createKey(t, api, "second", access.Operator)
	rec, env := checkedDo(t, api, "POST", "/admin/keys", `{"name":"by-a-key","role":"viewer"}`, bearer(token))
	if rec.Code != 201 || !strings.Contains(rec.Body.String(), `"created_by":"key:ci-bot"`) {
		t.Fatalf("create by a key: %d %s", rec.Code, rec.Body)
	}
	rec, env = checkedDo(t, api, "GET", "/admin/keys", "", adminHeaders)
	var list struct{ Keys []access.Key }
	if rec.Code != 200 || dataInto(env, &list) != nil || len(list.Keys) != 3 {
		t.Fatalf("list: %d %s", rec.Code, rec.Body)
	}
	_, secret, _ := access.ParseToken(token)
	if strings.Contains(rec.Body.String(), secret) || strings.Contains(rec.Body.String(), access.SecretHash(secret)) {
		t.Fatal("the list shows a secret or its hash")
	}
	id, _, _ := access.ParseToken(second)
	if rec, _ := checkedDo(t, api, "POST", "/admin/keys/"+id+"/revoke", "", bearer(token)); rec.Code != 200 {
		t.Fatalf("revoke: %d %s", rec.Code, rec.Body)
	}
	for _, c := range []struct {
		hdr  map[string]string
		code string
	}{
		{bearer(second), "KEY_REVOKED"},
		{bearer(token[:len(token)-3] + "AAA"), "INVALID_KEY"},
		{bearer("rdk_short"), "MALFORMED_KEY"},
		{bearer("someothertoken"), "MALFORMED_KEY"},
		{map[string]string{"Authorization": "Basic dG9r"}, "MALFORMED_CREDENTIAL"},
		{bearer(strings.Repeat("x", 1<<20)), "MALFORMED_KEY"},
		{bearer("rdk_0123456789abcdef_" + strings.Repeat("\x00", 43)), "MALFORMED_KEY"},
	} {
		rec, env := checkedDo(t, api, "GET", "/admin/dlq", "", c.hdr)
		if rec.Code != 401 || env.Error == nil || env.Error.Code != c.code {
			t.Errorf("%.40q: %d %s, want 401 %s", c.hdr["Authorization"], rec.Code, rec.Body, c.code)
		}
	}
	var withToken, keyActions int
	api.DB.QueryRow(`SELECT COUNT(*) FROM admin_audit WHERE instr(COALESCE(counts, ''), ?) > 0`, secret).Scan(&withToken)
	api.DB.QueryRow(`SELECT COUNT(*) FROM admin_audit WHERE action IN ('key_create', 'key_revoke') AND key_fingerprint = ?`,
		api.Auth.KeyFingerprint(token)).Scan(&keyActions)
	if withToken != 0 || keyActions != 2 {
		t.Fatalf("audit: %d entries hold the token, %d key actions under the key's fingerprint (want 0, 2)", withToken, keyActions)
	}
}

// dataInto decodes env's data into v.
func dataInto(env envelope, v any) error {
	b, err := json.Marshal(env.Data)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

// A flood of made-up keys is read from D1 at most keyReadBurst times (then
// keyReadsPerSecond a second): past that, 429 RATE_LIMITED without a read.
func TestMadeUpKeysCannotSpendD1Reads(t *testing.T) {
	api, _, _ := everyRouteAPI(t)
	limited := 0
	for i := range keyReadBurst + 20 {
		rec, env := checkedDo(t, api, "GET", "/admin/dlq", "", bearer(fmt.Sprintf("rdk_%016x_%s", i, strings.Repeat("A", 43))))
		switch {
		case rec.Code == 429 && env.Error.Code == "RATE_LIMITED":
			limited++
		case rec.Code != 401 || env.Error.Code != "INVALID_KEY":
			t.Fatalf("made-up key %d: %d %s", i, rec.Code, rec.Body)
		}
	}
	// The clock runs on between requests: a few more may be read.
	if limited < 10 {
		t.Fatalf("%d of %d made-up keys limited", limited, keyReadBurst+20)
	}
}

// A key is not checked while the pair is half configured (503
// NOT_CONFIGURED, as for the pair), and a key D1 cannot be asked about is
// 503 D1_UNAVAILABLE, not a 401 that would look like a bad key.
func TestKeyAnswersWhenTheWorkerCannotCheckIt(t *testing.T) {
	api, _, _ := everyRouteAPI(t)
	token := createKey(t, api, "k", access.Admin)
	half, _, _ := everyRouteAPI(t)
	half.DB = api.DB
	half.Auth.AdminSecret = ""
	if rec, env := checkedDo(t, half, "GET", "/admin/dlq", "", bearer(token)); rec.Code != 503 || env.Error.Code != "NOT_CONFIGURED" {
		t.Fatalf("half the pair: %d %s", rec.Code, rec.Body)
	}
	gone, _, _ := everyRouteAPI(t)
	gone.DB = api.DB
	if _, err := api.DB.Exec(`DROP TABLE api_keys`); err != nil {
		t.Fatal(err)
	}
	rec, env := checkedDo(t, gone, "GET", "/admin/dlq", "", bearer(token))
	if rec.Code != 503 || env.Error.Code != "D1_UNAVAILABLE" || strings.Contains(rec.Body.String(), "api_keys") {
		t.Fatalf("D1 failing: %d %s", rec.Code, rec.Body)
	}
}
