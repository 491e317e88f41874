package dlq

import (
	"strings"
	"testing"

	"github.com/redrive/redrive/internal/sqlitetest"
)

func TestAcknowledgeHundredIDsMovesOnlyPendingRows(t *testing.T) {
	db := sqlitetest.New(t)
	generate(t, db, "ack", 100, 1, 1_700_000_000_000)
	db.Exec(`UPDATE dlq_messages SET status = 'replayed' WHERE id % 10 = 0`)
	var ids []int64
	for i := int64(1); i <= 100; i++ {
		ids = append(ids, i)
	}
	a := Acknowledge{DB: db, BulkMax: 5000, Now: clock}
	res, err := a.Run(ctx, AcknowledgeRequest{Selection: Selection{IDs: ids}, Note: "known bad beers"})
	if err != nil {
		t.Fatal(err)
	}
	if res.AcknowledgedCount != 90 || res.RequestedCount != 100 || len(res.AcknowledgedIDs) != 90 || res.HasMore != nil {
		t.Fatalf("result %+v", res)
	}
	if n := count(t, db, `SELECT COUNT(*) FROM dlq_messages WHERE status = 'acknowledged' AND acknowledged_at = ?
		AND acknowledged_note = 'known bad beers' AND id % 10 <> 0`, clock().UnixMilli()); n != 90 {
		t.Fatalf("acknowledged rows: %d", n)
	}
	if n := count(t, db, `SELECT COUNT(*) FROM dlq_messages WHERE status = 'replayed'`); n != 10 {
		t.Fatalf("replayed rows must stay replayed: %d", n)
	}
	res, err = a.Run(ctx, AcknowledgeRequest{Selection: Selection{IDs: ids}})
	if err != nil || res.AcknowledgedCount != 0 {
		t.Fatalf("second acknowledge must be a no-op: %+v %v", res, err)
	}
	// The statement that moves the rows counts them (migrations/0009).
	if n := count(t, db, `SELECT value FROM counters WHERE name = ?`, CounterAcknowledged); n != 90 {
		t.Fatalf("%s = %d, want 90", CounterAcknowledged, n)
	}
}

func TestBulkAcknowledgePagesAndDryRun(t *testing.T) {
	db := sqlitetest.New(t)
	generate(t, db, "bulkack", 250, 2, 1_700_000_000_000)
	insert(t, db, adminRow{beerID: "keep", beerName: "Keep Me", failedAt: 1})
	a := Acknowledge{DB: db, BulkMax: 100, Now: clock}
	f := &Filter{Q: "bulkack-"}
	before := snapshot(t, db)
	p, err := a.DryRun(ctx, AcknowledgeRequest{Selection: Selection{Filter: f}})
	if err != nil || p.MatchedCount != 250 || len(p.Sample) != 10 || len(p.ByFailureReason) != 3 || p.NotReplayableCount != 0 {
		t.Fatalf("dry run %+v %v", p, err)
	}
	if snapshot(t, db) != before {
		t.Fatal("dry run changed rows")
	}
	var counts []int64
	for {
		res, err := a.Run(ctx, AcknowledgeRequest{Selection: Selection{Filter: f}, Note: "bulk"})
		if err != nil {
			t.Fatal(err)
		}
		counts = append(counts, res.AcknowledgedCount)
		if !*res.HasMore {
			break
		}
	}
	if len(counts) != 3 || counts[0] != 100 || counts[1] != 100 || counts[2] != 50 {
		t.Fatalf("pages %v", counts)
	}
	if n := count(t, db, `SELECT COUNT(*) FROM dlq_messages WHERE status = 'pending'`); n != 1 {
		t.Fatalf("pending left %d, want only the non-matching row", n)
	}
}

func TestAcknowledgeRejectsBadInput(t *testing.T) {
	db := sqlitetest.New(t)
	insert(t, db, adminRow{beerID: "1", failedAt: 1})
	before := snapshot(t, db)
	many := make([]int64, 101)
	for i := range many {
		many[i] = int64(i + 1)
	}
	a := Acknowledge{DB: db, BulkMax: 100}
	for name, c := range map[string]struct {
		req  AcknowledgeRequest
		code string
	}{
		"101 ids":     {AcknowledgeRequest{Selection: Selection{IDs: many}}, "INVALID_REQUEST"},
		"empty":       {AcknowledgeRequest{Selection: Selection{IDs: []int64{}}}, "INVALID_REQUEST"},
		"duplicates":  {AcknowledgeRequest{Selection: Selection{IDs: []int64{1, 1}}}, "INVALID_REQUEST"},
		"long note":   {AcknowledgeRequest{Selection: Selection{IDs: []int64{1}}, Note: strings.Repeat("n", 1001)}, "INVALID_REQUEST"},
		"bad status":  {AcknowledgeRequest{Selection: Selection{Filter: &Filter{Status: "all"}}}, "INVALID_FILTER"},
		"both":        {AcknowledgeRequest{Selection: Selection{IDs: []int64{1}, Filter: &Filter{}}}, "INVALID_REQUEST"},
		"neither":     {AcknowledgeRequest{}, "INVALID_REQUEST"},
		"bad q":       {AcknowledgeRequest{Selection: Selection{Filter: &Filter{Q: strings.Repeat("q", 300)}}}, "INVALID_FILTER"},
		"bad id zero": {AcknowledgeRequest{Selection: Selection{IDs: []int64{0}}}, "INVALID_REQUEST"},
	} {
		_, err := a.Run(ctx, c.req)
		t.Run(name, func(t *testing.T) { wantInput(t, err, c.code) })
	}
	if snapshot(t, db) != before {
		t.Fatal("rejected input changed something")
	}
}
