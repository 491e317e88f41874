package handlers

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/dlq/inspect"
)

// exportAll follows X-Next-Cursor until the export is complete and returns
// each response's body.
func exportAll(t *testing.T, h http.Handler, query string) []string {
	t.Helper()
	var bodies []string
	cursor := ""
	for i := 0; i < 20; i++ {
		q := query
		if cursor != "" {
			q += "&cursor=" + url.QueryEscape(cursor)
		}
		rec, _ := do(h, "GET", "/admin/dlq/export?"+q, "", adminHeaders)
		if rec.Code != 200 {
			t.Fatalf("export %s: %d %s", q, rec.Code, rec.Body)
		}
		bodies = append(bodies, rec.Body.String())
		if cursor = rec.Header().Get("X-Next-Cursor"); cursor == "" {
			return bodies
		}
	}
	t.Fatal("export never ended")
	return nil
}

func TestExportNDJSONAndCSVGiveEveryRowOnce(t *testing.T) {
	api, _ := newDLQAPI(t)
	n := 250
	seedRows(t, api.DB, n)
	if _, err := api.DB.Exec(`UPDATE dlq_messages SET label_1 = '=HYPERLINK("http://x")', label_2 = '-2+3', failure_reason = 'a,"b"' || char(10) || 'c'
		WHERE message_id = 'm7'`); err != nil {
		t.Fatal(err)
	}
	h := api.Handler()
	// limit=2: 50 pages of 2 rows = 100 rows per request, so 3 requests.
	bodies := exportAll(t, h, "format=ndjson&limit=2&include_raw=true")
	if len(bodies) != 3 {
		t.Fatalf("%d requests, want 3", len(bodies))
	}
	var got []dlq.Message
	for _, b := range bodies {
		for _, line := range strings.Split(strings.TrimSuffix(b, "\n"), "\n") {
			var m dlq.Message
			if err := json.Unmarshal([]byte(line), &m); err != nil {
				t.Fatalf("line %q: %v", line, err)
			}
			got = append(got, m)
		}
	}
	if len(got) != n {
		t.Fatalf("%d rows, want %d", len(got), n)
	}
	seen := map[int64]bool{}
	for i, m := range got {
		if seen[m.ID] || (i > 0 && m.FailedAt > got[i-1].FailedAt) {
			t.Fatalf("row %d (id %d) repeated or out of order", i, m.ID)
		}
		seen[m.ID] = true
		if len(m.RawMessage) == 0 {
			t.Fatalf("row %d without raw_message", m.ID)
		}
	}

	csvBodies := exportAll(t, h, "format=csv&limit=2&include_raw=true")
	if len(csvBodies) != 3 {
		t.Fatalf("csv: %d requests, want 3", len(csvBodies))
	}
	var recs [][]string
	for _, b := range csvBodies {
		r, err := csv.NewReader(strings.NewReader(b)).ReadAll()
		if err != nil {
			t.Fatal(err)
		}
		want := strings.Join(append(append([]string{}, inspect.ExportColumns...), inspect.ExportRawColumns...), ",")
		if strings.Join(r[0], ",") != want {
			t.Fatalf("header %v", r[0])
		}
		recs = append(recs, r[1:]...)
	}
	if len(recs) != n {
		t.Fatalf("csv: %d rows, want %d", len(recs), n)
	}
	for i, rec := range recs {
		m := got[i]
		var raw string
		_ = json.Unmarshal(m.RawMessage, &raw)
		want := []string{fmt.Sprint(m.ID), m.MessageID, m.BeerID, deref(m.BeerName), deref(m.Brewer), fmt.Sprint(m.FailedAt)}
		for j, w := range want {
			if unneutralize(rec[j]) != w {
				t.Fatalf("csv row %d col %s: %q, want %q", i, inspect.ExportColumns[j], rec[j], w)
			}
		}
		if unneutralize(rec[7]) != deref(m.FailureReason) || rec[9] != m.Status || rec[len(rec)-2] != raw {
			t.Fatalf("csv row %d: %q", i, rec)
		}
		if m.MessageID == "m7" {
			if rec[3] != `'=HYPERLINK("http://x")` || rec[4] != "'-2+3" {
				t.Fatalf("formula cells not neutralised: %q", rec)
			}
		}
	}
	if !strings.Contains(csvBodies[0], "\r\n") || !strings.HasPrefix(csvBodies[0], "id,message_id,") {
		t.Fatalf("csv is not RFC 4180 with a header: %.100q", csvBodies[0])
	}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// unneutralize undoes inspect.NeutralizeCell: one leading ' goes.
func unneutralize(v string) string { return strings.TrimPrefix(v, "'") }

func TestExportHeadersFiltersAndBadInput(t *testing.T) {
	api, _ := newDLQAPI(t)
	seedRows(t, api.DB, 5)
	h := api.Handler()
	rec, _ := do(h, "GET", "/admin/dlq/export?beer_id=b3", "", adminHeaders)
	if rec.Code != 200 || rec.Header().Get("Content-Type") != "application/x-ndjson" || rec.Header().Get("X-Export-Rows") != "1" ||
		rec.Header().Get("X-Next-Cursor") != "" || strings.Count(rec.Body.String(), "\n") != 1 || !strings.Contains(rec.Body.String(), `"beer_id":"b3"`) {
		t.Fatalf("ndjson: %d %v %s", rec.Code, rec.Header(), rec.Body)
	}
	rec, _ = do(h, "GET", "/admin/dlq/export?format=csv&status=acknowledged", "", adminHeaders)
	if rec.Code != 200 || rec.Header().Get("Content-Type") != "text/csv; charset=utf-8" || rec.Header().Get("X-Export-Rows") != "0" ||
		rec.Body.String() != strings.Join(inspect.ExportColumns, ",")+"\r\n" {
		t.Fatalf("empty csv: %d %v %q", rec.Code, rec.Header(), rec.Body)
	}
	for _, c := range []struct{ q, code string }{
		{"format=xml", "INVALID_FORMAT"},
		{"format=csv&format=csv", "INVALID_REQUEST"},
		{"status=nope", "INVALID_STATUS"},
		{"limit=101", "INVALID_LIMIT"},
		{"cursor=abc", "INVALID_CURSOR"},
		{"failed_after=x", "INVALID_FILTER"},
		{"nope=1", "INVALID_REQUEST"},
	} {
		rec, env := do(h, "GET", "/admin/dlq/export?"+c.q, "", adminHeaders)
		if rec.Code != 400 || env.Error == nil || env.Error.Code != c.code {
			t.Errorf("%s: %d %s", c.q, rec.Code, rec.Body)
		}
	}
	// A cursor of another filter is refused.
	seedRows(t, api.DB, 0)
	rec, _ = do(h, "GET", "/admin/dlq?limit=1", "", adminHeaders)
	var page struct {
		Data struct {
			NextCursor string `json:"next_cursor"`
		} `json:"data"`
	}
	_ = json.Unmarshal(rec.Body.Bytes(), &page)
	rec, _ = do(h, "GET", "/admin/dlq/export?limit=1&cursor="+url.QueryEscape(page.Data.NextCursor), "", adminHeaders)
	if rec.Code != 200 || rec.Header().Get("X-Export-Rows") != "4" {
		t.Fatalf("list cursor continues the export: %d %v", rec.Code, rec.Header())
	}
	rec, _ = do(h, "GET", "/admin/dlq/export?beer_id=b1&limit=1&cursor="+url.QueryEscape(page.Data.NextCursor), "", adminHeaders)
	if rec.Code != 400 {
		t.Fatalf("cursor of other filters: %d", rec.Code)
	}
}

func TestNeutralizeCell(t *testing.T) {
	for in, want := range map[string]string{"": "", "=1+2": "'=1+2", "+1": "'+1", "-1": "'-1", "@SUM(A1)": "'@SUM(A1)",
		"\tx": "'\tx", "\rx": "'\rx", "'x": "''x", "a=b": "a=b", "Beer": "Beer"} {
		if got := inspect.NeutralizeCell(in); got != want || unneutralize(got) != in {
			t.Errorf("%q: %q, want %q", in, got, want)
		}
	}
}

// With include_raw a response is bounded by bytes, not only rows: 120 rows of 100 KB bodies (12 MB) take more than one response,
// none larger than inspect.ExportMaxBytes plus one page of raw rows, and the
// responses, followed by X-Next-Cursor, hold every row once, in order.
func TestExportIsBoundedByBytes(t *testing.T) {
	api, _ := newDLQAPI(t)
	const n, size = 120, 100 << 10
	if _, err := api.DB.Exec(`WITH RECURSIVE s(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM s WHERE i + 1 < ?)
		INSERT INTO dlq_messages(message_id, row_key, failed_at, raw_message)
		SELECT 'big' || i, 'b' || i, 1000 + i, '{"pad":"' || printf('%.*c', ?, 'x') || '"}' FROM s`, n, size); err != nil {
		t.Fatal(err)
	}
	h := api.Handler()
	maxBody := inspect.ExportMaxBytes + inspect.ExportRawPageSize*(size+4<<10)
	for _, format := range []string{"ndjson", "csv"} {
		bodies := exportAll(t, h, "format="+format+"&include_raw=true&limit=100")
		if len(bodies) < 2 {
			t.Errorf("%s: %d rows of %d bytes in %d response", format, n, size, len(bodies))
		}
		var ids []string
		for i, b := range bodies {
			if len(b) > maxBody {
				t.Errorf("%s: response %d holds %d bytes, over %d", format, i, len(b), maxBody)
			}
			for _, line := range strings.Split(strings.TrimSuffix(b, "\n"), "\n") {
				if j := strings.Index(line, "big"); j >= 0 && !strings.HasPrefix(line, "id,") {
					id := line[j:]
					ids = append(ids, id[:strings.IndexAny(id, `",`)])
				}
			}
		}
		if len(ids) != n {
			t.Fatalf("%s: %d rows exported, want %d", format, len(ids), n)
		}
		for i, id := range ids {
			if want := fmt.Sprintf("big%d", n-1-i); id != want {
				t.Fatalf("%s: row %d is %s, want %s", format, i, id, want)
			}
		}
	}
}

// A page whose JSON is over D1's value limit (sqlitetest has it: 2,000,000
// bytes) is read again with half the rows, not answered with a 500: 12
// raw bodies of 100,000 control characters, six times that as JSON.
func TestExportHalvesAPageOverD1ValueLimit(t *testing.T) {
	api, _ := newDLQAPI(t)
	const n = 12
	if _, err := api.DB.Exec(`WITH RECURSIVE s(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM s WHERE i + 1 < ?)
		INSERT INTO dlq_messages(message_id, row_key, failed_at, raw_message)
		SELECT 'esc' || i, 'b' || i, 1000 + i, replace(printf('%.*c', 100000, 'x'), 'x', char(1)) FROM s`, n); err != nil {
		t.Fatal(err)
	}
	var rows int
	for _, b := range exportAll(t, api.Handler(), "format=ndjson&include_raw=true") {
		for _, line := range strings.Split(strings.TrimSuffix(b, "\n"), "\n") {
			var m dlq.Message
			var raw string
			if err := json.Unmarshal([]byte(line), &m); err != nil || json.Unmarshal(m.RawMessage, &raw) != nil || raw != strings.Repeat("\x01", 100_000) {
				t.Fatalf("line %.80q: %v", line, err)
			}
			rows++
		}
	}
	if rows != n {
		t.Fatalf("%d rows exported, want %d", rows, n)
	}
}

// A list page whose raw bodies are over D1's 2,000,000-byte value limit
// comes back shorter, with a cursor, instead of failing: walking it lists
// every row once (GET /admin/dlq?include_raw=true answered 500 before).
func TestListWithRawBodiesOverD1ValueLimitPagesShorter(t *testing.T) {
	api, _ := newDLQAPI(t)
	const n = 12
	if _, err := api.DB.Exec(`WITH RECURSIVE s(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM s WHERE i + 1 < ?)
		INSERT INTO dlq_messages(message_id, row_key, failed_at, raw_message)
		SELECT 'esc' || i, 'b' || i, 1000 + i, replace(printf('%.*c', 100000, 'x'), 'x', char(1)) FROM s`, n); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	cursor, pages := "", 0
	for ; pages < 20; pages++ {
		q := "/admin/dlq?status=all&include_raw=true&limit=100"
		if cursor != "" {
			q += "&cursor=" + url.QueryEscape(cursor)
		}
		rec, _ := do(api.Handler(), "GET", q, "", adminHeaders)
		if rec.Code != 200 {
			t.Fatalf("GET %s: %d %.200s", q, rec.Code, rec.Body)
		}
		var env struct {
			Data struct {
				Messages   json.RawMessage `json:"messages"`
				HasMore    bool            `json:"has_more"`
				NextCursor *string         `json:"next_cursor"`
			} `json:"data"`
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &env); err != nil {
			t.Fatal(err)
		}
		var msgs []dlq.Message
		if err := json.Unmarshal(env.Data.Messages, &msgs); err != nil {
			t.Fatal(err)
		}
		for _, m := range msgs {
			var raw string
			if seen[m.MessageID] || json.Unmarshal(m.RawMessage, &raw) != nil || raw != strings.Repeat("\x01", 100_000) {
				t.Fatalf("row %s seen twice or altered", m.MessageID)
			}
			seen[m.MessageID] = true
		}
		if !env.Data.HasMore {
			break
		}
		cursor = *env.Data.NextCursor
	}
	if len(seen) != n || pages < 2 {
		t.Fatalf("%d rows in %d pages, want %d rows over several pages", len(seen), pages+1, n)
	}
}

// Only an NDJSON export with include_raw carries the fields a copy of a
// row needs (dlq.MoveFieldNames); one without raw bodies does not (and
// reads no more than the list).
func TestExportAddsMoveFieldsOnlyWithRawBodies(t *testing.T) {
	api, _ := newDLQAPI(t)
	seedRows(t, api.DB, 2)
	for q, want := range map[string]bool{"format=ndjson": false, "format=ndjson&include_raw=true": true} {
		rec, _ := do(api.Handler(), "GET", "/admin/dlq/export?"+q, "", adminHeaders)
		lines := strings.Split(strings.TrimSpace(rec.Body.String()), "\n")
		if rec.Code != 200 || len(lines) != 2 {
			t.Fatalf("export %s: %d %s", q, rec.Code, rec.Body)
		}
		for _, l := range lines {
			for _, f := range dlq.MoveFieldNames {
				if strings.Contains(l, `"`+f+`":`) != want {
					t.Fatalf("export %s: field %s present %v, want %v: %s", q, f, !want, want, l)
				}
			}
		}
	}
}
