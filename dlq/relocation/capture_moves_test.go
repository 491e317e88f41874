package relocation

import (
	"bytes"
	"context"
	"database/sql"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/config"
	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/dlq/resolve"
	"github.com/redrive/redrive/dlq/upkeep"
	"github.com/redrive/redrive/internal/sqlitetest"
	"github.com/redrive/redrive/jobs"
	"github.com/redrive/redrive/queue"
	"github.com/redrive/redrive/queue/queuetest"
	"github.com/redrive/redrive/sqlbatch"
)

// movingTicket stores, in the shared database (tickets still on it), one
// tickets message that was replayed and is now replayed (replay_count 1,
// a history entry): the row a move leaves in DB until its release. The
// body is read as the pipelines ps say.
func movingTicket(t *testing.T, shared *sql.DB, ps dlq.Pipelines) (id int64, body string) {
	t.Helper()
	body = `{"ticket":"T-9","team":"infra"}`
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	if _, err := shared.Exec(`INSERT INTO message_attempts(message_id, queue, attempt, error_class, error, recorded_at, history)
		VALUES ('t-first', 'tickets', 2, 'transient', 'status 503', ?, ?)`, now.UnixMilli(),
		`[{"at":1,"attempt":1,"class":"transient","error":"status 503","message_id":"t-first"}]`); err != nil {
		t.Fatal(err)
	}
	c := &dlq.Capture{DB: shared, Log: discard, Clock: func() time.Time { return now }, SourceQueue: map[string]string{"tickets-dlq": "tickets"},
		Stores: dlq.Store{DB: shared, Pipelines: ps}}
	if err := c.ConsumeBatch(context.Background(), "tickets-dlq", queuetest.Batch(&queuetest.Message{MsgID: "t-first", Attempt: 1, SentAt: now, Text: body, Type: queue.JSON})); err != nil {
		t.Fatal(err)
	}
	id = count(t, shared, `SELECT id FROM dlq_messages WHERE message_id = 't-first'`)
	if _, err := shared.Exec(`UPDATE dlq_messages SET status = 'replayed', replay_count = 1, replayed_at = ?1, updated_at = ?1 WHERE id = ?2`,
		now.Add(time.Minute).UnixMilli(), id); err != nil {
		t.Fatal(err)
	}
	return id, body
}

// During a move every message keeps one row: after the switch, a DLQ
// redelivery of a message whose row is still in DB is a duplicate (acked,
// nothing written anywhere), and a repeat failure of a replayed row there
// is stored in the pipeline's own database as that row's continuation:
// its id, message_id, replay_count and history, pending, with the new
// failure as its last; DB's row stays as it was (frozen). The import then
// merges DB's row into it, the release deletes DB's row, and the message
// is stored once, pending, replayed once, with every attempt in its
// history. Kept counts match the rows at every step.
func TestCaptureDuringAMoveContinuesTheRowLeftInDB(t *testing.T) {
	t.Parallel()
	shared, tickets, dbs := moveTickets(t)
	id, body := movingTicket(t, shared, dbs.Pipelines())
	before := rowJSON(t, shared, id)
	now := time.Date(2030, 1, 3, 3, 4, 5, 0, time.UTC)
	var logs bytes.Buffer
	c := &dlq.Capture{DB: shared, Log: slog.New(slog.NewTextHandler(&logs, nil)), Clock: func() time.Time { return now },
		SourceQueue: map[string]string{"tickets-dlq": "tickets"}, Stores: dbs}
	consumeMoving := func(msgs ...*queuetest.Message) []*queuetest.Message {
		t.Helper()
		if err := c.ConsumeBatch(context.Background(), "tickets-dlq", queuetest.Batch(msgs...)); err != nil {
			t.Fatal(err)
		}
		for _, m := range msgs {
			if !m.Acked {
				t.Fatalf("message %s not acked", m.MsgID)
			}
		}
		return msgs
	}

	// A redelivery of the first failure: stored already (in DB).
	consumeMoving(&queuetest.Message{MsgID: "t-first", Attempt: 3, SentAt: now, Text: body, Type: queue.JSON})
	if n := count(t, tickets, `SELECT COUNT(*) FROM dlq_messages`); n != 0 {
		t.Fatalf("a redelivery of a message stored in DB made %d rows in TICKETS_DB", n)
	}

	// Its repeat failure (the replay failed again): TICKETS_DB continues
	// the row, DB's row is untouched.
	if _, err := tickets.Exec(`INSERT INTO message_attempts(message_id, queue, attempt, error_class, error, recorded_at, history)
		VALUES ('t-again', 'tickets', 1, 'permanent', 'status 400', ?, ?)`, now.UnixMilli(),
		`[{"at":2,"attempt":1,"class":"permanent","error":"status 400","message_id":"t-again"}]`); err != nil {
		t.Fatal(err)
	}
	consumeMoving(&queuetest.Message{MsgID: "t-again", Attempt: 1, SentAt: now, Text: body, Type: queue.JSON})
	var got struct {
		id, rc                   int64
		msgID, last, status, hst string
	}
	if err := tickets.QueryRow(`SELECT id, message_id, last_message_id, status, replay_count, history FROM dlq_messages`).
		Scan(&got.id, &got.msgID, &got.last, &got.status, &got.rc, &got.hst); err != nil {
		t.Fatal(err)
	}
	if got.id != id || got.msgID != "t-first" || got.last != "t-again" || got.status != dlq.StatusPending || got.rc != 1 ||
		!strings.Contains(got.hst, `"message_id":"t-first"`) || !strings.Contains(got.hst, `"message_id":"t-again"`) {
		t.Fatalf("TICKETS_DB's row %+v, want id %d, message t-first, last t-again, pending, replayed once, both attempts in its history", got, id)
	}
	if after := rowJSON(t, shared, id); after != before {
		t.Fatalf("DB's row changed:\n%s\n%s", before, after)
	}
	checkMoveCounts(t, tickets, "repeat failure")
	checkMoveCounts(t, shared, "repeat failure")
	// Its failure group names it by the id it took.
	if n := count(t, tickets, `SELECT COUNT(*) FROM dlq_signatures, json_each(sample_ids) AS s WHERE s.value = ?`, id); n != 1 {
		t.Fatalf("the group's sample ids name row %d %d times, want once", id, n)
	}
	// Its redelivery changes nothing either.
	consumeMoving(&queuetest.Message{MsgID: "t-again", Attempt: 2, SentAt: now, Text: body, Type: queue.JSON})
	if n := count(t, tickets, `SELECT COUNT(*) FROM dlq_messages`); n != 1 {
		t.Fatalf("%d rows in TICKETS_DB after a redelivery, want 1", n)
	}

	// The move ends: import merges, release deletes DB's row.
	imported, skipped := importLines(t, dbs, exportAll(t, shared, dbs.Pipelines(), "tickets"), ImportMaxLines)
	if imported != 0 || skipped != 0 {
		t.Fatalf("import: %d imported, %d skipped, want the line merged", imported, skipped)
	}
	checkMoveCounts(t, tickets, "import")
	res, err := Release{DBs: dbs}.Run(context.Background(), ReleaseParams{Pipeline: "tickets", Database: "DB"})
	if err != nil || res.Released != 1 || res.Changed != 0 || res.NotImported != 0 {
		t.Fatalf("release: %+v %v", res, err)
	}
	checkMoveCounts(t, shared, "release")
	if err := tickets.QueryRow(`SELECT id, message_id, last_message_id, status, replay_count, history FROM dlq_messages`).
		Scan(&got.id, &got.msgID, &got.last, &got.status, &got.rc, &got.hst); err != nil {
		t.Fatal(err)
	}
	if got.id != id || got.status != dlq.StatusPending || got.rc != 1 || strings.Count(got.hst, `"message_id":"t-first"`) != 1 {
		t.Fatalf("after the move: %+v", got)
	}
	if n := count(t, shared, `SELECT COUNT(*) FROM dlq_messages WHERE source_queue = 'tickets'`); n != 0 {
		t.Fatalf("%d tickets rows left in DB", n)
	}
}

// A repeat failure whose message TICKETS_DB holds already as an
// acknowledged copy (imported, then acknowledged there) is a new row of its
// own, as in one database: an acknowledged message is never reopened,
// whatever DB's stale row says.
func TestCaptureDuringAMoveDoesNotReopenAnAcknowledgedCopy(t *testing.T) {
	t.Parallel()
	shared, tickets, dbs := moveTickets(t)
	id, body := movingTicket(t, shared, dbs.Pipelines())
	importLines(t, dbs, exportAll(t, shared, dbs.Pipelines(), "tickets"), ImportMaxLines)
	// The copy (replayed) is acknowledged there.
	if _, err := tickets.Exec(`UPDATE dlq_messages SET status = 'acknowledged', acknowledged_at = updated_at WHERE id = ?`, id); err != nil {
		t.Fatal(err)
	}
	c := &dlq.Capture{DB: shared, Log: discard, Clock: time.Now, SourceQueue: map[string]string{"tickets-dlq": "tickets"}, Stores: dbs}
	if err := c.ConsumeBatch(context.Background(), "tickets-dlq", queuetest.Batch(&queuetest.Message{MsgID: "t-again", Attempt: 1, SentAt: time.Now(), Text: body, Type: queue.JSON})); err != nil {
		t.Fatal(err)
	}
	if n := count(t, tickets, `SELECT COUNT(*) FROM dlq_messages WHERE message_id = 't-again' AND status = 'pending' AND replay_count = 0 AND id <> ?`, id); n != 1 {
		t.Fatalf("want a new pending row for t-again; rows: %s", rowJSON(t, tickets, id))
	}
	if s := rowJSON(t, tickets, id); !strings.Contains(s, `"status":"acknowledged"`) {
		t.Fatalf("the acknowledged copy changed: %s", s)
	}
	checkMoveCounts(t, tickets, "capture")
}

// Once no database but its own holds a queue's rows, a capture asks no
// other database again (per isolate): the lookup costs one dlq_tally read
// per other database, once.
func TestCaptureAsksOtherDatabasesOnlyWhileAMoveIsUnderWay(t *testing.T) {
	t.Parallel()
	shared, tickets, dbs := moveTickets(t)
	c := &dlq.Capture{DB: shared, Log: discard, Clock: time.Now, SourceQueue: map[string]string{"tickets-dlq": "tickets"}, Stores: dbs}
	if err := c.ConsumeBatch(context.Background(), "tickets-dlq", queuetest.Batch(&queuetest.Message{MsgID: "t-1", Attempt: 1, SentAt: time.Now(), Text: `{"ticket":"T-1"}`, Type: queue.JSON})); err != nil {
		t.Fatal(err)
	}
	if n := count(t, tickets, `SELECT COUNT(*) FROM dlq_messages`); n != 1 {
		t.Fatalf("%d rows in TICKETS_DB", n)
	}
	shared.Close() // DB is not read again for tickets
	if err := c.ConsumeBatch(context.Background(), "tickets-dlq", queuetest.Batch(&queuetest.Message{MsgID: "t-2", Attempt: 1, SentAt: time.Now(), Text: `{"ticket":"T-2"}`, Type: queue.JSON})); err != nil {
		t.Fatal(err)
	}
	if n := count(t, tickets, `SELECT COUNT(*) FROM dlq_messages`); n != 2 {
		t.Fatalf("%d rows in TICKETS_DB after DB closed, want 2", n)
	}
}

// rowJSON is row id of db as JSON (every column), for comparisons.
func rowJSON(t *testing.T, db *sql.DB, id int64) string {
	t.Helper()
	out, err := sqlbatch.Tx{DB: db}.Batch(context.Background(), sqlbatch.Stmt{SQL: `SELECT * FROM dlq_messages WHERE id = ?`, Args: []any{id}})
	if err != nil {
		t.Fatal(err)
	}
	return string(out[0])
}

// A replay task made in DB for a pipeline that is now stored in its own
// database pauses at its next step, sending nothing from the rows that
// move; rescue leaves those rows as they are (their copies are rescued in
// the new database); DB's own pipelines' rows are not affected.
func TestTasksAndRescueLeaveMovingRowsAlone(t *testing.T) {
	t.Parallel()
	shared, _, dbs := moveTickets(t)
	seedMoved(t, shared, dbs.Pipelines(), 10)
	snd := &queueRecorder{}
	var logs bytes.Buffer
	now := time.Date(2030, 1, 3, 0, 0, 0, 0, time.UTC) // after seedMoved's failures
	r := resolve.Replay{DB: shared, Sender: snd, Log: slog.New(slog.NewTextHandler(&logs, nil)), Cursors: dlq.NewCursors("k"), BulkMax: 5, Clock: func() time.Time { return now }, Frozen: dbs.Frozen("DB"),
		Pipelines: dbs.Pipelines()}
	if !slices.Equal(r.Frozen, []string{"tickets"}) {
		t.Fatalf("DB's frozen queues %v, want [tickets]", r.Frozen)
	}
	ts := resolve.ReplayTasks{Replay: r}
	task, err := ts.Create(context.Background(), resolve.TaskRequest{Filter: dlq.Filter{Pipeline: "tickets"}, RatePerMinute: 60}, dlq.Requester{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := ts.Step(context.Background(), task.ID, now)
	if err != nil || !res.Held || res.Sent != 0 || len(snd.sent) != 0 {
		t.Fatalf("step: %+v %v, %d sent", res, err, len(snd.sent))
	}
	if got, err := ts.Get(context.Background(), task.ID); err != nil || got.State != resolve.TaskPaused {
		t.Fatalf("task %+v %v, want paused", got, err)
	}
	if !strings.Contains(logs.String(), "replay task paused") || !strings.Contains(logs.String(), "queue=tickets") {
		t.Fatalf("the pause is not logged with its queue: %s", logs.String())
	}
	// A task without a pipeline (made while DB was the only database)
	// replays DB's own rows only.
	all, err := ts.Create(context.Background(), resolve.TaskRequest{Filter: dlq.Filter{}, RatePerMinute: 600}, dlq.Requester{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ts.Step(context.Background(), all.ID, now); err != nil {
		t.Fatal(err)
	}
	for _, q := range snd.queues {
		if q != "beer-enrichment" {
			t.Fatalf("a task in DB sent a row of %s", q)
		}
	}
	if len(snd.sent) == 0 {
		t.Fatal("the task sent none of DB's own rows")
	}
	// Rescue: every replaying row is stuck; only beer rows are rescued.
	stuck := count(t, shared, `SELECT COUNT(*) FROM dlq_messages WHERE status = 'replaying' AND source_queue = 'tickets'`)
	if stuck == 0 {
		t.Fatal("no replaying tickets row seeded")
	}
	rescue := upkeep.Rescue{DB: shared, Log: discard, StuckAfter: time.Minute, Frozen: dbs.Frozen("DB"), Limits: jobs.Limits{ChunkRows: 10, Budget: time.Minute}}
	if _, err := rescue.Run(context.Background(), now.Add(24*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if n := count(t, shared, `SELECT COUNT(*) FROM dlq_messages WHERE status = 'replaying' AND source_queue = 'tickets'`); n != stuck {
		t.Fatalf("rescue moved %d moving tickets rows", stuck-n)
	}
	if n := count(t, shared, `SELECT COUNT(*) FROM dlq_messages WHERE status = 'replaying' AND source_queue <> 'tickets'`); n != 0 {
		t.Fatalf("%d of DB's own rows left replaying", n)
	}
}

// queueRecorder records the queue of every message sent.
type queueRecorder struct {
	queues []string
	sent   []queue.Outgoing
}

func (r *queueRecorder) SendBatch(_ context.Context, q string, msgs []queue.Outgoing) error {
	for range msgs {
		r.queues = append(r.queues, q)
	}
	r.sent = append(r.sent, msgs...)
	return nil
}

// While the old database does not answer, a capture of the moving
// pipeline stores nothing and acks nothing: each message is retried with
// the outage backoff (RetryDelay), never stored without the answer (which
// could store it twice) nor dropped, even past UnstorableAfter. Once the
// old database answers again, the retried delivery is stored once, as the
// continuation of its row there.
func TestCaptureDuringAMoveWaitsForTheOldDatabase(t *testing.T) {
	t.Parallel()
	_, tickets, moving := moveTickets(t)
	ps := moving.Pipelines()
	plain, down, _ := flakyDB(t, 0) // DB: every statement through down fails
	id, body := movingTicket(t, plain, ps)
	capture := func(shared *sql.DB, m *queuetest.Message) {
		t.Helper()
		dbs := dlq.NewDatabases(dlq.Store{DB: shared}, map[string]dlq.Store{"TICKETS_DB": {DB: tickets}}, ps)
		c := &dlq.Capture{DB: tickets, Log: discard, Clock: time.Now, SourceQueue: map[string]string{"tickets-dlq": "tickets"}, Stores: dbs,
			RetryBase: time.Minute}
		if err := c.ConsumeBatch(context.Background(), "tickets-dlq", queuetest.Batch(m)); err != nil {
			t.Fatal(err)
		}
	}
	m := &queuetest.Message{MsgID: "t-again", Attempt: 5, SentAt: time.Now(), Text: body, Type: queue.JSON}
	capture(down, m)
	if m.Acked || !m.Retried || m.RetryDelay != dlq.RetryDelay(time.Minute, 5) {
		t.Fatalf("message acked %v, retried %v after %s; want retried after %s", m.Acked, m.Retried, m.RetryDelay, dlq.RetryDelay(time.Minute, 5))
	}
	if n := count(t, tickets, `SELECT COUNT(*) FROM dlq_messages`); n != 0 {
		t.Fatalf("%d rows stored without the old database's answer", n)
	}
	// The fault ends: the next delivery is stored, once, continuing DB's row.
	m = &queuetest.Message{MsgID: "t-again", Attempt: 6, SentAt: time.Now(), Text: body, Type: queue.JSON}
	capture(plain, m)
	if !m.Acked || count(t, tickets, `SELECT COUNT(*) FROM dlq_messages`) != 1 ||
		count(t, tickets, `SELECT COUNT(*) FROM dlq_messages WHERE id = ? AND last_message_id = 't-again'`, id) != 1 {
		t.Fatalf("after the fault: acked %v; rows %s", m.Acked, rowJSON(t, tickets, id))
	}
	checkMoveCounts(t, tickets, "after the fault")
}

// A queue's rows in two databases besides its own (two moves under way):
// the first database that holds a failure's row answers for it, the next
// is not asked about that failure again.
func TestCaptureDuringTwoMovesTakesTheFirstDatabasesRow(t *testing.T) {
	t.Parallel()
	ps, problems := config.ParsePipelines(`[
{"name":"beers","queue":"beer-enrichment","dlq":"beer-enrichment-dlq","producer":"ENRICHMENT_QUEUE","key":"/beer_id","consumer":"redrive"},
{"name":"orders","queue":"orders","dlq":"orders-dlq","producer":"ORDERS","key":"/order","consumer":"external","database":"ORDERS_DB"},
{"name":"tickets","queue":"tickets","dlq":"tickets-dlq","producer":"TICKETS","key":"/ticket","consumer":"external","database":"TICKETS_DB"}]`,
		100, 24*time.Hour, 30*24*time.Hour)
	if len(problems) != 0 {
		t.Fatal(problems)
	}
	shared, orders, tickets := sqlitetest.New(t), sqlitetest.New(t), sqlitetest.New(t)
	for db, name := range map[*sql.DB]string{orders: "ORDERS_DB", tickets: "TICKETS_DB"} {
		if _, err := db.Exec(dlq.SeedIDsSQL(name)); err != nil {
			t.Fatal(err)
		}
	}
	dbs := dlq.NewDatabases(dlq.Store{DB: shared}, map[string]dlq.Store{"ORDERS_DB": {DB: orders}, "TICKETS_DB": {DB: tickets}}, ps)
	first, body := movingTicket(t, shared, ps)
	movingTicket(t, orders, ps) // the same body, replayed, in ORDERS_DB too
	if _, err := orders.Exec(`UPDATE dlq_messages SET replay_count = 2`); err != nil {
		t.Fatal(err)
	}
	c := &dlq.Capture{DB: shared, Log: discard, Clock: time.Now, SourceQueue: map[string]string{"tickets-dlq": "tickets"}, Stores: dbs}
	if err := c.ConsumeBatch(context.Background(), "tickets-dlq", queuetest.Batch(&queuetest.Message{MsgID: "t-again", Attempt: 1, SentAt: time.Now(), Text: body, Type: queue.JSON})); err != nil {
		t.Fatal(err)
	}
	if n := count(t, tickets, `SELECT COUNT(*) FROM dlq_messages WHERE id = ? AND replay_count = 1`, first); n != 1 {
		t.Fatalf("want DB's row %d continued in TICKETS_DB (replayed once); rows: %s", first, rowJSON(t, tickets, first))
	}
}
