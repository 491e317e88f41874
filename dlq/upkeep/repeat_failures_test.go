package upkeep

import (
	"fmt"
	"testing"
	"time"

	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/internal/sqlitetest"
)

// The repeat-failure alert reads only the rows replayed most (it once read every pending row replayed at all when few were over
// MaxReplays). Whatever the shape, it counts and names exactly the pending
// rows over MaxReplays: most replays first, then the newest row; rows
// replayed MaxReplays times or fewer, and rows that are not pending, never.
func TestRepeatFailuresShapes(t *testing.T) {
	for _, tc := range []struct {
		name   string
		counts []int64 // replay_count of each pending row, in insertion (id) order
		other  []int64 // replay_count of replayed rows
		on     bool
		detail string
	}{
		{"none replayed", []int64{0, 0}, nil, false, "no pending DLQ rows replayed more than 2 times"},
		{"many at the limit, none over", []int64{1, 2, 2, 1, 2}, []int64{9}, false, "no pending DLQ rows replayed more than 2 times"},
		{"few over among many at the limit", []int64{2, 1, 3, 2, 2, 4, 1, 2, 3}, []int64{9, 7}, true,
			"3 pending DLQ rows replayed more than 2 times: b5 (4 replays), b8 (3 replays), b2 (3 replays)"},
		{"more than five over, ties newest first", []int64{3, 5, 3, 2, 3, 5, 3, 3, 1}, nil, true,
			"7 pending DLQ rows replayed more than 2 times: b5 (5 replays), b1 (5 replays), b7 (3 replays), b6 (3 replays), b4 (3 replays)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := sqlitetest.New(t)
			for i, n := range tc.counts {
				insert(t, db, adminRow{Key: fmt.Sprint("b", i), FailedAt: 1, ReplayCount: n})
			}
			for i, n := range tc.other {
				insert(t, db, adminRow{Key: fmt.Sprint("r", i), FailedAt: 1, ReplayCount: n, Status: dlq.StatusReplayed})
			}
			on, detail, err := RepeatFailures{DB: db, MaxReplays: 2}.Check(ctx, time.Now())
			if err != nil || on != tc.on || detail != tc.detail {
				t.Fatalf("%v %q %v\nwant %v %q", on, detail, err, tc.on, tc.detail)
			}
		})
	}
}

// Over the count's bound, only the bound's rows are read: the ones over
// MaxReplays among the 100 replayed most, "at least 100" when all are.
func TestRepeatFailuresCountStopsAtItsBound(t *testing.T) {
	db := sqlitetest.New(t)
	generate(t, db, "g", 300, 1, 1_700_000_000_000)
	mustExec(t, db, `UPDATE dlq_messages SET replay_count = CASE WHEN id % 3 = 0 THEN 1 ELSE 3 END`)
	on, detail, err := RepeatFailures{DB: db, MaxReplays: 2}.Check(ctx, time.Now())
	if err != nil || !on || detail[:56] != "at least 100 pending DLQ rows replayed more than 2 times" {
		t.Fatalf("%v %q %v", on, detail, err)
	}
	mustExec(t, db, `UPDATE dlq_messages SET replay_count = 1 WHERE id > 3`)
	on, detail, err = RepeatFailures{DB: db, MaxReplays: 2}.Check(ctx, time.Now())
	if err != nil || !on || detail != "2 pending DLQ rows replayed more than 2 times: gen-1 (3 replays), gen-0 (3 replays)" {
		t.Fatalf("%v %q %v", on, detail, err)
	}
}
