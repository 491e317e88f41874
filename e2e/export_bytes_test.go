//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/dlq/inspect"
)

// In workerd, an export with include_raw is bounded by bytes: 100 rows of
// 100 KB bodies take more than one response, none over inspect.ExportMaxBytes
// plus one page of raw rows, and together they hold every row once, newest failure first. (printf in D1 pads to
// 100,000 characters at most: the bodies are about 100 KB.)
func TestExportWithRawBodiesIsBoundedByBytes(t *testing.T) {
	w := shared
	source := unique("exbytes")
	const n, size = 100, 100 << 10
	base := time.Now().UnixMilli() - 10_000_000
	w.Exec(t, fmt.Sprintf(`WITH RECURSIVE s(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM s WHERE i + 1 < %d)
		INSERT INTO dlq_messages(message_id, last_message_id, row_key, failed_at, first_failed_at, updated_at, source_queue, status, raw_message)
		SELECT '%[2]s-' || i, '', '%[2]s-b', %[3]d + i, %[3]d + i, %[3]d, '%[2]s', 'acknowledged', '{"pad":"' || printf('%%.*c', %[4]d, 'x') || '"}' FROM s`,
		n, source, base, size))
	defer w.Exec(t, fmt.Sprintf(`DELETE FROM dlq_messages WHERE source_queue = '%s'`, source))
	pages := exportPages(t, w, "format=ndjson&include_raw=true&status=acknowledged&source_queue="+source)
	if len(pages) < 2 {
		t.Errorf("%d rows of %d bytes in %d response", n, size, len(pages))
	}
	maxBody := inspect.ExportMaxBytes + inspect.ExportRawPageSize*(size+4<<10)
	var got []string
	for i, p := range pages {
		t.Logf("response %d: %d bytes, %s rows", i, len(p.Raw), p.Header.Get("X-Export-Rows"))
		if len(p.Raw) > maxBody {
			t.Errorf("response %d holds %d bytes, over %d", i, len(p.Raw), maxBody)
		}
		for _, line := range strings.Split(strings.TrimSuffix(string(p.Raw), "\n"), "\n") {
			var m struct {
				MessageID  string `json:"message_id"`
				RawMessage string `json:"raw_message"`
			}
			if err := json.Unmarshal([]byte(line), &m); err != nil || len(m.RawMessage) < 90_000 {
				t.Fatalf("line %.100q: %v (raw %d bytes)", line, err, len(m.RawMessage))
			}
			got = append(got, m.MessageID)
		}
	}
	if len(got) != n {
		t.Fatalf("%d rows exported, want %d", len(got), n)
	}
	for i, id := range got {
		if want := fmt.Sprintf("%s-%d", source, n-1-i); id != want {
			t.Fatalf("row %d is %s, want %s", i, id, want)
		}
	}
}

// Raw bodies whose JSON is six times their size (control characters,
// escaped as \u00XX) make a page of 10 over D1's 2,000,000-byte value
// limit (SQLITE_TOOBIG): the export reads that page again with fewer rows
// instead of failing, and every row is exported.
func TestExportOfEscapedRawBodiesStaysUnderD1ValueLimit(t *testing.T) {
	w := shared
	source := unique("extoobig")
	const n = 12
	base := time.Now().UnixMilli() - 20_000_000
	w.Exec(t, fmt.Sprintf(`WITH RECURSIVE s(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM s WHERE i + 1 < %d)
		INSERT INTO dlq_messages(message_id, last_message_id, row_key, failed_at, first_failed_at, updated_at, source_queue, status, raw_message)
		SELECT '%[2]s-' || i, '', '%[2]s-b', %[3]d + i, %[3]d + i, %[3]d, '%[2]s', 'acknowledged', replace(printf('%%.*c', 100000, 'x'), 'x', char(1)) FROM s`,
		n, source, base))
	defer w.Exec(t, fmt.Sprintf(`DELETE FROM dlq_messages WHERE source_queue = '%s'`, source))
	pages := exportPages(t, w, "format=ndjson&include_raw=true&status=acknowledged&source_queue="+source)
	var got int
	for _, p := range pages {
		for _, line := range strings.Split(strings.TrimSuffix(string(p.Raw), "\n"), "\n") {
			var m struct {
				RawMessage string `json:"raw_message"`
			}
			if err := json.Unmarshal([]byte(line), &m); err != nil || m.RawMessage != strings.Repeat("\x01", 100_000) {
				t.Fatalf("line %.100q: %v", line, err)
			}
			got++
		}
	}
	if got != n {
		t.Fatalf("%d rows exported, want %d", got, n)
	}
}
