package resolve

import (
	"database/sql"
	"errors"
	"strings"
	"testing"

	"github.com/redrive/redrive/config"
	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/internal/sqlitetest"
	"github.com/redrive/redrive/queue/queuetest"
)

// twoDatabases are Actions over beers (shared) and orders (ORDERS_DB).
func twoDatabases(t *testing.T) (Actions, *sql.DB, *sql.DB) {
	t.Helper()
	js := strings.Replace(testPipelinesJSON, `"consumer":"external","alert_pending_threshold"`, `"consumer":"external","database":"ORDERS_DB","alert_pending_threshold"`, 1)
	ps, problems := config.ParsePipelines(js, 100, 24*3600e9, 30*24*3600e9)
	if len(problems) != 0 {
		t.Fatal(problems)
	}
	shared, orders := sqlitetest.New(t), sqlitetest.New(t)
	if _, err := orders.Exec(dlq.SeedIDsSQL("ORDERS_DB")); err != nil {
		t.Fatal(err)
	}
	dbs := dlq.NewDatabases(dlq.Store{DB: shared}, map[string]dlq.Store{"ORDERS_DB": {DB: orders}}, ps)
	clock := (&fakeClock{T: fixedClock()}).Now
	x := Actions{
		DBs:         dbs,
		Replay:      Replay{Sender: &queuetest.Sender{}, Log: discard, Cursors: dlq.NewCursors("s"), BulkMax: 10, Clock: clock, Pipelines: dbs.Pipelines()},
		Acknowledge: Acknowledge{BulkMax: 10, Clock: clock, Pipelines: dbs.Pipelines()},
		Audit:       dlq.Audit{DB: shared, DBs: dbs, Cursors: dlq.NewCursors("s"), Clock: clock},
	}
	return x, shared, orders
}

// Each action validates before it routes (bad input is its own 400, not
// a routing refusal), records itself in the database it acted on, and
// records a task it could not find as NOT_FOUND naming the id.
func TestActionsValidateRouteAndRecord(t *testing.T) {
	t.Parallel()
	x, shared, orders := twoDatabases(t)
	by := dlq.Requester{RequestID: "r1", KeyFingerprint: "fp"}
	// No pipeline named, and a delay out of range: the delay is what is wrong.
	_, err := x.ReplayRows(ctx, ReplayRequest{Selection: dlq.Selection{Filter: &dlq.Filter{}}, DelaySeconds: -1}, by, true)
	wantInput(t, err, "INVALID_DELAY")
	_, err = x.ReplayRows(ctx, ReplayRequest{Selection: dlq.Selection{Filter: &dlq.Filter{}}}, by, true)
	wantInput(t, err, "PIPELINE_REQUIRED")
	if n := count(t, shared, `SELECT COUNT(*) FROM admin_audit`) + count(t, orders, `SELECT COUNT(*) FROM admin_audit`); n != 0 {
		t.Fatalf("refused input was audited: %d rows", n)
	}

	res, err := x.ReplayRows(ctx, ReplayRequest{Selection: dlq.Selection{Filter: &dlq.Filter{Pipeline: "orders"}}}, by, true)
	if p, ok := res.(dlq.Preview); err != nil || !ok || !p.DryRun {
		t.Fatalf("dry run = %#v, %v", res, err)
	}
	task, err := x.CreateTask(ctx, TaskRequest{Filter: dlq.Filter{Pipeline: "orders"}, RatePerMinute: 60}, by)
	if err != nil {
		t.Fatal(err)
	}
	id := task.(CreatedTask).ID
	if id < dlq.IDBase("ORDERS_DB") {
		t.Fatalf("task %d was not created in ORDERS_DB", id)
	}
	if _, err := x.ActOnTask(ctx, id, dlq.TaskPause, by); err != nil {
		t.Fatal(err)
	}
	if got, err := x.Task(ctx, id, dlq.Scope{}); err != nil || got.State != TaskPaused {
		t.Fatalf("Task(%d) = %+v, %v", id, got, err)
	}
	_, err = x.ActOnTask(ctx, 77, dlq.TaskPause, by)
	if !errors.Is(err, ErrTaskNotFound) {
		t.Fatalf("unknown task: %v", err)
	}
	got := keyed(t, orders, `SELECT action || ' ' || outcome || ' ' || COALESCE(json_extract(error, '$.code'), '') AS k, COUNT(*) FROM admin_audit GROUP BY k`)
	want := map[string]int64{"replay ok ": 1, "replay_task ok ": 1, "replay_task_pause ok ": 1}
	if len(got) != len(want) {
		t.Fatalf("ORDERS_DB audit = %v, want %v", got, want)
	}
	for k, n := range want {
		if got[k] != n {
			t.Fatalf("ORDERS_DB audit = %v, want %v", got, want)
		}
	}
	var msg string
	if err := shared.QueryRow(`SELECT json_extract(error, '$.code') || ': ' || json_extract(error, '$.message') FROM admin_audit
		WHERE action = 'replay_task_pause'`).Scan(&msg); err != nil || msg != `NOT_FOUND: no replay task with id "77"` {
		t.Fatalf("unknown task's audit entry = %q, %v", msg, err)
	}
}
