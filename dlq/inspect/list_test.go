package inspect

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/internal/sqlitetest"
	"github.com/redrive/redrive/queue/queuetest"
)

// decoded returns a page's messages.
func decoded(t *testing.T, p Page) []dlq.Message {
	t.Helper()
	msgs, err := p.Messages.Decode()
	if err != nil {
		t.Fatal(err)
	}
	return msgs
}

func TestListPagesEveryRowOnceInOrderWithTies(t *testing.T) {
	db := sqlitetest.New(t)
	generate(t, db, "tie", 257, 4, 1_700_000_000_000) // groups of 4 rows share failed_at
	insert(t, db, adminRow{Key: "other", Status: dlq.StatusAcknowledged, FailedAt: 1_800_000_000_000})
	l := List{DBs: dlq.Single(dlq.Store{DB: db}), Cursors: dlq.NewCursors("s")}
	seen := map[int64]bool{}
	var prev *dlq.Message
	cursor, pages := "", 0
	for {
		p, err := l.Page(ctx, ListParams{Limit: 10, Cursor: cursor})
		if err != nil {
			t.Fatal(err)
		}
		pages++
		if p.TotalCount != 257 || p.Limit != 10 {
			t.Fatalf("page %d: total %d limit %d", pages, p.TotalCount, p.Limit)
		}
		msgs := decoded(t, p)
		for i := range msgs {
			m := msgs[i]
			if seen[m.ID] {
				t.Fatalf("id %d returned twice", m.ID)
			}
			seen[m.ID] = true
			if m.Status != dlq.StatusPending || m.RawMessage != nil {
				t.Fatalf("row %+v", m)
			}
			if prev != nil && (m.FailedAt > prev.FailedAt || (m.FailedAt == prev.FailedAt && m.ID >= prev.ID)) {
				t.Fatalf("order: (%d,%d) after (%d,%d)", m.FailedAt, m.ID, prev.FailedAt, prev.ID)
			}
			prev = &m
		}
		if !p.HasMore {
			if p.NextCursor != nil {
				t.Fatalf("last page has a cursor")
			}
			break
		}
		if len(msgs) != 10 || p.NextCursor == nil {
			t.Fatalf("page %d: %d messages, cursor %v", pages, len(msgs), p.NextCursor)
		}
		cursor = *p.NextCursor
	}
	if len(seen) != 257 || pages != 26 {
		t.Fatalf("saw %d rows in %d pages", len(seen), pages)
	}
}

func TestListFilters(t *testing.T) {
	db := sqlitetest.New(t)
	ids := insert(t, db,
		adminRow{Key: "b1", Label1: "Hop Stoopid", Label2: "Lagunitas", Reason: "transient: status 500", FailedAt: 1000},
		adminRow{Key: "b2", Label1: "Pliny", Label2: "Russian River", Reason: "permanent: 404", FailedAt: 2000, Source: "other-queue"},
		adminRow{Key: "b1", Label1: "Hop Stoopid", Label2: "Lagunitas", Reason: "rate 100%_off", FailedAt: 3000, Status: dlq.StatusReplayed},
		adminRow{Key: "b3", Label1: "Zombie Dust", Label2: "3 Floyds", Reason: "unparseable: x", FailedAt: 4000, Status: dlq.StatusAcknowledged},
		adminRow{Key: "b4", Label1: "Heady", Label2: "Alchemist", FailedAt: 5000, Status: dlq.StatusReplaying},
	)
	i64 := func(v int64) *int64 { return &v }
	cases := []struct {
		name string
		f    dlq.Filter
		want []int64
	}{
		{"default pending", dlq.Filter{}, []int64{ids[1], ids[0]}},
		{"all", dlq.Filter{Status: dlq.StatusAll}, []int64{ids[4], ids[3], ids[2], ids[1], ids[0]}},
		{"replayed", dlq.Filter{Status: dlq.StatusReplayed}, []int64{ids[2]}},
		{"replaying", dlq.Filter{Status: dlq.StatusReplaying}, []int64{ids[4]}},
		{"acknowledged", dlq.Filter{Status: dlq.StatusAcknowledged}, []int64{ids[3]}},
		{"beer_id", dlq.Filter{Status: dlq.StatusAll, Key: "b1"}, []int64{ids[2], ids[0]}},
		{"source_queue", dlq.Filter{Status: dlq.StatusAll, SourceQueue: "other-queue"}, []int64{ids[1]}},
		{"failed_after inclusive", dlq.Filter{Status: dlq.StatusAll, FailedAfter: i64(3000)}, []int64{ids[4], ids[3], ids[2]}},
		{"failed_before exclusive", dlq.Filter{Status: dlq.StatusAll, FailedBefore: i64(3000)}, []int64{ids[1], ids[0]}},
		{"window", dlq.Filter{Status: dlq.StatusAll, FailedAfter: i64(2000), FailedBefore: i64(4000)}, []int64{ids[2], ids[1]}},
		{"q beer name, any case", dlq.Filter{Status: dlq.StatusAll, Q: "hop stoop"}, []int64{ids[2], ids[0]}},
		{"q brewer", dlq.Filter{Status: dlq.StatusAll, Q: "Floyds"}, []int64{ids[3]}},
		{"q reason", dlq.Filter{Status: dlq.StatusAll, Q: "404"}, []int64{ids[1]}},
		{"q literal % and _", dlq.Filter{Status: dlq.StatusAll, Q: "100%_"}, []int64{ids[2]}},
		{"q % is not a wildcard", dlq.Filter{Status: dlq.StatusAll, Q: "%"}, []int64{ids[2]}},
		{"combined", dlq.Filter{Key: "b1", Q: "Lagunitas"}, []int64{ids[0]}},
		{"nothing", dlq.Filter{Key: "none"}, nil},
	}
	l := List{DBs: dlq.Single(dlq.Store{DB: db}), Cursors: dlq.NewCursors("s")}
	for _, c := range cases {
		p, err := l.Page(ctx, ListParams{Filter: c.f})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		var got []int64
		for _, m := range decoded(t, p) {
			got = append(got, m.ID)
		}
		if len(got) != len(c.want) || p.TotalCount != int64(len(c.want)) || p.HasMore {
			t.Errorf("%s: got %v total %d, want %v", c.name, got, p.TotalCount, c.want)
			continue
		}
		for i := range got {
			if got[i] != c.want[i] {
				t.Errorf("%s: got %v, want %v", c.name, got, c.want)
				break
			}
		}
	}
}

func TestListIncludeRawAndFields(t *testing.T) {
	db := sqlitetest.New(t)
	insert(t, db, adminRow{Key: "b1", Label1: "IPA", FailedAt: 10, Raw: `{"beer_id":"b1"}`})
	insert(t, db, adminRow{Key: "b2", FailedAt: 5})
	db.Exec(`UPDATE dlq_messages SET raw_message = NULL WHERE row_key = 'b2'`)
	p, err := List{DBs: dlq.Single(dlq.Store{DB: db}), Cursors: dlq.NewCursors("s")}.Page(ctx, ListParams{IncludeRaw: true})
	if err != nil {
		t.Fatal(err)
	}
	js, _ := json.Marshal(p.Messages)
	var got []map[string]any
	json.Unmarshal(js, &got)
	if got[0]["raw_message"] != `{"beer_id":"b1"}` || got[0]["raw_encoding"] != "text" {
		t.Fatalf("raw: %s", js)
	}
	if v, ok := got[1]["raw_message"]; !ok || v != nil {
		t.Fatalf("a NULL raw_message must be present as null: %s", js)
	}
	if got[1]["beer_name"] != nil || got[0]["beer_name"] != "IPA" {
		t.Fatalf("beer_name: %s", js)
	}
	// The original worker's fields are all there, with their names.
	for _, f := range []string{"id", "message_id", "beer_id", "beer_name", "brewer", "failed_at", "failure_count",
		"failure_reason", "source_queue", "status", "replay_count", "replayed_at", "acknowledged_at"} {
		if _, ok := got[0][f]; !ok {
			t.Errorf("field %s missing: %s", f, js)
		}
	}
	p, _ = List{DBs: dlq.Single(dlq.Store{DB: db}), Cursors: dlq.NewCursors("s")}.Page(ctx, ListParams{})
	js, _ = json.Marshal(p.Messages)
	if strings.Contains(string(js), "raw_message") {
		t.Fatalf("raw_message without include_raw: %s", js)
	}
}

func TestListRejectsBadInput(t *testing.T) {
	db := sqlitetest.New(t)
	generate(t, db, "bad", 30, 1, 1_700_000_000_000)
	l := List{DBs: dlq.Single(dlq.Store{DB: db}), Cursors: dlq.NewCursors("s")}
	first, err := l.Page(ctx, ListParams{Limit: 5})
	if err != nil || first.NextCursor == nil {
		t.Fatal(err)
	}
	good := *first.NextCursor
	tampered := []byte(good)
	tampered[3] ^= 1
	otherKey, _ := List{DBs: dlq.Single(dlq.Store{DB: db}), Cursors: dlq.NewCursors("other secret")}.Page(ctx, ListParams{Limit: 5})
	otherFilter, _ := l.Page(ctx, ListParams{Limit: 5, Filter: dlq.Filter{Status: dlq.StatusAll}})
	i64 := func(v int64) *int64 { return &v }
	cases := []struct {
		name string
		p    ListParams
		code string
	}{
		{"limit 101", ListParams{Limit: 101}, "INVALID_LIMIT"},
		{"limit -5", ListParams{Limit: -5}, "INVALID_LIMIT"},
		{"status", ListParams{Filter: dlq.Filter{Status: "dead"}}, "INVALID_STATUS"},
		{"garbage cursor", ListParams{Cursor: "eyJmYWlsZWRfYXQiOjE3MDIzMDAwMDAwMDAsImlkIjoxfQ=="}, "INVALID_CURSOR"},
		{"tampered cursor", ListParams{Cursor: string(tampered)}, "INVALID_CURSOR"},
		{"cursor of another key", ListParams{Cursor: *otherKey.NextCursor}, "INVALID_CURSOR"},
		{"cursor of other filters", ListParams{Cursor: *otherFilter.NextCursor}, "INVALID_CURSOR"},
		{"cursor too long", ListParams{Cursor: strings.Repeat("a", 600)}, "INVALID_CURSOR"},
		{"window backwards", ListParams{Filter: dlq.Filter{FailedAfter: i64(5), FailedBefore: i64(5)}}, "INVALID_FILTER"},
		{"negative time", ListParams{Filter: dlq.Filter{FailedAfter: i64(-1)}}, "INVALID_FILTER"},
		{"long q", ListParams{Filter: dlq.Filter{Q: strings.Repeat("q", 201)}}, "INVALID_FILTER"},
	}
	for _, c := range cases {
		_, err := l.Page(ctx, c.p)
		t.Run(c.name, func(t *testing.T) { wantInput(t, err, c.code) })
	}
	if _, err := l.Page(ctx, ListParams{Limit: 5, Cursor: good}); err != nil {
		t.Fatalf("good cursor: %v", err)
	}
}

// total_count is counted on the first page and carried by the cursor: later
// pages report the walk's count without counting again, even when rows
// arrive meanwhile (a new row would not be on the remaining pages anyway:
// it fails later than every row already listed).
func TestListTotalCountIsCarriedByTheCursor(t *testing.T) {
	db := sqlitetest.New(t)
	generate(t, db, "tc", 30, 1, 1_700_000_000_000)
	l := List{DBs: dlq.Single(dlq.Store{DB: db}), Cursors: dlq.NewCursors("s")}
	first, err := l.Page(ctx, ListParams{Limit: 10})
	if err != nil || first.TotalCount != 30 || first.NextCursor == nil {
		t.Fatalf("first page: %+v %v", first, err)
	}
	generate(t, db, "late", 5, 1, 1_800_000_000_000)
	second, err := l.Page(ctx, ListParams{Limit: 10, Cursor: *first.NextCursor})
	if err != nil || second.TotalCount != 30 || len(decoded(t, second)) != 10 {
		t.Fatalf("second page: total %d, %d messages, %v", second.TotalCount, len(decoded(t, second)), err)
	}
	fresh, err := l.Page(ctx, ListParams{Limit: 10})
	if err != nil || fresh.TotalCount != 35 {
		t.Fatalf("a new walk counts again: %d %v", fresh.TotalCount, err)
	}
}

func TestPageAppendJSONIsItsJSON(t *testing.T) {
	db := sqlitetest.New(t)
	generate(t, db, "aj", 3, 1, 1_700_000_000_000)
	l := List{DBs: dlq.Single(dlq.Store{DB: db}), Cursors: dlq.NewCursors("s")}
	more, err := l.Page(ctx, ListParams{Limit: 2})
	if err != nil || more.NextCursor == nil {
		t.Fatalf("%+v %v", more, err)
	}
	last, err := l.Page(ctx, ListParams{Limit: 2, Cursor: *more.NextCursor})
	if err != nil || last.NextCursor != nil {
		t.Fatalf("%+v %v", last, err)
	}
	empty, err := l.Page(ctx, ListParams{Filter: dlq.Filter{Key: "none"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []Page{more, last, empty, {Limit: 1}} {
		std, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		var want, got any
		if err := json.Unmarshal(std, &want); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(p.AppendJSON(nil), &got); err != nil {
			t.Fatalf("AppendJSON is not JSON: %v: %s", err, p.AppendJSON(nil))
		}
		if !reflect.DeepEqual(want, got) {
			t.Fatalf("AppendJSON\n%s\nwant\n%s", p.AppendJSON(nil), std)
		}
	}
	if n := len(decoded(t, more)) + len(decoded(t, last)); n != 3 || len(decoded(t, empty)) != 0 {
		t.Fatalf("pages hold %d rows; empty page %s", n, empty.Messages)
	}
}

// With beer_id, its index drives the query whatever the status: without
// statistics SQLite would otherwise search a status index and visit every
// row of that status (81 ms instead of 0.4 ms for a page at 100k rows).
func TestBeerIDFilterUsesItsIndex(t *testing.T) {
	db := sqlitetest.New(t)
	for _, status := range []string{"", dlq.StatusReplayed, dlq.StatusAll} {
		f, err := dlq.Filter{Status: status, Key: "b"}.Normalize(nil)
		if err != nil {
			t.Fatal(err)
		}
		where, args := f.Where()
		plan := sqlitetest.Plan(t, db, `SELECT id FROM dlq_messages WHERE `+where+` ORDER BY failed_at DESC, id DESC`, args...)
		if detail := plan[0]; !strings.Contains(detail, "idx_dlq_beer_id") {
			t.Errorf("status %q: plan %q", status, detail)
		}
	}
}

// Every row shows its content type: as stored, or derived from the body for
// rows captured before it was recorded.
func TestListShowsContentType(t *testing.T) {
	db := sqlitetest.New(t)
	insert(t, db,
		adminRow{Key: "stored-text", FailedAt: 6, Raw: `{"beer_id":"x"}`, ContentType: "text"},
		adminRow{Key: "stored-v8", FailedAt: 5, Raw: `{}`, ContentType: "v8"},
		adminRow{Key: "legacy-json", FailedAt: 4, Raw: `[1]`},
		adminRow{Key: "legacy-text", FailedAt: 3, Raw: `hello`},
		adminRow{Key: "legacy-bytes", FailedAt: 2, Raw: `AAEC`, Encoding: "base64"},
		adminRow{Key: "legacy-null", FailedAt: 1},
	)
	db.Exec(`UPDATE dlq_messages SET raw_message = NULL WHERE row_key = 'legacy-null'`)
	p, err := List{DBs: dlq.Single(dlq.Store{DB: db}), Cursors: dlq.NewCursors("s")}.Page(ctx, ListParams{})
	if err != nil {
		t.Fatal(err)
	}
	msgs, err := p.Messages.Decode()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range msgs {
		got = append(got, m.BeerID+"="+m.ContentType)
	}
	want := "[stored-text=text stored-v8=v8 legacy-json=json legacy-text=text legacy-bytes=bytes legacy-null=text]"
	if fmt.Sprint(got) != want {
		t.Fatalf("content types %v, want %s", got, want)
	}
}

// The list of every status walks all rows once, in order, ties included,
// although no index orders every row by failed_at: it merges the newest
// rows of each status (same statuses interleaved in time).
func TestListOfEveryStatusPagesEveryRowOnceInOrder(t *testing.T) {
	db := sqlitetest.New(t)
	generate(t, db, "all", 300, 3, 1_700_000_000_000)
	mustExec(t, db, `UPDATE dlq_messages SET status = CASE id % 4 WHEN 1 THEN 'replaying' WHEN 2 THEN 'replayed' WHEN 3 THEN 'acknowledged' ELSE status END`)
	l := List{DBs: dlq.Single(dlq.Store{DB: db}), Cursors: dlq.NewCursors("s")}
	var got []int64
	cursor := ""
	for {
		p, err := l.Page(ctx, ListParams{Filter: dlq.Filter{Status: dlq.StatusAll}, Limit: 7, Cursor: cursor})
		if err != nil {
			t.Fatal(err)
		}
		if p.TotalCount != 300 || !p.TotalCountExact {
			t.Fatalf("total %d exact %v", p.TotalCount, p.TotalCountExact)
		}
		for _, m := range decoded(t, p) {
			got = append(got, m.ID)
		}
		if !p.HasMore {
			break
		}
		cursor = *p.NextCursor
	}
	rows, _ := db.Query(`SELECT id FROM dlq_messages ORDER BY failed_at DESC, id DESC`)
	var want []int64
	for rows.Next() {
		var id int64
		rows.Scan(&id)
		want = append(want, id)
	}
	rows.Close()
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("walked %d rows in another order than failed_at DESC, id DESC (%d rows)", len(got), len(want))
	}
}

// total_count is read from dlq_tally (exact at any size) when the filters are
// a status and a source queue; other filters count rows up to ListCountMax,
// and a larger count is reported as ListCountMax, not exact: the next pages
// carry both.
func TestListTotalCountIsKeptOrBounded(t *testing.T) {
	db := sqlitetest.New(t)
	generate(t, db, "tb", ListCountMax+234, 1, 1_700_000_000_000)
	l := List{DBs: dlq.Single(dlq.Store{DB: db}), Cursors: dlq.NewCursors("s")}
	one := int64(1)
	for _, c := range []struct {
		f     dlq.Filter
		total int64
		exact bool
	}{
		{dlq.Filter{}, ListCountMax + 234, true},
		{dlq.Filter{Status: dlq.StatusAll}, ListCountMax + 234, true},
		{dlq.Filter{SourceQueue: "beer-enrichment"}, ListCountMax + 234, true},
		{dlq.Filter{SourceQueue: "elsewhere"}, 0, true},
		{dlq.Filter{Q: "tb-"}, ListCountMax, false},
		{dlq.Filter{Q: "tb-0000"}, 10, true},
		{dlq.Filter{Status: dlq.StatusAll, FailedAfter: &one}, ListCountMax, false},
	} {
		first, err := l.Page(ctx, ListParams{Filter: c.f, Limit: 5})
		if err != nil || first.TotalCount != c.total || first.TotalCountExact != c.exact {
			t.Fatalf("%+v: total %d exact %v, want %d %v (%v)", c.f, first.TotalCount, first.TotalCountExact, c.total, c.exact, err)
		}
		if first.NextCursor == nil {
			continue
		}
		next, err := l.Page(ctx, ListParams{Filter: c.f, Limit: 5, Cursor: *first.NextCursor})
		if err != nil || next.TotalCount != c.total || next.TotalCountExact != c.exact {
			t.Fatalf("%+v next page: total %d exact %v (%v)", c.f, next.TotalCount, next.TotalCountExact, err)
		}
		var js map[string]any
		if err := json.Unmarshal(next.AppendJSON(nil), &js); err != nil || js["total_count_exact"] != c.exact {
			t.Fatalf("%+v: JSON %s", c.f, next.AppendJSON(nil))
		}
	}
}

// What a first page reads does not grow with the table: every step on
// dlq_messages is a bounded range of an index in the page's order (no
// sort of a whole status), and the default total reads dlq_tally.
func TestListPagesReadBoundedRanges(t *testing.T) {
	db := sqlitetest.New(t)
	for _, f := range []dlq.Filter{{}, {Status: dlq.StatusAll}, {SourceQueue: "q"}, {Status: dlq.StatusAcknowledged}} {
		f, err := f.Normalize(nil)
		if err != nil {
			t.Fatal(err)
		}
		total, totalArgs := totalSQL(f)
		rowsSQL, rowsArgs := newestRows(f, &dlq.Position{FailedAt: 5, ID: 9}, 51)
		for _, q := range []struct {
			sql  string
			args []any
		}{{`SELECT ` + total, totalArgs}, {rowsSQL, rowsArgs}} {
			for _, d := range sqlitetest.Plan(t, db, q.sql, q.args...) {
				if strings.HasPrefix(d, "SCAN dlq_messages") || (strings.Contains(d, "TEMP B-TREE") && !strings.Contains(q.sql, "UNION ALL")) {
					t.Errorf("%+v: %s\n%s", f, d, strings.Join(sqlitetest.Plan(t, db, q.sql, q.args...), "\n"))
				}
				if strings.Contains(d, "dlq_messages") && !strings.Contains(d, "idx_dlq_status_failed (status=? AND failed_at<?)") {
					t.Errorf("%+v: %s", f, d)
				}
			}
		}
	}
}

// A row that fails again while a reader pages through status=all never
// comes back behind the cursor, even when the repeat failure's clock is
// behind the row's failed_at (another isolate): failed_at never goes back,
// so no row is listed twice. (A row not listed yet that fails again moves to
// the head: the later pages do not list it, a new first page does.)
func TestListOfEveryStatusNeverListsARowTwice(t *testing.T) {
	db := sqlitetest.New(t)
	c := newCapture(db, &bytes.Buffer{})
	for i, id := range []string{"z", "y", "r"} { // r newest
		c.Clock = func() time.Time { return t0.Add(time.Duration(i+1) * time.Hour) }
		consume(t, c, queuetest.New("m-"+id, beer(id)))
	}
	l := List{DBs: dlq.Single(dlq.Store{DB: db}), Cursors: dlq.NewCursors("s")}
	var seen []string
	p := ListParams{Filter: dlq.Filter{Status: dlq.StatusAll}, Limit: 1}
	for pages := 0; pages < 10; pages++ {
		page, err := l.Page(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		ms, err := page.Messages.Decode()
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range ms {
			seen = append(seen, m.BeerID)
		}
		if pages == 0 {
			// r, listed, is replayed and fails again, stamped earlier than its failed_at.
			mustExec(t, db, `UPDATE dlq_messages SET status = 'replayed', replay_count = 1 WHERE message_id = 'm-r'`)
			c.Clock = func() time.Time { return t0 }
			consume(t, c, queuetest.New("m-r2", beer("r")))
			if n := count(t, db, `SELECT COUNT(*) FROM dlq_messages WHERE message_id = 'm-r' AND last_message_id = 'm-r2' AND status = 'pending'`); n != 1 {
				t.Fatal("the repeat failure did not come back to the row")
			}
		}
		if !page.HasMore {
			break
		}
		p.Cursor = *page.NextCursor
	}
	if got := strings.Join(seen, ","); got != "r,y,z" {
		t.Errorf("listed %s, want r,y,z (each once)", got)
	}
}

// A page whose JSON would be over D1's 2,000,000-byte value limit (raw
// bodies) is read again half as long, and the cursor continues after it:
// 20 bodies of 150 KB (3 MB) come as pages of 10, every body whole.
func TestListHalvesAPageOverD1sValueLimit(t *testing.T) {
	db := sqlitetest.New(t)
	body := strings.Repeat("x", 150_000)
	for i := 0; i < 20; i++ {
		insert(t, db, adminRow{Key: fmt.Sprint("big-", i), Raw: body, ContentType: "text", FailedAt: 1_700_000_000_000 + int64(i)})
	}
	l := List{DBs: dlq.Single(dlq.Store{DB: db}), Cursors: dlq.NewCursors("s")}
	seen := map[int64]bool{}
	cursor := ""
	for pages := 1; ; pages++ {
		p, err := l.Page(ctx, ListParams{Limit: 20, Cursor: cursor, IncludeRaw: true})
		if err != nil {
			t.Fatalf("page %d: %v", pages, err)
		}
		msgs := decoded(t, p)
		if len(msgs) != 10 || p.TotalCount != 20 {
			t.Fatalf("page %d: %d messages, total %d; want 10 of 20", pages, len(msgs), p.TotalCount)
		}
		for _, m := range msgs {
			var raw string
			if seen[m.ID] || json.Unmarshal(m.RawMessage, &raw) != nil || raw != body {
				t.Fatalf("page %d: row %d repeated or its body altered", pages, m.ID)
			}
			seen[m.ID] = true
		}
		if !p.HasMore {
			break
		}
		cursor = *p.NextCursor
	}
	if len(seen) != 20 {
		t.Fatalf("%d rows listed, want 20", len(seen))
	}
}

// A signature's total comes from its kept counts (dlq_signatures, the
// status's column, or every column for status all); with a source queue
// too, the rows are counted, since the kept counts do not split by queue.
func TestListTotalOfASignature(t *testing.T) {
	db := sqlitetest.New(t)
	sig := "0123456789abcdef"
	if _, err := db.Exec(`INSERT INTO dlq_signatures(signature, class, text, first_seen, last_seen) VALUES (?, 'c', 't', 0, 0)`, sig); err != nil {
		t.Fatal(err)
	}
	var rows []adminRow
	for i := 0; i < 3; i++ {
		rows = append(rows, adminRow{Key: fmt.Sprint("a", i), Source: "qa", FailedAt: 1_700_000_000_000 + int64(i)})
	}
	for i := 0; i < 2; i++ {
		rows = append(rows, adminRow{Key: fmt.Sprint("b", i), Source: "qb", FailedAt: 1_700_000_000_000 + int64(i)})
	}
	rows = append(rows, adminRow{Key: "a-ack", Source: "qa", Status: dlq.StatusAcknowledged, FailedAt: 1_700_000_000_000})
	insert(t, db, rows...)
	insert(t, db, adminRow{Key: "other", Source: "qa", FailedAt: 1_700_000_000_000}) // no signature
	if _, err := db.Exec(`UPDATE dlq_messages SET signature = ? WHERE row_key != 'other'`, sig); err != nil {
		t.Fatal(err)
	}
	if n := count(t, db, `SELECT pending + acknowledged FROM dlq_signatures WHERE signature = ?`, sig); n != 6 {
		t.Fatalf("kept counts %d, want 6", n)
	}
	l := List{DBs: dlq.Single(dlq.Store{DB: db}), Cursors: dlq.NewCursors("s")}
	for _, c := range []struct {
		f     dlq.Filter
		total int64
	}{
		{dlq.Filter{Signature: sig}, 5},
		{dlq.Filter{Signature: sig, Status: dlq.StatusAll}, 6},
		{dlq.Filter{Signature: sig, Status: dlq.StatusAcknowledged}, 1},
		{dlq.Filter{Signature: sig, SourceQueue: "qa"}, 3},
		{dlq.Filter{Signature: sig, SourceQueue: "qb", Status: dlq.StatusAll}, 2},
	} {
		p, err := l.Page(ctx, ListParams{Filter: c.f, Limit: 1})
		if err != nil || p.TotalCount != c.total || !p.TotalCountExact {
			t.Fatalf("%+v: total %d exact %v, want %d exact (%v)", c.f, p.TotalCount, p.TotalCountExact, c.total, err)
		}
	}
}
