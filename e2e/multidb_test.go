//go:build e2e

package e2e

import (
	"fmt"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/dlq/inspect"
)

// multiRow is what the list shows of a row.
type multiRow struct {
	ID          int64  `json:"id"`
	FailedAt    int64  `json:"failed_at"`
	SourceQueue string `json:"source_queue"`
}

// With the tickets pipeline on its own database (TICKETS_DB) and orders in
// DB: tickets are captured into TICKETS_DB (ids from its range); the list
// with no pipeline filter pages through both databases' rows exactly once,
// newest first; stats add both up; groups list both pipelines' groups;
// ?pipeline=tickets lists only its rows; a tampered merged cursor is 400
// INVALID_CURSOR. Rows read per merged page are logged and bounded.
func TestMultiDatabaseViewsMergeTicketsAndOrders(t *testing.T) {
	vars := map[string]string{"D1_USAGE_FLUSH_SECONDS": "0"}
	w := startWorkerWith(t, Options{ExtraConfigs: []string{jsConsumerConfig}, Vars: vars, OwnDatabases: true})
	n := time.Now().UnixNano() % 1_000_000_000
	var tickets, orders []string
	for i := range 3 {
		tickets = append(tickets, fmt.Sprintf(`{"ticket":"T-%d-%d","team":"infra","fail":true}`, n, i))
	}
	for i := range 4 {
		orders = append(orders, orderBody(int(n)+i, "acme", "card declined", `,"report":false`))
	}
	w.sendJSON(t, ticketsQueue, tickets...)
	w.sendOrders(t, orders...)

	list := func(path string) (rows []multiRow, total int64, next *string) {
		t.Helper()
		var page struct {
			Messages   []multiRow `json:"messages"`
			TotalCount int64      `json:"total_count"`
			NextCursor *string    `json:"next_cursor"`
		}
		r := w.Admin(t, http.MethodGet, path, nil)
		if r.Status != http.StatusOK {
			t.Fatalf("GET %s: %d %s", path, r.Status, r.Raw)
		}
		r.Decode(t, &page)
		return page.Messages, page.TotalCount, page.NextCursor
	}
	Eventually(t, 120*time.Second, "3 tickets and 4 orders captured", func() bool {
		ts, _, _ := list("/admin/dlq?pipeline=tickets")
		ords, _, _ := list("/admin/dlq?pipeline=orders")
		return len(ts) == 3 && len(ords) == 4
	})
	ts, total, _ := list("/admin/dlq?pipeline=tickets&limit=100")
	base := dlq.IDBase(TicketsDB)
	for _, r := range ts {
		if r.SourceQueue != ticketsQueue || r.ID <= base {
			t.Fatalf("?pipeline=tickets listed %+v (TICKETS_DB ids start after %d)", r, base)
		}
	}
	if total != 3 {
		t.Fatalf("?pipeline=tickets total_count %d", total)
	}
	if w.Int(t, `SELECT COUNT(*) FROM dlq_messages WHERE source_queue = ?`, ticketsQueue) != 0 {
		t.Fatal("tickets rows in DB")
	}

	// The unfiltered list, 2 rows a page: every row of both databases once, newest first.
	seen := map[int64]bool{}
	last, cursor, pages := int64(1<<62), "", 0
	for {
		path := "/admin/dlq?limit=2"
		if cursor != "" {
			path += "&cursor=" + url.QueryEscape(cursor)
		}
		u0 := settledUsage(t, w)
		rows, total, next := list(path)
		u := usageDelta(u0, settledUsage(t, w), opIs("GET /admin/dlq"))
		t.Logf("merged list page %d: %d rows, D1 rows read %d in %d statements", pages, len(rows), u.RowsRead, u.Statements)
		if u.Statements > 3 || u.RowsRead > 3*5_000 {
			t.Errorf("page %d: %d statements, %d rows read (at most one page's budget per database)", pages, u.Statements, u.RowsRead)
		}
		if total != 7 {
			t.Fatalf("page %d: total_count %d, want 7", pages, total)
		}
		for _, r := range rows {
			if seen[r.ID] || r.FailedAt > last {
				t.Fatalf("page %d: row %+v twice or out of order", pages, r)
			}
			seen[r.ID], last = true, r.FailedAt
		}
		pages++
		if next == nil {
			break
		}
		if pages == 1 {
			bad := w.Admin(t, http.MethodGet, "/admin/dlq?limit=2&cursor="+url.QueryEscape((*next)[:len(*next)-3]+"AAA"), nil)
			if bad.Status != http.StatusBadRequest || bad.Error == nil || bad.Error.Code != "INVALID_CURSOR" {
				t.Fatalf("tampered cursor: %d %s", bad.Status, bad.Raw)
			}
		}
		cursor = *next
	}
	if len(seen) != 7 || pages != 4 {
		t.Fatalf("listed %d rows in %d pages, want 7 in 4", len(seen), pages)
	}

	// Each view over every pipeline: one statement per database. (The
	// metrics scrape is left out: the usage is read through it.)
	for _, path := range []string{"/admin/dlq/stats", "/admin/dlq/groups", "/admin/dlq/timeseries", "/admin/audit"} {
		op := "GET " + path
		u0 := settledUsage(t, w)
		if r, err := w.Do(http.MethodGet, path, nil, AdminHeaders()); err != nil || r.Status != http.StatusOK {
			t.Fatalf("GET %s: %v %v", path, err, r)
		}
		u := usageDelta(u0, settledUsage(t, w), opIs(op))
		t.Logf("%s: D1 rows read %d in %d statements", op, u.RowsRead, u.Statements)
		if u.Statements != 2 || u.RowsRead > 2*10_000 {
			t.Errorf("%s: %d statements, %d rows read (one statement per database, each within its budget)", op, u.Statements, u.RowsRead)
		}
	}
	var stats inspect.StatsReport
	w.Admin(t, http.MethodGet, "/admin/dlq/stats", nil).Decode(t, &stats)
	byPipeline := map[string]int64{}
	for _, p := range stats.ByPipeline {
		byPipeline[p.Pipeline] = p.Pending
	}
	if stats.ByStatus.Pending != 7 || byPipeline["tickets"] != 3 || byPipeline["orders"] != 4 || stats.Last24h.NewFailures24h != 7 {
		t.Fatalf("stats %+v", stats)
	}
	var groups inspect.GroupsPage
	w.Admin(t, http.MethodGet, "/admin/dlq/groups", nil).Decode(t, &groups)
	pipelines := map[string]int64{}
	for _, g := range groups.Groups {
		if g.Pipeline != nil {
			pipelines[*g.Pipeline] += g.Counts.Pending
		}
	}
	if pipelines["tickets"] != 3 || pipelines["orders"] != 4 {
		t.Fatalf("groups %+v", groups.Groups)
	}

	// An acknowledge of a ticket is audited in TICKETS_DB, one of an order
	// in DB: the audit log lists both, newest first, one a page.
	for _, id := range []int64{ts[0].ID, minOrder(t, w)} {
		if r := w.Admin(t, http.MethodPost, "/admin/dlq/acknowledge", map[string]any{"ids": []int64{id}}); r.Status != http.StatusOK {
			t.Fatalf("acknowledge %d: %d %s", id, r.Status, r.Raw)
		}
	}
	var requests []string
	for path := "/admin/audit?limit=1&action=acknowledge"; ; {
		var page dlq.AuditPage
		w.Admin(t, http.MethodGet, path, nil).Decode(t, &page)
		for _, e := range page.Entries {
			requests = append(requests, string(e.IDs))
		}
		if page.NextCursor == nil || len(requests) > 5 {
			break
		}
		path = "/admin/audit?limit=1&action=acknowledge&cursor=" + url.QueryEscape(*page.NextCursor)
	}
	if want := fmt.Sprintf("[[%d] [%d]]", minOrder(t, w), ts[0].ID); fmt.Sprint(requests) != want {
		t.Fatalf("audit entries %v, want %s (newest first)", requests, want)
	}
}

// minOrder is the id of the oldest orders row (in DB).
func minOrder(t *testing.T, w *Worker) int64 {
	return w.Int(t, `SELECT MIN(id) FROM dlq_messages WHERE source_queue = ?`, ordersQueue)
}
