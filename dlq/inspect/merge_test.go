package inspect

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/config"
	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/internal/sqlitetest"
)

// mergePipelinesJSON: beers in the shared database, orders and tickets
// each in a database of its own.
const mergePipelinesJSON = `[
{"name":"beers","queue":"beer-enrichment","dlq":"beer-enrichment-dlq","producer":"ENRICHMENT_QUEUE","key":"/beer_id","labels":[{"name":"beer_name","pointer":"/beer_name"},{"name":"brewer","pointer":"/brewer"}],"consumer":"redrive"},
{"name":"orders","queue":"orders","dlq":"orders-dlq","producer":"ORDERS","key":"/order/id","labels":[{"name":"customer","pointer":"/order/customer"}],"consumer":"external","database":"ORDERS_DB"},
{"name":"tickets","queue":"tickets","dlq":"tickets-dlq","producer":"TICKETS","key":"/id","labels":[],"consumer":"external","database":"TICKETS_DB"}]`

// mergeDatabases opens the three databases of mergePipelinesJSON's
// pipelines (each other database's ids seeded from its IDBase), each
// store carrying those pipelines.
func mergeDatabases(t *testing.T) dlq.Databases {
	t.Helper()
	ps, problems := config.ParsePipelines(mergePipelinesJSON, 100, 24*time.Hour, 30*24*time.Hour)
	if len(problems) != 0 || len(ps) != 3 {
		t.Fatalf("pipelines %v %v", ps, problems)
	}
	others := map[string]dlq.Store{}
	for _, name := range []string{"ORDERS_DB", "TICKETS_DB"} {
		db := sqlitetest.New(t)
		if _, err := db.Exec(dlq.SeedIDsSQL(name)); err != nil {
			t.Fatal(err)
		}
		others[name] = dlq.Store{DB: db}
	}
	d := dlq.NewDatabases(dlq.Store{DB: sqlitetest.New(t)}, others, ps)
	if len(d.All) != 3 {
		t.Fatalf("databases %+v", d.All)
	}
	return d
}

// sumCount adds query's count up over every database.
func sumCount(t *testing.T, d dlq.Databases, query string) int64 {
	var n int64
	for _, db := range d.All {
		n += count(t, db.DB, query)
	}
	return n
}

var mergeT0 = time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)

// fail captures n failures of queue into its database, the i-th failed at
// mergeT0 + i·step seconds (so databases share failed_at values), every
// third one acknowledged, the reasons in three groups.
func fail(t *testing.T, d dlq.Databases, queue string, n int, step int) {
	t.Helper()
	var fs []dlq.Failure
	for i := range n {
		id := fmt.Sprintf("%s-%d", queue, i)
		fs = append(fs, dlq.Failure{MessageID: id, SourceQueue: queue, Body: `{"id":"` + id + `","order":{"id":"` + id + `"},"beer_id":"` + id + `"}`,
			Class: "permanent", Reason: fmt.Sprintf("status 400: bad %s %s", queue, []string{"alpha", "bravo", "delta"}[i%3]), FailedAt: mergeT0.Add(time.Duration(i*step) * time.Second)})
	}
	s := d.OfQueue(queue).Store
	if err := s.Put(ctx, fs); err != nil {
		t.Fatal(err)
	}
	if _, err := s.DB.Exec(`UPDATE dlq_messages SET status = 'acknowledged', acknowledged_at = failed_at WHERE id % 3 = 0`); err != nil {
		t.Fatal(err)
	}
}

// mergeFixture: nothing in the shared database, 41 rows in ORDERS_DB, 5 in
// TICKETS_DB, failed_at values shared between them.
func mergeFixture(t *testing.T) dlq.Databases {
	d := mergeDatabases(t)
	fail(t, d, "orders", 41, 1)
	fail(t, d, "tickets", 5, 2)
	return d
}

type listed struct {
	ID       int64  `json:"id"`
	FailedAt int64  `json:"failed_at"`
	Queue    string `json:"source_queue"`
}

// walkList pages through l with f and limit, checks each page's size and
// count, and returns every row listed, in order.
func walkList(t *testing.T, l List, f dlq.Filter, limit int) []listed {
	t.Helper()
	var all []listed
	cursor := ""
	var total int64
	for pages := 0; ; pages++ {
		if pages > 200 {
			t.Fatal("the walk does not end")
		}
		page, err := l.Page(ctx, ListParams{Filter: f, Limit: limit, Cursor: cursor})
		if err != nil {
			t.Fatalf("page %d: %v", pages, err)
		}
		var rows []listed
		if err := json.Unmarshal(page.Messages, &rows); err != nil {
			t.Fatal(err)
		}
		if len(rows) > limit || (page.HasMore && len(rows) == 0) {
			t.Fatalf("page %d: %d rows (limit %d, has_more %v)", pages, len(rows), limit, page.HasMore)
		}
		if pages == 0 {
			total = page.TotalCount
		} else if page.TotalCount != total || !page.TotalCountExact {
			t.Fatalf("page %d: total %d (%v), first page said %d", pages, page.TotalCount, page.TotalCountExact, total)
		}
		all = append(all, rows...)
		if !page.HasMore {
			if page.NextCursor != nil {
				t.Fatal("a last page with a cursor")
			}
			if int64(len(all)) != total {
				t.Fatalf("listed %d rows, total_count %d", len(all), total)
			}
			return all
		}
		cursor = *page.NextCursor
	}
}

// wantRows are the rows of every database matching cond, newest failure first.
func wantRows(t *testing.T, d dlq.Databases, cond string) []listed {
	t.Helper()
	var want []listed
	for _, db := range d.All {
		rows, err := db.DB.Query(`SELECT id, failed_at, source_queue FROM dlq_messages WHERE ` + cond)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var r listed
			if err := rows.Scan(&r.ID, &r.FailedAt, &r.Queue); err != nil {
				t.Fatal(err)
			}
			want = append(want, r)
		}
		rows.Close()
	}
	sortListed(want)
	return want
}

func sortListed(rs []listed) {
	for i := 1; i < len(rs); i++ {
		for j := i; j > 0 && (rs[j].FailedAt > rs[j-1].FailedAt || (rs[j].FailedAt == rs[j-1].FailedAt && rs[j].ID > rs[j-1].ID)); j-- {
			rs[j], rs[j-1] = rs[j-1], rs[j]
		}
	}
}

// The list with no pipeline filter walks every database's rows exactly
// once, newest failure first across databases (ties on failed_at by id),
// whatever the page size, with one empty database and uneven others; its
// total_count is the databases' counts added up.
func TestMergedListWalksEveryDatabaseOnce(t *testing.T) {
	t.Parallel()
	d := mergeFixture(t)
	l := List{DBs: d, Cursors: dlq.NewCursors("s")}
	for _, tc := range []struct {
		status, cond string
	}{{"", "status = 'pending'"}, {dlq.StatusAll, "1 = 1"}, {dlq.StatusAcknowledged, "status = 'acknowledged'"}} {
		want := wantRows(t, d, tc.cond)
		if len(want) < 10 {
			t.Fatalf("fixture: %d rows", len(want))
		}
		for _, limit := range []int{1, 2, 7, 100} {
			got := walkList(t, l, dlq.Filter{Status: tc.status}, limit)
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("status %q limit %d:\n got %v\nwant %v", tc.status, limit, got, want)
			}
		}
	}
	// A filter that is not counted by dlq_tally: a bounded count per database, added up.
	got := walkList(t, l, dlq.Filter{Status: dlq.StatusAll, Q: "bad tickets"}, 2)
	if want := wantRows(t, d, "failure_reason LIKE '%bad tickets%'"); fmt.Sprint(got) != fmt.Sprint(want) || len(got) != 5 {
		t.Fatalf("q: got %v want %v", got, want)
	}
}

// A pipeline filter reads its database alone, with the single-database
// cursor; the merged list's cursors refuse tampering and other filters.
func TestMergedListFilterAndCursors(t *testing.T) {
	t.Parallel()
	d := mergeFixture(t)
	l := List{DBs: d, Cursors: dlq.NewCursors("s")}
	got := walkList(t, l, dlq.Filter{Status: dlq.StatusAll, Pipeline: "tickets"}, 2)
	if want := wantRows(t, d, "source_queue = 'tickets'"); fmt.Sprint(got) != fmt.Sprint(want) || len(got) != 5 {
		t.Fatalf("tickets: got %v want %v", got, want)
	}
	page, err := l.Page(ctx, ListParams{Filter: dlq.Filter{Pipeline: "tickets", Status: dlq.StatusAll}, Limit: 2})
	if err != nil || page.NextCursor == nil {
		t.Fatal(page, err)
	}
	single := *page.NextCursor
	// (bound to the pipeline's database: with several bound, a cursor
	// names the database it walks)
	if _, err := l.Cursors.Decode(single, dlq.CursorList, dlq.Filter{Status: dlq.StatusAll, SourceQueue: "tickets", Pipeline: "tickets"}.Fingerprint()+"@"+d.OfQueue("tickets").Name); err != nil {
		t.Fatalf("a pipeline's list gave a cursor of another form: %v", err)
	}
	page, err = l.Page(ctx, ListParams{Filter: dlq.Filter{Status: dlq.StatusAll}, Limit: 2})
	if err != nil || page.NextCursor == nil {
		t.Fatal(page, err)
	}
	next := *page.NextCursor
	payload, mac, _ := strings.Cut(next, ".")
	flipped := []byte(payload)
	flipped[len(flipped)/2] ^= 1
	for name, tc := range map[string]struct {
		f      dlq.Filter
		cursor string
	}{
		"tampered":              {dlq.Filter{Status: dlq.StatusAll}, string(flipped) + "." + mac},
		"other status":          {dlq.Filter{Status: dlq.StatusPending}, next},
		"single-database":       {dlq.Filter{Status: dlq.StatusAll}, single},
		"merged for a pipeline": {dlq.Filter{Status: dlq.StatusAll, Pipeline: "tickets"}, next},
	} {
		_, err := l.Page(ctx, ListParams{Filter: tc.f, Limit: 2, Cursor: tc.cursor})
		if err == nil {
			t.Fatalf("%s: accepted", name)
		}
		wantInput(t, err, "INVALID_CURSOR")
	}
	// A cursor made for other databases (a binding added since) is refused.
	fewer := d
	fewer.All = d.All[:2]
	_, err = List{DBs: fewer, Cursors: l.Cursors}.Page(ctx, ListParams{Filter: dlq.Filter{Status: dlq.StatusAll}, Limit: 2, Cursor: next})
	wantInput(t, err, "INVALID_CURSOR")
}

// Export pages through the merged list: every row of every database once.
func TestMergedExport(t *testing.T) {
	t.Parallel()
	d := mergeFixture(t)
	var ids []int64
	res, err := Export{List: List{DBs: d, Cursors: dlq.NewCursors("s")}}.Run(ctx, ListParams{Filter: dlq.Filter{Status: dlq.StatusAll}, Limit: 4},
		func(rows []json.RawMessage) error {
			for _, r := range rows {
				var m listed
				if err := json.Unmarshal(r, &m); err != nil {
					return err
				}
				ids = append(ids, m.ID)
			}
			return nil
		})
	want := wantRows(t, d, "1 = 1")
	if err != nil || res.NextCursor != nil || len(ids) != len(want) {
		t.Fatalf("export %+v %v: %d rows, want %d", res, err, len(ids), len(want))
	}
	for i, w := range want {
		if ids[i] != w.ID {
			t.Fatalf("row %d: id %d, want %d", i, ids[i], w.ID)
		}
	}
}

// walkGroups pages through every group and returns them in order. Every
// page but the last is full, and the last one holds a group unless there
// is none (a database that gave exactly the rest has no more).
func walkGroups(t *testing.T, g Groups, p GroupsParams) []Group {
	t.Helper()
	var all []Group
	for pages := 0; ; pages++ {
		page, err := g.Page(ctx, p)
		if err != nil || pages > 100 || len(page.Groups) > p.Limit {
			t.Fatalf("groups page %d: %d groups, %v", pages, len(page.Groups), err)
		}
		if (page.HasMore && len(page.Groups) != p.Limit) || (pages > 0 && len(page.Groups) == 0) {
			t.Fatalf("groups page %d: %d groups of %d, has_more %v", pages, len(page.Groups), p.Limit, page.HasMore)
		}
		all = append(all, page.Groups...)
		if !page.HasMore {
			return all
		}
		p.Cursor = *page.NextCursor
	}
}

// Groups merged over the databases: each group once, most pending first
// (then by signature), or newest first; a pipeline filter reads its
// database; a tampered cursor is refused.
func TestMergedGroups(t *testing.T) {
	t.Parallel()
	d := mergeFixture(t)
	g := Groups{DBs: d, Cursors: dlq.NewCursors("s")}
	for _, sort := range []string{"", SortFirstSeen} {
		all := walkGroups(t, g, GroupsParams{Limit: 100, Sort: sort})
		if want := sumCount(t, d, `SELECT COUNT(*) FROM dlq_signatures`); int64(len(all)) != want || want < 6 {
			t.Fatalf("groups %+v", all)
		}
		for _, limit := range []int{1, 2, 5} {
			got := walkGroups(t, g, GroupsParams{Limit: limit, Sort: sort})
			var a, b []string
			for i := range all {
				a, b = append(a, all[i].Signature), append(b, got[i].Signature)
			}
			if len(got) != len(all) || fmt.Sprint(a) != fmt.Sprint(b) {
				t.Fatalf("sort %q limit %d: %v, want %v", sort, limit, b, a)
			}
		}
		for i := 1; i < len(all); i++ {
			x, y := all[i-1], all[i]
			ordered := x.Counts.Pending > y.Counts.Pending || (x.Counts.Pending == y.Counts.Pending && x.Signature < y.Signature)
			if sort == SortFirstSeen {
				ordered = x.FirstSeen > y.FirstSeen || (x.FirstSeen == y.FirstSeen && x.Signature < y.Signature)
			}
			if !ordered {
				t.Fatalf("sort %q: %+v before %+v", sort, x, y)
			}
		}
	}
	if got := walkGroups(t, g, GroupsParams{Limit: 1, Pipeline: "tickets"}); len(got) != 3 || *got[0].Pipeline != "tickets" {
		t.Fatalf("tickets groups %+v", got)
	}
	page, err := g.Page(ctx, GroupsParams{Limit: 1})
	if err != nil || page.NextCursor == nil {
		t.Fatal(err)
	}
	_, err = g.Page(ctx, GroupsParams{Limit: 1, Cursor: *page.NextCursor + "x"})
	wantInput(t, err, "INVALID_CURSOR")
	_, err = g.Page(ctx, GroupsParams{Limit: 1, Sort: SortFirstSeen, Cursor: *page.NextCursor})
	wantInput(t, err, "INVALID_CURSOR")
}

// The audit log merged: every database's entries once, newest first.
func TestMergedAudit(t *testing.T) {
	t.Parallel()
	// First the shared database has none; then it has the oldest and the
	// smallest ids among entries of the same minutes as the others'.
	for _, counts := range [][]int{{0, 9, 2}, {4, 9, 2}} {
		mergedAudit(t, counts)
	}
}

func mergedAudit(t *testing.T, counts []int) {
	d := mergeFixture(t)
	want := 0
	for i, db := range d.All {
		n := counts[i]
		for j := range n {
			at := mergeT0.Add(time.Duration(j*(i+1)) * time.Minute)
			a := dlq.Audit{DB: db.DB, Clock: func() time.Time { return at }}
			if err := a.Record(ctx, dlq.AuditStart{Action: dlq.ActionAcknowledge, Requester: dlq.Requester{RequestID: fmt.Sprintf("%s-%d", db.Name, j)}}, dlq.OutcomeOK, nil, nil); err != nil {
				t.Fatal(err)
			}
			want++
		}
	}
	a := dlq.Audit{DBs: d, Cursors: dlq.NewCursors("s")}
	for _, limit := range []int{1, 3, 100} {
		seen := map[string]bool{}
		var last *dlq.AuditEntry
		p := dlq.AuditParams{Limit: limit}
		for pages := 0; ; pages++ {
			page, err := a.Page(ctx, p)
			if err != nil || pages > 50 || len(page.Entries) > limit {
				t.Fatalf("audit page %d: %v", pages, err)
			}
			// Every page but the last is full; the last one is not empty.
			if (page.HasMore && len(page.Entries) != limit) || (pages > 0 && len(page.Entries) == 0) {
				t.Fatalf("limit %d: audit page %d: %d entries, has_more %v", limit, pages, len(page.Entries), page.HasMore)
			}
			for _, e := range page.Entries {
				if seen[e.RequestID] || (last != nil && (e.At > last.At || (e.At == last.At && e.ID > last.ID))) {
					t.Fatalf("limit %d: %+v after %+v (seen %v)", limit, e, last, seen[e.RequestID])
				}
				seen[e.RequestID], last = true, &e
			}
			if !page.HasMore {
				break
			}
			p.Cursor = *page.NextCursor
		}
		if len(seen) != want {
			t.Fatalf("limit %d: %d entries, want %d", limit, len(seen), want)
		}
	}
	_, err := a.Page(ctx, dlq.AuditParams{Limit: 1, Cursor: dlq.NewCursors("other").Encode(dlq.Position{Kind: dlq.Merged(dlq.CursorAudit), Filter: "action=", ID: 1})})
	wantInput(t, err, "INVALID_CURSOR")
}

// Stats and the time series add every database's figures up; a pipeline
// filter reads its database.
func TestMergedStatsAndSeries(t *testing.T) {
	t.Parallel()
	d := mergeFixture(t)
	fail(t, d, "beer-enrichment", 4, 3)
	clk := func() time.Time { return mergeT0.Add(2 * time.Hour) }
	rep, err := Stats{DBs: d, Clock: clk}.Report(ctx)
	if err != nil {
		t.Fatal(err)
	}
	pending := func(cond string) int64 {
		var n int64
		for _, db := range d.All {
			n += count(t, db.DB, `SELECT COUNT(*) FROM dlq_messages WHERE status = 'pending' AND `+cond)
		}
		return n
	}
	if rep.ByStatus.Pending != pending("1 = 1") || rep.ByStatus.Acknowledged != 50-pending("1 = 1") {
		t.Fatalf("by_status %+v", rep.ByStatus)
	}
	byPipeline := map[string]int64{}
	for _, p := range rep.ByPipeline {
		byPipeline[p.Pipeline] = p.Pending
	}
	for name, q := range map[string]string{"beers": "beer-enrichment", "orders": "orders", "tickets": "tickets"} {
		if byPipeline[name] != pending("source_queue = '"+q+"'") || byPipeline[name] == 0 {
			t.Errorf("by_pipeline %s: %d", name, byPipeline[name])
		}
	}
	if len(rep.BySourceQueue) != 3 || rep.Last24h.NewFailures24h != 50 || int64(len(rep.TopFailureReasons)) != sumCount(t, d, `SELECT COUNT(DISTINCT failure_reason) FROM dlq_messages WHERE status = 'pending'`) || rep.TopFailureReasonsSample != rep.ByStatus.Pending {
		t.Fatalf("report %+v", rep)
	}
	if want := 2.0; rep.OldestPendingAgeHours != want {
		t.Errorf("oldest pending %v hours, want %v", rep.OldestPendingAgeHours, want)
	}
	one, err := Stats{DBs: d, Clock: clk, Pipeline: "tickets"}.Report(ctx)
	if err != nil || one.ByStatus.Pending != pending("source_queue = 'tickets'") || len(one.ByPipeline) != 1 {
		t.Fatalf("tickets stats %+v %v", one, err)
	}
	s, err := TimeSeries{DBs: d, Clock: clk}.Read(ctx)
	if err != nil || s.Total != 50 {
		t.Fatalf("series total %d %v", s.Total, err)
	}
	s, err = TimeSeries{DBs: d, Clock: clk, Pipeline: "orders"}.Read(ctx)
	if err != nil || s.Total != 41 {
		t.Fatalf("orders series total %d %v", s.Total, err)
	}
}

// With rows in the shared database too (its ids the smallest), newer than
// some of another database's and older than others, the merged list is
// still newest failure first, ties by id, at every page size.
func TestMergedListOrdersTheSharedDatabasesRowsAmongTheOthers(t *testing.T) {
	t.Parallel()
	d := mergeFixture(t)
	fail(t, d, "beer-enrichment", 9, 5) // 0..40 s, interleaved with orders' and tickets'
	l := List{DBs: d, Cursors: dlq.NewCursors("s")}
	want := wantRows(t, d, "1 = 1")
	for _, limit := range []int{1, 3, 100} {
		if got := walkList(t, l, dlq.Filter{Status: dlq.StatusAll}, limit); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("limit %d:\n got %v\nwant %v", limit, got, want)
		}
	}
}
