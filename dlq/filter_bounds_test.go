package dlq

import (
	"strings"
	"testing"
)

// The filter's times are epoch milliseconds in 0..2^53-1, failed_after
// earlier than failed_before; its texts at most 200 bytes.
func TestFilterBounds(t *testing.T) {
	i := func(v int64) *int64 { return &v }
	for _, c := range []struct {
		name string
		f    Filter
		msg  string // "" = valid
	}{
		{"after 0", Filter{FailedAfter: i(0)}, ""},
		{"before max", Filter{FailedBefore: i(MaxSafeInteger)}, ""},
		{"after -1", Filter{FailedAfter: i(-1)}, "failed_after must be epoch milliseconds in 0..9007199254740991"},
		{"before max+1", Filter{FailedBefore: i(MaxSafeInteger + 1)}, "failed_before must be epoch milliseconds in 0..9007199254740991"},
		{"after max+1", Filter{FailedAfter: i(MaxSafeInteger + 1)}, "failed_after must be epoch milliseconds in 0..9007199254740991"},
		{"after < before", Filter{FailedAfter: i(4), FailedBefore: i(5)}, ""},
		{"after = before", Filter{FailedAfter: i(5), FailedBefore: i(5)}, "failed_after must be earlier than failed_before"},
		{"q of 200 bytes", Filter{Q: strings.Repeat("é", 100)}, ""},
		{"q of 201 bytes", Filter{Q: strings.Repeat("é", 100) + "x"}, "q is longer than 200 bytes"},
		{"beer_id of 201 bytes", Filter{Key: strings.Repeat("b", 201)}, "beer_id is longer than 200 bytes"},
		{"source_queue of 201 bytes", Filter{SourceQueue: strings.Repeat("s", 201)}, "source_queue is longer than 200 bytes"},
	} {
		got, err := c.f.Normalize(nil)
		if c.msg == "" {
			if err != nil || got.Status != StatusPending {
				t.Errorf("%s: %+v %v", c.name, got, err)
			}
			continue
		}
		wantInput(t, err, "INVALID_FILTER")
		if err.(*InputError).Message != c.msg {
			t.Errorf("%s: %q, want %q", c.name, err.(*InputError).Message, c.msg)
		}
	}
}

// Row ids are positive integers JSON carries exactly: 1..2^53-1.
func TestValidateIDsBounds(t *testing.T) {
	if err := ValidateIDs([]int64{1, MaxSafeInteger}, 2); err != nil {
		t.Fatalf("1 and 2^53-1: %v", err)
	}
	for _, c := range []struct {
		ids []int64
		msg string
	}{
		{[]int64{1, MaxSafeInteger + 1}, "ids[1] must be a positive integer"},
		{[]int64{0}, "ids[0] must be a positive integer"},
		{[]int64{1, 2, 3}, "at most 2 ids per request; got 3"},
		{[]int64{}, "ids must be a non-empty array of row ids"},
		{[]int64{7, 7}, "ids[1] repeats id 7; each id may appear once"},
	} {
		err := ValidateIDs(c.ids, 2)
		wantInput(t, err, "INVALID_REQUEST")
		if err.(*InputError).Message != c.msg {
			t.Errorf("%v: %q, want %q", c.ids, err.(*InputError).Message, c.msg)
		}
	}
}
