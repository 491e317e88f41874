package resolve

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/dlq/inspect"
	"github.com/redrive/redrive/internal/sqlitetest"
	"github.com/redrive/redrive/queue/queuetest"
)

// 1,000 failures with 3 distinct causes (ids and numbers differing inside
// the messages) make exactly 3 groups with the right counts; acknowledging
// one group by its signature moves exactly that group.
func TestThousandFailuresMakeThreeGroups(t *testing.T) {
	db := sqlitetest.New(t)
	var logs bytes.Buffer
	c := newCapture(db, &logs)
	a := dlq.Attempts{DB: db}
	causes := []struct{ class, text string }{
		{"transient", "status 503: upstream %d.%d.0.1 timed out after %d ms"},
		{"rate_limited", "status 429: rate limit for key id=%x exceeded (%d/%d)"},
		{"permanent", "status 400: beer \"%d-%d\" has no field %d"},
	}
	want := map[string]int64{}
	for b := 0; b < 10; b++ {
		var batch []*queuetest.Message
		for i := 0; i < 100; i++ {
			n := b*100 + i
			cause := causes[n%3]
			if n%7 == 0 {
				cause = causes[0]
			}
			id := fmt.Sprintf("m%04d", n)
			errText := fmt.Sprintf(cause.text, n, n*7, n*13+1)
			if err := a.Record(ctx, dlq.Attempt{MessageID: id, Queue: "beer-enrichment", Attempt: 4, Class: cause.class, Error: errText, At: t0, Version: "v1"}); err != nil {
				t.Fatal(err)
			}
			want[dlq.SignatureOf(cause.class, errText).Key]++
			batch = append(batch, queuetest.New(id, beer(fmt.Sprint(n))))
		}
		consume(t, c, batch...)
	}
	if len(want) != 3 {
		t.Fatalf("the test's causes make %d signatures", len(want))
	}
	g, err := inspect.Groups{DBs: dlq.Single(dlq.Store{DB: db})}.Page(ctx, inspect.GroupsParams{})
	if err != nil {
		t.Fatal(err)
	}
	if len(g.Groups) != 3 {
		t.Fatalf("%d groups: %+v", len(g.Groups), g.Groups)
	}
	for i, gr := range g.Groups {
		if gr.Counts != (inspect.GroupCounts{Pending: want[gr.Signature]}) || gr.Total != want[gr.Signature] || len(gr.SampleIDs) != 5 {
			t.Errorf("group %s %q: %+v, want %d pending", gr.Signature, gr.Text, gr, want[gr.Signature])
		}
		if i > 0 && gr.Counts.Pending > g.Groups[i-1].Counts.Pending {
			t.Errorf("groups not sorted by pending rows")
		}
		if rows := count(t, db, `SELECT COUNT(*) FROM dlq_messages WHERE signature = ?`, gr.Signature); rows != want[gr.Signature] {
			t.Errorf("%d rows carry %s, want %d", rows, gr.Signature, want[gr.Signature])
		}
	}
	if !strings.Contains(g.Groups[0].Text, "<n>") || strings.ContainsAny(g.Groups[0].Text, "0123456789") {
		t.Errorf("text %q", g.Groups[0].Text)
	}

	// Acknowledge the rate-limited group by its signature.
	target := dlq.SignatureOf("rate_limited", fmt.Sprintf(causes[1].text, 1, 7, 14)).Key
	res, err := Acknowledge{DB: db, BulkMax: 5000, Clock: func() time.Time { return t0.Add(time.Hour) }}.Run(ctx,
		AcknowledgeRequest{Selection: dlq.Selection{Filter: &dlq.Filter{Signature: target}}, Note: "known rate limit"})
	if err != nil {
		t.Fatal(err)
	}
	if res.AcknowledgedCount != want[target] {
		t.Errorf("acknowledged %d, want %d", res.AcknowledgedCount, want[target])
	}
	if n := count(t, db, `SELECT COUNT(*) FROM dlq_messages WHERE status = 'acknowledged' AND signature <> ?`, target); n != 0 {
		t.Errorf("%d rows of other groups acknowledged", n)
	}
	g, _ = inspect.Groups{DBs: dlq.Single(dlq.Store{DB: db})}.Page(ctx, inspect.GroupsParams{})
	for _, gr := range g.Groups {
		wantCounts := inspect.GroupCounts{Pending: want[gr.Signature]}
		if gr.Signature == target {
			wantCounts = inspect.GroupCounts{Acknowledged: want[gr.Signature]}
		}
		if gr.Counts != wantCounts {
			t.Errorf("after acknowledge, group %s: %+v, want %+v", gr.Signature, gr.Counts, wantCounts)
		}
	}

	// Paging: one group per page, each exactly once.
	seen := map[string]bool{}
	p := inspect.GroupsParams{Limit: 1}
	cur := dlq.NewCursors("secret")
	for pages := 0; ; pages++ {
		page, err := inspect.Groups{DBs: dlq.Single(dlq.Store{DB: db}), Cursors: cur}.Page(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		for _, gr := range page.Groups {
			if seen[gr.Signature] {
				t.Errorf("group %s twice", gr.Signature)
			}
			seen[gr.Signature] = true
		}
		if !page.HasMore {
			break
		}
		p.Cursor = *page.NextCursor
	}
	if len(seen) != 3 {
		t.Errorf("paging saw %d groups", len(seen))
	}
}

// Replay moves a group's counts: claimed rows to replaying, sent rows to
// replayed, rows whose send failed back to pending.
func TestReplayMovesGroupCounts(t *testing.T) {
	db := sqlitetest.New(t)
	var logs bytes.Buffer
	c := newCapture(db, &logs)
	for i := 0; i < 4; i++ {
		id := fmt.Sprintf("m%d", i)
		if err := (dlq.Attempts{DB: db}).Record(ctx, dlq.Attempt{MessageID: id, Queue: "beer-enrichment", Attempt: 4, Class: "transient", Error: fmt.Sprintf("status 50%d", i), At: t0}); err != nil {
			t.Fatal(err)
		}
		consume(t, c, queuetest.New(id, beer(fmt.Sprint(i))))
	}
	counts := func() inspect.GroupCounts {
		g, err := inspect.Groups{DBs: dlq.Single(dlq.Store{DB: db})}.Page(ctx, inspect.GroupsParams{})
		if err != nil || len(g.Groups) != 1 {
			t.Fatalf("groups %+v (%v)", g, err)
		}
		return g.Groups[0].Counts
	}
	if _, err := newReplay(db, &queuetest.Sender{}).Run(ctx, ReplayRequest{Selection: dlq.Selection{IDs: []int64{1, 2}}}); err != nil {
		t.Fatal(err)
	}
	if got := counts(); got != (inspect.GroupCounts{Pending: 2, Replayed: 2}) {
		t.Errorf("after a replay: %+v", got)
	}
	if _, err := newReplay(db, &queuetest.Sender{Err: errors.New("queue down")}).Run(ctx, ReplayRequest{Selection: dlq.Selection{IDs: []int64{3}}}); err != nil {
		t.Fatal(err)
	}
	if got := counts(); got != (inspect.GroupCounts{Pending: 2, Replayed: 2}) {
		t.Errorf("after a failed send: %+v", got)
	}
}
