package metrics

import (
	"regexp"
	"testing"
)

// The name checks are loops (no regexp compiled at package initialisation):
// they must agree with the regexps they replaced.
func TestNameChecksAgreeWithTheirRegexps(t *testing.T) {
	gauge := regexp.MustCompile(`^[a-z][a-z0-9_]*$`)
	invalid := regexp.MustCompile(`[^a-zA-Z0-9_:]`)
	for _, s := range []string{"", "a", "dlq_pending", "dlq_pending_2", "2dlq", "_a", "Dlq", "a-b", "a b", "a:b", "a.b", "é", "aé", "a\n", "dlq_oldest_pending_age_seconds", "x\xffy", "A:Z_09", "z", "xyz", "azAZ09_:"} {
		if got, want := validGaugeName(s), gauge.MatchString(s); got != want {
			t.Errorf("validGaugeName(%q) = %v, the regexp says %v", s, got, want)
		}
		if got, want := MetricName(s), "redrive_"+invalid.ReplaceAllString(s, "_"); got != want {
			t.Errorf("MetricName(%q) = %q, the regexp gives %q", s, got, want)
		}
	}
}

func FuzzNameChecks(f *testing.F) {
	gauge := regexp.MustCompile(`^[a-z][a-z0-9_]*$`)
	invalid := regexp.MustCompile(`[^a-zA-Z0-9_:]`)
	f.Add("dlq_pending")
	f.Fuzz(func(t *testing.T, s string) {
		if validGaugeName(s) != gauge.MatchString(s) {
			t.Fatalf("validGaugeName(%q)", s)
		}
		if MetricName(s) != "redrive_"+invalid.ReplaceAllString(s, "_") {
			t.Fatalf("MetricName(%q)", s)
		}
	})
}
