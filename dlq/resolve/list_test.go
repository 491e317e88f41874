package resolve

import (
	"fmt"
	"strings"
	"testing"

	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/dlq/inspect"
	"github.com/redrive/redrive/internal/sqlitetest"
	"github.com/redrive/redrive/queue/queuetest"
	"github.com/redrive/redrive/sqlbatch"
)

// q of any length up to MaxFilterText searches the list, dry runs, bulk
// replay and bulk acknowledge (the test database has D1's 50-byte LIKE
// limit). %, _ and \ are literal, and multi-byte UTF-8 is kept whole.
func TestLongQSearchesEveryAction(t *testing.T) {
	db := sqlitetest.New(t)
	long := strings.Repeat(`Ünïcode 100%_off \ `, 20)[:dlq.MaxFilterText-2] + "é" // exactly MaxFilterText bytes
	if len(long) != dlq.MaxFilterText {
		t.Fatalf("q is %d bytes", len(long))
	}
	ids := insert(t, db,
		adminRow{Key: "reason", Label1: "A", Reason: "permanent: " + asciiUpper(long[:60]) + long[60:] + " (end)", FailedAt: 3000},
		adminRow{Key: "name", Label1: "x" + long, FailedAt: 2000},
		adminRow{Key: "other", Label1: "Ünïcode 100 off", Label2: strings.Repeat("_", 60), Reason: strings.Repeat("%", 60), FailedAt: 1000},
	)
	for _, c := range []struct {
		q    string
		want []int64
	}{
		{long, []int64{ids[0], ids[1]}},
		{long[:49], []int64{ids[0], ids[1]}},
		{long[:51], []int64{ids[0], ids[1]}},
		{"y" + long[:198], nil},
		{strings.Repeat("_", 51), []int64{ids[2]}},
		{strings.Repeat("%", 51), []int64{ids[2]}},
		{`\ Ü`, []int64{ids[0], ids[1]}},
		{"ÜNÏCODE", nil}, // only ASCII letters fold: Ü and Ï stay as they are
	} {
		f := dlq.Filter{Q: c.q}
		p, err := inspect.List{DBs: dlq.Single(dlq.Store{DB: db}), Cursors: dlq.NewCursors("s")}.Page(ctx, inspect.ListParams{Filter: f})
		if err != nil {
			t.Fatalf("list q=%.20q… (%d bytes): %v", c.q, len(c.q), err)
		}
		var got []int64
		for _, m := range decoded(t, p) {
			got = append(got, m.ID)
		}
		if fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("list q=%.20q… (%d bytes): got %v, want %v", c.q, len(c.q), got, c.want)
		}
		rp, err := newReplay(db, &queuetest.Sender{}).DryRun(ctx, ReplayRequest{Selection: dlq.Selection{Filter: &f}})
		if err != nil || rp.MatchedCount != int64(len(c.want)) {
			t.Errorf("replay dry run q=%.20q…: %d matched, %v", c.q, rp.MatchedCount, err)
		}
		ap, err := Acknowledge{DB: db, Batch: sqlbatch.Tx{DB: db}, BulkMax: 10, Clock: fixedClock}.DryRun(ctx,
			AcknowledgeRequest{Selection: dlq.Selection{Filter: &f}})
		if err != nil || ap.MatchedCount != int64(len(c.want)) {
			t.Errorf("acknowledge dry run q=%.20q…: %d matched, %v", c.q, ap.MatchedCount, err)
		}
	}
	f := dlq.Filter{Q: long}
	res, err := newReplay(db, &queuetest.Sender{}).Run(ctx, ReplayRequest{Selection: dlq.Selection{IDs: nil, Filter: &f}})
	if err != nil || res.ReplayedCount != 2 {
		t.Fatalf("bulk replay with a %d-byte q: %+v %v", len(long), res, err)
	}
	db.Exec(`UPDATE dlq_messages SET status = 'pending'`)
	ack, err := Acknowledge{DB: db, Batch: sqlbatch.Tx{DB: db}, BulkMax: 10, Clock: fixedClock}.Run(ctx,
		AcknowledgeRequest{Selection: dlq.Selection{Filter: &f}, Note: "long q"})
	if err != nil || ack.AcknowledgedCount != 2 {
		t.Fatalf("bulk acknowledge with a %d-byte q: %+v %v", len(long), ack, err)
	}
}
