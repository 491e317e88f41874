package relocation

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/config"
	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/dlq/dlqtest"
	"github.com/redrive/redrive/dlq/inspect"
	"github.com/redrive/redrive/dlq/resolve"
	"github.com/redrive/redrive/dlq/upkeep"
	"github.com/redrive/redrive/internal/sqlitetest"
	"github.com/redrive/redrive/jobs"
	"github.com/redrive/redrive/queue"
	"github.com/redrive/redrive/queue/queuetest"
	"github.com/redrive/redrive/sqlbatch"
)

// moveSeed reruns one sequence of TestMoveProperties: go test ./dlq/relocation -run
// TestMoveProperties -args -move.seed 17 (or MOVE_PROPERTY_SEED=17).
var moveSeed = flag.Int64("move.seed", -1, "run only this seed of TestMoveProperties")

// movePropertySequences is how many sequences TestMoveProperties runs;
// mutation_test.go lowers it for `make mutate`.
var movePropertySequences = 200

// Random interleavings of capture, DLQ redelivery, repeat failures of
// replayed messages, ad-hoc replay (ids and filter), replay-task steps,
// acknowledge (ids and filter), retention (age and per-key cap, the clock
// moved on by days), the switch of a pipeline to a database of its own,
// export, import and release, over three databases (DB and two pipelines'
// own), each checked after every step against a model of the messages:
//
//   - every kept count (dlq_tally, dlq_activity, dlq_signatures) equals
//     counting the rows, in every database;
//   - every message the model holds is stored somewhere, with its bytes
//     (raw body, content type); while its pipeline's move is under way it
//     may have a copy in each of the two databases, one of which carries
//     every action on it (status, replay_count); no row is a message the
//     model does not know;
//   - a row retention deletes was due: acknowledged or replayed, and past
//     its pipeline's retention_days (wherever it lies), or over the cap of
//     its queue and key (DLQ_MAX_ROWS_PER_KEY newer rows of the same
//     queue and key in its database);
//   - actions by id on the rows left in DB after the switch are refused
//     (ROWS_MOVING), replay tasks there pause, and no such row changes
//     after its export;
//   - a move ends (the driver exports, imports and releases until the old
//     database holds none of the pipeline's rows); then every message is
//     stored exactly once, with its bytes, its status, its replay_count
//     and every acknowledge by id in the audit of the database it lies in.
//
// MOVE_PROPERTY_SEQUENCES sets how many sequences (default 200, 30 under
// the mutation build tag); a failure prints the seed and the trace.
func TestMoveProperties(t *testing.T) {
	t.Parallel()
	n := movePropertySequences
	if testing.Short() {
		n = 30
	}
	if v, err := strconv.Atoi(os.Getenv("MOVE_PROPERTY_SEQUENCES")); err == nil && v > 0 {
		n = v
	}
	seed := *moveSeed
	if v, err := strconv.ParseInt(os.Getenv("MOVE_PROPERTY_SEED"), 10, 64); err == nil {
		seed = v
	}
	if seed >= 0 {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) { moveSequence(t, uint64(seed)) })
		return
	}
	moveSeen = moveCoverage{}
	for s := range uint64(n) {
		t.Run(fmt.Sprint("seed", s), func(t *testing.T) { moveSequence(t, s) })
	}
	// The sequences reach what the fixes are about: repeat failures
	// continuing a row left in DB (borrowed), actions refused on rows
	// that move, and replay tasks paused in DB.
	t.Logf("move coverage over %d sequences: %+v", n, moveSeen)
	if n >= 100 && (moveSeen.borrowed == 0 || moveSeen.refused == 0 || moveSeen.paused == 0) {
		t.Errorf("the sequences did not reach every case of a move: %+v", moveSeen)
	}
}

// The pipelines of the property test: beers stays in DB; orders and
// tickets start there and may each move to a database of their own. The
// keys of orders and tickets take the same values, and each pipeline has
// its own retention, apart from DLQ_RETENTION_DAYS (moveMaxAge).
const movePipelinesJSON = `[
{"name":"beers","queue":"beer-enrichment","dlq":"beer-enrichment-dlq","producer":"ENRICHMENT_QUEUE","key":"/beer_id","consumer":"redrive"},
{"name":"orders","queue":"orders","dlq":"orders-dlq","producer":"ORDERS","key":"/order","consumer":"external","retention_days":1%s},
{"name":"tickets","queue":"tickets","dlq":"tickets-dlq","producer":"TICKETS","key":"/ticket","consumer":"external","retention_days":4%s}]`

const (
	moveMaxAge = 2 * 24 * time.Hour
	moveCap    = 2
)

var (
	movePipelineNames = []string{"beers", "orders", "tickets"}
	moveQueues        = map[string]string{"beers": "beer-enrichment", "orders": "orders", "tickets": "tickets"}
	moveOwnDB         = map[string]string{"orders": "ORDERS_DB", "tickets": "TICKETS_DB"}
	moveKeyField      = map[string]string{"beers": "beer_id", "orders": "order", "tickets": "ticket"}
)

// mmsg is a message as the model knows it: what its one row must hold.
type mmsg struct {
	id       string // the message id it was first captured with (message_id)
	pipeline string
	body     string
	ctype    string
	status   string
	replays  int64
	acks     int // acknowledges by id that named its row
	last     string
	seen     []string // the model's changes, for failures: "step: status"
}

func (m *mmsg) set(w *moveWorld, status string) {
	m.seen = append(m.seen, fmt.Sprintf("%d:%s", len(w.trace), status))
	m.status = status
}

// moveState is where a pipeline's move stands.
type moveState struct {
	switched bool
	done     bool
	lines    [][]byte        // exported lines not imported yet
	exported map[string]bool // message ids exported so far
	after    int64           // release position
	pass     struct{ released, notImported, changed int }
}

// moveRow is a row as the checks read it.
type moveRow struct {
	db                 string
	id                 int64
	msgID, queue, key  string
	status             string
	replays            int64
	raw, ctype         string
	failedAt, actionAt int64
	updatedAt          int64
	lastMsgID          string
}

// moveSender sends, failing one send in 15, and keeps what went out.
type moveSender struct {
	rng  *rand.Rand
	sent []queue.Outgoing
}

func (s *moveSender) SendBatch(_ context.Context, _ string, msgs []queue.Outgoing) error {
	if s.rng.IntN(15) == 0 {
		return errors.New("queue unavailable")
	}
	s.sent = append(s.sent, msgs...)
	return nil
}

// moveTask is a replay task: its database and pipeline.
type moveTask struct {
	db, pipeline string
	id           int64
}

type moveWorld struct {
	t     *testing.T
	seed  uint64
	rng   *rand.Rand
	clk   *taskClock
	dbs   map[string]*sql.DB // by binding
	names []string           // DB, ORDERS_DB, TICKETS_DB
	d     dlq.Databases
	ps    dlq.Pipelines
	snd   *moveSender
	msgs  map[string]*mmsg // by first message id
	// deleted are the messages retention deleted (an import may bring one back).
	deleted map[string]*mmsg
	// alias maps the message id of a repeat failure to its message.
	alias  map[string]*mmsg
	order  []string
	byBody map[string]*mmsg
	moves  map[string]*moveState
	tasks  []moveTask
	n      int
	trace  []string
}

func (w *moveWorld) fail(format string, args ...any) {
	w.t.Helper()
	w.t.Fatalf("seed %d (rerun: MOVE_PROPERTY_SEED=%d go test ./dlq/relocation -run TestMoveProperties)\ntrace: %s\n%s", w.seed, w.seed,
		strings.Join(w.trace, "\n  "), fmt.Sprintf(format, args...))
}

// configure sets the pipelines (the switched ones naming their database)
// and the Databases they give.
func (w *moveWorld) configure() {
	w.t.Helper()
	db := func(p string) string {
		if w.moves[p].switched {
			return fmt.Sprintf(`,"database":%q`, moveOwnDB[p])
		}
		return ""
	}
	ps, problems := config.ParsePipelines(fmt.Sprintf(movePipelinesJSON, db("orders"), db("tickets")), 100, 24*time.Hour, moveMaxAge)
	if len(problems) != 0 {
		w.t.Fatal(problems)
	}
	w.ps = ps
	others := map[string]dlq.Store{}
	for _, n := range w.names[1:] {
		others[n] = dlq.Store{DB: w.dbs[n], Batch: sqlbatch.Tx{DB: w.dbs[n]}}
	}
	w.d = dlq.NewDatabases(dlq.Store{DB: w.dbs["DB"], Batch: sqlbatch.Tx{DB: w.dbs["DB"]}}, others, ps)
}

func (w *moveWorld) db(name string) dlq.Database {
	for _, d := range w.d.All {
		if d.Name == name {
			return d
		}
	}
	return dlq.Database{Name: name, Store: dlq.Store{DB: w.dbs[name], Batch: sqlbatch.Tx{DB: w.dbs[name]}, Pipelines: w.ps}}
}

// rows reads every row of every database.
func (w *moveWorld) rows() []moveRow {
	w.t.Helper()
	var out []moveRow
	for _, name := range w.names {
		rs, err := w.dbs[name].Query(`SELECT id, message_id, source_queue, row_key, status, replay_count, COALESCE(raw_message, ''),
			content_type, failed_at, COALESCE(CASE status WHEN 'replayed' THEN replayed_at WHEN 'acknowledged' THEN acknowledged_at END, failed_at),
			last_message_id, updated_at FROM dlq_messages ORDER BY id`)
		if err != nil {
			w.fail("rows: %v", err)
		}
		for rs.Next() {
			r := moveRow{db: name}
			if err := rs.Scan(&r.id, &r.msgID, &r.queue, &r.key, &r.status, &r.replays, &r.raw, &r.ctype, &r.failedAt, &r.actionAt, &r.lastMsgID, &r.updatedAt); err != nil {
				w.fail("rows: %v", err)
			}
			out = append(out, r)
		}
		rs.Close()
	}
	return out
}

func (w *moveWorld) pipelineOf(q string) string {
	for p, pq := range moveQueues {
		if pq == q {
			return p
		}
	}
	return ""
}

// capture captures messages through the DLQ consumer, routed by queue.
// moveCoverage counts what the sequences reached (TestMoveProperties).
type moveCoverage struct{ borrowed, refused, paused int }

var moveSeen moveCoverage

// borrowedRows counts the rows of the pipelines' own databases that
// continue a row of DB (captured as its repeat failure during the move,
// with its id, not imported).
func (w *moveWorld) borrowedRows() int {
	n := 0
	for _, name := range w.names[1:] {
		n += int(count(w.t, w.dbs[name], `SELECT COUNT(*) FROM dlq_messages WHERE id < ? AND moved_version IS NULL`, dlq.IDBase(name)))
	}
	return n
}

func (w *moveWorld) capture(p string, msgs ...*queuetest.Message) {
	w.t.Helper()
	before := w.borrowedRows()
	defer func() { moveSeen.borrowed += max(0, w.borrowedRows()-before) }()
	c := &dlq.Capture{DB: w.dbs["DB"], Log: discard, Clock: w.clk.Now, Stores: w.d,
		SourceQueue: map[string]string{"beer-enrichment-dlq": "beer-enrichment", "orders-dlq": "orders", "tickets-dlq": "tickets"}}
	if err := c.ConsumeBatch(ctx, moveQueues[p]+"-dlq", queuetest.Batch(msgs...)); err != nil {
		w.fail("capture: %v", err)
	}
}

// applySent applies what a replay sent to the model: each message sent
// was pending and is now replayed once more.
func (w *moveWorld) applySent(from int) {
	w.t.Helper()
	for _, o := range w.snd.sent[from:] {
		m := w.byBody[o.Body]
		if m == nil {
			w.fail("sent a body no message has: %q", o.Body)
		}
		if m.status != dlq.StatusPending {
			w.fail("sent message %s, which is %s (this step sent %d; its changes %v)", m.id, m.status, len(w.snd.sent)-from, m.seen)
		}
		m.set(w, dlq.StatusReplayed)
		m.replays++
	}
}

func (w *moveWorld) replay(d dlq.Database) resolve.Replay {
	return resolve.Replay{DB: d.DB, Batch: d.Batch, Sender: w.snd, Log: discard, Cursors: dlq.NewCursors("k"), BulkMax: 1 + w.rng.IntN(8), Clock: w.clk.Now,
		Frozen: w.d.Frozen(d.Name), Pipelines: w.ps}
}

// pickRows picks up to 5 rows of status (any database).
func (w *moveWorld) pickRows(status string, not ...moveRow) []moveRow {
	var all []moveRow
	for _, r := range w.rows() {
		if r.status == status && !slices.ContainsFunc(not, func(o moveRow) bool { return o.db == r.db && o.id == r.id }) {
			all = append(all, r)
		}
	}
	w.rng.Shuffle(len(all), func(i, j int) { all[i], all[j] = all[j], all[i] })
	// An id names one message wherever its rows lie: name it once.
	seen := map[int64]bool{}
	for _, o := range not {
		seen[o.id] = true
	}
	var out []moveRow
	for _, r := range all {
		if !seen[r.id] {
			seen[r.id] = true
			out = append(out, r)
		}
	}
	return out[:min(len(out), 1+w.rng.IntN(5))]
}

// msgOf is the model's message of row r.
func (w *moveWorld) msgOf(r moveRow) *mmsg {
	if m := w.resolve(r.msgID); m != nil {
		return m
	}
	w.fail("row %d in %s is message %s, which the model does not know", r.id, r.db, r.msgID)
	return nil
}

// resolve is the model's message of a row whose message_id is id: the
// message first captured with it, or the one a repeat failure of which
// had id (a row captured for it in a pipeline's own database while the
// row of the message was still in DB, until an import merges the two).
func (w *moveWorld) resolve(id string) *mmsg {
	if m := w.msgs[id]; m != nil {
		return m
	}
	if m := w.alias[id]; m != nil && w.msgs[m.id] == m {
		return m
	}
	return nil
}

// idsOf are the ids of rows, those of one database only when they are in
// several (the handler refuses ids of two databases).
func idsOf(rs []moveRow) []int64 {
	var ids []int64
	for _, r := range rs {
		ids = append(ids, r.id)
	}
	return ids
}

func (w *moveWorld) newMessage(p string, ctype queue.ContentType) *queuetest.Message {
	w.n++
	key := fmt.Sprint("k", w.rng.IntN(3))
	body := fmt.Sprintf(`{%q:%q,"n":%d,"s":"é\u0001"}`, moveKeyField[p], key, w.n)
	if ctype == queue.Text {
		body = fmt.Sprintf("text %d\r\n\t'", w.n)
	}
	m := &mmsg{id: fmt.Sprintf("%s-%d", p, w.n), pipeline: p, body: body, ctype: string(ctype), status: dlq.StatusPending}
	m.last = m.id
	w.msgs[m.id] = m
	w.order = append(w.order, m.id)
	w.byBody[body] = m
	return &queuetest.Message{MsgID: m.id, Attempt: 1, SentAt: w.clk.Now(), Text: body, Type: ctype}
}

func moveSequence(t *testing.T, seed uint64) {
	w := &moveWorld{t: t, seed: seed, rng: rand.New(rand.NewPCG(seed, 44)), clk: dlqtest.NewTaskClock(time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)),
		dbs: map[string]*sql.DB{}, names: []string{"DB", "ORDERS_DB", "TICKETS_DB"}, msgs: map[string]*mmsg{}, deleted: map[string]*mmsg{}, alias: map[string]*mmsg{}, byBody: map[string]*mmsg{},
		moves: map[string]*moveState{"beers": {}, "orders": {}, "tickets": {}}}
	w.snd = &moveSender{rng: w.rng}
	for _, n := range w.names {
		w.dbs[n] = sqlitetest.New(t)
		if s := dlq.SeedIDsSQL(n); s != "" {
			if _, err := w.dbs[n].Exec(s); err != nil {
				t.Fatal(err)
			}
		}
	}
	w.configure()
	for range 3 + w.rng.IntN(10) {
		p := movePipelineNames[w.rng.IntN(3)]
		w.capture(p, w.newMessage(p, queue.JSON))
	}
	w.trace = append(w.trace, "start")
	w.check(false)
	for range 30 + w.rng.IntN(30) {
		w.trace = append(w.trace, w.step())
		w.clk.Add(time.Duration(w.rng.IntN(600)) * time.Second)
		w.check(false)
	}
	// Finish every move under way, then the final checks.
	for _, p := range []string{"orders", "tickets"} {
		if w.moves[p].switched && !w.moves[p].done {
			w.finish(p)
		}
	}
	w.trace = append(w.trace, "moves finished")
	w.check(true)
}

// step runs one random operation and says what it did.
func (w *moveWorld) step() string {
	w.t.Helper()
	p := movePipelineNames[w.rng.IntN(3)]
	switch op := w.rng.IntN(20); {
	case op < 3: // new failures
		ct := queue.JSON
		if w.rng.IntN(5) == 0 {
			ct = queue.Text
		}
		var ms []*queuetest.Message
		for range 1 + w.rng.IntN(3) {
			ms = append(ms, w.newMessage(p, ct))
		}
		w.capture(p, ms...)
		return fmt.Sprintf("capture %s %d (%s..)", p, len(ms), ms[0].MsgID)
	case op < 4: // a DLQ redelivery of a stored message: changes nothing
		if len(w.order) == 0 {
			return "redeliver none"
		}
		m := w.msgs[w.order[w.rng.IntN(len(w.order))]]
		if m == nil {
			return "redeliver none (deleted)"
		}
		ct := queue.ContentType(m.ctype)
		w.capture(m.pipeline, &queuetest.Message{MsgID: m.last, Attempt: 2, SentAt: w.clk.Now(), Text: m.body, Type: ct})
		return "redeliver " + m.last
	case op < 6: // replayed messages fail again
		var got []string
		for _, r := range w.pickRows(dlq.StatusReplayed) {
			m := w.msgOf(r)
			if m.status != dlq.StatusReplayed || w.msgs[m.id] != m {
				continue
			}
			w.n++
			id := fmt.Sprintf("%s-r%d", m.pipeline, w.n)
			if slices.Contains(got, m.id) {
				continue
			}
			w.capture(m.pipeline, &queuetest.Message{MsgID: id, Attempt: 1, SentAt: w.clk.Now(), Text: m.body, Type: queue.ContentType(m.ctype)})
			m.set(w, dlq.StatusPending)
			m.last = id
			w.alias[id] = m
			got = append(got, m.id)
		}
		return fmt.Sprint("fail again ", got)
	case op < 8: // replay by ids, routed as the handler routes them
		rs := w.pickRows(dlq.StatusPending)
		if len(rs) == 0 {
			return "replay none"
		}
		d, err := w.d.OfSelection(ctx, dlq.Selection{IDs: idsOf(rs)})
		if isInput(err) {
			if strings.Contains(err.Error(), "ROWS_MOVING") {
				moveSeen.refused++
			}
			return fmt.Sprint("replay ", idsOf(rs), " refused: ", err)
		}
		if err != nil {
			w.fail("replay: %v", err)
		}
		from := len(w.snd.sent)
		if _, err := w.replay(d).Run(ctx, resolve.ReplayRequest{Selection: dlq.Selection{IDs: idsOf(rs)}}); err != nil {
			w.fail("replay %v in %s: %v", idsOf(rs), d.Name, err)
		}
		w.applySent(from)
		return fmt.Sprintf("replay %v in %s (%d sent)", idsOf(rs), d.Name, len(w.snd.sent)-from)
	case op < 9: // replay by filter
		f := &dlq.Filter{Pipeline: p, Status: dlq.StatusPending}
		d, err := w.d.OfFilter(f)
		if err != nil {
			w.fail("replay filter: %v", err)
		}
		from := len(w.snd.sent)
		if _, err := w.replay(d).Run(ctx, resolve.ReplayRequest{Selection: dlq.Selection{Filter: f}}); err != nil {
			w.fail("replay %s in %s: %v", p, d.Name, err)
		}
		w.applySent(from)
		return fmt.Sprintf("replay pipeline=%s in %s (%d sent)", p, d.Name, len(w.snd.sent)-from)
	case op < 10: // a replay task
		f := dlq.Filter{Pipeline: p}
		d, err := w.d.OfFilter(&f)
		if err != nil {
			w.fail("task: %v", err)
		}
		ts := resolve.ReplayTasks{Replay: w.replay(d)}
		task, err := ts.Create(ctx, resolve.TaskRequest{Filter: f, RatePerMinute: []int64{1, 5, 60}[w.rng.IntN(3)]}, dlq.Requester{})
		if err != nil {
			w.fail("create task: %v", err)
		}
		w.tasks = append(w.tasks, moveTask{db: d.Name, pipeline: p, id: task.ID})
		return fmt.Sprintf("task %d for %s in %s", task.ID, p, d.Name)
	case op < 12: // the cron steps every task in its database
		from := len(w.snd.sent)
		for _, tk := range w.tasks {
			d := w.db(tk.db)
			ts := resolve.ReplayTasks{Replay: w.replay(d)}
			at := len(w.snd.sent)
			if _, err := ts.Step(ctx, tk.id, w.clk.Now()); err != nil {
				w.fail("step task %d: %v", tk.id, err)
			}
			if t, err := ts.Get(ctx, tk.id); err == nil && t.State == resolve.TaskPaused {
				moveSeen.paused++
			}
			w.trace = append(w.trace, fmt.Sprintf("(task %d in %s sent %d)", tk.id, tk.db, len(w.snd.sent)-at))
			w.applySent(at)
		}
		return fmt.Sprintf("tasks step (%d sent)", len(w.snd.sent)-from)
	case op < 14: // acknowledge by ids
		rs := w.pickRows(dlq.StatusPending)
		if w.rng.IntN(3) == 0 { // rows in any status
			rs = append(rs, w.pickRows([]string{dlq.StatusReplayed, dlq.StatusAcknowledged}[w.rng.IntN(2)], rs...)...)
		}
		if len(rs) == 0 {
			return "ack none"
		}
		d, err := w.d.OfSelection(ctx, dlq.Selection{IDs: idsOf(rs)})
		if isInput(err) {
			if strings.Contains(err.Error(), "ROWS_MOVING") {
				moveSeen.refused++
			}
			return fmt.Sprint("ack ", idsOf(rs), " refused: ", err)
		}
		if err != nil {
			w.fail("ack: %v", err)
		}
		ack := resolve.Acknowledge{DB: d.DB, Batch: d.Batch, BulkMax: 50, Clock: w.clk.Now, Pipelines: w.ps}
		if _, err := ack.Run(ctx, resolve.AcknowledgeRequest{Selection: dlq.Selection{IDs: idsOf(rs)}}); err != nil {
			w.fail("ack %v in %s: %v", idsOf(rs), d.Name, err)
		}
		// The model: each named message that is pending is acknowledged,
		// and the audit of its row names it.
		seen := map[int64]bool{}
		for _, r := range rs {
			if seen[r.id] {
				continue
			}
			seen[r.id] = true
			var msgID string
			if err := d.DB.QueryRow(`SELECT message_id FROM dlq_messages WHERE id = ?`, r.id).Scan(&msgID); err != nil {
				continue // named a row of another database: not acted on
			}
			m := w.resolve(msgID)
			if m == nil {
				w.fail("ack: row %d is an unknown message %s", r.id, msgID)
			}
			m.acks++
			if m.status == dlq.StatusPending {
				m.set(w, dlq.StatusAcknowledged)
			}
		}
		return fmt.Sprintf("ack %v in %s", idsOf(rs), d.Name)
	case op < 15: // acknowledge by filter
		f := &dlq.Filter{Pipeline: p, Status: dlq.StatusPending}
		d, err := w.d.OfFilter(f)
		if err != nil {
			w.fail("ack filter: %v", err)
		}
		before := w.rowsIn(d.Name)
		ack := resolve.Acknowledge{DB: d.DB, Batch: d.Batch, BulkMax: 1 + w.rng.IntN(5), Clock: w.clk.Now, Pipelines: w.ps}
		if _, err := ack.Run(ctx, resolve.AcknowledgeRequest{Selection: dlq.Selection{Filter: f}}); err != nil {
			w.fail("ack %s in %s: %v", p, d.Name, err)
		}
		var n int
		for _, r := range w.rowsIn(d.Name) {
			if r.status == dlq.StatusAcknowledged && before[r.id].status == dlq.StatusPending {
				n++
				if m := w.msgOf(r); m.status == dlq.StatusPending {
					m.set(w, dlq.StatusAcknowledged)
				}
			}
		}
		return fmt.Sprintf("ack pipeline=%s in %s (%d)", p, d.Name, n)
	case op < 16:
		return w.retention()
	case op < 17: // the switch
		var left []string
		for _, q := range []string{"orders", "tickets"} {
			if !w.moves[q].switched {
				left = append(left, q)
			}
		}
		if len(left) == 0 {
			return "switch none"
		}
		q := left[w.rng.IntN(len(left))]
		w.moves[q].switched = true
		w.configure()
		return fmt.Sprintf("switch %s to %s", q, moveOwnDB[q])
	default: // a step of a move under way
		var under []string
		for _, q := range []string{"orders", "tickets"} {
			if w.moves[q].switched && !w.moves[q].done {
				under = append(under, q)
			}
		}
		if len(under) == 0 {
			return "move none"
		}
		q := under[w.rng.IntN(len(under))]
		mv := w.moves[q]
		switch {
		case mv.lines == nil || w.rng.IntN(4) == 0:
			return w.export(q)
		case len(mv.lines) > 0 && w.rng.IntN(3) > 0:
			return w.importSome(q, 1+w.rng.IntN(20))
		default:
			s, _ := w.release(q, 1+w.rng.IntN(10))
			return s
		}
	}
}

func isInput(err error) bool {
	var ie *dlq.InputError
	return errors.As(err, &ie)
}

func (w *moveWorld) rowsIn(db string) map[int64]moveRow {
	out := map[int64]moveRow{}
	for _, r := range w.rows() {
		if r.db == db {
			out[r.id] = r
		}
	}
	return out
}

// retention moves the clock on and runs every database's dlq_retention,
// then its dlq_tally (the daily cron): each row deleted must have been due.
func (w *moveWorld) retention() string {
	w.t.Helper()
	w.clk.Add(time.Duration(w.rng.IntN(4*24*60)) * time.Minute)
	now := w.clk.Now()
	before := w.rows()
	u := upkeep.Schedule{DBs: w.d, Pipelines: w.ps,
		Retention: upkeep.Retention{Log: discard, MaxAge: moveMaxAge, MaxRowsPerKey: moveCap, AttemptMaxAge: 7 * 24 * time.Hour,
			Limits: jobs.Limits{ChunkRows: 1 + w.rng.IntN(5), Budget: time.Hour}},
	}
	for _, r := range u.Retentions() {
		if _, err := r.Run(ctx, now); err != nil {
			w.fail("retention %s: %v", r.Name(), err)
		}
	}
	for _, j := range u.TallyChecks() {
		if _, err := j.Run(ctx, now); err != nil {
			w.fail("tally %s: %v", j.Name(), err)
		}
	}
	after := map[string]bool{}
	for _, r := range w.rows() {
		after[fmt.Sprint(r.db, r.id)] = true
	}
	var gone []string
	for _, r := range before {
		if after[fmt.Sprint(r.db, r.id)] {
			continue
		}
		if why := w.due(r, before, now); why != "" {
			w.fail("retention deleted row %d (%s, key %s, %s at %s) from %s: %s", r.id, r.queue, r.key, r.status,
				time.UnixMilli(r.actionAt).UTC().Format(time.RFC3339), r.db, why)
		}
		gone = append(gone, fmt.Sprint(r.db, ":", r.id))
	}
	// A message none of whose rows is left is gone from the model.
	left := map[*mmsg]bool{}
	for _, r := range w.rows() {
		left[w.resolve(r.msgID)] = true
	}
	for _, r := range before {
		if m := w.resolve(r.msgID); m != nil && !left[m] {
			w.deleted[m.id] = m
			delete(w.msgs, m.id)
		}
	}
	return fmt.Sprintf("retention at %s deleted %v", now.Format(time.RFC3339), gone)
}

// due says why row r (of rows, read before retention ran at now) was not
// due, or "" when it was: acknowledged or replayed, and its action older
// than its pipeline's retention, or moveCap newer such rows of its queue
// and key in its database.
func (w *moveWorld) due(r moveRow, rows []moveRow, now time.Time) string {
	if r.status != dlq.StatusAcknowledged && r.status != dlq.StatusReplayed {
		return "it is " + r.status
	}
	keep := moveMaxAge
	if p, ok := w.ps.ByName(w.pipelineOf(r.queue)); ok && p.Retention > 0 {
		keep = p.Retention
	}
	if r.actionAt <= now.Add(-keep).UnixMilli() {
		return ""
	}
	newer := 0
	for _, o := range rows {
		if o.db == r.db && o.queue == r.queue && o.key == r.key && (o.status == dlq.StatusAcknowledged || o.status == dlq.StatusReplayed) &&
			(o.failedAt > r.failedAt || o.failedAt == r.failedAt && o.id > r.id) {
			newer++
		}
	}
	if newer >= moveCap {
		return ""
	}
	return fmt.Sprintf("its retention is %s and only %d newer rows of its queue and key are kept", keep, newer)
}

// export reads the pipeline's rows left in DB as GET /admin/dlq/export?
// format=ndjson&include_raw=true&status=all&pipeline=p&database=DB writes
// them, page after page.
func (w *moveWorld) export(p string) string {
	w.t.Helper()
	old := w.db("DB")
	var lines [][]byte
	params := inspect.ListParams{Filter: dlq.Filter{Status: dlq.StatusAll, Pipeline: p}, IncludeRaw: true}
	for {
		res, err := inspect.Export{List: inspect.List{DBs: dlq.Single(old.Store), Cursors: dlq.NewCursors("k")}, MoveFields: true}.Run(ctx, params, func(rows []json.RawMessage) error {
			for _, r := range rows {
				lines = append(lines, append(bytes.Clone(r), '\n'))
			}
			return nil
		})
		if err != nil {
			w.fail("export %s: %v", p, err)
		}
		if res.NextCursor == nil {
			break
		}
		params.Cursor = *res.NextCursor
	}
	w.moves[p].lines = append(lines, [][]byte{}...)
	if w.moves[p].exported == nil {
		w.moves[p].exported = map[string]bool{}
	}
	for _, l := range lines {
		var r struct {
			MessageID string `json:"message_id"`
		}
		json.Unmarshal(l, &r)
		w.moves[p].exported[r.MessageID] = true
	}
	return fmt.Sprintf("export %s (%d lines)", p, len(lines))
}

// importSome posts the next n exported lines of p.
func (w *moveWorld) importSome(p string, n int) string {
	w.t.Helper()
	mv := w.moves[p]
	n = min(n, len(mv.lines))
	if n == 0 {
		return "import none"
	}
	rows, err := ParseImport(bytes.Join(mv.lines[:n], nil), ImportMaxLines)
	if err != nil {
		w.fail("parse import: %v", err)
	}
	res, err := Import{DBs: w.d}.Run(ctx, rows)
	if err != nil {
		w.fail("import %s: %v", p, err)
	}
	// A line of a row retention deleted after the export stores it again,
	// as it was (the operator asked for that copy; retention deletes it
	// again when due).
	for _, r := range rows {
		if w.msgs[r.MessageID] == nil {
			raw := ""
			if r.RawMessage != nil {
				raw = *r.RawMessage
			}
			m := &mmsg{id: r.MessageID, pipeline: p, body: raw, ctype: r.ContentType, status: r.Status, replays: r.ReplayCount, last: r.LastMessageID}
			if old := w.deleted[m.id]; old != nil {
				m.acks = old.acks // the audit entries that named it stay
			}
			w.msgs[m.id], w.byBody[raw] = m, m
		}
	}
	mv.lines = mv.lines[n:]
	return fmt.Sprintf("import %s %d lines: %d imported, %d skipped", p, n, res.Imported, res.Skipped)
}

// release runs one release window of p from DB; done when a pass ended
// with nothing left.
func (w *moveWorld) release(p string, limit int) (string, bool) {
	w.t.Helper()
	mv := w.moves[p]
	res, err := Release{DBs: w.d}.Run(ctx, ReleaseParams{Pipeline: p, Database: "DB", Limit: limit, After: mv.after})
	if err != nil {
		w.fail("release %s: %v", p, err)
	}
	mv.pass.released += res.Released
	mv.pass.notImported += res.NotImported
	mv.pass.changed += res.Changed
	s := fmt.Sprintf("release %s after %d: released %d, not imported %d, changed %d", p, mv.after, res.Released, res.NotImported, res.Changed)
	if res.NextAfter != nil {
		mv.after = *res.NextAfter
		return s, false
	}
	mv.after = 0
	mv.pass.released, mv.pass.notImported, mv.pass.changed = 0, 0, 0
	if count(w.t, w.dbs["DB"], `SELECT COUNT(*) FROM dlq_messages WHERE source_queue = ?`, moveQueues[p]) == 0 {
		mv.done = true
		s += " (move done)"
	}
	return s, mv.done
}

// finish ends p's move as docs/operations.md says: export what DB still
// holds, import it, release, until DB holds none of p's rows. A move that
// cannot finish in a few rounds fails.
func (w *moveWorld) finish(p string) {
	w.t.Helper()
	for round := range 4 {
		w.trace = append(w.trace, fmt.Sprintf("finish %s round %d", p, round))
		w.moves[p].after = 0
		w.trace = append(w.trace, w.export(p))
		for len(w.moves[p].lines) > 0 {
			w.trace = append(w.trace, w.importSome(p, ImportMaxLines))
		}
		w.check(false)
		// The rows left in DB are frozen: no copy is older than its row
		// there (what an export copied stays what DB holds).
		copies := w.rowsIn(moveOwnDB[p])
		for _, r := range w.rows() {
			if c, ok := copies[r.id]; ok && r.db == "DB" && r.queue == moveQueues[p] && c.msgID == r.msgID && c.updatedAt < r.updatedAt {
				w.fail("row %d in DB (%s) changed after the export of its copy in %s (%s)", r.id, r.status, moveOwnDB[p], c.status)
			}
		}
		for {
			s, done := w.release(p, ReleaseMaxLimit)
			w.trace = append(w.trace, s)
			w.check(false)
			if done {
				return
			}
			if w.moves[p].after == 0 {
				break
			}
		}
	}
	w.fail("the move of %s cannot finish: %d of its rows stay in DB", p,
		count(w.t, w.dbs["DB"], `SELECT COUNT(*) FROM dlq_messages WHERE source_queue = ?`, moveQueues[p]))
}

// check checks the kept counts of every database and every message
// against the model; final: every move has ended.
func (w *moveWorld) check(final bool) {
	w.t.Helper()
	step := w.trace[len(w.trace)-1]
	hour := w.clk.Now().Add(-24*time.Hour).UnixMilli() / 3600000
	for _, n := range w.names {
		db := w.dbs[n]
		if got, want := tallyRows(w.t, db), wantTally(w.t, db); !mapsEqual(got, want) {
			w.fail("%s's dlq_tally after %s\n got %v\nwant %v", n, step, got, want)
		}
		if got, want := activityRows(w.t, db, hour), wantActivity(w.t, db, hour); !mapsEqual(got, want) {
			w.fail("%s's dlq_activity after %s\n got %v\nwant %v", n, step, got, want)
		}
		if got, want := signatureCounts(w.t, db); !mapsEqual(got, want) {
			w.fail("%s's dlq_signatures after %s\n got %v\nwant %v", n, step, got, want)
		}
	}
	byMsg := map[string][]moveRow{}
	for _, r := range w.rows() {
		m := w.resolve(r.msgID)
		if m == nil {
			w.fail("after %s: row %d in %s is message %s, which the model does not know (deleted, or never captured)", step, r.id, r.db, r.msgID)
		}
		if r.raw != m.body || r.ctype != m.ctype {
			w.fail("after %s: row %d in %s (message %s) holds %q as %s, want %q as %s", step, r.id, r.db, m.id, r.raw, r.ctype, m.body, m.ctype)
		}
		if r.queue != moveQueues[m.pipeline] {
			w.fail("after %s: row %d in %s is of queue %s, message %s of %s", step, r.id, r.db, r.queue, m.id, m.pipeline)
		}
		byMsg[m.id] = append(byMsg[m.id], r)
	}
	ids := make([]string, 0, len(w.msgs))
	for id := range w.msgs {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		m := w.msgs[id]
		rs := byMsg[id]
		own := "DB"
		if w.moves[m.pipeline].switched {
			own = moveOwnDB[m.pipeline]
		}
		moving := w.moves[m.pipeline].switched && !w.moves[m.pipeline].done
		switch {
		case len(rs) == 0:
			w.fail("after %s: message %s (%s, %s) is stored nowhere", step, id, m.pipeline, m.status)
		case len(rs) > 1 && !moving:
			w.fail("after %s: message %s is stored %d times: %+v", step, id, len(rs), rs)
		case len(rs) > 2:
			w.fail("after %s: message %s is stored %d times: %+v", step, id, len(rs), rs)
		case !moving && rs[0].db != own:
			w.fail("after %s: message %s of %s is in %s, its pipeline's database is %s", step, id, m.pipeline, rs[0].db, own)
		}
		ok := false
		for _, r := range rs {
			ok = ok || r.status == m.status && r.replays == m.replays
		}
		if !ok {
			w.fail("after %s: message %s is %s, replayed %d times; its rows: %+v", step, id, m.status, m.replays, rs)
		}
		if final {
			// Its detail lists every acknowledge that named it, wherever
			// it was recorded.
			r := rs[0]
			var others []*sql.DB
			for _, n := range w.names {
				if n != r.db {
					others = append(others, w.dbs[n])
				}
			}
			d, err := inspect.Detail{DB: w.dbs[r.db], Others: others, Pipelines: w.ps}.Read(ctx, r.id)
			if err != nil {
				w.fail("detail of row %d in %s: %v", r.id, r.db, err)
			}
			n := 0
			for _, e := range d.Audit {
				if e.Action == dlq.ActionAcknowledge && e.MatchedBy == "ids" {
					n++
				}
			}
			if n != m.acks {
				w.fail("after %s: message %s (row %d in %s) was named by %d acknowledges, its detail lists %d", step, id, r.id, r.db, m.acks, n)
			}
		}

	}
}

func mapsEqual(a, b map[string]int64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if bv, ok := b[k]; !ok || bv != v {
			return false
		}
	}
	return true
}
