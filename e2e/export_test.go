//go:build e2e

package e2e

import (
	"database/sql"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

// exportRow is what both export formats are compared on.
type exportRow struct {
	ID            int64
	MessageID     string
	BeerID        string
	BeerName      string
	Brewer        string
	FailedAt      int64
	FailureReason string
	SourceQueue   string
	Status        string
	Raw           string
}

// exportPages follows X-Next-Cursor and returns each response.
func exportPages(t *testing.T, w *Worker, query string) []*Response {
	t.Helper()
	var out []*Response
	cursor := ""
	for len(out) < 20 {
		q := query
		if cursor != "" {
			q += "&cursor=" + url.QueryEscape(cursor)
		}
		r := w.Admin(t, http.MethodGet, "/admin/dlq/export?"+q, nil)
		if r.Status != http.StatusOK {
			t.Fatalf("export %s: %d %s", q, r.Status, r.Raw)
		}
		out = append(out, r)
		if cursor = r.Header.Get("X-Next-Cursor"); cursor == "" {
			return out
		}
	}
	t.Fatal("the export never ended")
	return nil
}

// Export in workerd: 10,000 rows in NDJSON and in CSV parse back to the rows
// in D1 (newest failure first), page by page with X-Next-Cursor, and a cell
// a spreadsheet would run as a formula is neutralised.
func TestExportTenThousandRowsBothFormats(t *testing.T) {
	w := shared
	prefix := fmt.Sprintf("ex%d", time.Now().UnixNano()%1_000_000)
	const n = 10_000
	base := int64(1_100_000_000_000) + time.Now().UnixNano()%1_000_000
	source := prefix + "-queue"
	w.Exec(t, seedSQL(prefix, n, 1, base, source)+fmt.Sprintf(`;
		UPDATE dlq_messages SET label_1 = '=HYPERLINK("http://evil")', label_2 = '@SUM(A1)', failure_reason = '+1, "two"'
		WHERE message_id = '%[1]s-m-5'`, prefix))
	// The shared worker's other tests count pending rows: leave none behind.
	defer w.Exec(t, fmt.Sprintf(`DELETE FROM dlq_messages WHERE source_queue = '%s'`, source))
	filter := fmt.Sprintf("source_queue=%s&failed_after=%d&failed_before=%d&include_raw=true", source, base-n, base+1)

	// The rows as D1 has them, newest failure first.
	rows, err := w.DB(t).Query(`SELECT id, message_id, row_key, label_1, label_2, failed_at, failure_reason, source_queue, status, raw_message
		FROM dlq_messages WHERE source_queue = ? ORDER BY failed_at DESC, id DESC`, source)
	if err != nil {
		t.Fatal(err)
	}
	var want []exportRow
	for rows.Next() {
		var r exportRow
		var name, brewer, reason, raw sql.NullString
		if err := rows.Scan(&r.ID, &r.MessageID, &r.BeerID, &name, &brewer, &r.FailedAt, &reason, &r.SourceQueue, &r.Status, &raw); err != nil {
			t.Fatal(err)
		}
		r.BeerName, r.Brewer, r.FailureReason, r.Raw = name.String, brewer.String, reason.String, raw.String
		want = append(want, r)
	}
	rows.Close()
	if len(want) != n {
		t.Fatalf("seeded %d rows", len(want))
	}

	start := time.Now()
	pages := exportPages(t, w, "format=ndjson&"+filter)
	t.Logf("ndjson: %d rows in %d requests (%v)", n, len(pages), time.Since(start).Round(time.Millisecond))
	var got []exportRow
	for _, p := range pages {
		if ct := p.Header.Get("Content-Type"); ct != "application/x-ndjson" {
			t.Fatalf("content type %q", ct)
		}
		lines := strings.Split(strings.TrimSuffix(string(p.Raw), "\n"), "\n")
		if p.Header.Get("X-Export-Rows") != fmt.Sprint(len(lines)) {
			t.Fatalf("X-Export-Rows %s for %d lines", p.Header.Get("X-Export-Rows"), len(lines))
		}
		for _, line := range lines {
			var m struct {
				ID            int64   `json:"id"`
				MessageID     string  `json:"message_id"`
				BeerID        string  `json:"beer_id"`
				BeerName      *string `json:"beer_name"`
				Brewer        *string `json:"brewer"`
				FailedAt      int64   `json:"failed_at"`
				FailureReason *string `json:"failure_reason"`
				SourceQueue   string  `json:"source_queue"`
				Status        string  `json:"status"`
				RawMessage    *string `json:"raw_message"`
			}
			if err := json.Unmarshal([]byte(line), &m); err != nil {
				t.Fatalf("line %.200q: %v", line, err)
			}
			s := func(p *string) string {
				if p == nil {
					return ""
				}
				return *p
			}
			got = append(got, exportRow{m.ID, m.MessageID, m.BeerID, s(m.BeerName), s(m.Brewer), m.FailedAt, s(m.FailureReason),
				m.SourceQueue, m.Status, s(m.RawMessage)})
		}
	}
	compareExport(t, "ndjson", got, want)

	start = time.Now()
	pages = exportPages(t, w, "format=csv&"+filter)
	t.Logf("csv: %d rows in %d requests (%v)", n, len(pages), time.Since(start).Round(time.Millisecond))
	got = got[:0]
	formula := false
	for _, p := range pages {
		if ct := p.Header.Get("Content-Type"); ct != "text/csv; charset=utf-8" {
			t.Fatalf("content type %q", ct)
		}
		recs, err := csv.NewReader(strings.NewReader(string(p.Raw))).ReadAll()
		if err != nil {
			t.Fatal(err)
		}
		head := strings.Join(recs[0], ",")
		if !strings.HasPrefix(head, "id,message_id,beer_id,beer_name,brewer,failed_at,failure_count,failure_reason,source_queue,status,") ||
			!strings.HasSuffix(head, ",raw_message,raw_encoding") {
			t.Fatalf("header row %q", head)
		}
		for _, rec := range recs[1:] {
			if rec[1] == prefix+"-m-5" {
				formula = true
				if rec[3] != `'=HYPERLINK("http://evil")` || rec[4] != "'@SUM(A1)" || rec[7] != `'+1, "two"` {
					t.Errorf("formula-looking cells not neutralised: %q", rec[:8])
				}
			}
			un := func(v string) string { return strings.TrimPrefix(v, "'") }
			var id, failedAt int64
			fmt.Sscan(rec[0], &id)
			fmt.Sscan(rec[5], &failedAt)
			got = append(got, exportRow{id, rec[1], rec[2], un(rec[3]), un(rec[4]), failedAt, un(rec[7]), rec[8], rec[9], un(rec[len(rec)-2])})
		}
	}
	if !formula {
		t.Error("the formula row was not exported")
	}
	compareExport(t, "csv", got, want)
}

func compareExport(t *testing.T, format string, got, want []exportRow) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d rows, want %d", format, len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("%s row %d:\n got %+v\nwant %+v", format, i, got[i], want[i])
		}
	}
}
