//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/internal/sqlitetest"
)

// refTable is the original worker's dlq_messages (bench/reference's
// migration) under another name, beside redrive's tables in the
// same local D1: its statements are run through POST /__dev/sql, so their
// rows read and written are D1's own count, as for redrive's.
const refTable = "ref_dlq_messages"

// refSchema returns bench/reference's migration for refTable.
func refSchema(t testing.TB) string {
	t.Helper()
	root, _ := sqlitetest.Root()
	b, err := os.ReadFile(filepath.Join(root, "bench", "reference", "migrations", "0001_dlq_messages.sql"))
	if err != nil {
		t.Fatal(err)
	}
	// Without its comments: wrangler d1 execute takes a --command that
	// starts with "--" for an option.
	var lines []string
	for _, l := range strings.Split(string(b), "\n") {
		if i := strings.Index(l, "--"); i >= 0 {
			l = l[:i]
		}
		if strings.TrimSpace(l) != "" {
			lines = append(lines, l)
		}
	}
	s := strings.ReplaceAll(strings.Join(lines, "\n"), "idx_dlq_", "ref_idx_dlq_")
	return strings.ReplaceAll(s, "dlq_messages", refTable)
}

// refRowsRun seeds n rows (the same as rowsRun's) into refTable and runs the
// original worker's statements for the same operations (bench/reference/src:
// its storage function and admin handlers): what the original reads and writes.
func refRowsRun(t *testing.T, w *Worker, n int) []rowsFigure {
	t.Helper()
	now := time.Now().UnixMilli()
	seed := strings.Replace(seedAdminSQL(n, now, false), "INSERT INTO dlq_messages", "INSERT INTO "+refTable, 1)
	w.Exec(t, refSchema(t)+"\n"+seed)
	base := w.Int(t, `SELECT MIN(id) FROM `+refTable)
	var out []rowsFigure
	add := func(name string, per int, stmts ...[]any) {
		t.Helper()
		f := rowsFigure{Name: name, Rows: n, Per: per}
		for _, r := range execMeasured(t, w, stmts...) {
			f.Read += r.RowsRead
			f.Written += r.RowsWritten
			f.Statements++
		}
		out = append(out, f)
	}
	q := func(sql string, args ...any) []any {
		return append([]any{strings.ReplaceAll(sql, "dlq_messages", refTable)}, args...)
	}
	dayAgo := time.Now().Add(-24 * time.Hour).UnixMilli()
	add("stats", 0,
		q(`SELECT status, COUNT(*) as count FROM dlq_messages GROUP BY status`),
		q(`SELECT failed_at FROM dlq_messages WHERE status = 'pending' ORDER BY failed_at ASC LIMIT 1`),
		q(`SELECT brewer, COUNT(*) as count FROM dlq_messages WHERE status = 'pending' AND brewer IS NOT NULL GROUP BY brewer ORDER BY count DESC LIMIT 10`),
		q(`SELECT COUNT(CASE WHEN status = 'replayed' AND replayed_at > ? THEN 1 END) as replayed_24h,
			COUNT(CASE WHEN status = 'acknowledged' AND acknowledged_at > ? THEN 1 END) as acknowledged_24h,
			COUNT(CASE WHEN failed_at > ? THEN 1 END) as new_failures_24h FROM dlq_messages`, dayAgo, dayAgo, dayAgo),
		q(`SELECT beer_id, beer_name, replay_count FROM dlq_messages WHERE status = 'pending' AND replay_count > 0 ORDER BY replay_count DESC LIMIT 10`))
	page := q(`SELECT * FROM dlq_messages WHERE 1=1 AND status = ? ORDER BY failed_at DESC, id DESC LIMIT ?`, "pending", 51)
	count := q(`SELECT COUNT(*) as count FROM dlq_messages WHERE 1=1 AND status = ?`, "pending")
	add("list, first page (50, pending)", 0, page, count)
	last := execMeasured(t, w, page)[0].Rows[49]
	add("list, next page", 0, q(`SELECT * FROM dlq_messages WHERE 1=1 AND status = ? AND (failed_at < ? OR (failed_at = ? AND id < ?))
		ORDER BY failed_at DESC, id DESC LIMIT ?`, "pending", last["failed_at"], last["failed_at"], last["id"], 51), count)
	add("list, first page of every status (100)", 0, q(`SELECT * FROM dlq_messages WHERE 1=1 ORDER BY failed_at DESC, id DESC LIMIT ?`, 101),
		q(`SELECT COUNT(*) as count FROM dlq_messages WHERE 1=1`))
	add("list, beer_id filter", 0, q(`SELECT * FROM dlq_messages WHERE 1=1 AND beer_id = ? ORDER BY failed_at DESC, id DESC LIMIT ?`, "beer-4242", 51),
		q(`SELECT COUNT(*) as count FROM dlq_messages WHERE 1=1 AND beer_id = ?`, "beer-4242"))

	pending := func(k int) int64 { return base + int64((k/13)*20+1+k%13) }
	idList := func(from, count int) (string, []any) {
		marks := make([]string, count)
		args := make([]any, count)
		for j := range marks {
			marks[j], args[j] = "?", pending(from+j)
		}
		return strings.Join(marks, ","), args
	}
	marks, args := idList(20_000, 99)
	add("acknowledge 99 ids", 99, q(`UPDATE dlq_messages SET status = 'acknowledged', acknowledged_at = ? WHERE id IN (`+marks+`) AND status = 'pending'`,
		append([]any{now}, args...)...))
	marks, args = idList(30_000, 50)
	add("replay 50 ids", 50,
		q(`UPDATE dlq_messages SET status = 'replaying' WHERE id IN (`+marks+`) AND status = 'pending'`, args...),
		q(`SELECT id, raw_message, replay_count FROM dlq_messages WHERE id IN (`+marks+`) AND status = 'replaying'`, args...),
		q(`UPDATE dlq_messages SET status = 'replayed', replayed_at = ?, replay_count = replay_count + 1 WHERE id IN (`+marks+`)`, append([]any{now}, args...)...))
	var capture [][]any
	prefix := unique("ref-cap")
	for i := range 100 {
		id := fmt.Sprintf("%s-%03d", prefix, i)
		capture = append(capture, q(`INSERT INTO dlq_messages (message_id, beer_id, beer_name, brewer, failed_at, failure_count, source_queue, raw_message, status)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'pending')
			ON CONFLICT(message_id) DO UPDATE SET failed_at = excluded.failed_at, failure_count = excluded.failure_count,
				raw_message = excluded.raw_message, status = 'pending'`,
			"msg-"+id, id, "Rows Beer", fmt.Sprintf("Brewer %d", i%7), now, 4, "beer-enrichment", fmt.Sprintf(`{"beer_id":%q}`, id)))
	}
	add("capture, 100 messages", 100, capture...)
	return out
}

// rowsTable is the rows figures of one table size, redrive's and the original's.
type rowsTable struct {
	Rows      int          `json:"rows"`
	Redrive   []rowsFigure `json:"redrive"`
	Reference []rowsFigure `json:"reference"`
	// Took is the time the size's run took, seeding included.
	Took string `json:"took"`
}

// benchRows measures the rows table at each size on a fresh worker.
func benchRows(t *testing.T, sizes ...int) []rowsTable {
	var out []rowsTable
	for _, n := range sizes {
		start := time.Now()
		tab := func() rowsTable {
			w, err := StartWorker(Options{Vars: rowsVars})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Stop()
			return rowsTable{Rows: n, Redrive: rowsRun(t, w, n), Reference: refRowsRun(t, w, n)}
		}()
		tab.Took = time.Since(start).Round(time.Second).String()
		out = append(out, tab)
		fmt.Fprintf(os.Stderr, "bench: rows at %d done in %s\n", n, tab.Took)
	}
	return out
}

// rowsMarkdown renders the tables: one line per operation, the sizes side
// by side, redrive then the original.
func rowsMarkdown(tabs []rowsTable) string {
	var b strings.Builder
	b.WriteString("\n| operation |")
	for _, tab := range tabs {
		fmt.Fprintf(&b, " redrive @%s read / written | original @%s |", short(tab.Rows), short(tab.Rows))
	}
	b.WriteString("\n| --- |")
	for range tabs {
		b.WriteString(" --- | --- |")
	}
	b.WriteString("\n")
	if len(tabs) == 0 {
		return b.String()
	}
	for i, f := range tabs[0].Redrive {
		fmt.Fprintf(&b, "| %s |", f.Name)
		for _, tab := range tabs {
			r := tab.Redrive[i]
			fmt.Fprintf(&b, " %d / %d |", r.Read, r.Written)
			ref := "—"
			for _, o := range tab.Reference {
				if o.Name == f.Name {
					ref = fmt.Sprintf("%d / %d", o.Read, o.Written)
				}
			}
			fmt.Fprintf(&b, " %s |", ref)
		}
		b.WriteString("\n")
	}
	return b.String()
}

func short(n int) string {
	if n%1_000_000 == 0 {
		return fmt.Sprintf("%dM", n/1_000_000)
	}
	return fmt.Sprintf("%dk", n/1000)
}

// TestRowsBench is the rows part of `make bench` alone (`make bench-rows`):
// D1 rows read and written per operation at 100,000 and 1,000,000 rows,
// redrive beside the original worker's statements. Written to
// bench-results/rows.json. Only with REDRIVE_BENCH=1; nothing is asserted
// here (TestD1RowsBudget asserts the budgets at 100,000 rows).
func TestRowsBench(t *testing.T) {
	if os.Getenv("REDRIVE_BENCH") == "" {
		t.Skip("benchmarks run with `make bench` / `make bench-rows` (REDRIVE_BENCH=1)")
	}
	tabs := benchRows(t, 100_000, 1_000_000)
	writeRows(t, tabs)
}

// writeRows prints the rows table and writes bench-results/rows.json.
func writeRows(t *testing.T, tabs []rowsTable) {
	root, _ := sqlitetest.Root()
	dir := filepath.Join(root, "bench-results")
	os.MkdirAll(dir, 0o755)
	js := mustJSON(tabs)
	if err := os.WriteFile(filepath.Join(dir, "rows.json"), js, 0o644); err != nil {
		t.Fatal(err)
	}
	fmt.Fprintln(os.Stderr, "\nD1 rows read / written per operation (D1's meta, summed per operation):"+rowsMarkdown(tabs))
}

func mustJSON(v any) []byte {
	js, _ := json.MarshalIndent(v, "", "  ")
	return js
}
