package dlq

import (
	"testing"

	"github.com/redrive/redrive/internal/sqlitetest"
	"github.com/redrive/redrive/queue/queuetest"
)

// A row that is not pending is skipped as not_pending whatever its body:
// not_replayable is only for pending rows replay cannot send.
func TestReplaySkipsRowsNotPendingBeforeLookingAtTheirBody(t *testing.T) {
	db := sqlitetest.New(t)
	ids := insert(t, db,
		adminRow{BeerID: UnparseableBeerID, FailedAt: 1, Raw: `{"v8":true}`, ContentType: "v8", Status: StatusAcknowledged},
		adminRow{BeerID: UnparseableBeerID, FailedAt: 1, Raw: `{broken`, ContentType: "json", Status: StatusReplayed},
		adminRow{BeerID: UnparseableBeerID, FailedAt: 1, Raw: `{"v8":true}`, ContentType: "v8"},
	)
	s := &queuetest.Sender{}
	res, err := newReplay(db, s).Run(ctx, ReplayRequest{Selection: Selection{IDs: ids}})
	if err != nil || res.ClaimedCount != 0 || s.Calls != 0 || len(res.Skipped) != 3 {
		t.Fatalf("%+v %v", res, err)
	}
	want := []Skipped{{ids[0], "not_pending", StatusAcknowledged}, {ids[1], "not_pending", StatusReplayed}, {ids[2], "not_replayable", StatusPending}}
	for i, sk := range res.Skipped {
		if sk != want[i] {
			t.Errorf("skipped[%d] = %+v, want %+v", i, sk, want[i])
		}
	}
}
