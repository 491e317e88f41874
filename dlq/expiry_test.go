package dlq

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

// steps fills each batch across its parts like UNION ALL ... LIMIT: a part
// is asked only for what the batch still has room for, never more than the
// limit is deleted in one call, and a part that returned less than it was
// asked for is not asked again.
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
	step := steps(part("a", 4), part("b", 100))
	var totals []int64
	for range 2 {
		n, err := step(ctx, 10)
		if err != nil {
			t.Fatal(err)
		}
		totals = append(totals, n)
	}
	if got := fmt.Sprintf("%s %v", strings.Join(asked, " "), totals); got != "a10 b6 b10 [10 10]" {
		t.Fatalf("asked and deleted: %s, want a10 b6 b10 [10 10]", got)
	}
}
