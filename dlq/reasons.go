package dlq

import (
	"cmp"
	"slices"
)

// ReasonCount is one entry of top_failure_reasons (and of a dry run's by_failure_reason).
type ReasonCount struct {
	FailureReason *string `json:"failure_reason"`
	Count         int64   `json:"count"`
}

// SortReasons orders reason counts by count, most first, then by reason.
func SortReasons(rs []ReasonCount) {
	slices.SortStableFunc(rs, func(a, b ReasonCount) int {
		return cmp.Or(cmp.Compare(b.Count, a.Count), cmp.Compare(deref(a.FailureReason), deref(b.FailureReason)))
	})
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
