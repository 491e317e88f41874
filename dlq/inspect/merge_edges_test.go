package inspect

import (
	"cmp"
	"database/sql"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/redrive/redrive/dlq"
)

// A merged cursor signed by the service but naming a negative spot, or a
// signature that is not a group key, is refused (400 INVALID_CURSOR) by
// every merged listing, each of its checks alone; the same cursor with
// sound spots is accepted (pins merge.go's spot checks).
func TestMergedCursorRefusesMalformedSpots(t *testing.T) {
	t.Parallel()
	d := mergeDatabases(t)
	c := dlq.NewCursors("s")
	const fp = "fp"
	sound := []dlq.Spot{{T: 5, I: 9, S: "0123456789abcdef"}, {}, {Done: true}}
	for _, kind := range []string{dlq.CursorList, dlq.CursorGroups, dlq.CursorAudit} {
		cursor := func(spots []dlq.Spot) string {
			return c.Encode(dlq.Position{Kind: dlq.Merged(kind), Filter: dlq.MergedFilter(fp, d), ID: 1, Spots: spots})
		}
		if p, err := c.DecodeSpots(cursor(sound), kind, fp, d); err != nil || fmt.Sprint(p.Spots) != fmt.Sprint(sound) {
			t.Fatalf("%s: sound spots %v: %v", kind, p.Spots, err)
		}
		for name, bad := range map[string]dlq.Spot{
			"negative id":    {T: 5, I: -1},
			"negative time":  {T: -1, I: 9},
			"odd signature":  {I: 3, S: "not-a-signature!"},
			"upper-case key": {I: 3, S: "0123456789ABCDEF"},
		} {
			spots := append([]dlq.Spot{}, sound...)
			spots[1] = bad
			_, err := c.DecodeSpots(cursor(spots), kind, fp, d)
			if err == nil {
				t.Fatalf("%s: %s %+v accepted", kind, name, bad)
			}
			wantInput(t, err, "INVALID_CURSOR")
		}
	}
	// Through the list itself: the 400 an operator would get.
	l := List{DBs: d, Cursors: c}
	f := dlq.Filter{Status: dlq.StatusAll}
	total := int64(3)
	_, err := l.Page(ctx, ListParams{Filter: f, Limit: 2, Cursor: c.Encode(dlq.Position{Kind: dlq.Merged(dlq.CursorList),
		Filter: dlq.MergedFilter(f.Fingerprint(), d), ID: 1, Total: &total, Spots: []dlq.Spot{{}, {T: 5, I: -7}, {}}})})
	wantInput(t, err, "INVALID_CURSOR")
}

// The merged list's total_count is inexact when one database's count is
// (a filter counted row by row, capped at ListCountMax there) and another's
// is exact; the first page says so and its cursor carries it (pins
// merge.go's TotalCountExact &&).
func TestMergedListTotalIsInexactWhenOneDatabasesIs(t *testing.T) {
	t.Parallel()
	d := mergeDatabases(t)
	generate(t, d.All[1].DB, "cap", ListCountMax+1, 1, mergeT0.UnixMilli()) // ORDERS_DB: capped
	generate(t, d.All[2].DB, "cap", 3, 1, mergeT0.UnixMilli())              // TICKETS_DB: exact
	l := List{DBs: d, Cursors: dlq.NewCursors("s")}
	f := dlq.Filter{Q: "cap-"}
	page, err := l.Page(ctx, ListParams{Filter: f, Limit: 10})
	if err != nil || page.NextCursor == nil {
		t.Fatal(page, err)
	}
	if page.TotalCount != ListCountMax+3 || page.TotalCountExact {
		t.Fatalf("first page: total %d exact %v, want %d inexact", page.TotalCount, page.TotalCountExact, ListCountMax+3)
	}
	next, err := l.Page(ctx, ListParams{Filter: f, Limit: 10, Cursor: *page.NextCursor})
	if err != nil || next.TotalCount != ListCountMax+3 || next.TotalCountExact {
		t.Fatalf("second page: total %d exact %v, %v", next.TotalCount, next.TotalCountExact, err)
	}
	// Each database exact: the sum is exact.
	page, err = l.Page(ctx, ListParams{Filter: dlq.Filter{Q: "cap-0000"}, Limit: 10})
	if err != nil || page.TotalCount != 10+3 || !page.TotalCountExact {
		t.Fatalf("exact sum: total %d exact %v, %v", page.TotalCount, page.TotalCountExact, err)
	}
}

// failIn captures n failures of queue with reason into db (whichever
// database holds it: after an import, before the release, a queue's rows
// are in two), all at mergeT0, the first ack of them acknowledged.
func failIn(t *testing.T, db *sql.DB, queue, reason string, n, ack int) {
	t.Helper()
	var fs []dlq.Failure
	for i := range n {
		id := fmt.Sprintf("%s-%s-%d", queue, reason, i)
		fs = append(fs, dlq.Failure{MessageID: id, SourceQueue: queue, Body: `{"id":"` + id + `","order":{"id":"` + id + `"}}`,
			Class: "permanent", Reason: "status 400: " + reason, FailedAt: mergeT0})
	}
	if err := (dlq.Store{DB: db}).Put(ctx, fs); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`UPDATE dlq_messages SET status = 'acknowledged', acknowledged_at = failed_at
		WHERE id IN (SELECT id FROM dlq_messages WHERE failure_reason = ? AND source_queue = ? ORDER BY id LIMIT ?)`, "status 400: "+reason, queue, ack); err != nil {
		t.Fatal(err)
	}
}

// tiedGroup is a group as the tie test compares it: its signature and
// counts (the acknowledged count tells which database a copy came from).
type tiedGroup struct {
	sig          string
	pending, ack int64
}

// Groups of two databases with equal pending counts (and all first seen
// at the same time) come in the exact order of the tie rules: by
// signature, and a signature in two databases (an import before its
// release) the shared database's copy first, at every page size (pins
// merge.go's group tie-breaks).
func TestMergedGroupsTies(t *testing.T) {
	t.Parallel()
	d := mergeDatabases(t)
	shared, orders, tickets := d.All[0].DB, d.All[1].DB, d.All[2].DB
	failIn(t, orders, "orders", "bad order", 3, 1)       // pending 2
	failIn(t, orders, "orders", "late order", 2, 0)      // pending 2
	failIn(t, orders, "orders", "odd order", 1, 0)       // pending 1
	failIn(t, tickets, "tickets", "bad ticket", 2, 0)    // pending 2
	failIn(t, tickets, "tickets", "odd ticket", 1, 0)    // pending 1
	failIn(t, shared, "orders", "bad order", 4, 2)       // the same group as orders' first, pending 2, 2 acknowledged
	failIn(t, shared, "beer-enrichment", "no abv", 1, 0) // pending 1
	var want []tiedGroup
	for _, db := range d.All {
		rows, err := db.DB.Query(`SELECT signature, pending, acknowledged FROM dlq_signatures`)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var g tiedGroup
			if err := rows.Scan(&g.sig, &g.pending, &g.ack); err != nil {
				t.Fatal(err)
			}
			want = append(want, g)
		}
		rows.Close()
	}
	// Stable: databases in their order where the keys tie.
	slices.SortStableFunc(want, func(a, b tiedGroup) int {
		return cmp.Or(cmp.Compare(b.pending, a.pending), cmp.Compare(a.sig, b.sig))
	})
	byFirstSeen := slices.Clone(want)
	slices.SortStableFunc(byFirstSeen, func(a, b tiedGroup) int { return cmp.Compare(a.sig, b.sig) })
	if len(want) != 7 {
		t.Fatalf("fixture %+v", want)
	}
	twice := 0
	for i := 1; i < len(byFirstSeen); i++ {
		if byFirstSeen[i].sig == byFirstSeen[i-1].sig {
			twice++
		}
	}
	if twice != 1 {
		t.Fatalf("fixture: %d signatures in two databases, want 1", twice)
	}
	g := Groups{DBs: d, Cursors: dlq.NewCursors("s")}
	for sort, w := range map[string][]tiedGroup{"": want, SortFirstSeen: byFirstSeen} {
		for _, limit := range []int{1, 2, 3, 100} {
			var got []tiedGroup
			for _, gr := range walkGroups(t, g, GroupsParams{Limit: limit, Sort: sort}) {
				if gr.FirstSeen != mergeT0.UnixMilli() {
					t.Fatalf("first seen %d", gr.FirstSeen)
				}
				got = append(got, tiedGroup{gr.Signature, gr.Counts.Pending, gr.Counts.Acknowledged})
			}
			if fmt.Sprint(got) != fmt.Sprint(w) {
				t.Fatalf("sort %q limit %d:\n got %v\nwant %v", sort, limit, got, w)
			}
		}
	}
}

// by_source_queue and by_pipeline of a queue whose rows are in two
// databases (imported, not yet released) are the sums of both databases'
// pending and total counts (pins merge.go's by_source_queue sum).
func TestMergedStatsSumAQueueInTwoDatabases(t *testing.T) {
	t.Parallel()
	d := mergeDatabases(t)
	failIn(t, d.All[0].DB, "orders", "bad order", 5, 2)   // shared: 3 pending of 5
	failIn(t, d.All[1].DB, "orders", "bad order", 4, 1)   // ORDERS_DB: 3 pending of 4
	failIn(t, d.All[2].DB, "tickets", "bad ticket", 2, 0) // TICKETS_DB: 2 of 2
	rep, err := Stats{DBs: d, Clock: func() time.Time { return mergeT0.Add(time.Hour) }}.Report(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(rep.BySourceQueue) != "[{orders 6 9} {tickets 2 2}]" {
		t.Fatalf("by_source_queue %v", rep.BySourceQueue)
	}
	by := map[string]PipelineCount{}
	for _, p := range rep.ByPipeline {
		by[p.Pipeline] = p
	}
	if o, tk, b := by["orders"], by["tickets"], by["beers"]; o.Pending != 6 || o.Total != 9 || tk.Pending != 2 || tk.Total != 2 || b.Pending != 0 || b.Total != 0 {
		t.Fatalf("by_pipeline %+v", rep.ByPipeline)
	}
}

// A source_queue filter with no pipeline reads the database of that
// queue's rows (pins merge.go's dbOf source-queue case, checked by hand:
// no test failed without it).
func TestListOfASourceQueueReadsItsDatabase(t *testing.T) {
	t.Parallel()
	d := mergeFixture(t)
	fail(t, d, "beer-enrichment", 4, 3)
	l := List{DBs: d, Cursors: dlq.NewCursors("s")}
	for q, n := range map[string]int{"tickets": 5, "orders": 41, "beer-enrichment": 4} {
		got := walkList(t, l, dlq.Filter{Status: dlq.StatusAll, SourceQueue: q}, 3)
		if want := wantRows(t, d, "source_queue = '"+q+"'"); fmt.Sprint(got) != fmt.Sprint(want) || len(got) != n {
			t.Fatalf("%s: got %v want %v", q, got, want)
		}
	}
}
