//go:build e2e

package e2e

import (
	"bytes"
	"fmt"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/dlq/relocation"
	"github.com/redrive/redrive/dlq/upkeep"
	"github.com/redrive/redrive/enrichment"
	"github.com/redrive/redrive/internal/promtext"
	"github.com/redrive/redrive/metrics"
)

// D1 bills rows read and rows written (docs/costs.md "What it costs"). These tests
// measure them in workerd, where every statement's meta is counted per
// operation (metrics.Meter, flushed after every operation with
// D1_USAGE_FLUSH_SECONDS=0) and exported by /admin/metrics. Rows are
// deterministic for a given table, unlike times, so the budgets are asserted.

// rowsVars make a worker write its D1 usage after every operation.
var rowsVars = map[string]string{"D1_USAGE_FLUSH_SECONDS": "0"}

// d1Usage reads the flushed D1 usage per operation from /admin/metrics.
func d1Usage(t testing.TB, w *Worker) map[string]metrics.Usage {
	t.Helper()
	r, err := w.Do(http.MethodGet, "/admin/metrics", nil, AdminHeaders())
	if err != nil || r.Status != http.StatusOK {
		t.Fatalf("GET /admin/metrics: %v %v", err, r)
	}
	page, err := promtext.Parse(string(r.Raw))
	if err != nil {
		t.Fatalf("metrics: %v", err)
	}
	out := map[string]metrics.Usage{}
	for key, v := range page.Samples {
		for _, f := range []struct {
			family string
			set    func(*metrics.Usage, int64)
		}{
			{"redrive_d1_rows_read_total", func(u *metrics.Usage, n int64) { u.RowsRead = n }},
			{"redrive_d1_rows_written_total", func(u *metrics.Usage, n int64) { u.RowsWritten = n }},
			{"redrive_d1_statements_total", func(u *metrics.Usage, n int64) { u.Statements = n }},
		} {
			prefix := f.family + `{op="`
			if strings.HasPrefix(key, prefix) {
				op := strings.TrimSuffix(strings.TrimPrefix(key, prefix), `"}`)
				u := out[op]
				f.set(&u, int64(v))
				out[op] = u
			}
		}
	}
	return out
}

// usageDelta is after - before for the operations matching match.
func usageDelta(before, after map[string]metrics.Usage, match func(op string) bool) metrics.Usage {
	var d metrics.Usage
	for op, a := range after {
		if !match(op) {
			continue
		}
		b := before[op]
		d.Statements += a.Statements - b.Statements
		d.RowsRead += a.RowsRead - b.RowsRead
		d.RowsWritten += a.RowsWritten - b.RowsWritten
	}
	return d
}

func opIs(name string) func(string) bool { return func(op string) bool { return op == name } }

// settledUsage reads the usage until two reads agree (a queue consumer
// flushes after it has acked, a moment after its rows are visible).
func settledUsage(t testing.TB, w *Worker) map[string]metrics.Usage {
	t.Helper()
	prev := d1Usage(t, w)
	for i := 0; i < 50; i++ {
		time.Sleep(200 * time.Millisecond)
		cur := d1Usage(t, w)
		same := true
		for op, u := range cur {
			if op != "GET /admin/metrics" && op != metrics.OpMeter && u != prev[op] {
				same = false
			}
		}
		if same {
			return cur
		}
		prev = cur
	}
	return prev
}

// rowsFigure is one operation's D1 rows, with its budget (0: none).
type rowsFigure struct {
	Name       string `json:"name"`
	Rows       int    `json:"rows"`
	Read       int64  `json:"rows_read"`
	Written    int64  `json:"rows_written"`
	Statements int64  `json:"statements"`
	// Per is how many items the operation handled (messages, ids); Read and
	// Written are totals.
	Per        int    `json:"per,omitempty"`
	MaxRead    int64  `json:"max_read,omitempty"`
	MaxWritten int64  `json:"max_written,omitempty"`
	Note       string `json:"note,omitempty"`
}

// sqlResult is one statement's answer from POST /__dev/sql.
type sqlResult struct {
	Rows        []map[string]any `json:"rows"`
	RowsRead    int64            `json:"rows_read"`
	RowsWritten int64            `json:"rows_written"`
}

// execMeasured runs statements through POST /__dev/sql and returns each
// one's rows and D1 meta.
func execMeasured(t testing.TB, w *Worker, stmts ...[]any) []sqlResult {
	t.Helper()
	var body struct {
		Statements []map[string]any `json:"statements"`
	}
	for _, s := range stmts {
		body.Statements = append(body.Statements, map[string]any{"sql": s[0], "args": append([]any{}, s[1:]...)})
	}
	r := w.Admin(t, http.MethodPost, "/__dev/sql", body)
	if r.Status != http.StatusOK {
		t.Fatalf("POST /__dev/sql: %d %s", r.Status, r.Raw)
	}
	var out []sqlResult
	r.Decode(t, &out)
	return out
}

// seedCapturedSQL is seedAdminSQL's redrive rows as this version captures
// them: with their content type and body hash (rows captured before
// migrations/0011 have neither; a replay sets the hash first, see
// "replay 50 ids captured before 0011").
//
// Their failures fall into 12 signatures (one per reason; the worker's
// normalisation would make them one, which would understate what moving
// rows between groups costs) on one version.
func seedCapturedSQL(n int, now int64) string {
	q := seedAdminSQL(n, now, true)
	q = strings.Replace(q, `first_failed_at, updated_at)`, `first_failed_at, updated_at, content_type, body_hash, signature, version)`, 1)
	i := strings.LastIndex(q, `FROM seq`)
	return q[:i] + `, 'json', lower(hex(randomblob(16))), printf('%016x', i % 12), 'seed-version' ` + q[i:]
}

// seedSignaturesSQL counts the seeded rows into dlq_signatures (as captures
// would have), as the beer pipeline's groups (5% of their rows are of
// another queue: the counts moved by replay and acknowledge are the same).
const seedSignaturesSQL = `INSERT INTO dlq_signatures(signature, class, text, pending, replaying, replayed, acknowledged,
		first_seen, last_seen, versions, sample_ids, source_queue)
	SELECT signature, 'transient', 'provider status <n> #' || signature, SUM(status = 'pending'), SUM(status = 'replaying'),
		SUM(status = 'replayed'), SUM(status = 'acknowledged'), MIN(failed_at), MAX(failed_at), '["seed-version"]', json_array(MIN(id)),
		'beer-enrichment'
	FROM dlq_messages WHERE signature IS NOT NULL GROUP BY signature
	ON CONFLICT(signature) DO UPDATE SET pending = excluded.pending, replaying = excluded.replaying,
		replayed = excluded.replayed, acknowledged = excluded.acknowledged`

// rowsRun seeds n DLQ rows (the bench's mix: 70% pending, 15% replayed, 15%
// acknowledged, 5% on another queue, 50 brewers, 12 reasons) on a fresh
// worker started with rowsVars and measures what each operation reads and
// writes. The same operations make the budget test (n = 100,000) and the
// bench's rows table (100,000 and 1,000,000).
func rowsRun(t *testing.T, w *Worker, n int) []rowsFigure { return rowsRunOps(t, w, n, false) }

// rowsRunOps is rowsRun; readOnly measures only the operations that write
// nothing (n 0: on the rows already there).
func rowsRunOps(t *testing.T, w *Worker, n int, readOnly bool) []rowsFigure {
	t.Helper()
	now := time.Now().UnixMilli()
	if n > 0 { // (0: measure the rows already there again)
		seedStart := time.Now()
		w.Exec(t, seedCapturedSQL(n, now))
		w.Exec(t, seedSignaturesSQL)
		t.Logf("seeded %d rows in %s", n, time.Since(seedStart).Round(time.Millisecond))
	}
	base := w.Int(t, `SELECT MIN(id) FROM dlq_messages`)
	var out []rowsFigure
	measure := func(name string, per int, match func(string) bool, do func()) rowsFigure {
		t.Helper()
		before := settledUsage(t, w)
		do()
		d := usageDelta(before, settledUsage(t, w), match)
		f := rowsFigure{Name: name, Rows: n, Read: d.RowsRead, Written: d.RowsWritten, Statements: d.Statements, Per: per}
		out = append(out, f)
		return f
	}
	get := func(path string) func() {
		return func() {
			if r := w.Admin(t, http.MethodGet, path, nil); r.Status != http.StatusOK {
				t.Fatalf("GET %s: %d %s", path, r.Status, r.Raw)
			}
		}
	}

	frequent := func(op string) bool {
		return op == "cron dlq_rescue" || op == "cron enrichment_catchup" || op == "cron alerts"
	}
	measure("5-minute cron (rescue, catch-up, alerts)", 0, frequent, func() { w.FireCron(t, cronFrequent, time.Now()) })
	measure("5-minute cron, a run without alert changes", 0, frequent, func() { w.FireCron(t, cronFrequent, time.Now().Add(time.Minute)) })
	measure("stats", 0, opIs("GET /admin/dlq/stats"), get("/admin/dlq/stats"))
	measure("stats of one pipeline (?pipeline=beers)", 0, opIs("GET /admin/dlq/stats"), get("/admin/dlq/stats?pipeline=beers"))
	var next string
	measure("list, first page (50, pending)", 0, opIs("GET /admin/dlq"), func() {
		r := w.Admin(t, http.MethodGet, "/admin/dlq", nil)
		var p struct {
			NextCursor *string `json:"next_cursor"`
			TotalCount int64   `json:"total_count"`
			Exact      bool    `json:"total_count_exact"`
		}
		r.Decode(t, &p)
		if p.NextCursor == nil || p.TotalCount != w.Int(t, `SELECT COUNT(*) FROM dlq_messages WHERE status = 'pending'`) || !p.Exact {
			t.Fatalf("first page: %s", r.Raw)
		}
		next = *p.NextCursor
	})
	measure("list, next page", 0, opIs("GET /admin/dlq"), get("/admin/dlq?cursor="+url.QueryEscape(next)))
	measure("list, first page of every status (100)", 0, opIs("GET /admin/dlq"), get("/admin/dlq?status=all&limit=100"))
	measure("list, beer_id filter", 0, opIs("GET /admin/dlq"), get("/admin/dlq?status=all&beer_id=beer-4242"))
	measure("groups, first page (GET /admin/dlq/groups)", 0, opIs("GET /admin/dlq/groups"), get("/admin/dlq/groups"))
	measure("groups of one pipeline (?pipeline=beers)", 0, opIs("GET /admin/dlq/groups"), get("/admin/dlq/groups?pipeline=beers"))
	measure("timeseries of one pipeline (?pipeline=beers)", 0, opIs("GET /admin/dlq/timeseries"), get("/admin/dlq/timeseries?pipeline=beers"))
	// The scrape's own statements are flushed after it: the next scrape shows them.
	d1Usage(t, w)
	before := d1Usage(t, w)
	after := d1Usage(t, w)
	d := usageDelta(before, after, opIs("GET /admin/metrics"))
	out = append(out, rowsFigure{Name: "metrics scrape (GET /admin/metrics)", Rows: n, Read: d.RowsRead, Written: d.RowsWritten, Statements: d.Statements})
	if readOnly {
		return out
	}
	// The daily dlq_tally job (after retention, which deletes nothing here:
	// every row is recent). Its first run counts the acknowledged and
	// replayed rows and the last 25 hours again (as after evictions by the
	// per-key cap): it reads in proportion to those; a run after which
	// retention deleted nothing reads a few rows.
	measure("daily dlq_tally, full recount (first run; after cap evictions)", 0, opIs("cron "+upkeep.TallyJobName),
		func() { w.FireCron(t, cronDaily, time.Now()) })
	measure("daily dlq_tally, retention deleted nothing", 0, opIs("cron "+upkeep.TallyJobName),
		func() { w.FireCron(t, cronDaily, time.Now().Add(time.Hour)) })
	// dlq_retention with a shorter retention than the longest (env.e2e:
	// tickets keeps 7 days, every other queue 30): when nothing became due
	// since its previous run (the two above), each window is empty.
	measure("daily dlq_retention, nothing new due", 0, opIs("cron "+upkeep.RetentionJobName),
		func() { w.FireCron(t, cronDaily, time.Now().Add(2*time.Hour)) })

	// Pending main-queue rows have i % 20 in 1..13.
	pending := func(k int) int64 { return base + int64((k/13)*20+1+k%13) }
	ids := func(from, count int) []int64 {
		out := make([]int64, count)
		for j := range out {
			out[j] = pending(from + j)
		}
		return out
	}
	measure("acknowledge 99 ids", 99, opIs("POST /admin/dlq/acknowledge"), func() {
		r := w.Admin(t, http.MethodPost, "/admin/dlq/acknowledge", map[string]any{"ids": ids(20_000, 99)})
		if err := countIs("acknowledged_count", 99)(r); err != nil {
			t.Fatal(err)
		}
	})
	replay := func(from int) func() {
		return func() {
			// The delay keeps the consumer idle while the test runs.
			r := w.Admin(t, http.MethodPost, "/admin/dlq/replay", map[string]any{"ids": ids(from, 50), "delay_seconds": 43200})
			if err := countIs("replayed_count", 50)(r); err != nil {
				t.Fatal(err)
			}
		}
	}
	measure("replay 50 ids", 50, opIs("POST /admin/dlq/replay"), replay(30_000))
	w.Exec(t, fmt.Sprintf(`UPDATE dlq_messages SET body_hash = NULL, content_type = NULL WHERE id IN (%s)`, strings.Trim(strings.Join(strings.Fields(fmt.Sprint(ids(40_000, 50))), ","), "[]")))
	measure("replay 50 ids captured before 0011", 50, opIs("POST /admin/dlq/replay"), replay(40_000))
	// The detail reads its row, its signature and the newest audit entries
	// with the ids they name (json_each's rows count as rows read): measured
	// once the acknowledge and the replays above are in the audit log. It
	// reads what the audit log holds (at most AuditWindow entries), not the table.
	measure("detail of one row (GET /admin/dlq/{id})", 0, opIs("GET /admin/dlq/{id}"),
		get(fmt.Sprintf("/admin/dlq/%d", w.Int(t, `SELECT MIN(id) FROM dlq_messages WHERE status = 'pending'`))))

	// Capture: 100 messages sent to the DLQ in one sendBatch (no attempt records).
	prefix := unique("rows-cap")
	msgs := make([]map[string]any, 100)
	for i := range msgs {
		msgs[i] = map[string]any{"body": beerBody(t, fmt.Sprintf("%s-%03d", prefix, i), "Rows Beer", map[string]any{"brewer": fmt.Sprintf("Brewer %d", i%7)})}
	}
	measure("capture, 100 messages", 100, opIs(metrics.QueueOp("beer-enrichment-dlq")), func() {
		if r := w.Admin(t, http.MethodPost, "/__dev/send", map[string]any{"queue": "beer-enrichment-dlq", "messages": msgs}); r.Status != http.StatusOK {
			t.Fatalf("send: %d %s", r.Status, r.Raw)
		}
		if err := pollFast(2*time.Minute, func() bool {
			return w.Int(t, `SELECT COUNT(*) FROM dlq_messages WHERE row_key LIKE ?`, prefix+"-%") == 100
		}); err != nil {
			t.Fatal(err)
		}
	})

	// Capture of a message that arrives alone (a quiet queue): the batch's
	// signature bookkeeping is not shared with other messages.
	alone := unique("rows-cap1")
	measure("capture, 1 message (a batch of its own)", 1, opIs(metrics.QueueOp("beer-enrichment-dlq")), func() {
		body := beerBody(t, alone, "Rows Beer", map[string]any{"brewer": "Brewer 1"})
		if r := w.Admin(t, http.MethodPost, "/__dev/send", map[string]any{"queue": "beer-enrichment-dlq", "messages": []map[string]any{{"body": body}}}); r.Status != http.StatusOK {
			t.Fatalf("send: %d %s", r.Status, r.Raw)
		}
		if err := pollFast(2*time.Minute, func() bool {
			return w.Int(t, `SELECT COUNT(*) FROM dlq_messages WHERE row_key = ?`, alone) == 1
		}); err != nil {
			t.Fatal(err)
		}
	})

	// Attempt tracking: the 4 records of a message that fails 4 times
	// (dlq.RecordSQL, as the enrichment consumer runs it), and their removal
	// by the capture of that message.
	msgID := unique("rows-att")
	var stmts [][]any
	for a := 1; a <= 4; a++ {
		entry := fmt.Sprintf(`{"at":%d,"attempt":%d,"class":"transient","status":500,"error":"status 500: fake","duration_ms":120,"version":"v","message_id":%q}`,
			now+int64(a)*1000, a, msgID)
		sig := dlq.SignatureOf("transient", "status 500: fake")
		stmts = append(stmts, []any{dlq.RecordSQL, msgID, "beer-enrichment", a, "transient", "status 500: fake", now + int64(a)*1000,
			entry, sig.Key, sig.Text, "v"})
	}
	var att rowsFigure
	att.Name, att.Rows, att.Per = "attempt tracking, 4 failed attempts of one message", n, 4
	for _, r := range execMeasured(t, w, stmts...) {
		att.Read += r.RowsRead
		att.Written += r.RowsWritten
		att.Statements++
	}
	del := execMeasured(t, w, []any{`DELETE FROM message_attempts WHERE message_id = ?`, msgID})[0]
	att.Read, att.Written, att.Statements = att.Read+del.RowsRead, att.Written+del.RowsWritten, att.Statements+1
	att.Note = "its removal by the capture included"
	out = append(out, att)
	return out
}

// captureWithAttempts has n beers fail every attempt (the fake provider
// answers 500): each message is retried with its attempt recorded, reaches
// the DLQ after ENRICHMENT_MAX_ATTEMPTS and is captured, its attempt record
// removed. It returns the capture's figure and the enrichment consumer's.
func captureWithAttempts(t *testing.T, w *Worker, n int) (capture, consumer rowsFigure) {
	t.Helper()
	token := unique("rows-fail")
	w.Provider.On(token, Behavior{Status: 500, Body: `{"error":{"message":"fake outage"}}`})
	var beers []enrichment.Beer
	for i := range n {
		beers = append(beers, enrichment.Beer{BeerID: fmt.Sprintf("%s-%03d", token, i), BeerName: token + fmt.Sprintf(" %03d", i), Brewer: "Failing Brewing"})
	}
	before := settledUsage(t, w)
	enrich(t, w, beers...)
	if err := pollFast(3*time.Minute, func() bool {
		return w.Int(t, `SELECT COUNT(*) FROM dlq_messages WHERE row_key LIKE ?`, token+"-%") == int64(n)
	}); err != nil {
		t.Fatalf("%d of %d failing beers captured: %v", w.Int(t, `SELECT COUNT(*) FROM dlq_messages WHERE row_key LIKE ?`, token+"-%"), n, err)
	}
	after := settledUsage(t, w)
	if left := w.Int(t, `SELECT COUNT(*) FROM message_attempts`); left != 0 {
		t.Errorf("%d attempt records left after the capture", left)
	}
	if bad := w.Int(t, `SELECT COUNT(*) FROM dlq_messages WHERE row_key LIKE ? AND (failure_count <> 4 OR failure_reason NOT LIKE 'transient: status 500%'
			OR json_array_length(history) <> 4 OR signature IS NULL OR version IS NULL)`, token+"-%"); bad != 0 {
		t.Errorf("%d captured rows without their 4 attempts, reason, history, signature and version", bad)
	}
	d := usageDelta(before, after, opIs(metrics.QueueOp("beer-enrichment-dlq")))
	capture = rowsFigure{Name: fmt.Sprintf("capture of %d messages that failed 4 attempts (attempt records removed)", n), Read: d.RowsRead, Written: d.RowsWritten, Statements: d.Statements, Per: n}
	d = usageDelta(before, after, opIs(metrics.QueueOp("beer-enrichment")))
	consumer = rowsFigure{Name: fmt.Sprintf("enrichment consumer, %d messages x 4 failed attempts (provider call, attempt record, beer, breaker, quota)", n),
		Read: d.RowsRead, Written: d.RowsWritten, Statements: d.Statements, Per: 4 * n}
	return capture, consumer
}

// TestD1RowsBudget: at 100,000 DLQ rows, every statement-heavy operation
// reads and writes no more rows than its budget (the original TypeScript
// worker's figures for acknowledge and replay), and none of them reads in
// proportion to the table.
func TestD1RowsBudget(t *testing.T) {
	// The tickets pipeline keeps its rows in TICKETS_DB (empty until the
	// move measured last).
	vars := map[string]string{"PIPELINES": pipelinesWithTickets(t, TicketsDB)}
	for k, v := range rowsVars {
		vars[k] = v
	}
	w := startWorkerWith(t, Options{Vars: vars, OwnDatabases: true})
	figs := rowsRun(t, w, 100_000)
	budgets := map[string][2]int64{ // max rows read, max rows written (0: none)
		"5-minute cron (rescue, catch-up, alerts)": {1_000, 0},
		"stats": {10_000, 0},
		// The stats' budget plus top_failure_reasons_sample's second walk
		// of the 3,000 newest pending rows (index entry and row: 6,000).
		"stats of one pipeline (?pipeline=beers)":            {16_000, 0},
		"list, first page (50, pending)":                     {5_000, 0},
		"list, next page":                                    {5_000, 0},
		"list, first page of every status (100)":             {5_000, 0},
		"groups, first page (GET /admin/dlq/groups)":         {1_000, 0},
		"groups of one pipeline (?pipeline=beers)":           {1_000, 0},
		"timeseries of one pipeline (?pipeline=beers)":       {1_000, 0},
		"detail of one row (GET /admin/dlq/{id})":            {1_000, 0},
		"metrics scrape (GET /admin/metrics)":                {1_000, 0},
		"daily dlq_retention, nothing new due":               {1_000, 0},
		"acknowledge 99 ids":                                 {0, 495}, // the original: 495
		"replay 50 ids":                                      {0, 451}, // the original: 50 × (4 claim + 5 final update); +1: the audit entry's principal (its index, 0036)
		"capture, 100 messages":                              {0, 420}, // 100 rows × 4 entries, attempt records, mark, tally, activity, signatures (a new one: its idx_dlq_signatures_incident entry, migrations/0037)
		"capture, 1 message (a batch of its own)":            {0, 11},
		"attempt tracking, 4 failed attempts of one message": {0, 8}, // 2 per failed attempt
	}
	for _, f := range figs {
		b, ok := budgets[f.Name]
		t.Logf("%-52s read %8d written %6d statements %3d", f.Name, f.Read, f.Written, f.Statements)
		if !ok {
			continue
		}
		if b[0] > 0 && f.Read > b[0] {
			t.Errorf("%s read %d rows, budget %d", f.Name, f.Read, b[0])
		}
		if b[1] > 0 && f.Written > b[1] {
			t.Errorf("%s wrote %d rows, budget %d", f.Name, f.Written, b[1])
		}
		if f.Statements == 0 {
			t.Errorf("%s: no statement measured", f.Name)
		}
		delete(budgets, f.Name)
	}
	if len(budgets) > 0 {
		t.Errorf("not measured: %v", budgets)
	}
	// What they read does not grow with the table: 400,000 rows more (the
	// same mix) and the reads of every operation that reads are measured again.
	w.Exec(t, strings.Replace(seedCapturedSQL(400_000, time.Now().UnixMilli()-3_000_000), `'m-' || i`, `'m5-' || i`, 2))
	at100k := map[string]rowsFigure{}
	for _, f := range figs {
		at100k[f.Name] = f
	}
	for _, f := range rowsRunOps(t, w, 0, true) {
		was, ok := at100k[f.Name]
		if !ok {
			continue
		}
		t.Logf("at 500,000 rows: %-44s read %8d (at 100,000: %d)", f.Name, f.Read, was.Read)
		if f.Read > was.Read+was.Read/10+50 {
			t.Errorf("%s reads %d rows at 500,000 rows, %d at 100,000: it grows with the table", f.Name, f.Read, was.Read)
		}
	}
	capture, consumer := captureWithAttempts(t, w, 20)
	t.Logf("%s: read %d written %d", capture.Name, capture.Read, capture.Written)
	t.Logf("%s: read %d written %d", consumer.Name, consumer.Read, consumer.Written)
	// The budget: 8 per message (the original writes 10).
	if capture.Written > 8*int64(capture.Per) {
		t.Errorf("%s wrote %d rows, budget 8 per message", capture.Name, capture.Written)
	}
	// The stats stay exact: what they report equals counting the rows.
	r := w.Admin(t, http.MethodGet, "/admin/dlq/stats", nil)
	var got stats
	r.Decode(t, &got)
	want := statsFromSQL(t, w, time.Now())
	got.OldestPendingAgeHours, want.OldestPendingAgeHours = 0, 0
	if !reflect.DeepEqual(got.ByStatus, want.ByStatus) || !reflect.DeepEqual(got.Last24h, want.Last24h) ||
		!reflect.DeepEqual(got.TopFailingBrewers, want.TopFailingBrewers) || !reflect.DeepEqual(got.BySourceQueue, want.BySourceQueue) ||
		!reflect.DeepEqual(got.RepeatFailures, want.RepeatFailures) {
		t.Errorf("stats differ from counting:\n got %+v\nwant %+v", got, want)
	}
	// Per-pipeline retention across databases: DB holding 10,000 rows a
	// 90-day pipeline left there when it moved to TICKETS_DB (and 1,000 of
	// a 30-day queue among them), on a worker of two databases
	// (e2e/retention_databases_test.go, which checks the same budgets).
	for _, f := range leftBehindRetentionRows(t, startRetentionWorker(t), 10_000, cronTime()) {
		checkRowsFigure(t, f)
	}
	// Moving 500 tickets rows from DB (500,000 rows) to TICKETS_DB: one
	// import request and one release call, whose window holds them.
	for _, f := range moveFigures(t, w, 500) {
		t.Logf("%-52s read %8d written %6d statements %3d", f.Name, f.Read, f.Written, f.Statements)
		b := map[string][2]int64{
			"import 500 moved rows (one request)":                {10_000, 2_500},
			"release 500 moved rows (one call, 5,000-id window)": {15_000, 3_000},
		}[f.Name]
		if f.Statements == 0 || f.Read > b[0] || f.Written > b[1] {
			t.Errorf("%s: read %d written %d in %d statements, budget %d read and %d written", f.Name, f.Read, f.Written, f.Statements, b[0], b[1])
		}
	}
}

// moveFigures seeds n tickets rows into DB (the tickets pipeline being on
// TICKETS_DB), exports them, and measures their import (one request) and
// their release (one call from the first of them), checking both did
// everything.
func moveFigures(t *testing.T, w *Worker, n int) []rowsFigure {
	t.Helper()
	prefix := unique("rows-move")
	w.Exec(t, seedTicketsSQL(n, prefix, time.Now().UnixMilli()))
	first := w.Int(t, `SELECT MIN(id) FROM dlq_messages WHERE message_id LIKE ?`, prefix+"-%")
	old := exportNDJSON(t, w, "pipeline=tickets&database=DB")
	if lines := bytes.Count(old, []byte("\n")); lines != n {
		t.Fatalf("%d lines exported, want %d", lines, n)
	}
	var out []rowsFigure
	before := settledUsage(t, w)
	if res := importNDJSON(t, w, old); res.Imported != n {
		t.Fatalf("import: %+v", res)
	}
	d := usageDelta(before, settledUsage(t, w), opIs("POST /admin/dlq/import"))
	out = append(out, rowsFigure{Name: "import 500 moved rows (one request)", Rows: n, Read: d.RowsRead, Written: d.RowsWritten, Statements: d.Statements, Per: n})
	before = settledUsage(t, w)
	r := w.Admin(t, http.MethodPost, "/admin/dlq/release", map[string]any{"pipeline": "tickets", "database": "DB", "after": first - 1})
	var res relocation.ReleaseResult
	r.Decode(t, &res)
	if r.Status != http.StatusOK || res.Released != n || res.Remaining != 0 {
		t.Fatalf("release: %d %s", r.Status, r.Raw)
	}
	d = usageDelta(before, settledUsage(t, w), opIs("POST /admin/dlq/release"))
	out = append(out, rowsFigure{Name: "release 500 moved rows (one call, 5,000-id window)", Rows: n, Read: d.RowsRead, Written: d.RowsWritten, Statements: d.Statements, Per: n})
	return out
}
