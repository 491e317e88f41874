package enrichment

import (
	"testing"
)

// A 429 is an answer: the provider is up and only asks us to slow down. It
// never counts towards opening the breaker, and it ends a run of transient
// failures (503, 429, 503 is not two in a row).
func TestConsumerRateLimitNeverOpensTheBreaker(t *testing.T) {
	f := newFixture(t)
	f.c.Policy.BreakerThreshold = 2
	state := func() (s string, failures int64) {
		f.db.QueryRow(`SELECT state, failures FROM enrichment_breaker`).Scan(&s, &failures)
		return s, failures
	}
	f.provider.status(429, `{"error":{"message":"slow down"}}`)
	f.consume(t, msg("r1", "rb1", "One", 1), msg("r2", "rb2", "Two", 1), msg("r3", "rb3", "Three", 1))
	if s, n := state(); s == BreakerOpen || n != 0 || f.provider.calls() != 3 {
		t.Fatalf("after three 429s: breaker %q with %d failures, %d calls", s, n, f.provider.calls())
	}
	for i, status := range []int{503, 429, 503} {
		f.provider.status(status, `{"error":{"message":"x"}}`)
		f.consume(t, msg("s"+string(rune('a'+i)), "sb", "Seq", 1))
	}
	if s, n := state(); s == BreakerOpen || n != 1 {
		t.Fatalf("after 503, 429, 503: breaker %q with %d consecutive failures, want closed with 1", s, n)
	}
}
