package cfaccess

import (
	"encoding/json"
	"math"
	"regexp"
	"strings"
	"testing"
)

// Every byte against the patterns the checks implement (a regexp as the
// oracle): a token's alphabet, a pipeline's name.
func TestCharacterClassesMatchTheirPatterns(t *testing.T) {
	token := regexp.MustCompile(`^[A-Za-z0-9_.-]*$`)
	pipeline := regexp.MustCompile(`^[a-z][a-z0-9_-]{0,31}$`)
	for b := 0; b < 256; b++ {
		c := string([]byte{byte(b)})
		if got, want := base64URLOrDots("ab"+c), token.MatchString("ab"+c); got != want {
			t.Errorf("base64URLOrDots(%q) = %v, want %v", "ab"+c, got, want)
		}
		for _, s := range []string{c, "a" + c, "a" + c + "b"} {
			if got, want := validPipelineName(s), pipeline.MatchString(s); got != want {
				t.Errorf("validPipelineName(%q) = %v, want %v", s, got, want)
			}
		}
	}
	for _, n := range []int{31, 32, 33} {
		s := strings.Repeat("a", n)
		if got, want := validPipelineName(s), pipeline.MatchString(s); got != want {
			t.Errorf("validPipelineName of %d letters = %v, want %v", n, got, want)
		}
	}
}

// A NumericDate is read from 0 to maxDate; missing, negative, NaN or
// past maxDate is none.
func TestUnixTimeBounds(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	for _, c := range []struct {
		in *float64
		ok bool
	}{{nil, false}, {f(math.NaN()), false}, {f(-1), false}, {f(-0.5), false}, {f(0), true}, {f(1.5), true},
		{f(maxDate), true}, {f(maxDate + 1), false}, {f(math.Inf(1)), false}} {
		if _, ok := unixTime(c.in); ok != c.ok {
			t.Errorf("unixTime(%v) ok %v, want %v", c.in, ok, c.ok)
		}
	}
}

// A groups claim of strings or of named objects; an object without a
// name, and any other shape, gives no group.
func TestGroupNames(t *testing.T) {
	for raw, want := range map[string]string{
		``:                                    "",
		`["a","b"]`:                           "a,b",
		`[{"name":"a"},{"name":""},{"id":1}]`: "a",
		`{"name":"a"}`:                        "",
		`"a"`:                                 "",
		`[1,2]`:                               "",
	} {
		if got := strings.Join(groupNames(json.RawMessage(raw)), ","); got != want {
			t.Errorf("groupNames(%s) = %q, want %q", raw, got, want)
		}
	}
}

// A rule matches its own email, domain or group alone.
func TestMatchIsExact(t *testing.T) {
	rs, err := ParseRules(`[{"email":"alice@example.com","role":"admin"},{"email_domain":"example.org","role":"operator"},{"group":"oncall","role":"viewer"}]`)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		id   Identity
		want string
	}{
		{Identity{Email: "ALICE@example.com"}, "admin"},
		{Identity{Email: "bob@example.com"}, ""},
		{Identity{Email: ""}, ""},
		{Identity{Email: "bob@example.org"}, "operator"},
		{Identity{Email: "bob@sub.example.org"}, ""},
		{Identity{Email: "example.org"}, ""},
		{Identity{Email: "x@y@example.org"}, ""},
		{Identity{Email: "bob@example.net", Groups: []string{"oncall"}}, "viewer"},
		{Identity{Email: "bob@example.net", Groups: []string{"Oncall"}}, ""},
	} {
		role, _, ok := rs.Match(c.id)
		if role != c.want || ok != (c.want != "") {
			t.Errorf("Match(%+v) = %q %v, want %q", c.id, role, ok, c.want)
		}
	}
}
