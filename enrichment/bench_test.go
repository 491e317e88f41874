package enrichment

import (
	"testing"
	"time"

	"github.com/redrive/redrive/outbound"
)

// Classifying a provider answer (once per provider call).
func BenchmarkClassifyAnswer(b *testing.B) {
	resp := outbound.Response{Status: 200, Body: []byte(`{"choices":[{"message":{"role":"assistant","content":"8.0"}}]}`)}
	now := time.Unix(1_700_000_000, 0)
	for b.Loop() {
		Classify(resp, nil, now, "")
	}
}

// Classifying a 429 with an HTTP-date Retry-After.
func BenchmarkClassifyRateLimited(b *testing.B) {
	resp := outbound.Response{Status: 429, Header: map[string]string{"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}}
	now := time.Date(2015, 10, 21, 7, 27, 0, 0, time.UTC)
	for b.Loop() {
		Classify(resp, nil, now, "")
	}
}
