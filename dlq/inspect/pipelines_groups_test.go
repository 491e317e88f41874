package inspect

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/internal/sqlitetest"
	"github.com/redrive/redrive/queue/queuetest"
)

// A failure group is one cause in one pipeline (migrations/0030): the same
// failure on two queues is two groups, each naming its queue and pipeline;
// the beer pipeline keeps the keys it had before pipelines; groups and
// timeseries take a pipeline filter and read only that queue's rows.
func TestGroupsAndSeriesPerPipeline(t *testing.T) {
	t.Parallel()
	ps := withPipelines(t)
	c, _ := pipelineCapture(t, ps)
	db := c.DB
	dbs := dlq.NewDatabases(dlq.Store{DB: db}, nil, ps)
	ctx := context.Background()
	// A recorded attempt with the same class and error on each queue.
	for _, a := range []dlq.Attempt{
		{MessageID: "b-att", Queue: "beer-enrichment", Attempt: 3, Class: "permanent", Error: "status 400: bad input", At: time.Now()},
		{MessageID: "o-att", Queue: "orders", Attempt: 3, Class: "permanent", Error: "status 400: bad input", At: time.Now()},
	} {
		if err := (dlq.Attempts{DB: db}).Record(ctx, a); err != nil {
			t.Fatal(err)
		}
	}
	deliver := func(dlqName string, ids ...string) {
		t.Helper()
		var ms []*queuetest.Message
		for _, id := range ids {
			ms = append(ms, queuetest.New(id, `{"beer_id":"`+id+`","order":{"id":"`+id+`"}}`))
		}
		if err := c.ConsumeBatch(ctx, dlqName, queuetest.Batch(ms...)); err != nil {
			t.Fatal(err)
		}
	}
	deliver("beer-enrichment-dlq", "b-att", "b-1", "b-2")
	deliver("orders-dlq", "o-att", "o-1")
	deliver("odd-dlq", "d-1") // no key at /a~1b/~0: poison
	deliver("other-dlq", "x-1")

	page, err := Groups{DBs: dbs, Cursors: dlq.NewCursors("s")}.Page(ctx, GroupsParams{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	keys := map[string]string{}
	for _, g := range page.Groups {
		pl := "-"
		if g.Pipeline != nil {
			pl = *g.Pipeline
		}
		got = append(got, fmt.Sprintf("%s/%s/%s:%d", g.SourceQueue, pl, g.Class, g.Counts.Pending))
		keys[g.SourceQueue+"/"+g.Class] = g.Signature
	}
	want := "beer-enrichment/beers/unknown:2 beer-enrichment/beers/permanent:1 odd/odd/poison:1 orders/orders/permanent:1 orders/orders/unknown:1 other/-/unknown:1"
	if strings.Join(slices.Sorted(slices.Values(got)), " ") != strings.Join(slices.Sorted(slices.Values(strings.Fields(want))), " ") {
		t.Fatalf("groups\n got %v\nwant %s", got, want)
	}
	if keys["beer-enrichment/unknown"] != dlq.UnknownSignature.Key || keys["beer-enrichment/permanent"] != dlq.SignatureOf("permanent", "status 400: bad input").Key {
		t.Errorf("the beer pipeline's keys changed: %v", keys)
	}
	if keys["orders/permanent"] != dlq.SignatureIn("orders", "permanent", "status 400: bad input").Key ||
		keys["orders/unknown"] != dlq.UnknownSignatureIn("orders").Key || keys["orders/unknown"] == keys["other/unknown"] {
		t.Errorf("orders keys %v", keys)
	}
	// Each row names its queue's group.
	if n := count(t, db, `SELECT COUNT(*) FROM dlq_messages d JOIN dlq_signatures s ON s.signature = d.signature
		WHERE s.source_queue = d.source_queue`); n != 7 {
		t.Errorf("%d of 7 rows in a group of their own queue", n)
	}

	orders, err := Groups{DBs: dbs, Cursors: dlq.NewCursors("s")}.Page(ctx, GroupsParams{Pipeline: "orders", Limit: 1})
	if err != nil || len(orders.Groups) != 1 || !orders.HasMore || orders.Groups[0].SourceQueue != "orders" {
		t.Fatalf("orders page 1: %+v %v", orders, err)
	}
	next, err := Groups{DBs: dbs, Cursors: dlq.NewCursors("s")}.Page(ctx, GroupsParams{Pipeline: "orders", Limit: 1, Cursor: *orders.NextCursor})
	if err != nil || len(next.Groups) != 1 || next.HasMore || next.Groups[0].SourceQueue != "orders" || next.Groups[0].Signature == orders.Groups[0].Signature {
		t.Fatalf("orders page 2: %+v %v", next, err)
	}
	if _, err := (Groups{DBs: dbs, Cursors: dlq.NewCursors("s")}).Page(ctx, GroupsParams{Pipeline: "beers", Limit: 1, Cursor: *orders.NextCursor}); !strings.Contains(fmt.Sprint(err), "INVALID_CURSOR") {
		t.Errorf("an orders cursor on the beers groups: %v", err)
	}
	if _, err := (Groups{DBs: dbs, Cursors: dlq.NewCursors("s")}).Page(ctx, GroupsParams{Pipeline: "nope"}); !strings.Contains(fmt.Sprint(err), "UNKNOWN_PIPELINE") {
		t.Errorf("unknown pipeline: %v", err)
	}
	// A group's total is the sum of its counts (1 + 2 + 4 + 8).
	mustExec(t, db, `INSERT INTO dlq_signatures(signature, class, text, pending, replaying, replayed, acknowledged, first_seen, last_seen, source_queue)
		VALUES ('00000000000000ff', 'transient', 'sum', 1, 2, 4, 8, 1, 1, 'odd')`)
	odd, err := Groups{DBs: dbs, Cursors: dlq.NewCursors("s")}.Page(ctx, GroupsParams{Pipeline: "odd"})
	if err != nil || len(odd.Groups) != 2 || odd.Groups[0].Signature != "00000000000000ff" || odd.Groups[0].Total != 15 {
		t.Fatalf("odd groups: %+v %v", odd.Groups, err)
	}
	for _, firstSeen := range []bool{false, true} {
		plan := strings.Join(sqlitetest.Plan(t, db, groupsSQL("1 = 1 AND source_queue = ?", firstSeen), "orders", 10), "\n")
		if !strings.Contains(plan, "idx_dlq_signatures_queue_") || strings.Contains(plan, "TEMP B-TREE") {
			t.Errorf("groups of one pipeline (first seen %v) plan:\n%s", firstSeen, plan)
		}
	}

	for pl, want := range map[string]int64{"": 7, "orders": 2, "beers": 3, "odd": 1} {
		s, err := TimeSeries{DBs: dbs, Clock: c.Clock, Pipeline: pl}.Read(ctx)
		if err != nil || s.Total != want || s.Pipeline != pl {
			t.Errorf("timeseries %q: total %d, want %d (%v)", pl, s.Total, want, err)
		}
	}
	if _, err := (TimeSeries{DBs: dbs, Clock: c.Clock, Pipeline: "nope"}).Read(ctx); !strings.Contains(fmt.Sprint(err), "UNKNOWN_PIPELINE") {
		t.Errorf("timeseries of an unknown pipeline: %v", err)
	}
}

// Migration 0030 on a database at the schema before it: every row's hours
// are counted again under its own queue, the capture events keep their sum
// (dlq_captured_total), and each group gets the queue of its first sample
// row still kept, else the beer queue.
func TestMigration0030CarriesCountsAndGroups(t *testing.T) {
	db := sqlitetest.Migrated(t, "0030")
	h := int64(490000) * 3600000
	for i, r := range []struct {
		queue, status string
		failedAt      int64
	}{
		{"beer-enrichment", "pending", h + 1}, {"beer-enrichment", "pending", h + 2}, {"orders", "pending", h + 3},
		{"orders", "acknowledged", h + 3600000}, {"beer-enrichment", "replayed", h + 3600000},
	} {
		mustExec(t, db, `INSERT INTO dlq_messages(message_id, beer_id, failed_at, source_queue, status, acknowledged_at, replayed_at, last_message_id, signature)
			VALUES (?1, ?1, ?2, ?3, ?4, CASE ?4 WHEN 'acknowledged' THEN ?2 END, CASE ?4 WHEN 'replayed' THEN ?2 END, ?1, ?5)`,
			fmt.Sprint("m", i), r.failedAt, r.queue, r.status, []string{"aaaaaaaaaaaaaaaa", "aaaaaaaaaaaaaaaa", "bbbbbbbbbbbbbbbb", "bbbbbbbbbbbbbbbb", "aaaaaaaaaaaaaaaa"}[i])
	}
	// A repeat failure (one more capture event) and the archive row.
	mustExec(t, db, `UPDATE dlq_messages SET last_message_id = 'm0-again' WHERE message_id = 'm0'`)
	mustExec(t, db, `INSERT INTO dlq_activity(kind, hour, n, events) VALUES ('failed', -1, 0, 40)`)
	mustExec(t, db, `INSERT INTO dlq_signatures(signature, class, text, first_seen, last_seen, sample_ids) VALUES
		('aaaaaaaaaaaaaaaa', 'unknown', 'x', 1, 1, '[1]'), ('bbbbbbbbbbbbbbbb', 'unknown', 'y', 1, 1, '[99, 3]'), ('cccccccccccccccc', 'unknown', 'z', 1, 1, '[98]')`)
	events := count(t, db, `SELECT SUM(events) FROM dlq_activity`)
	if events != 46 {
		t.Fatalf("before 0030: %d capture events, want 46", events)
	}

	sqlitetest.Migrate(t, db, "0030")
	if n := count(t, db, `SELECT SUM(events) FROM dlq_activity`); n != events {
		t.Errorf("after 0030: %d capture events, want %d", n, events)
	}
	got := keyed(t, db, `SELECT kind || '@' || (hour - 490000) || '@' || source_queue, n FROM dlq_activity WHERE n <> 0`)
	want := map[string]int64{"failed@0@beer-enrichment": 2, "failed@0@orders": 1, "failed@1@orders": 1, "failed@1@beer-enrichment": 1,
		"acknowledged@1@orders": 1, "replayed@1@beer-enrichment": 1}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("hours after 0030\n got %v\nwant %v", got, want)
	}
	if n := count(t, db, `SELECT events FROM dlq_activity WHERE kind = 'failed' AND hour = 490000 AND source_queue = 'orders'`); n != 1 {
		t.Errorf("orders' capture events in the first hour: %d, want 1", n)
	}
	queues := keyed(t, db, `SELECT signature || '=' || source_queue, 1 AS one FROM dlq_signatures`)
	if fmt.Sprint(queues) != fmt.Sprint(map[string]int64{"aaaaaaaaaaaaaaaa=beer-enrichment": 1, "bbbbbbbbbbbbbbbb=orders": 1, "cccccccccccccccc=beer-enrichment": 1}) {
		t.Errorf("groups' queues after 0030: %v", queues)
	}
	// The triggers count by queue from then on.
	mustExec(t, db, `INSERT INTO dlq_messages(message_id, row_key, failed_at, source_queue, last_message_id) VALUES ('m9', 'm9', ?, 'orders', 'm9')`, h+5)
	if n := count(t, db, `SELECT n FROM dlq_activity WHERE kind = 'failed' AND hour = 490000 AND source_queue = 'orders'`); n != 2 {
		t.Errorf("orders' first hour after a new row: %d, want 2", n)
	}
}

// queueStores keeps the rows of the queues it names in their own store.
type queueStores struct {
	shared dlq.Store
	own    map[string]dlq.Store
}

func (s queueStores) Of(q string) dlq.Store {
	if st, ok := s.own[q]; ok {
		return st
	}
	return s.shared
}

// The capture reaches its database through Stores only: a pipeline whose
// queue maps to a store of its own has its rows, counts and groups there
// and none in the shared database, and a store that fails there is retried
// as D1 unavailable while the other pipelines' rows are stored.
func TestCaptureWritesEachPipelineToItsStore(t *testing.T) {
	t.Parallel()
	ps := withPipelines(t)
	c, _ := pipelineCapture(t, ps)
	shared := c.DB
	own := sqlitetest.New(t)
	c.Stores = queueStores{shared: dlq.Store{DB: shared, Pipelines: ps}, own: map[string]dlq.Store{"orders": {DB: own, Pipelines: ps}}}
	ctx := context.Background()
	o := queuetest.New("o-1", `{"order":{"id":"o-1"}}`)
	b := queuetest.New("b-1", `{"beer_id":"b-1"}`)
	if err := c.ConsumeBatch(ctx, "orders-dlq", queuetest.Batch(o)); err != nil || !o.Acked {
		t.Fatalf("orders message: %v acked %v", err, o.Acked)
	}
	if err := c.ConsumeBatch(ctx, "beer-enrichment-dlq", queuetest.Batch(b)); err != nil || !b.Acked {
		t.Fatalf("beer message: %v acked %v", err, b.Acked)
	}
	for _, q := range []struct {
		db            *sql.DB
		name, queue   string
		rows, another int64
	}{{own, "own", "orders", 1, 0}, {shared, "shared", "beer-enrichment", 1, 0}} {
		if n := count(t, q.db, `SELECT COUNT(*) FROM dlq_messages WHERE source_queue = ?`, q.queue); n != q.rows {
			t.Errorf("%s database: %d rows of %s, want %d", q.name, n, q.queue, q.rows)
		}
		if n := count(t, q.db, `SELECT COUNT(*) FROM dlq_messages WHERE source_queue <> ?`, q.queue); n != q.another {
			t.Errorf("%s database: %d rows of other queues", q.name, n)
		}
		if n := count(t, q.db, `SELECT COALESCE(SUM(pending), 0) FROM dlq_signatures WHERE source_queue = ?`, q.queue); n != 1 {
			t.Errorf("%s database: groups count %d pending of %s, want 1", q.name, n, q.queue)
		}
	}
	// The orders store gone: its message is retried, the beers' stored.
	mustExec(t, own, `ALTER TABLE dlq_messages RENAME TO away`)
	o2 := queuetest.New("o-2", `{"order":{"id":"o-2"}}`)
	_ = c.ConsumeBatch(ctx, "orders-dlq", queuetest.Batch(o2))
	if o2.Acked || !o2.Retried || o2.RetryDelay <= 0 {
		t.Fatalf("a message whose store is unavailable: acked %v, retried %v after %v (want a backoff: its store is probed)", o2.Acked, o2.Retried, o2.RetryDelay)
	}
	b2 := queuetest.New("b-2", `{"beer_id":"b-2"}`)
	if err := c.ConsumeBatch(ctx, "beer-enrichment-dlq", queuetest.Batch(b2)); err != nil || !b2.Acked {
		t.Fatalf("beer message beside an unavailable orders store: %v acked %v", err, b2.Acked)
	}
}
