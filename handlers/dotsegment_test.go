package handlers

import (
	"net/url"
	"strings"
	"testing"
)

// dotSegmentSplit is dotSegment as it was, splitting and decoding every
// segment: the allocation-free version must agree with it.
func dotSegmentSplit(escaped string) bool {
	for _, seg := range strings.Split(escaped, "/") {
		if u, err := url.PathUnescape(seg); err == nil && (u == "." || u == "..") {
			return true
		}
	}
	return false
}

var dotSegmentSamples = []string{"", "/", "/admin/dlq", "/admin/./dlq", "/admin/../dlq", "/admin/dlq/%2e", "/admin/dlq/%2E%2e", "/admin/dlq/.%2e/x",
	"/admin/dlq/a%2F..%2Fb", "/admin/dlq/%2e%2e%2e", "/admin/dlq/...", "/a/%zz/..", "/a/%2", "..", ".", "/admin/dlq/%2e%2e/", "/admin/dlq/x.."}

func TestDotSegmentAgreesWithSplitting(t *testing.T) {
	dots := 0
	for _, s := range dotSegmentSamples {
		got, want := dotSegment(s), dotSegmentSplit(s)
		if got != want {
			t.Errorf("dotSegment(%q) = %v, want %v", s, got, want)
		}
		if got {
			dots++
		}
	}
	if dots < 5 {
		t.Fatalf("only %d samples have a dot segment", dots)
	}
}

func FuzzDotSegment(f *testing.F) {
	for _, s := range dotSegmentSamples {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if dotSegment(s) != dotSegmentSplit(s) {
			t.Fatalf("dotSegment(%q) = %v", s, dotSegment(s))
		}
	})
}
