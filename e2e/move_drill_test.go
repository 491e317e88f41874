//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	api "github.com/redrive/redrive/client"
	"github.com/redrive/redrive/metrics"
)

// The move drill: the tickets pipeline, with drillRows rows in the shared
// database DB, is moved to its own database TICKETS_DB step by step as
// docs/operations.md "Move a pipeline to its own database" says (the
// switch is a restart with the new PIPELINES; export, import and release
// run through the redrive CLI), while captures (200 a minute), a replay
// task (60 a minute) and acknowledges and replays by id (one every
// 2 s) keep running. The test keeps its own record of every message sent,
// acknowledged and replayed; at the end every message is stored exactly
// once across both databases, with its bytes, its status and its
// replay_count, and each database's kept counts equal its rows.

// drillRowsDefault is how many rows the drill moves; E2E_DRILL_ROWS
// changes it.
const drillRowsDefault = 5000

// drillMaxRounds bounds the rounds of release (each after the first
// exported and imported again, the changed rows acted on).
const drillMaxRounds = 5

// drillMsg is the model of one message (by ticket, the pipeline's key).
type drillMsg struct {
	body string
	// main: sent to e2e-tickets (captured after its two deliveries fail),
	// else straight to its DLQ.
	main bool
	// acked: an acknowledge by id reported it acknowledged.
	acked bool
	// replays: ad-hoc replays by id that reported it sent.
	replays int
	// uncertain: an acknowledge or replay of it got no answer (the
	// worker answered 503 or not at all): its status and replay_count
	// are not checked.
	uncertain bool
}

// drillModel is the test's record of every message.
type drillModel struct {
	mu   sync.Mutex
	run  string
	msgs map[string]*drillMsg
	// keyOf maps every row id seen to its ticket (ids survive a move;
	// replay_task_rows names rows by id).
	keyOf map[int64]string
	next  int
	errs  []string
	ops   map[string]int
}

func (m *drillModel) failf(format string, args ...any) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.errs) < 50 {
		m.errs = append(m.errs, fmt.Sprintf(format, args...))
	}
}

func (m *drillModel) count(op string) {
	m.mu.Lock()
	m.ops[op]++
	m.mu.Unlock()
}

// newBodies records n new messages and returns their bodies.
func (m *drillModel) newBodies(n int, main bool) []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]string, n)
	for i := range out {
		key := fmt.Sprintf("%s-%d", m.run, m.next)
		out[i] = fmt.Sprintf(`{"ticket":%q,"team":"t%d","fail":true,"n":%d}`, key, m.next%5, m.next)
		m.msgs[key] = &drillMsg{body: out[i], main: main}
		m.next++
	}
	return out
}

// drillRow is a stored row of the pipeline.
type drillRow struct {
	db               string
	id               int64
	key, body        string
	status           string
	replayCount      int64
	messageID, lastM string
}

// drillDBs are read-only handles on the local D1 files of both databases.
type drillDBs map[string]*sql.DB

func openDrillDBs(t *testing.T, w *Worker) drillDBs {
	return drillDBs{"DB": w.DB(t), TicketsDB: w.DBOf(t, TicketsDB)}
}

// rows reads every row of the pipeline in both databases.
func (d drillDBs) rows() ([]drillRow, error) {
	var out []drillRow
	for name, db := range d {
		rs, err := db.Query(`SELECT id, row_key, raw_message, status, COALESCE(replay_count, 0), message_id, COALESCE(last_message_id, '')
			FROM dlq_messages WHERE source_queue = ?`, ticketsQueue)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		for rs.Next() {
			r := drillRow{db: name}
			if err := rs.Scan(&r.id, &r.key, &r.body, &r.status, &r.replayCount, &r.messageID, &r.lastM); err != nil {
				rs.Close()
				return nil, err
			}
			out = append(out, r)
		}
		rs.Close()
		if err := rs.Err(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// pick is a random pending row of the pipeline in database name.
func (d drillDBs) pick(name string) (id int64, key string, err error) {
	err = d[name].QueryRow(`SELECT id, row_key FROM dlq_messages WHERE source_queue = ? AND status = 'pending'
		ORDER BY random() LIMIT 1`, ticketsQueue).Scan(&id, &key)
	return id, key, err
}

// taskSent counts the rows each replay task sent, by ticket.
func (m *drillModel) taskSent(d drillDBs) (map[string]int, error) {
	out := map[string]int{}
	for name, db := range d {
		rs, err := db.Query(`SELECT dlq_id FROM replay_task_rows`)
		if err != nil {
			return nil, fmt.Errorf("%s replay_task_rows: %w", name, err)
		}
		for rs.Next() {
			var id int64
			if err := rs.Scan(&id); err != nil {
				rs.Close()
				return nil, err
			}
			m.mu.Lock()
			key, ok := m.keyOf[id]
			m.mu.Unlock()
			if !ok {
				key = "id " + strconv.FormatInt(id, 10)
			}
			out[key]++
		}
		rs.Close()
	}
	return out, nil
}

// note records the ids of rows (keyOf).
func (m *drillModel) note(rows []drillRow) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, r := range rows {
		if _, ok := m.keyOf[r.id]; !ok {
			m.keyOf[r.id] = r.key
		}
	}
}

// drillLoad is the traffic that keeps running during the move.
type drillLoad struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

func (l *drillLoad) stop() {
	l.cancel()
	l.wg.Wait()
}

// startDrillLoad runs, until stopped: 10 captures every 3 s (to
// e2e-tickets, whose consumer fails them twice before the DLQ); every 2 s
// an acknowledge or a replay by id of a random pending row of a random
// database (as an operator acts on ids a list shows); the 5-minute cron
// every 5 s (the replay task's steps).
func startDrillLoad(w *Worker, m *drillModel, d drillDBs) *drillLoad {
	ctx, cancel := context.WithCancel(context.Background())
	l := &drillLoad{cancel: cancel}
	every := func(period time.Duration, f func(i int)) {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			tk := time.NewTicker(period)
			defer tk.Stop()
			for i := 0; ; i++ {
				select {
				case <-ctx.Done():
					return
				case <-tk.C:
					f(i)
				}
			}
		}()
	}
	every(3*time.Second, func(int) {
		bodies := m.newBodies(10, true)
		msgs := make([]map[string]any, len(bodies))
		for i, b := range bodies {
			msgs[i] = map[string]any{"body": b, "content_type": "json"}
		}
		r, err := w.Do(http.MethodPost, "/__dev/send", map[string]any{"queue": ticketsQueue, "messages": msgs}, AdminHeaders())
		if err == nil && r.Status == http.StatusServiceUnavailable {
			// Not sent (one sendBatch): not in the model.
			m.mu.Lock()
			for _, b := range bodies {
				var v struct{ Ticket string }
				json.Unmarshal([]byte(b), &v)
				delete(m.msgs, v.Ticket)
			}
			m.ops["send refused (503)"]++
			m.mu.Unlock()
			return
		}
		if err != nil || r.Status != http.StatusOK {
			m.failf("capture send: %v %v", err, r)
			return
		}
		m.count("sent")
	})
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 7))
	every(2*time.Second, func(i int) {
		names := []string{"DB", TicketsDB}
		name := names[rng.IntN(2)]
		id, key, err := d.pick(name)
		for _, other := range names {
			if err != sql.ErrNoRows {
				break
			}
			name = other
			id, key, err = d.pick(name)
		}
		if err == sql.ErrNoRows {
			return
		}
		if err != nil {
			m.failf("pick a row: %v", err)
			return
		}
		route := "/admin/dlq/acknowledge"
		if i%2 == 1 {
			route = "/admin/dlq/replay"
		}
		body := map[string]any{"ids": []int64{id}}
		if i%2 == 0 {
			body["note"] = "drill"
		}
		r, err := w.Do(http.MethodPost, route, body, AdminHeaders())
		if err != nil || r.Status == http.StatusServiceUnavailable {
			m.mu.Lock()
			if msg := m.msgs[key]; msg != nil {
				msg.uncertain = true
			}
			m.ops[route+" unanswered"]++
			m.mu.Unlock()
			return
		}
		if r.Status == http.StatusConflict && name == "DB" && strings.Contains(string(r.Raw), `"code":"ROWS_MOVING"`) {
			// After the switch the rows left in DB are frozen until imported.
			m.count("refused (moving) DB")
			return
		}
		if r.Status != http.StatusOK {
			m.failf("%s %d: %d %s", route, id, r.Status, r.Raw)
			return
		}
		var res struct {
			Acknowledged int64 `json:"acknowledged_count"`
			Replayed     int   `json:"replayed_count"`
		}
		if err := json.Unmarshal(r.Data, &res); err != nil {
			m.failf("%s %d: %v", route, id, err)
			return
		}
		m.mu.Lock()
		defer m.mu.Unlock()
		msg := m.msgs[key]
		if msg == nil {
			m.errs = append(m.errs, fmt.Sprintf("%s %d: row of an unknown message %q", route, id, key))
			return
		}
		m.keyOf[id] = key
		if res.Acknowledged == 1 {
			msg.acked = true
			m.ops["acknowledged "+name]++
		}
		if res.Replayed == 1 {
			msg.replays++
			m.ops["replayed "+name]++
		}
	})
	every(5*time.Second, func(int) {
		if err := w.FireCronErr("*/5 * * * *", time.Time{}); err != nil {
			m.failf("cron: %v", err)
		}
	})
	return l
}

// settle waits (up to timeout) until every message is stored, no row is
// replaying and every row replayed by id only (not by the task, whose
// deliveries are minutes ahead) has failed again. It says what is left
// when it gives up.
func (m *drillModel) settle(d drillDBs, timeout time.Duration) error {
	var left string
	err := Poll(timeout, func() (bool, error) {
		rows, err := d.rows()
		if err != nil {
			return false, err
		}
		m.note(rows)
		sent, err := m.taskSent(d)
		if err != nil {
			return false, err
		}
		stored := map[string]bool{}
		replaying, waiting := 0, 0
		m.mu.Lock()
		for _, r := range rows {
			stored[r.key] = true
			if r.status == "replaying" {
				replaying++
			}
			if msg := m.msgs[r.key]; r.status == "replayed" && msg != nil && msg.replays > 0 && sent[r.key] == 0 {
				waiting++
			}
		}
		missing := 0
		for k := range m.msgs {
			if !stored[k] {
				missing++
			}
		}
		m.mu.Unlock()
		left = fmt.Sprintf("%d messages not stored, %d rows replaying, %d replayed by id not back", missing, replaying, waiting)
		return missing == 0 && replaying == 0 && waiting == 0, nil
	})
	if err != nil {
		return fmt.Errorf("%v: %s", err, left)
	}
	return nil
}

// check compares the stored rows with the model: every message once, with
// its body, status and replay_count; returns the differences.
func (m *drillModel) check(d drillDBs) []string {
	rows, err := d.rows()
	if err != nil {
		return []string{err.Error()}
	}
	m.note(rows)
	sent, err := m.taskSent(d)
	if err != nil {
		return []string{err.Error()}
	}
	byKey := map[string][]drillRow{}
	for _, r := range rows {
		byKey[r.key] = append(byKey[r.key], r)
	}
	var bad []string
	kinds := map[string]int{}
	add := func(kind, format string, args ...any) {
		kinds[kind]++
		if kinds[kind] <= 5 {
			bad = append(bad, kind+": "+fmt.Sprintf(format, args...))
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for k := range byKey {
		if m.msgs[k] == nil {
			add("unknown", "%s: %+v", k, byKey[k])
		}
	}
	for k, msg := range m.msgs {
		rs := byKey[k]
		if len(rs) != 1 {
			add("not stored once", "%s: %d rows %+v (replayed by id %d, by the task %d, acknowledged %v)", k, len(rs), rs, msg.replays, sent[k], msg.acked)
			continue
		}
		r := rs[0]
		want := int64(msg.replays + sent[k])
		switch {
		case msg.uncertain && r.body == msg.body:
		case r.body != msg.body:
			add("body", "%s: %q, sent %q", k, r.body, msg.body)
		case msg.acked != (r.status == "acknowledged"):
			add("status", "%s: %s id %d %s, acknowledged %v", k, r.db, r.id, r.status, msg.acked)
		case r.replayCount != want:
			add("replay_count", "%s: %s id %d replay_count %d, replayed by id %d and by the task %d", k, r.db, r.id, r.replayCount, msg.replays, sent[k])
		case r.status == "replayed" && sent[k] == 0:
			add("status", "%s: %s id %d replayed, not back after its replay by id", k, r.db, r.id)
		case r.status != "pending" && r.status != "acknowledged" && r.status != "replayed":
			add("status", "%s: %s id %d %s", k, r.db, r.id, r.status)
		}
	}
	for kind, n := range kinds {
		if n > 5 {
			bad = append(bad, fmt.Sprintf("%s: %d in all", kind, n))
		}
	}
	// Kept counts equal the rows, per database and status.
	for name, db := range d {
		q := func(sqlText string) map[string]int64 {
			out := map[string]int64{}
			rs, err := db.Query(sqlText, ticketsQueue)
			if err != nil {
				bad = append(bad, fmt.Sprintf("%s: %v", name, err))
				return out
			}
			defer rs.Close()
			for rs.Next() {
				var s string
				var n int64
				rs.Scan(&s, &n)
				if n != 0 {
					out[s] = n
				}
			}
			return out
		}
		have := q(`SELECT status, COUNT(*) FROM dlq_messages WHERE source_queue = ? GROUP BY status`)
		kept := q(`SELECT status, SUM(n) FROM dlq_tally WHERE source_queue = ? GROUP BY status`)
		if fmt.Sprint(have) != fmt.Sprint(kept) {
			bad = append(bad, fmt.Sprintf("kept counts of %s: %v, rows %v", name, kept, have))
		}
	}
	sort.Strings(bad)
	return bad
}

// opUsage is op's D1 usage since before, read once two reads agree.
func opUsage(t *testing.T, w *Worker, before map[string]metrics.Usage, op string) metrics.Usage {
	t.Helper()
	prev := usageDelta(before, d1Usage(t, w), opIs(op))
	for range 25 {
		time.Sleep(200 * time.Millisecond)
		cur := usageDelta(before, d1Usage(t, w), opIs(op))
		if cur == prev {
			return cur
		}
		prev = cur
	}
	return prev
}

func addUsage(a, b metrics.Usage) metrics.Usage {
	return metrics.Usage{Statements: a.Statements + b.Statements, RowsRead: a.RowsRead + b.RowsRead, RowsWritten: a.RowsWritten + b.RowsWritten}
}

// TestMoveDrill runs with E2E_MOVE_DRILL=1 only (12 to 16 minutes on a
// 2-core machine, beyond the e2e suite's budget in CI):
//
//	E2E_MOVE_DRILL=1 go test -count=1 -tags e2e -timeout 60m -run '^TestMoveDrill$' -v ./e2e
func TestMoveDrill(t *testing.T) {
	if os.Getenv("E2E_MOVE_DRILL") == "" {
		t.Skip("the move drill runs with E2E_MOVE_DRILL=1 (docs/operations.md \"Move a pipeline to its own database\")")
	}
	n := drillRowsDefault
	if s := os.Getenv("E2E_DRILL_ROWS"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v < 100 {
			t.Fatalf("E2E_DRILL_ROWS=%q: want a number of at least 100", s)
		}
		n = v
	}
	start := time.Now()
	phase := func(what string) { t.Logf("%6.1fs %s", time.Since(start).Seconds(), what) }
	persist, err := os.MkdirTemp("", "redrive-e2e-drill-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if os.Getenv("E2E_KEEP_STATE") == "" {
			os.RemoveAll(persist)
		}
	})
	// Steps 1 and 2: TICKETS_DB bound and migrated (OwnDatabases), the
	// pipeline still on DB.
	vars := map[string]string{"D1_USAGE_FLUSH_SECONDS": "0", "PIPELINES": pipelinesWithTickets(t, "DB")}
	w := startWorkerWith(t, Options{ExtraConfigs: []string{jsConsumerConfig}, Persist: persist, Vars: vars, OwnDatabases: true})
	d := openDrillDBs(t, w)
	m := &drillModel{run: fmt.Sprintf("D%d", time.Now().UnixNano()%1_000_000_000), msgs: map[string]*drillMsg{},
		keyOf: map[int64]string{}, ops: map[string]int{}}
	phase("worker started, tickets on DB")

	// n rows of the pipeline in DB, captured from its DLQ.
	for sent := 0; sent < n; {
		k := min(100, n-sent)
		bodies := m.newBodies(k, false)
		w.sendJSON(t, "e2e-tickets-dlq", bodies...)
		sent += k
	}
	Eventually(t, 5*time.Minute, "the seeded rows captured into DB", func() bool {
		return w.Int(t, `SELECT COUNT(*) FROM dlq_messages WHERE source_queue = ?`, ticketsQueue) == int64(n)
	})
	phase(fmt.Sprintf("%d rows captured into DB", n))

	// The replay task over the pipeline (in DB), and the load.
	ctx := context.Background()
	oldTask := drillTask(t, ctx, w)
	load := startDrillLoad(w, m, d)
	Eventually(t, 2*time.Minute, "some traffic before the switch", func() bool {
		m.mu.Lock()
		defer m.mu.Unlock()
		return m.ops["sent"] >= 5 && m.ops["acknowledged DB"] >= 3 && m.ops["replayed DB"] >= 3
	})
	load.stop()
	// The local queues do not outlive wrangler dev: let what is in
	// flight arrive before the restart (a deploy loses nothing).
	if err := m.settle(d, 2*time.Minute); err != nil {
		t.Fatalf("before the switch: %v", err)
	}
	phase("traffic before the switch done")

	// Step 3: switch the pipeline (deploy: the worker again, tickets on
	// TICKETS_DB, on the same local state).
	w.Stop()
	vars["PIPELINES"] = pipelinesWithTickets(t, TicketsDB)
	w = startWorkerWith(t, Options{ExtraConfigs: []string{jsConsumerConfig}, Persist: persist, Vars: vars, OwnDatabases: true})
	d = openDrillDBs(t, w)
	load = startDrillLoad(w, m, d)
	// The pipeline's replay task in DB pauses itself at its next step
	// (its rows there are frozen); it is created again over the
	// pipeline, in its own database.
	env := cliEnv(w, nil)
	Eventually(t, 2*time.Minute, "the replay task in DB paused by its step", func() bool {
		return w.Int(t, `SELECT COUNT(*) FROM replay_tasks WHERE id = ? AND state = 'paused'`, oldTask) == 1
	})
	newTask := drillTask(t, ctx, w)
	if w.IntOf(t, TicketsDB, `SELECT COUNT(*) FROM replay_tasks WHERE id = ?`, newTask) != 1 {
		t.Fatalf("the new replay task %d is not in TICKETS_DB", newTask)
	}
	stopped := false
	defer func() {
		if !stopped {
			load.stop()
		}
	}()
	phase("switched: tickets on TICKETS_DB, traffic running")
	Eventually(t, 2*time.Minute, "captures into TICKETS_DB", func() bool {
		return w.IntOf(t, TicketsDB, `SELECT COUNT(*) FROM dlq_messages WHERE source_queue = ?`, ticketsQueue) > 0
	})

	// Steps 4 to 6 with the CLI. A row released reports changed or not
	// imported is exported and imported again (the import merges a newer
	// version into its copy), then released again, until nothing is left.
	dir := t.TempDir()
	var exportCost, importCost, releaseCost metrics.Usage
	var released int
	exported := 0
	moveStart := time.Now()
	for round := 1; ; round++ {
		file := filepath.Join(dir, fmt.Sprintf("tickets-%d.ndjson", round))
		before := d1Usage(t, w)
		drillCLI(t, ctx, env, "export", "--pipeline", "tickets", "--database", "DB", "--include-raw", "--status", "all", "-o", file)
		exportCost = addUsage(exportCost, opUsage(t, w, before, "GET /admin/dlq/export"))
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		lines := bytes.Count(data, []byte("\n"))
		exported += lines
		phase(fmt.Sprintf("round %d: exported %d rows from DB", round, lines))
		if lines > 0 {
			before = d1Usage(t, w)
			out := drillCLI(t, ctx, env, "import", file, "--json")
			importCost = addUsage(importCost, opUsage(t, w, before, "POST /admin/dlq/import"))
			phase(fmt.Sprintf("round %d: import %s", round, strings.TrimSpace(out.stdout)))
		}
		before = d1Usage(t, w)
		out := drillCLI(t, ctx, env, "release", "tickets", "DB", "--json")
		releaseCost = addUsage(releaseCost, opUsage(t, w, before, "POST /admin/dlq/release"))
		var res api.ReleaseResult
		if err := json.Unmarshal([]byte(out.stdout), &res); err != nil {
			t.Fatalf("release --json: %v\n%s", err, out.stdout)
		}
		released += res.Released
		phase(fmt.Sprintf("round %d: released %d, not imported %d, changed %d, remaining %d", round, res.Released, res.NotImported, res.Changed, res.Remaining))
		if res.NotImported == 0 && res.Changed == 0 && res.Remaining == 0 {
			break
		}
		if round == drillMaxRounds {
			rows, _ := d.rows()
			var left []drillRow
			for _, r := range rows {
				if r.db == "DB" && len(left) < 10 {
					left = append(left, r)
				}
			}
			t.Errorf("the move does not finish after %d rounds: %+v; rows left in DB (first 10): %+v", round, res, left)
			break
		}
	}
	moveTime := time.Since(moveStart)

	// Step 7, with the traffic stopped and settled: every message once.
	load.stop()
	stopped = true
	if err := m.settle(d, 2*time.Minute); err != nil {
		t.Errorf("after the move: %v", err)
	}
	if left := w.Int(t, `SELECT COUNT(*) FROM dlq_messages WHERE source_queue = ?`, ticketsQueue); left != 0 {
		t.Errorf("DB keeps %d rows of the pipeline after the move", left)
	}
	m.mu.Lock()
	errs, ops, total := m.errs, fmt.Sprint(m.ops), len(m.msgs)
	m.mu.Unlock()
	for _, e := range errs {
		t.Errorf("traffic: %s", e)
	}
	if bad := m.check(d); len(bad) > 0 {
		t.Errorf("the stored rows differ from the model (%d messages; %s):\n%s", total, ops, strings.Join(bad, "\n"))
	}
	per := func(u metrics.Usage) string {
		return fmt.Sprintf("%d statements, %.0f rows read, %.0f written per 1,000 rows", u.Statements,
			float64(u.RowsRead)*1000/float64(max(released, 1)), float64(u.RowsWritten)*1000/float64(max(released, 1)))
	}
	t.Logf("moved %d rows (%d exported in all) in %s with %d messages in the model (%s): export %s; import %s; release %s",
		released, exported, moveTime.Round(time.Second), total, ops, per(exportCost), per(importCost), per(releaseCost))
	all := addUsage(addUsage(exportCost, importCost), releaseCost)
	t.Logf("in all: %s", per(all))
	phase("done")
}

// drillCLI runs a step of the move with the CLI; a step cut short by
// workerd restarting the worker mid-request (its own 503, not the
// worker's envelope, which the contract check reports) is run again, as
// docs/operations.md says of an interrupted import: every step is
// idempotent.
func drillCLI(t *testing.T, ctx context.Context, env map[string]string, args ...string) cliResult {
	t.Helper()
	for attempt := 1; ; attempt++ {
		r := runCLI(t, ctx, env, "", args...)
		if r.code == 0 || attempt == 3 || !strings.Contains(r.stderr, "restarted mid-request") {
			return r.wantCode(t, 0, args[0])
		}
		t.Logf("redrive %s: cut short by a restart of the worker (%s); run again", args[0], strings.TrimSpace(r.stderr))
	}
}

// drillTask creates a replay task over the tickets pipeline at 60 a
// minute with the CLI and returns its id.
func drillTask(t *testing.T, ctx context.Context, w *Worker) int64 {
	t.Helper()
	out := runCLI(t, ctx, cliEnv(w, nil), "", "tasks", "create", "--pipeline", "tickets", "--rate", "60", "--yes", "--json").wantCode(t, 0, "tasks create")
	var task struct {
		ID int64 `json:"id"`
	}
	if err := json.Unmarshal([]byte(out.stdout), &task); err != nil || task.ID == 0 {
		t.Fatalf("tasks create --json: %v\n%s", err, out.stdout)
	}
	return task.ID
}
