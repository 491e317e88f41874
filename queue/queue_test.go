package queue

import (
	"strings"
	"testing"
)

func TestBatchesRespectCountAndSize(t *testing.T) {
	msgs := func(n, size int) []Outgoing {
		out := make([]Outgoing, n)
		for i := range out {
			out[i] = Outgoing{Body: strings.Repeat("x", size)}
		}
		return out
	}
	sizes := func(bs [][]Outgoing) []int {
		var out []int
		for _, b := range bs {
			out = append(out, len(b))
		}
		return out
	}
	cases := []struct {
		name string
		in   []Outgoing
		want []int
	}{
		{"none", nil, nil},
		{"one", msgs(1, 10), []int{1}},
		{"exactly 100", msgs(100, 10), []int{100}},
		{"250 small", msgs(250, 10), []int{100, 100, 50}},
		// 3 KB bodies (the largest beer messages): 100 of them would be ~310 KB.
		{"100 large", msgs(100, 3000), []int{80, 20}},
		{"one too large", msgs(2, MaxBatchBytes+1), []int{1, 1}},
	}
	for _, c := range cases {
		got := Batches(c.in)
		if len(got) != len(c.want) {
			t.Errorf("%s: batch sizes %v, want %v", c.name, sizes(got), c.want)
			continue
		}
		total := 0
		for i, b := range got {
			bytes := 0
			for _, m := range b {
				bytes += len(m.Body) + batchOverhead
			}
			if len(b) != c.want[i] || len(b) > MaxBatchMessages || (len(b) > 1 && bytes > MaxBatchBytes) {
				t.Errorf("%s: batch %d has %d messages, %d bytes; want %d", c.name, i, len(b), bytes, c.want[i])
			}
			total += len(b)
		}
		if total != len(c.in) {
			t.Errorf("%s: %d messages in batches, want %d", c.name, total, len(c.in))
		}
	}
}
