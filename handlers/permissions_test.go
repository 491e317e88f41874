package handlers

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/access"
	"github.com/redrive/redrive/queue/queuetest"
)

// Every route declares one known permission in the route table, and the
// document states the same permission (x-permission) and the security its
// check asks for: none for the public route; the pair of secrets or a named
// key for the others, and REPORT_TOKEN too for the report route.
func TestEveryRouteDeclaresItsPermission(t *testing.T) {
	doc := loadOpenAPI(t)
	api := &API{DevSender: &queuetest.Sender{}, DevCron: func(context.Context, string, time.Time) error { return nil }}
	admin := `[{"AdminSecret":[],"ApiKey":[]},{"NamedKey":[]},{"CloudflareAccess":[]}]` // keys sorted, as json.Marshal writes a map
	wantSecurity := map[access.Permission]string{access.Public: `[]`, access.Report: `[{"ReportToken":[]},{"AdminSecret":[],"ApiKey":[]},{"NamedKey":[]},{"CloudflareAccess":[]}]`}
	seen := map[access.Permission]bool{}
	for _, rt := range api.routeTable() {
		if !slices.Contains(access.Permissions, rt.perm) {
			t.Errorf("%s declares permission %q, not one of %v", rt.pattern, rt.perm, access.Permissions)
			continue
		}
		seen[rt.perm] = true
		method, path, _ := strings.Cut(rt.pattern, " ")
		if strings.HasPrefix(path, "/__dev/") {
			if rt.perm != access.Dev {
				t.Errorf("%s: a development route declares %q, want %q", rt.pattern, rt.perm, access.Dev)
			}
			continue
		}
		var op struct {
			Permission access.Permission `json:"x-permission"`
			Scope      string            `json:"x-pipeline-scope"`
			Security   json.RawMessage   `json:"security"`
		}
		if err := json.Unmarshal(doc.Paths[path][strings.ToLower(method)], &op); err != nil {
			t.Fatalf("%s: %v", rt.pattern, err)
		}
		if op.Permission != rt.perm {
			t.Errorf("%s: openapi.json x-permission %q, route table %q", rt.pattern, op.Permission, rt.perm)
		}
		if want := map[routeScope]string{perPipeline: "per-pipeline", everyPipeline: "every"}[rt.scope]; op.Scope != want {
			t.Errorf("%s: openapi.json x-pipeline-scope %q, route table %q", rt.pattern, op.Scope, want)
		}
		want, ok := wantSecurity[rt.perm]
		if !ok {
			want = admin
		}
		var got any
		if err := json.Unmarshal(op.Security, &got); err != nil {
			t.Fatalf("%s: security %s: %v", rt.pattern, op.Security, err)
		}
		if b, _ := json.Marshal(got); string(b) != want {
			t.Errorf("%s: openapi.json security %s, want %s", rt.pattern, b, want)
		}
	}
	// Every permission guards at least one route.
	for _, p := range access.Permissions {
		if !seen[p] {
			t.Errorf("permission %q guards no route", p)
		}
	}
}
