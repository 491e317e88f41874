package resolve

import (
	"testing"

	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/internal/sqlitetest"
	"github.com/redrive/redrive/queue/queuetest"
)

// A row that is not pending is skipped as not_pending whatever its body:
// not_replayable is only for pending rows replay cannot send.
func TestReplaySkipsRowsNotPendingBeforeLookingAtTheirBody(t *testing.T) {
	db := sqlitetest.New(t)
	ids := insert(t, db,
		adminRow{Key: dlq.UnparseableKey, FailedAt: 1, Raw: `{"v8":true}`, ContentType: "v8", Status: dlq.StatusAcknowledged},
		adminRow{Key: dlq.UnparseableKey, FailedAt: 1, Raw: `{broken`, ContentType: "json", Status: dlq.StatusReplayed},
		adminRow{Key: dlq.UnparseableKey, FailedAt: 1, Raw: `{"v8":true}`, ContentType: "v8"},
	)
	s := &queuetest.Sender{}
	res, err := newReplay(db, s).Run(ctx, ReplayRequest{Selection: dlq.Selection{IDs: ids}})
	if err != nil || res.ClaimedCount != 0 || s.Calls != 0 || len(res.Skipped) != 3 {
		t.Fatalf("%+v %v", res, err)
	}
	want := []Skipped{{ids[0], "not_pending", dlq.StatusAcknowledged}, {ids[1], "not_pending", dlq.StatusReplayed}, {ids[2], "not_replayable", dlq.StatusPending}}
	for i, sk := range res.Skipped {
		if sk != want[i] {
			t.Errorf("skipped[%d] = %+v, want %+v", i, sk, want[i])
		}
	}
}
