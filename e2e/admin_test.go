//go:build e2e

package e2e

import (
	"database/sql"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redrive/redrive/handlers"
)

// The admin API end to end: every test seeds its own rows under a
// unique prefix (beer_id, beer_name, message_id) and only counts those.

func newPrefix(tag string) string {
	return fmt.Sprintf("a%d%s", time.Now().UnixNano()%1_000_000_000_000, tag)
}

// seedSQL generates n pending rows in one INSERT (a recursive CTE, not row
// by row): row i has beer_id <prefix>-b-<i>, beer_name <prefix>-<%05d i> (a
// provider token), brewer "<prefix> brewer <i%3>", failure_reason
// "<prefix> reason <i%4>", failed_at base-(i/ties), and a JSON object body.
func seedSQL(prefix string, n, ties int, base int64, source string) string {
	return fmt.Sprintf(`INSERT INTO dlq_messages(message_id, row_key, label_1, label_2, failed_at, failure_count,
		failure_reason, failure_class, source_queue, raw_message, first_failed_at, updated_at)
	WITH RECURSIVE seq(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM seq WHERE i + 1 < %[2]d)
	SELECT '%[1]s-m-' || i, '%[1]s-b-' || i, printf('%[1]s-%%05d', i), '%[1]s brewer ' || (i %% 3), %[4]d - (i / %[3]d), 4,
		'%[1]s reason ' || (i %% 4), 'transient', '%[5]s',
		json_object('beer_id', '%[1]s-b-' || i, 'beer_name', printf('%[1]s-%%05d', i), 'brewer', '%[1]s brewer ' || (i %% 3)),
		%[4]d - (i / %[3]d), %[4]d
	FROM seq`, prefix, n, ties, base, source)
}

func token(prefix string, i int) string { return fmt.Sprintf("%s-%05d", prefix, i) }

// ownIDs returns the ids of the prefix's rows, in row order (i).
func ownIDs(t *testing.T, w *Worker, prefix string) []int64 {
	t.Helper()
	rows, err := w.DB(t).Query(`SELECT id FROM dlq_messages WHERE row_key LIKE ? ORDER BY CAST(substr(row_key, ?) AS INTEGER)`,
		prefix+"-b-%", len(prefix)+4)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var ids []int64
	for rows.Next() {
		var id int64
		rows.Scan(&id)
		ids = append(ids, id)
	}
	return ids
}

// ownState is every mutable column of the prefix's rows, to prove nothing changed.
func ownState(t *testing.T, w *Worker, prefix string) string {
	t.Helper()
	var s sql.NullString
	if err := w.DB(t).QueryRow(`SELECT group_concat(json_array(id, status, replay_count, replayed_at, acknowledged_at,
		replaying_at, acknowledged_note, updated_at), ';') FROM dlq_messages WHERE row_key LIKE ?`, prefix+"-%").Scan(&s); err != nil {
		t.Fatal(err)
	}
	return s.String
}

func idsBody(ids []int64) map[string]any { return map[string]any{"ids": ids} }

type replayResult struct {
	RequestedCount int     `json:"requested_count"`
	ClaimedCount   int     `json:"claimed_count"`
	ReplayedCount  int     `json:"replayed_count"`
	FailedCount    int     `json:"failed_count"`
	QueuedTo       string  `json:"queued_to"`
	ReplayedIDs    []int64 `json:"replayed_ids"`
	Skipped        []struct {
		ID     int64  `json:"id"`
		Reason string `json:"reason"`
		Status string `json:"status"`
	} `json:"skipped"`
	NextCursor *string `json:"next_cursor"`
	HasMore    bool    `json:"has_more"`
}

func replay(t *testing.T, w *Worker, body any) replayResult {
	t.Helper()
	r := w.Admin(t, http.MethodPost, "/admin/dlq/replay", body)
	if r.Status != http.StatusOK || !r.Success {
		t.Fatalf("replay: %d %s", r.Status, r.Raw)
	}
	var res replayResult
	r.Decode(t, &res)
	return res
}

func TestAdminAuthOnEveryRoute(t *testing.T) {
	routes := [][2]string{{"GET", "/admin/dlq"}, {"GET", "/admin/dlq/stats"}, {"POST", "/admin/dlq/replay"},
		{"POST", "/admin/dlq/acknowledge"}, {"GET", "/admin/audit"}, {"GET", "/admin/openapi.json"}}
	for _, rt := range routes {
		for _, c := range []struct {
			hdr    map[string]string
			status int
			code   string
		}{
			{nil, 401, "UNAUTHORIZED"},
			{map[string]string{"X-API-Key": "wrong", "X-Admin-Secret": TestAdminSecret}, 401, "UNAUTHORIZED"},
			{map[string]string{"X-API-Key": TestAPIKey}, 403, "FORBIDDEN"},
			{map[string]string{"X-API-Key": TestAPIKey, "X-Admin-Secret": "wrong"}, 403, "FORBIDDEN"},
		} {
			r, err := shared.Do(rt[0], rt[1], `{"ids":[1]}`, c.hdr)
			if err != nil {
				t.Fatal(err)
			}
			if r.Status != c.status || r.Success || r.Error == nil || r.Error.Code != c.code || r.ReqID == "" || r.Header.Get("X-Request-ID") != r.ReqID {
				t.Errorf("%s %s with %v: %d %s", rt[0], rt[1], c.hdr, r.Status, r.Raw)
			}
		}
		r, err := shared.Do(rt[0], rt[1], `{"filter":{},"dry_run":true}`, AdminHeaders())
		if err != nil || r.Status != http.StatusOK {
			t.Errorf("%s %s with both credentials: %v %d %s", rt[0], rt[1], err, r.Status, r.Raw)
		}
	}
}

func TestAdminRejectsBadInputWithoutSideEffects(t *testing.T) {
	prefix := newPrefix("bad")
	shared.Exec(t, seedSQL(prefix, 3, 1, time.Now().UnixMilli(), "beer-enrichment"))
	ids := ownIDs(t, shared, prefix)
	before := ownState(t, shared, prefix)
	audits := shared.Int(t, `SELECT COUNT(*) FROM admin_audit`)
	idList := func(n int) string {
		s := make([]string, n)
		for i := range s {
			s[i] = fmt.Sprint(ids[0] + int64(i))
		}
		return `{"ids":[` + strings.Join(s, ",") + `]}`
	}
	one := fmt.Sprint(ids[0])
	big := `{"ids":[` + one + `],"note":"` + strings.Repeat("x", 1<<20) + `"}`
	cases := []struct {
		method, path, body string
		status             int
		code               string
	}{
		{"POST", "/admin/dlq/replay", "", 400, "INVALID_REQUEST"},
		{"POST", "/admin/dlq/replay", "null", 400, "INVALID_REQUEST"},
		{"POST", "/admin/dlq/replay", "ids=1", 400, "INVALID_REQUEST"},
		{"POST", "/admin/dlq/replay", "{", 400, "INVALID_REQUEST"},
		{"POST", "/admin/dlq/replay", `{}`, 400, "INVALID_REQUEST"},
		{"POST", "/admin/dlq/replay", `{"ids":7}`, 400, "INVALID_REQUEST"},
		{"POST", "/admin/dlq/replay", `{"ids":[]}`, 400, "INVALID_REQUEST"},
		{"POST", "/admin/dlq/replay", `{"ids":["` + one + `"]}`, 400, "INVALID_REQUEST"},
		{"POST", "/admin/dlq/replay", `{"ids":[` + one + `.5]}`, 400, "INVALID_REQUEST"},
		{"POST", "/admin/dlq/replay", `{"ids":[` + one + `,` + one + `]}`, 400, "INVALID_REQUEST"},
		{"POST", "/admin/dlq/replay", idList(51), 400, "INVALID_REQUEST"},
		{"POST", "/admin/dlq/replay", `{"ids":[` + one + `],"delay_seconds":43201}`, 400, "INVALID_DELAY"},
		{"POST", "/admin/dlq/replay", `{"ids":[` + one + `],"delay_seconds":-1}`, 400, "INVALID_DELAY"},
		{"POST", "/admin/dlq/replay", `{"ids":[` + one + `],"delay_seconds":"soon"}`, 400, "INVALID_DELAY"},
		{"POST", "/admin/dlq/replay", `{"ids":[` + one + `],"extra":true}`, 400, "INVALID_REQUEST"},
		{"POST", "/admin/dlq/replay", `{"filter":{"status":"acknowledged"}}`, 400, "INVALID_FILTER"},
		{"POST", "/admin/dlq/replay", `{"filter":{"q":"` + prefix + `"},"cursor":"bm9wZQ.bm9wZQ"}`, 400, "INVALID_CURSOR"},
		{"POST", "/admin/dlq/replay", `{"filter":{"q":"` + prefix + `"},"limit":100000}`, 400, "INVALID_LIMIT"},
		{"POST", "/admin/dlq/replay", big, 413, "PAYLOAD_TOO_LARGE"},
		{"POST", "/admin/dlq/acknowledge", "", 400, "INVALID_REQUEST"},
		{"POST", "/admin/dlq/acknowledge", "null", 400, "INVALID_REQUEST"},
		{"POST", "/admin/dlq/acknowledge", `{"ids":"all"}`, 400, "INVALID_REQUEST"},
		{"POST", "/admin/dlq/acknowledge", `{"ids":[true]}`, 400, "INVALID_REQUEST"},
		{"POST", "/admin/dlq/acknowledge", idList(101), 400, "INVALID_REQUEST"},
		{"POST", "/admin/dlq/acknowledge", `{"filter":{"status":"all"}}`, 400, "INVALID_FILTER"},
		{"POST", "/admin/dlq/acknowledge", big, 413, "PAYLOAD_TOO_LARGE"},
		{"GET", "/admin/dlq?status=lost", "", 400, "INVALID_STATUS"},
		{"GET", "/admin/dlq?limit=0", "", 400, "INVALID_LIMIT"},
		{"GET", "/admin/dlq?limit=-5", "", 400, "INVALID_LIMIT"},
		{"GET", "/admin/dlq?limit=101", "", 400, "INVALID_LIMIT"},
		{"GET", "/admin/dlq?limit=lots", "", 400, "INVALID_LIMIT"},
		{"GET", "/admin/dlq?cursor=eyJmYWlsZWRfYXQiOjE3MDIzMDAwMDAwMDAsImlkIjoxfQ==", "", 400, "INVALID_CURSOR"},
		{"GET", "/admin/dlq?failed_before=noon", "", 400, "INVALID_FILTER"},
		{"GET", "/admin/dlq?include_raw=perhaps", "", 400, "INVALID_REQUEST"},
		{"GET", "/admin/dlq?beer=1", "", 400, "INVALID_REQUEST"},
		{"GET", "/admin/audit?limit=1000", "", 400, "INVALID_LIMIT"},
		{"GET", "/admin/audit?cursor=x", "", 400, "INVALID_CURSOR"},
	}
	for _, c := range cases {
		r, err := shared.Do(c.method, c.path, c.body, AdminHeaders())
		if err != nil {
			t.Fatal(err)
		}
		if r.Status != c.status || r.Success || r.Error == nil || r.Error.Code != c.code || r.ReqID == "" {
			t.Errorf("%s %s %.80s: %d %.300s", c.method, c.path, c.body, r.Status, r.Raw)
		}
	}
	if after := ownState(t, shared, prefix); after != before {
		t.Fatalf("rejected input changed rows:\n%s\n%s", before, after)
	}
	if n := shared.Int(t, `SELECT COUNT(*) FROM admin_audit`); n != audits {
		t.Fatalf("rejected input was recorded as an action (%d -> %d audit rows)", audits, n)
	}
}

type listPage struct {
	Messages []struct {
		ID          int64   `json:"id"`
		BeerID      string  `json:"beer_id"`
		FailedAt    int64   `json:"failed_at"`
		Status      string  `json:"status"`
		SourceQueue string  `json:"source_queue"`
		RawMessage  *string `json:"raw_message"`
	} `json:"messages"`
	TotalCount int64   `json:"total_count"`
	Limit      int     `json:"limit"`
	NextCursor *string `json:"next_cursor"`
	HasMore    bool    `json:"has_more"`
}

func list(t *testing.T, w *Worker, q url.Values) listPage {
	t.Helper()
	r := w.Admin(t, http.MethodGet, "/admin/dlq?"+q.Encode(), nil)
	if r.Status != http.StatusOK {
		t.Fatalf("list %s: %d %s", q.Encode(), r.Status, r.Raw)
	}
	var p listPage
	r.Decode(t, &p)
	return p
}

func TestAdminListPaginates1000RowsWithTies(t *testing.T) {
	prefix := newPrefix("page")
	shared.Exec(t, seedSQL(prefix, 1000, 7, time.Now().UnixMilli()-3_600_000, "beer-enrichment"))
	if n := shared.Int(t, `SELECT COUNT(DISTINCT failed_at) FROM dlq_messages WHERE row_key LIKE ?`, prefix+"-%"); n != 143 {
		t.Fatalf("seeded %d distinct failed_at values, want 143 (ties of 7)", n)
	}
	seen := map[int64]bool{}
	var prevAt, prevID int64 = math.MaxInt64, math.MaxInt64
	pages := 0
	q := url.Values{"q": {prefix}, "limit": {"37"}}
	for {
		p := list(t, shared, q)
		pages++
		if p.TotalCount != 1000 || p.Limit != 37 {
			t.Fatalf("page %d: total_count %d limit %d", pages, p.TotalCount, p.Limit)
		}
		for _, m := range p.Messages {
			if seen[m.ID] {
				t.Fatalf("row %d on two pages", m.ID)
			}
			seen[m.ID] = true
			if m.FailedAt > prevAt || (m.FailedAt == prevAt && m.ID >= prevID) {
				t.Fatalf("order broken at row %d", m.ID)
			}
			prevAt, prevID = m.FailedAt, m.ID
		}
		if !p.HasMore {
			if p.NextCursor != nil {
				t.Fatal("last page carries a cursor")
			}
			break
		}
		q.Set("cursor", *p.NextCursor)
	}
	if len(seen) != 1000 || pages != 28 {
		t.Fatalf("saw %d rows in %d pages", len(seen), pages)
	}
	for _, id := range ownIDs(t, shared, prefix) {
		if !seen[id] {
			t.Fatalf("row %d never listed", id)
		}
	}
	// A cursor is bound to its filters.
	first := list(t, shared, url.Values{"q": {prefix}, "limit": {"5"}})
	r := shared.Admin(t, http.MethodGet, "/admin/dlq?"+url.Values{"q": {prefix + "-0"}, "cursor": {*first.NextCursor}}.Encode(), nil)
	if r.Status != 400 || r.Error == nil || r.Error.Code != "INVALID_CURSOR" {
		t.Fatalf("cursor with other filters: %d %s", r.Status, r.Raw)
	}
}

func TestAdminListFilters(t *testing.T) {
	prefix := newPrefix("filt")
	src := prefix + "-queue"
	base := int64(1_500_000_000_000) + time.Now().UnixNano()%1_000_000
	shared.Exec(t, seedSQL(prefix, 8, 1, base, "beer-enrichment")+`;
		UPDATE dlq_messages SET status = 'replayed', replayed_at = failed_at, replay_count = 1 WHERE row_key IN ('`+prefix+`-b-0', '`+prefix+`-b-1');
		UPDATE dlq_messages SET status = 'acknowledged', acknowledged_at = failed_at WHERE row_key = '`+prefix+`-b-2';
		UPDATE dlq_messages SET status = 'replaying', replaying_at = failed_at WHERE row_key = '`+prefix+`-b-3';
		UPDATE dlq_messages SET source_queue = '`+src+`' WHERE row_key IN ('`+prefix+`-b-4', '`+prefix+`-b-2')`)
	ids := ownIDs(t, shared, prefix)
	cases := []struct {
		q    url.Values
		want []int // row numbers, newest (smallest i) first
	}{
		{url.Values{"q": {prefix}}, []int{4, 5, 6, 7}},
		{url.Values{"q": {prefix}, "status": {"pending"}}, []int{4, 5, 6, 7}},
		{url.Values{"q": {prefix}, "status": {"all"}}, []int{0, 1, 2, 3, 4, 5, 6, 7}},
		{url.Values{"q": {prefix}, "status": {"replayed"}}, []int{0, 1}},
		{url.Values{"q": {prefix}, "status": {"acknowledged"}}, []int{2}},
		{url.Values{"q": {prefix}, "status": {"replaying"}}, []int{3}},
		{url.Values{"beer_id": {prefix + "-b-5"}}, []int{5}},
		{url.Values{"beer_id": {prefix + "-b-1"}, "status": {"all"}}, []int{1}},
		{url.Values{"source_queue": {src}, "status": {"all"}}, []int{2, 4}},
		{url.Values{"source_queue": {src}}, []int{4}},
		{url.Values{"q": {prefix}, "status": {"all"}, "failed_after": {fmt.Sprint(base - 2)}}, []int{0, 1, 2}},
		{url.Values{"q": {prefix}, "status": {"all"}, "failed_before": {fmt.Sprint(base - 5)}}, []int{6, 7}},
		{url.Values{"q": {prefix}, "failed_after": {fmt.Sprint(base - 6)}, "failed_before": {fmt.Sprint(base - 4)}}, []int{5, 6}},
		{url.Values{"q": {prefix + " reason 3"}, "status": {"all"}}, []int{3, 7}}, // failure_reason
		{url.Values{"q": {strings.ToUpper(prefix) + " BREWER 1"}}, []int{4, 7}},   // brewer, any case
		{url.Values{"q": {token(prefix, 6)}}, []int{6}},                           // beer_name
		{url.Values{"q": {prefix + "%"}, "status": {"all"}}, nil},                 // % is literal
	}
	for _, c := range cases {
		p := list(t, shared, c.q)
		var got []int64
		for _, m := range p.Messages {
			got = append(got, m.ID)
			if m.RawMessage != nil {
				t.Errorf("raw_message without include_raw")
			}
		}
		var want []int64
		for _, i := range c.want {
			want = append(want, ids[i])
		}
		if !reflect.DeepEqual(got, want) || p.TotalCount != int64(len(want)) {
			t.Errorf("%s: got %v (total %d), want %v", c.q.Encode(), got, p.TotalCount, want)
		}
	}
	p := list(t, shared, url.Values{"beer_id": {prefix + "-b-4"}, "include_raw": {"true"}})
	if len(p.Messages) != 1 || p.Messages[0].RawMessage == nil || !strings.Contains(*p.Messages[0].RawMessage, token(prefix, 4)) {
		t.Fatalf("include_raw: %+v", p.Messages)
	}
}

type brewerCount struct {
	Brewer string `json:"brewer"`
	Count  int64  `json:"count"`
}

type repeatFailure struct {
	BeerID      string  `json:"beer_id"`
	BeerName    *string `json:"beer_name"`
	ReplayCount int64   `json:"replay_count"`
}

type sourceCount struct {
	SourceQueue string `json:"source_queue"`
	Pending     int64  `json:"pending"`
	Total       int64  `json:"total"`
}

type reasonCount struct {
	FailureReason *string `json:"failure_reason"`
	Count         int64   `json:"count"`
}

type stats struct {
	ByStatus              map[string]int64 `json:"by_status"`
	OldestPendingAgeHours float64          `json:"oldest_pending_age_hours"`
	TopFailingBrewers     []brewerCount    `json:"top_failing_brewers"`
	RepeatFailures        []repeatFailure  `json:"repeat_failures"`
	Last24h               map[string]int64 `json:"last_24h"`
	BySourceQueue         []sourceCount    `json:"by_source_queue"`
	TopFailureReasons     []reasonCount    `json:"top_failure_reasons"`
}

// statsFromSQL computes the expected stats straight from the D1 file.
func statsFromSQL(t *testing.T, w *Worker, now time.Time) stats {
	t.Helper()
	db := w.DB(t)
	var s stats
	s.ByStatus = map[string]int64{}
	s.TopFailingBrewers, s.RepeatFailures, s.BySourceQueue, s.TopFailureReasons = []brewerCount{}, []repeatFailure{}, []sourceCount{}, []reasonCount{}
	for _, st := range []string{"pending", "replaying", "replayed", "acknowledged"} {
		s.ByStatus[st] = w.Int(t, `SELECT COUNT(*) FROM dlq_messages WHERE status = ?`, st)
	}
	if oldest := w.Int(t, `SELECT MIN(failed_at) FROM dlq_messages WHERE status = 'pending'`); oldest > 0 {
		s.OldestPendingAgeHours = math.Round(float64(now.UnixMilli()-oldest)/3_600_000*10) / 10
	}
	rows, _ := db.Query(`SELECT label_2, COUNT(*) FROM dlq_messages WHERE status = 'pending' AND label_2 IS NOT NULL GROUP BY label_2`)
	for rows.Next() {
		var e brewerCount
		rows.Scan(&e.Brewer, &e.Count)
		s.TopFailingBrewers = append(s.TopFailingBrewers, e)
	}
	rows.Close()
	sort.Slice(s.TopFailingBrewers, func(i, j int) bool {
		a, b := s.TopFailingBrewers[i], s.TopFailingBrewers[j]
		return a.Count > b.Count || (a.Count == b.Count && a.Brewer < b.Brewer)
	})
	if len(s.TopFailingBrewers) > 10 {
		s.TopFailingBrewers = s.TopFailingBrewers[:10]
	}
	rows, _ = db.Query(`SELECT row_key, label_1, replay_count FROM dlq_messages WHERE status = 'pending' AND replay_count > 0
		ORDER BY replay_count DESC, id DESC LIMIT 10`)
	for rows.Next() {
		var e repeatFailure
		var name sql.NullString
		rows.Scan(&e.BeerID, &name, &e.ReplayCount)
		if name.Valid {
			e.BeerName = &name.String
		}
		s.RepeatFailures = append(s.RepeatFailures, e)
	}
	rows.Close()
	day := now.Add(-24 * time.Hour).UnixMilli()
	s.Last24h = map[string]int64{
		"replayed_24h":     w.Int(t, `SELECT COUNT(*) FROM dlq_messages WHERE status = 'replayed' AND replayed_at > ?`, day),
		"acknowledged_24h": w.Int(t, `SELECT COUNT(*) FROM dlq_messages WHERE status = 'acknowledged' AND acknowledged_at > ?`, day),
		"new_failures_24h": w.Int(t, `SELECT COUNT(*) FROM dlq_messages WHERE failed_at > ?`, day),
	}
	rows, _ = db.Query(`SELECT source_queue, SUM(status = 'pending'), COUNT(*) FROM dlq_messages GROUP BY source_queue ORDER BY COUNT(*) DESC, source_queue`)
	for rows.Next() {
		var e sourceCount
		rows.Scan(&e.SourceQueue, &e.Pending, &e.Total)
		s.BySourceQueue = append(s.BySourceQueue, e)
	}
	rows.Close()
	rows, _ = db.Query(`SELECT failure_reason, COUNT(*) AS n FROM dlq_messages WHERE status = 'pending' GROUP BY failure_reason
		ORDER BY n DESC, failure_reason LIMIT 10`)
	for rows.Next() {
		var e reasonCount
		var reason sql.NullString
		rows.Scan(&reason, &e.Count)
		if reason.Valid {
			e.FailureReason = &reason.String
		}
		s.TopFailureReasons = append(s.TopFailureReasons, e)
	}
	rows.Close()
	return s
}

func TestAdminStatsMatchSQL(t *testing.T) {
	prefix := newPrefix("stat")
	now := time.Now().UnixMilli()
	// 40 rows: 30 hours old, so they are the oldest pending rows and outside last_24h.
	shared.Exec(t, seedSQL(prefix, 40, 1, now-30*3_600_000, prefix+"-queue")+`;
		UPDATE dlq_messages SET replay_count = 5 + (id % 3) WHERE row_key IN ('`+prefix+`-b-0', '`+prefix+`-b-1', '`+prefix+`-b-2');
		UPDATE dlq_messages SET status = 'replayed', replayed_at = `+fmt.Sprint(now-3_600_000)+` WHERE row_key = '`+prefix+`-b-3';
		UPDATE dlq_messages SET status = 'acknowledged', acknowledged_at = `+fmt.Sprint(now-3_600_000)+` WHERE row_key IN ('`+prefix+`-b-4', '`+prefix+`-b-5');
		UPDATE dlq_messages SET status = 'replaying', replaying_at = `+fmt.Sprint(now)+` WHERE row_key = '`+prefix+`-b-6'`)
	var got, want stats
	// Stats and SQL are read at slightly different times while other
	// messages may still be captured: compare until both agree.
	Eventually(t, 30*time.Second, "stats equal to SQL", func() bool {
		r := shared.Admin(t, http.MethodGet, "/admin/dlq/stats", nil)
		if r.Status != http.StatusOK {
			t.Fatalf("stats: %d %s", r.Status, r.Raw)
		}
		got = stats{}
		r.Decode(t, &got)
		want = statsFromSQL(t, shared, time.Now())
		if math.Abs(got.OldestPendingAgeHours-want.OldestPendingAgeHours) <= 0.1 {
			want.OldestPendingAgeHours = got.OldestPendingAgeHours
		}
		return reflect.DeepEqual(got, want)
	})
	if got.OldestPendingAgeHours < 29.9 {
		t.Errorf("oldest pending age %v, want >= 30 h (seeded)", got.OldestPendingAgeHours)
	}
	found := false
	for _, q := range got.BySourceQueue {
		if q.SourceQueue == prefix+"-queue" {
			found = q.Pending == 36 && q.Total == 40
		}
	}
	if !found {
		t.Errorf("by_source_queue lacks %s-queue with 36 pending / 40: %+v", prefix, got.BySourceQueue)
	}
	if len(got.RepeatFailures) < 3 || got.RepeatFailures[0].ReplayCount < 5 {
		t.Errorf("repeat_failures: %+v", got.RepeatFailures)
	}
}

func TestAdminReplayArrivesOnMainQueueAndKeepsLineage(t *testing.T) {
	prefix := newPrefix("rep")
	shared.Exec(t, seedSQL(prefix, 4, 1, time.Now().UnixMilli(), "beer-enrichment"))
	ids := ownIDs(t, shared, prefix)
	for i := 0; i < 3; i++ {
		shared.Provider.On(token(prefix, i), Behavior{Content: "6.5"})
	}
	res := replay(t, shared, idsBody(ids[:3]))
	if res.RequestedCount != 3 || res.ClaimedCount != 3 || res.ReplayedCount != 3 || res.FailedCount != 0 || res.QueuedTo != "beer-enrichment" {
		t.Fatalf("replay: %+v", res)
	}
	Eventually(t, 60*time.Second, "enrichment consumer called the provider for each replayed beer", func() bool {
		for i := 0; i < 3; i++ {
			if len(shared.Provider.Calls(token(prefix, i))) == 0 {
				return false
			}
		}
		return true
	})
	for i := 0; i < 3; i++ {
		if n := len(shared.Provider.Calls(token(prefix, i))); n != 1 {
			t.Errorf("beer %d: %d provider calls, want 1", i, n)
		}
	}
	if n := shared.Int(t, `SELECT COUNT(*) FROM dlq_messages WHERE row_key LIKE ? AND status = 'replayed' AND replay_count = 1
		AND replayed_at IS NOT NULL AND replaying_at IS NULL`, prefix+"-%"); n != 3 {
		t.Fatalf("%d rows replayed, want 3", n)
	}

	// Lineage: the fourth beer fails every attempt, so the replayed message
	// goes back to the DLQ. Its body is the row's, unchanged (these rows were
	// seeded without content_type and body_hash, as rows captured before
	// they existed: the replay sets the hash), so its repeat failure updates
	// the same row.
	failing := token(prefix, 3)
	shared.Provider.On(failing, Behavior{Status: http.StatusInternalServerError})
	res = replay(t, shared, idsBody(ids[3:]))
	if res.ReplayedCount != 1 {
		t.Fatalf("replay of the failing beer: %+v", res)
	}
	Eventually(t, 120*time.Second, "the replayed message's repeat failure updated its row", func() bool {
		return shared.Int(t, `SELECT COUNT(*) FROM dlq_messages WHERE id = ? AND status = 'pending' AND replay_count = 1
			AND last_message_id <> message_id`, ids[3]) == 1
	})
	if n := shared.Int(t, `SELECT COUNT(*) FROM dlq_messages WHERE row_key = ?`, prefix+"-b-3"); n != 1 {
		t.Fatalf("%d rows for the failing beer, want 1", n)
	}
	if len(shared.Provider.Calls(failing)) < 2 {
		t.Fatalf("the failing beer was not retried on the main queue")
	}
}

func TestAdminConcurrentReplaysSendEachRowOnce(t *testing.T) {
	prefix := newPrefix("conc")
	const rounds = 10
	shared.Exec(t, seedSQL(prefix, rounds*3, 1, time.Now().UnixMilli(), jsQueue))
	ids := ownIDs(t, shared, prefix)
	total := 0
	for round := 0; round < rounds; round++ {
		a, b, c := ids[3*round], ids[3*round+1], ids[3*round+2]
		bodies := []map[string]any{idsBody([]int64{a, b, c}), idsBody([]int64{b, c}), idsBody([]int64{c, a})}
		results := make([]replayResult, 3)
		var wg sync.WaitGroup
		for k := range bodies {
			wg.Add(1)
			go func(k int) {
				defer wg.Done()
				results[k] = replay(t, shared, bodies[k])
			}(k)
		}
		wg.Wait()
		claimed := 0
		for _, r := range results {
			claimed += r.ClaimedCount
			if r.ClaimedCount != r.ReplayedCount || r.FailedCount != 0 {
				t.Errorf("round %d: %+v", round, r)
			}
		}
		if claimed != 3 {
			t.Errorf("round %d: claimed %d rows in total, want 3 (%+v)", round, claimed, results)
		}
		total += claimed
	}
	if total != len(ids) {
		t.Fatalf("claimed %d, want %d", total, len(ids))
	}
	if n := shared.Int(t, `SELECT COUNT(*) FROM dlq_messages WHERE row_key LIKE ? AND status = 'replayed' AND replay_count = 1`, prefix+"-%"); n != int64(len(ids)) {
		t.Fatalf("%d rows replayed exactly once, want %d", n, len(ids))
	}
	expectDeliveredOnceEach(t, shared, prefix, len(ids), 90*time.Second)
}

func TestAdminReplayOfNonPendingRowsIsANoop(t *testing.T) {
	prefix := newPrefix("noop")
	now := time.Now().UnixMilli()
	shared.Exec(t, seedSQL(prefix, 3, 1, now, "beer-enrichment")+`;
		UPDATE dlq_messages SET status = 'replayed', replayed_at = `+fmt.Sprint(now)+`, replay_count = 1 WHERE row_key = '`+prefix+`-b-0';
		UPDATE dlq_messages SET status = 'acknowledged', acknowledged_at = `+fmt.Sprint(now)+` WHERE row_key = '`+prefix+`-b-1';
		UPDATE dlq_messages SET status = 'replaying', replaying_at = `+fmt.Sprint(now)+` WHERE row_key = '`+prefix+`-b-2'`)
	ids := ownIDs(t, shared, prefix)
	before := ownState(t, shared, prefix)
	res := replay(t, shared, idsBody(ids))
	if res.ClaimedCount != 0 || res.ReplayedCount != 0 || len(res.Skipped) != 3 {
		t.Fatalf("replay of non-pending rows: %+v", res)
	}
	for i, st := range []string{"replayed", "acknowledged", "replaying"} {
		if res.Skipped[i].Reason != "not_pending" || res.Skipped[i].Status != st {
			t.Errorf("skipped[%d] = %+v", i, res.Skipped[i])
		}
	}
	if ownState(t, shared, prefix) != before {
		t.Fatal("replay of non-pending rows changed them")
	}
}

func TestAdminAcknowledgeHundredIDs(t *testing.T) {
	prefix := newPrefix("ack")
	shared.Exec(t, seedSQL(prefix, 100, 1, time.Now().UnixMilli(), "beer-enrichment"))
	ids := ownIDs(t, shared, prefix)
	r := shared.Admin(t, http.MethodPost, "/admin/dlq/acknowledge", map[string]any{"ids": ids, "note": "e2e " + prefix})
	var res struct {
		AcknowledgedCount int64   `json:"acknowledged_count"`
		AcknowledgedIDs   []int64 `json:"acknowledged_ids"`
	}
	r.Decode(t, &res)
	if r.Status != 200 || res.AcknowledgedCount != 100 || len(res.AcknowledgedIDs) != 100 {
		t.Fatalf("acknowledge 100: %d %s", r.Status, r.Raw)
	}
	if n := shared.Int(t, `SELECT COUNT(*) FROM dlq_messages WHERE row_key LIKE ? AND status = 'acknowledged'
		AND acknowledged_at IS NOT NULL AND acknowledged_note = ?`, prefix+"-%", "e2e "+prefix); n != 100 {
		t.Fatalf("%d rows acknowledged, want 100", n)
	}
	// The audit row was written in the same D1 batch, its counts computed in SQL.
	var counts string
	if err := shared.DB(t).QueryRow(`SELECT counts FROM admin_audit WHERE request_id = ? AND outcome = 'ok'`, r.ReqID).Scan(&counts); err != nil ||
		counts != `{"requested_count":100,"acknowledged_count":100}` {
		t.Fatalf("audit counts %s (%v)", counts, err)
	}
	r = shared.Admin(t, http.MethodPost, "/admin/dlq/acknowledge", map[string]any{"ids": ids})
	r.Decode(t, &res)
	if r.Status != 200 || res.AcknowledgedCount != 0 {
		t.Fatalf("acknowledging again must move nothing: %s", r.Raw)
	}
}

// A bulk acknowledge moves at most DLQ_BULK_ACKNOWLEDGE_MAX (5000 in the
// e2e environment) rows per call; its audit row, written in the same D1
// batch, carries the same counts.
func TestAdminBulkAcknowledgePages(t *testing.T) {
	prefix := newPrefix("back")
	shared.Exec(t, seedSQL(prefix, 5001, 1, time.Now().UnixMilli(), "beer-enrichment"))
	var got []string
	for i := 0; i < 3; i++ {
		r := shared.Admin(t, http.MethodPost, "/admin/dlq/acknowledge", map[string]any{"filter": map[string]any{"q": prefix}})
		var res struct {
			AcknowledgedCount int64 `json:"acknowledged_count"`
			HasMore           *bool `json:"has_more"`
		}
		r.Decode(t, &res)
		if r.Status != 200 || res.HasMore == nil {
			t.Fatalf("bulk acknowledge: %d %s", r.Status, r.Raw)
		}
		audit := shared.Int(t, `SELECT COUNT(*) FROM admin_audit WHERE request_id = ? AND outcome = 'ok' AND finished_at IS NOT NULL
			AND counts ->> '$.acknowledged_count' = ? AND counts ->> '$.has_more' = ?`, r.ReqID, res.AcknowledgedCount, *res.HasMore)
		got = append(got, fmt.Sprintf("%d %v %d", res.AcknowledgedCount, *res.HasMore, audit))
	}
	if want := []string{"5000 true 1", "1 false 1", "0 false 1"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("pages (count, has_more, audit rows) %q, want %q", got, want)
	}
	if n := shared.Int(t, `SELECT COUNT(*) FROM dlq_messages WHERE row_key LIKE ? AND status = 'acknowledged'`, prefix+"-%"); n != 5001 {
		t.Fatalf("%d rows acknowledged, want 5001", n)
	}
}

func TestAdminDryRunsChangeNothing(t *testing.T) {
	prefix := newPrefix("dry")
	shared.Exec(t, seedSQL(prefix, 60, 2, time.Now().UnixMilli(), "beer-enrichment")+`;
		UPDATE dlq_messages SET raw_message = 'not json', content_type = 'json', row_key = '`+prefix+`-poison' WHERE row_key = '`+prefix+`-b-0'`)
	before := ownState(t, shared, prefix)
	audits := shared.Int(t, `SELECT COUNT(*) FROM admin_audit WHERE dry_run = 0`)
	type preview struct {
		DryRun             bool  `json:"dry_run"`
		MatchedCount       int64 `json:"matched_count"`
		NotReplayableCount int64 `json:"not_replayable_count"`
		Sample             []struct {
			ID int64 `json:"id"`
		} `json:"sample"`
		ByFailureReason []struct {
			FailureReason string `json:"failure_reason"`
			Count         int64  `json:"count"`
		} `json:"by_failure_reason"`
	}
	var p preview
	r := shared.Admin(t, http.MethodPost, "/admin/dlq/replay", map[string]any{"filter": map[string]any{"q": prefix}, "dry_run": true})
	r.Decode(t, &p)
	if r.Status != 200 || !p.DryRun || p.MatchedCount != 59 || p.NotReplayableCount != 1 || len(p.Sample) != 10 || len(p.ByFailureReason) != 4 {
		t.Fatalf("replay dry run: %d %s", r.Status, r.Raw)
	}
	sum := int64(0)
	for _, g := range p.ByFailureReason {
		sum += g.Count
		if !strings.HasPrefix(g.FailureReason, prefix+" reason ") {
			t.Errorf("reason group %+v", g)
		}
	}
	if sum != 59 {
		t.Errorf("reasons sum to %d, want 59", sum)
	}
	p = preview{}
	r = shared.Admin(t, http.MethodPost, "/admin/dlq/acknowledge", map[string]any{"filter": map[string]any{"q": prefix}, "dry_run": true})
	r.Decode(t, &p)
	if r.Status != 200 || !p.DryRun || p.MatchedCount != 60 {
		t.Fatalf("acknowledge dry run: %d %s", r.Status, r.Raw)
	}
	if ownState(t, shared, prefix) != before {
		t.Fatal("a dry run changed rows")
	}
	if n := shared.Int(t, `SELECT COUNT(*) FROM admin_audit WHERE dry_run = 0`); n != audits {
		t.Fatal("a dry run was recorded as a real action")
	}
}

func TestAdminBulkReplayOf1000RowsSendsEachOnce(t *testing.T) {
	prefix := newPrefix("bulk")
	shared.Exec(t, seedSQL(prefix, 1000, 3, time.Now().UnixMilli()-60_000, jsQueue))
	ids := ownIDs(t, shared, prefix)
	body := map[string]any{"filter": map[string]any{"q": prefix}, "limit": 300}
	claimed, calls := 0, 0
	replayed := map[int64]bool{}
	for {
		res := replay(t, shared, body)
		calls++
		if res.ClaimedCount > 300 || res.ReplayedCount != res.ClaimedCount || res.FailedCount != 0 {
			t.Fatalf("call %d: %+v", calls, res)
		}
		for _, id := range res.ReplayedIDs {
			if replayed[id] {
				t.Fatalf("row %d replayed by two calls", id)
			}
			replayed[id] = true
		}
		claimed += res.ClaimedCount
		if !res.HasMore {
			break
		}
		body["cursor"] = *res.NextCursor
		if calls > 10 {
			t.Fatal("bulk replay does not terminate")
		}
	}
	if claimed != 1000 || len(replayed) != 1000 || calls != 4 {
		t.Fatalf("claimed %d (%d distinct) in %d calls", claimed, len(replayed), calls)
	}
	if n := shared.Int(t, `SELECT COUNT(*) FROM dlq_messages WHERE row_key LIKE ? AND status = 'replayed' AND replay_count = 1`, prefix+"-%"); n != 1000 {
		t.Fatalf("%d rows replayed once, want 1000", n)
	}
	expectDeliveredOnceEach(t, shared, prefix, len(ids), 5*time.Minute)
}

func TestAdminAuditRecordsEachAction(t *testing.T) {
	prefix := newPrefix("aud")
	shared.Exec(t, seedSQL(prefix, 3, 1, time.Now().UnixMilli(), "beer-enrichment"))
	ids := ownIDs(t, shared, prefix)
	shared.Provider.On(token(prefix, 0), Behavior{Content: "5.0"})
	rRep := shared.Admin(t, http.MethodPost, "/admin/dlq/replay", map[string]any{"ids": ids[:1], "delay_seconds": 1})
	rAck := shared.Admin(t, http.MethodPost, "/admin/dlq/acknowledge", map[string]any{"ids": ids[1:], "note": "audit " + prefix})
	rDry := shared.Admin(t, http.MethodPost, "/admin/dlq/replay", map[string]any{"filter": map[string]any{"q": prefix}, "dry_run": true})
	for _, r := range []*Response{rRep, rAck, rDry} {
		if r.Status != 200 {
			t.Fatalf("action: %d %s", r.Status, r.Raw)
		}
	}
	type entry struct {
		ID             int64          `json:"id"`
		At             int64          `json:"at"`
		Action         string         `json:"action"`
		RequestID      string         `json:"request_id"`
		KeyFingerprint string         `json:"key_fingerprint"`
		DryRun         bool           `json:"dry_run"`
		IDs            []int64        `json:"ids"`
		Filter         map[string]any `json:"filter"`
		Note           *string        `json:"note"`
		Counts         map[string]any `json:"counts"`
		Outcome        string         `json:"outcome"`
	}
	byReq := map[string]entry{}
	cursor, pages := "", 0
	var prevID int64 = math.MaxInt64
	for len(byReq) < 3 && pages < 50 {
		q := url.Values{"limit": {"2"}}
		if cursor != "" {
			q.Set("cursor", cursor)
		}
		r := shared.Admin(t, http.MethodGet, "/admin/audit?"+q.Encode(), nil)
		var p struct {
			Entries    []entry `json:"entries"`
			NextCursor *string `json:"next_cursor"`
			HasMore    bool    `json:"has_more"`
		}
		r.Decode(t, &p)
		pages++
		for _, e := range p.Entries {
			if e.ID >= prevID {
				t.Fatalf("audit not newest first: %d after %d", e.ID, prevID)
			}
			prevID = e.ID
			for _, want := range []string{rRep.ReqID, rAck.ReqID, rDry.ReqID} {
				if e.RequestID == want {
					byReq[want] = e
				}
			}
		}
		if !p.HasMore {
			break
		}
		cursor = *p.NextCursor
	}
	fp := handlers.Auth{APIKey: TestAPIKey, AdminSecret: TestAdminSecret}.KeyFingerprint(TestAPIKey)
	rep, ack, dry := byReq[rRep.ReqID], byReq[rAck.ReqID], byReq[rDry.ReqID]
	if rep.Action != "replay" || rep.Outcome != "ok" || rep.KeyFingerprint != fp || rep.DryRun || !reflect.DeepEqual(rep.IDs, ids[:1]) ||
		rep.Counts["replayed_count"] != 1.0 || rep.Counts["claimed_count"] != 1.0 || rep.At == 0 {
		t.Errorf("replay entry %+v", rep)
	}
	if ack.Action != "acknowledge" || ack.Outcome != "ok" || ack.KeyFingerprint != fp || ack.Note == nil || *ack.Note != "audit "+prefix ||
		ack.Counts["acknowledged_count"] != 2.0 || !reflect.DeepEqual(ack.IDs, ids[1:]) {
		t.Errorf("acknowledge entry %+v", ack)
	}
	if dry.Action != "replay" || !dry.DryRun || dry.Filter["q"] != prefix || dry.IDs != nil || dry.Counts["matched_count"] != 0.0 {
		t.Errorf("dry-run entry %+v", dry)
	}
}

// expectOneProviderCallEach waits until each of the n beers of prefix
// reached the enrichment consumer (a provider call), then checks that none
// was sent twice.
// expectDeliveredOnceEach waits until the JavaScript consumer has received
// each of the prefix's n replayed bodies (rows seeded on jsQueue), then holds
// a settle window in which none arrives a second time: it counts what
// reached the queue, so a duplicate send cannot hide behind a consumer that
// skips work already done.
func expectDeliveredOnceEach(t *testing.T, w *Worker, prefix string, n int, timeout time.Duration) {
	t.Helper()
	counts := func() (bodies, deliveries int64) {
		// The JS worker creates its table on its first delivery.
		if w.Int(t, `SELECT COUNT(*) FROM sqlite_master WHERE name = 'e2e_js_deliveries'`) == 0 {
			return 0, 0
		}
		if err := w.DB(t).QueryRow(`SELECT COUNT(DISTINCT body_json_or_text), COUNT(*) FROM e2e_js_deliveries
			WHERE queue = ? AND instr(body_json_or_text, ?) > 0`, jsQueue, `"`+prefix+`-b-`).Scan(&bodies, &deliveries); err != nil {
			t.Fatal(err)
		}
		return bodies, deliveries
	}
	Eventually(t, timeout, "every replayed body delivered", func() bool { b, _ := counts(); return b == int64(n) })
	Consistently(t, 5*time.Second, "each body delivered once", func() bool { b, d := counts(); return b == int64(n) && d == int64(n) })
}

// In workerd, a query parameter a route does not declare is a 400 before
// anything is done: POST /admin/dlq/import?dry_run=true writes no row (the
// same body without it does), a GET route that takes no parameter refuses
// one, and a caller without credentials gets the 401 first.
func TestUnknownQueryParameterIsRefused(t *testing.T) {
	token := newPrefix("qp")
	shared.ExecDirect(t, fmt.Sprintf(`INSERT INTO dlq_messages(message_id, row_key, label_1, failed_at, source_queue, raw_message, content_type, first_failed_at, updated_at)
		VALUES ('%[1]s', '%[1]s', 'x', 1000, 'beer-enrichment', '{"beer_id":"%[1]s"}', 'json', 1000, 1000)`, token))
	line := shared.Admin(t, http.MethodGet, "/admin/dlq/export?format=ndjson&include_raw=true&status=all&beer_id="+token, nil)
	if line.Status != 200 || strings.Count(string(line.Raw), "\n") != 1 {
		t.Fatalf("export: %d %s", line.Status, line.Raw)
	}
	shared.ExecDirect(t, fmt.Sprintf(`DELETE FROM dlq_messages WHERE message_id = '%s'`, token))
	rows := func() int64 { return shared.Int(t, `SELECT COUNT(*) FROM dlq_messages WHERE message_id = ?`, token) }
	audited := func() int64 { return shared.Int(t, `SELECT COUNT(*) FROM admin_audit WHERE action = 'import'`) }
	ndjson := map[string]string{"X-API-Key": TestAPIKey, "X-Admin-Secret": TestAdminSecret, "Content-Type": "application/x-ndjson"}
	imports := audited()

	r, err := shared.Do(http.MethodPost, "/admin/dlq/import?dry_run=true", line.Raw, ndjson)
	if err != nil || r.Contract != nil {
		t.Fatalf("import?dry_run=true: %v %v", err, r.Contract)
	}
	if r.Status != 400 || r.Success || r.Error == nil || r.Error.Code != "INVALID_REQUEST" ||
		r.Error.Message != `unknown query parameter "dry_run"` || r.ReqID != r.Header.Get("X-Request-ID") {
		t.Fatalf("import?dry_run=true: %d %s", r.Status, r.Raw)
	}
	if n := rows(); n != 0 {
		t.Fatalf("import?dry_run=true wrote %d rows", n)
	}
	if n := audited(); n != imports {
		t.Fatalf("import?dry_run=true was audited (%d import entries, %d before)", n, imports)
	}
	anonymous, err := shared.Do(http.MethodPost, "/admin/dlq/import?dry_run=true", line.Raw, map[string]string{"Content-Type": "application/x-ndjson"})
	if err != nil || anonymous.Status != 401 || anonymous.Error == nil || anonymous.Error.Code != "UNAUTHORIZED" {
		t.Fatalf("anonymous import?dry_run=true: %v %v", err, anonymous)
	}
	for _, target := range []string{"/admin/pipelines?verbose=1", "/admin/dlq/stats?pipeline=beers&x=1"} {
		r := shared.Admin(t, http.MethodGet, target, nil)
		if r.Status != 400 || r.Error == nil || r.Error.Code != "INVALID_REQUEST" || !strings.HasPrefix(r.Error.Message, "unknown query parameter ") {
			t.Errorf("GET %s: %d %s", target, r.Status, r.Raw)
		}
	}
	if r, err := shared.Do(http.MethodGet, "/health?verbose=1", nil, nil); err != nil || r.Status != 400 || r.Error == nil || r.Error.Code != "INVALID_REQUEST" {
		t.Errorf("GET /health?verbose=1: %v %v", err, r)
	}

	// The same import without the parameter writes the row.
	r, err = shared.Do(http.MethodPost, "/admin/dlq/import", line.Raw, ndjson)
	if err != nil || r.Status != 200 || r.Contract != nil {
		t.Fatalf("import: %v %v", err, r)
	}
	if n := rows(); n != 1 {
		t.Fatalf("import wrote %d rows, want 1: %s", n, r.Raw)
	}
}

// POST /__dev/send refuses with a 400, sending nothing, a queue the worker
// has no producer binding for (the platform sender's own check) and a body
// its content type does not fit; the queues it knows still take messages.
func TestDevSendRefusesWhatCannotBeSent(t *testing.T) {
	for _, c := range []struct {
		queue string
		msg   map[string]any
		code  string
	}{
		{"nowhere", map[string]any{"body": "x"}, "UNKNOWN_QUEUE"},
		{"beer-enrichment-dlq", map[string]any{"body": "{no", "content_type": "json"}, "INVALID_REQUEST"},
		{"beer-enrichment-dlq", map[string]any{"body": "%%%", "content_type": "bytes"}, "INVALID_REQUEST"},
		{"beer-enrichment-dlq", map[string]any{"body": "x", "delay_seconds": 43201}, "INVALID_REQUEST"},
	} {
		r, err := shared.Do(http.MethodPost, "/__dev/send", map[string]any{"queue": c.queue, "messages": []any{c.msg}}, AdminHeaders())
		if err != nil {
			t.Fatal(err)
		}
		if r.Status != 400 || r.Success || r.Error == nil || r.Error.Code != c.code {
			t.Errorf("%s %v: %d %s, want 400 %s", c.queue, c.msg, r.Status, r.Raw, c.code)
		}
	}
}
