//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// roleMay is what each role may do (docs/admin-api.md "Named keys").
var roleMay = map[string]string{
	"reporter": "self report",
	"viewer":   "self read",
	"operator": "self read read_body replay acknowledge edit tasks",
	"admin":    "self read read_body replay acknowledge edit tasks move enrich breaker keys report",
}

// newKey creates a named key with the pair, limited to pipelines when it
// names some, and returns its token.
func newKey(t *testing.T, w *Worker, name, role string, pipelines ...string) string {
	t.Helper()
	body := map[string]any{"name": name, "role": role}
	if pipelines != nil {
		body["pipelines"] = pipelines
	}
	r := w.Admin(t, http.MethodPost, "/admin/keys", body)
	var env struct {
		Data struct {
			Token     string
			Pipelines []string
		} `json:"data"`
	}
	if r.Status != http.StatusCreated || json.Unmarshal(r.Raw, &env) != nil || !strings.HasPrefix(env.Data.Token, "rdk_") ||
		strings.Join(env.Data.Pipelines, ",") != strings.Join(pipelines, ",") {
		t.Fatalf("create key %s: %d %s", name, r.Status, r.Raw)
	}
	return env.Data.Token
}

// operation is an operation of handlers/openapi.json as the route
// matrices read it (a native test holds both fields to the route table).
type operation struct {
	Permission string `json:"x-permission"`
	Scope      string `json:"x-pipeline-scope"`
}

// openAPIOperations returns the document's paths, sorted, and their
// operations by path and (lower-case) method.
func openAPIOperations(t *testing.T) ([]string, map[string]map[string]operation) {
	t.Helper()
	root, _ := os.Getwd()
	raw, err := os.ReadFile(filepath.Join(root, "..", "handlers", "openapi.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Paths map[string]map[string]operation `json:"paths"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	paths := slices.Sorted(maps.Keys(doc.Paths))
	return paths, doc.Paths
}

// The route × role matrix in workerd, generated from handlers/openapi.json
// (whose x-permission a native test holds to the route table): a key of
// each role gets past the permission check exactly on the routes its role
// may use, and 403 FORBIDDEN naming the permission on every other. Each
// request is one its route refuses after that check (an unknown body
// field, an id no row has), so nothing changes.
func TestRoleMatrixInWorkerd(t *testing.T) {
	paths, ops := openAPIOperations(t)
	prefix := newPrefix("matrix")
	tokens := map[string]string{}
	for role := range roleMay {
		tokens[role] = newKey(t, shared, prefix+"-"+role, role)
	}
	checked := 0
	for _, p := range paths {
		for method, op := range ops[p] {
			if op.Permission == "public" {
				continue
			}
			path := strings.ReplaceAll(p, "{id}", "999999999")
			for role, token := range tokens {
				hdr := map[string]string{"Authorization": "Bearer " + token}
				var body any
				if method == "post" {
					body, hdr["Content-Type"] = `{"unknown_field":1}`, "application/json"
					if p == "/admin/dlq/import" {
						hdr["Content-Type"] = "application/x-ndjson"
					}
				}
				r, err := shared.Do(strings.ToUpper(method), path, body, hdr)
				if err != nil {
					t.Fatal(err)
				}
				may := slices.Contains(strings.Fields(roleMay[role]), op.Permission)
				forbidden := r.Status == http.StatusForbidden && strings.Contains(string(r.Raw), "the "+op.Permission+" permission")
				if may == forbidden || r.Status == http.StatusUnauthorized || r.Status >= 500 {
					t.Errorf("%s %s (%s) as %s: %d %s", strings.ToUpper(method), path, op.Permission, role, r.Status, r.Raw)
				}
				checked++
			}
		}
	}
	if checked < 4*25 {
		t.Fatalf("only %d route × role requests", checked)
	}
}

// A viewer key reads rows but not bodies; a revoked key is refused at once
// in the isolate that revoked it; hostile credentials (a long token, one
// that is not UTF-8 text, a JWT of a thousand claims with alg none) are
// 401, never 500.
func TestNamedKeysInWorkerd(t *testing.T) {
	prefix := newPrefix("keys")
	viewer := newKey(t, shared, prefix+"-viewer", "viewer")
	as := func(token, method, path string, body any) *Response {
		hdr := map[string]string{"Authorization": "Bearer " + token}
		if body != nil {
			hdr["Content-Type"] = "application/json"
		}
		r, err := shared.Do(method, path, body, hdr)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	if r := as(viewer, "GET", "/admin/dlq?limit=1", nil); r.Status != 200 {
		t.Fatalf("viewer list: %d %s", r.Status, r.Raw)
	}
	if r := as(viewer, "GET", "/admin/dlq?limit=1&include_raw=true", nil); r.Status != 403 || !strings.Contains(string(r.Raw), "read_body") {
		t.Fatalf("viewer include_raw: %d %s", r.Status, r.Raw)
	}
	r := shared.Admin(t, http.MethodGet, "/admin/keys", nil)
	var env struct {
		Data struct {
			Keys []struct{ ID, Name string } `json:"keys"`
		} `json:"data"`
	}
	if json.Unmarshal(r.Raw, &env) != nil || strings.Contains(string(r.Raw), viewer[21:]) {
		t.Fatalf("list: %d %s", r.Status, r.Raw)
	}
	id := ""
	for _, k := range env.Data.Keys {
		if k.Name == prefix+"-viewer" {
			id = k.ID
		}
	}
	if r := shared.Admin(t, http.MethodPost, "/admin/keys/"+id+"/revoke", nil); r.Status != 200 {
		t.Fatalf("revoke %q: %d %s", id, r.Status, r.Raw)
	}
	if r := as(viewer, "GET", "/admin/dlq?limit=1", nil); r.Status != 401 || !strings.Contains(string(r.Raw), "KEY_REVOKED") {
		t.Fatalf("revoked: %d %s", r.Status, r.Raw)
	}
	// A token of 1 MB is refused by the runtime itself (431, before the
	// worker: handlers' tests show the worker's 401 for it); 16 KB reaches it.
	for _, token := range []string{"", "rdk_", strings.Repeat("A", 16<<10), "rdk_0123456789abcdef_" + strings.Repeat("é", 21) + "A",
		"eyJhbGciOiJub25lIn0." + strings.Repeat("eyJhIjoxfQ", 1000) + "."} {
		if r := as(token, "GET", "/admin/dlq?limit=1", nil); r.Status != 401 {
			t.Errorf("token %.30q: %d %.200s", token, r.Status, r.Raw)
		}
	}
}

// Failed sign-ins in workerd: a remote client (CF-Connecting-IP, as
// Cloudflare sets it) that fails 20 times is refused, 429 before any
// check, its good key too; another client is not.
func TestFailedSignInsLimitedInWorkerd(t *testing.T) {
	good := newKey(t, shared, newPrefix("signin")+"-viewer", "viewer")
	ip := fmt.Sprintf("203.0.113.%d", 1+time.Now().UnixNano()%250)
	as := func(client, token string) int {
		r, err := shared.Do("GET", "/admin/whoami", nil, map[string]string{"Authorization": "Bearer " + token, "CF-Connecting-IP": client})
		if err != nil {
			t.Fatal(err)
		}
		return r.Status
	}
	made := "rdk_0123456789abcdef_" + strings.Repeat("A", 43)
	for i := 0; i < 20; i++ {
		if code := as(ip, made); code != 401 {
			t.Fatalf("failure %d: %d", i+1, code)
		}
	}
	if code := as(ip, good); code != 429 {
		t.Errorf("the limited client's good key: %d, want 429", code)
	}
	if code := as("198.51.100.77", good); code != 200 {
		t.Errorf("another client: %d, want 200", code)
	}
}
