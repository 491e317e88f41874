package cfaccess

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

const exampleRules = `[
	{"email": "Boss@Example.com", "role": "admin"},
	{"group": "dlq-operators", "role": "operator", "pipelines": ["beers", "orders"]},
	{"email_domain": "example.com", "role": "viewer"},
	{"email": "ci@robots.example.org", "role": "reporter"}
]`

func TestParseRulesAndMatch(t *testing.T) {
	rs, err := ParseRules(exampleRules)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		id        Identity
		role      string
		pipelines []string
		ok        bool
	}{
		{Identity{Email: "boss@example.com"}, "admin", nil, true},
		{Identity{Email: "BOSS@EXAMPLE.COM", Groups: []string{"dlq-operators"}}, "admin", nil, true},
		{Identity{Email: "ana@example.com", Groups: []string{"x", "dlq-operators"}}, "operator", []string{"beers", "orders"}, true},
		{Identity{Email: "ana@Example.COM"}, "viewer", nil, true},
		{Identity{Email: "ana@sub.example.com"}, "", nil, false},
		{Identity{Email: "ana@example.com.evil.net"}, "", nil, false},
		{Identity{Email: "eve@evil.example"}, "", nil, false},
		{Identity{Email: "eve@evil.example", Groups: []string{"DLQ-operators"}}, "", nil, false},
		{Identity{Email: "ci@robots.example.org"}, "reporter", nil, true},
		{Identity{Email: "a@b@example.com"}, "", nil, false},
		{Identity{}, "", nil, false},
		{Identity{Groups: []string{"dlq-operators"}}, "operator", []string{"beers", "orders"}, true},
	} {
		role, pipes, ok := rs.Match(c.id)
		if role != c.role || ok != c.ok || !slices.Equal(pipes, c.pipelines) {
			t.Errorf("%+v: %q %v %v, want %q %v %v", c.id, role, pipes, ok, c.role, c.pipelines, c.ok)
		}
	}
	// The pipelines returned are a copy.
	_, pipes, _ := rs.Match(Identity{Groups: []string{"dlq-operators"}})
	pipes[0] = "changed"
	if _, again, _ := rs.Match(Identity{Groups: []string{"dlq-operators"}}); again[0] != "beers" {
		t.Fatal("Match returned the rule's own slice")
	}
}

func TestParseRulesAcceptsNoRules(t *testing.T) {
	for _, s := range []string{"", "  \n", "[]"} {
		rs, err := ParseRules(s)
		if err != nil || len(rs) != 0 {
			t.Errorf("%q: %v %v", s, rs, err)
		}
		if _, _, ok := rs.Match(Identity{Email: "a@example.com"}); ok {
			t.Errorf("%q: an identity matched no rules", s)
		}
	}
}

func TestParseRulesRefuses(t *testing.T) {
	many := "[" + strings.TrimSuffix(strings.Repeat(`{"group":"g","role":"viewer"},`, MaxRules+1), ",") + "]"
	long := `[{"group":"` + strings.Repeat("g", MaxRulesBytes) + `","role":"viewer"}]`
	for _, c := range []struct{ name, in, want string }{
		{"not JSON", "admin", "JSON array"},
		{"an object", `{"email":"a@b.c","role":"admin"}`, "JSON array"},
		{"null", "null", "JSON array"},
		{"unknown field", `[{"email":"a@b.c","role":"admin","roles":"x"}]`, `ACCESS_ROLES: unknown field "[0].roles"`},
		{"field in another case", `[{"emAil":"a@b.c","role":"admin"}]`, `unknown field "[0].emAil"`},
		{"role in capitals", `[{"email":"a@b.c","ROLE":"admin"}]`, `unknown field "[0].ROLE"`},
		{"field twice", `[{"email":"a@b.c","role":"viewer","role":"admin"}]`, `duplicate field "[0].role"`},
		{"unknown field in rule 2", `[{"email":"a@b.c","role":"admin"},{"group":"g","role":"viewer","x":{"y":[1]}}]`, `unknown field "[1].x"`},
		{"trailing data", `[{"email":"a@b.c","role":"admin"}] []`, "ACCESS_ROLES: the value has data after the JSON array"},
		{"trailing garbage", `[{"email":"a@b.c","role":"admin"}]x`, "ACCESS_ROLES: the value has data after the JSON array"},
		{"no subject", `[{"role":"admin"}]`, "exactly one"},
		{"two subjects", `[{"email":"a@b.c","group":"g","role":"admin"}]`, "exactly one"},
		{"null rule", `[null]`, "rule 1: name exactly one"},
		{"a string rule", `["admin"]`, "ACCESS_ROLES: [0] must be an object"},
		{"bad role", `[{"email":"a@b.c","role":"root"}]`, "role must be one of"},
		{"no role", `[{"email":"a@b.c"}]`, "role must be one of"},
		{"role case", `[{"email":"a@b.c","role":"Admin"}]`, "role must be one of"},
		{"email without @", `[{"email":"ab.c","role":"admin"}]`, "email must be"},
		{"email with a blank", `[{"email":"a b@c.d","role":"admin"}]`, "email must be"},
		{"email with two @", `[{"email":"a@b@c.d","role":"admin"}]`, "email must be"},
		{"domain with @", `[{"email_domain":"@example.com","role":"admin"}]`, "email_domain"},
		{"domain dot", `[{"email_domain":".example.com","role":"admin"}]`, "email_domain"},
		{"group blank-padded", `[{"group":" g","role":"admin"}]`, "group"},
		{"pipeline name", `[{"group":"g","role":"admin","pipelines":["Beers"]}]`, "pipeline"},
		{"pipeline twice", `[{"group":"g","role":"admin","pipelines":["a","a"]}]`, "twice"},
		{"wrong type", `[{"group":5,"role":"admin"}]`, "ACCESS_ROLES: [0].group must be a string"},
		{"too many", many, "over 100"},
		{"too long", long, "bytes"},
		{"rule number", `[{"group":"g","role":"admin"},{"group":"g","role":"boss"}]`, "rule 2"},
	} {
		rs, err := ParseRules(c.in)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, %v; want an error with %q", c.name, rs, err, c.want)
		}
	}
}

// MaxRules rules are accepted, and every role is.
func TestParseRulesLimitsAndRoles(t *testing.T) {
	var b strings.Builder
	b.WriteString("[")
	roles := []string{"viewer", "operator", "admin", "reporter"}
	for i := range MaxRules {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `{"email":"u%d@example.com","role":%q}`, i, roles[i%4])
	}
	b.WriteString("]")
	rs, err := ParseRules(b.String())
	if err != nil || len(rs) != MaxRules {
		t.Fatalf("%d rules, %v", len(rs), err)
	}
	if role, _, ok := rs.Match(Identity{Email: "U99@EXAMPLE.COM"}); !ok || role != "reporter" {
		t.Fatalf("u99: %q %v", role, ok)
	}
}

// Each check of a rule at its boundary: the size of ACCESS_ROLES, the
// number of pipelines, an email's and a domain's shape, a DEL byte.
func TestParseRulesBoundaries(t *testing.T) {
	rule := `[{"email":"a@example.com","role":"viewer"}]`
	pipes := func(n int) string {
		var ps []string
		for i := range n {
			ps = append(ps, fmt.Sprintf(`"p%d"`, i))
		}
		return `[{"email":"a@example.com","role":"viewer","pipelines":[` + strings.Join(ps, ",") + `]}]`
	}
	for _, c := range []struct {
		name, in string
		ok       bool
	}{
		{"MaxRulesBytes", rule + strings.Repeat(" ", MaxRulesBytes-len(rule)), true},
		{"MaxRulesBytes + 1", rule + strings.Repeat(" ", MaxRulesBytes-len(rule)+1), false},
		{"maxRulePipelines pipelines", pipes(maxRulePipelines), true},
		{"one more", pipes(maxRulePipelines + 1), false},
		{"email without a local part", `[{"email":"@example.com","role":"viewer"}]`, false},
		{"email without @", `[{"email":"alice","role":"viewer"}]`, false},
		{"email with a blank", `[{"email":"a b@example.com","role":"viewer"}]`, false},
		{"email with DEL", "[{\"email\":\"a\x7f@example.com\",\"role\":\"viewer\"}]", false},
		{"email with ~", `[{"email":"a~b@example.com","role":"viewer"}]`, true},
		{"email with two @", `[{"email":"a@b@example.com","role":"viewer"}]`, false},
		{"domain", `[{"email_domain":"example.com","role":"viewer"}]`, true},
		{"domain with @", `[{"email_domain":"a@example.com","role":"viewer"}]`, false},
		{"domain starting with a dot", `[{"email_domain":".example.com","role":"viewer"}]`, false},
		{"domain ending with a dot", `[{"email_domain":"example.com.","role":"viewer"}]`, false},
		{"email's domain ending with a dot", `[{"email":"a@example.com.","role":"viewer"}]`, false},
	} {
		_, err := ParseRules(c.in)
		if (err == nil) != c.ok {
			t.Errorf("%s: %v, want ok %v", c.name, err, c.ok)
		}
	}
}
