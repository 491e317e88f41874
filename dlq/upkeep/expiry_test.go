package upkeep

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

// steps fills each batch across its parts like UNION ALL ... LIMIT: a part
// is asked only for what the batch still has room for, and not at all once
// the batch is full; never more than the limit is deleted in one call; and
// a part that returned less than it was asked for is not asked again.
func TestStepsFillEachBatchAcrossTheParts(t *testing.T) {
	var asked []string
	part := func(name string, have int64) func(context.Context, int) (int64, error) {
		return func(_ context.Context, limit int) (int64, error) {
			asked = append(asked, fmt.Sprint(name, limit))
			n := min(have, int64(limit))
			have -= n
			return n, nil
		}
	}
	step := steps(part("a", 10), part("b", 3), part("c", 100))
	var totals []int64
	for range 3 {
		n, err := step(ctx, 10)
		if err != nil {
			t.Fatal(err)
		}
		totals = append(totals, n)
	}
	if got, want := fmt.Sprintf("%s %v", strings.Join(asked, " "), totals), "a10 a10 b10 c7 c10 [10 10 10]"; got != want {
		t.Fatalf("asked and deleted: %s, want %s", got, want)
	}
}
