package config

import (
	"regexp"
	"strings"
	"testing"
)

// The name checks are loops (config/names.go): each must agree with the
// regexp it replaced.
var nameRegexps = []struct {
	name  string
	check func(string) bool
	re    *regexp.Regexp
}{
	{"pipeline", validPipelineName, regexp.MustCompile(`^[a-z][a-z0-9_-]{0,31}$`)},
	{"label", validLabelName, regexp.MustCompile(`^[a-z][a-z0-9_]{0,31}$`)},
	{"queue", validQueueName, regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9_-]{0,62}$`)},
	{"binding", validBindingName, regexp.MustCompile(`^[A-Za-z_$][A-Za-z0-9_$]{0,63}$`)},
}

var nameSamples = []string{"", "a", "beers", "beer-enrichment-dlq", "ENRICHMENT_QUEUE", "$env", "_x", "9q", "-a", "a-", "a_b", "a b", "a\n", "\na",
	"A", "aB", "é", "aé", "x\xffy", "a$", "DB", "orders_v2", "a.b",
	strings.Repeat("a", 32), strings.Repeat("a", 33), strings.Repeat("q", 63), strings.Repeat("q", 64), strings.Repeat("B", 64), strings.Repeat("B", 65)}

func TestNameChecksAgreeWithTheirRegexps(t *testing.T) {
	accepted := 0
	for _, n := range nameRegexps {
		for _, s := range nameSamples {
			got, want := n.check(s), n.re.MatchString(s)
			if got != want {
				t.Errorf("%s name %q: the loop says %v, the regexp %v", n.name, s, got, want)
			}
			if got {
				accepted++
			}
		}
	}
	if accepted == 0 {
		t.Fatal("no sample accepted: the samples test nothing")
	}
}

func FuzzNameChecks(f *testing.F) {
	for _, s := range nameSamples {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, n := range nameRegexps {
			if n.check(s) != n.re.MatchString(s) {
				t.Fatalf("%s name %q: the loop says %v", n.name, s, n.check(s))
			}
		}
	})
}
