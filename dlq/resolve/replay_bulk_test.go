package resolve

import (
	"strings"
	"testing"

	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/internal/sqlitetest"
	"github.com/redrive/redrive/queue/queuetest"
)

// A bulk replay's limit may be anything in 1..BulkMax: limit 1 claims the
// newest matching row and continues after it.
func TestBulkReplayLimitBounds(t *testing.T) {
	db := sqlitetest.New(t)
	ids := insert(t, db, adminRow{Key: "a", FailedAt: 10}, adminRow{Key: "b", FailedAt: 30}, adminRow{Key: "c", FailedAt: 20})
	s := &queuetest.Sender{}
	r := newReplay(db, s)
	r.BulkMax = 2
	f := &dlq.Filter{}
	res, err := r.Run(ctx, ReplayRequest{Selection: dlq.Selection{Filter: f}, Limit: 1})
	if err != nil || res.ClaimedCount != 1 || len(res.ReplayedIDs) != 1 || res.ReplayedIDs[0] != ids[1] || !res.HasMore || res.NextCursor == nil {
		t.Fatalf("limit 1: %+v %v", res, err)
	}
	res, err = r.Run(ctx, ReplayRequest{Selection: dlq.Selection{Filter: f}, Limit: 2, Cursor: *res.NextCursor})
	if err != nil || res.ClaimedCount != 2 || res.HasMore || res.NextCursor != nil {
		t.Fatalf("limit 2 = BulkMax: %+v %v", res, err)
	}
	for _, limit := range []int{-1, 3} {
		_, err := r.Run(ctx, ReplayRequest{Selection: dlq.Selection{Filter: f}, Limit: limit})
		wantInput(t, err, "INVALID_LIMIT")
	}
}

// When the bulk continuation cannot be read (D1 fails after the settle),
// the call fails with that error; the rows it sent stay replayed.
func TestBulkReplayProgressFailureIsReported(t *testing.T) {
	type outcome struct {
		sender *queuetest.Sender
		res    ReplayResult
		err    error
		stmts  int64
		rows   func(status string) int64
	}
	run := func(ok int64) outcome {
		plain, flaky, stmts := flakyDB(t, ok)
		insert(t, plain, adminRow{Key: "a", FailedAt: 10}, adminRow{Key: "b", FailedAt: 20})
		o := outcome{sender: &queuetest.Sender{}}
		o.res, o.err = newReplay(flaky, o.sender).Run(ctx, ReplayRequest{Selection: dlq.Selection{Filter: &dlq.Filter{}}, Limit: 1})
		o.stmts = stmts.Load()
		o.rows = func(status string) int64 {
			return count(t, plain, `SELECT COUNT(*) FROM dlq_messages WHERE status = ?`, status)
		}
		return o
	}
	up := run(1000)
	if up.err != nil || !up.res.HasMore {
		t.Fatalf("with D1 up: %+v %v", up.res, up.err)
	}
	// The continuation is the last statement: let every one before it run.
	o := run(up.stmts - 1)
	if o.err == nil || !strings.HasPrefix(o.err.Error(), "replay progress: ") || o.res.ReplayedCount != 1 ||
		len(o.sender.Sent["beer-enrichment"]) != 1 || o.rows(dlq.StatusReplayed) != 1 || o.rows(dlq.StatusPending) != 1 {
		t.Fatalf("progress failing: %+v %v", o.res, o.err)
	}
}
