package upkeep

import (
	"context"
	"database/sql"
	"encoding/json"
	"testing"
	"time"

	"github.com/redrive/redrive/alerts/alertstest"
	"github.com/redrive/redrive/internal/sqlitetest"
	"github.com/redrive/redrive/sqlbatch"
)

// A task paused by its failed canary is told once as task.paused, a done
// or cancelled one once as task.finished; a task an operator paused is
// marked told without an event; a second run tells nothing.
func TestTaskEventsTellEachStateOnce(t *testing.T) {
	db := sqlitetest.New(t)
	for _, r := range []struct {
		id            int64
		state, result string
	}{
		{1, "paused", `{"sent":5,"succeeded":1,"failed_again":4,"ratio":0.2,"passed":false,"reasons":["status <n>"],"at":1}`},
		{2, "done", ""}, {3, "cancelled", ""}, {4, "paused", ""}, {5, "running", ""},
	} {
		var result any
		if r.result != "" {
			result = r.result
		}
		if _, err := db.Exec(`INSERT INTO replay_tasks(id, created_at, updated_at, state, filter, rate_per_minute, matched, sent,
			slot_origin, pos_failed_at, pos_id, created_by, request_id, canary_result)
			VALUES (?, 1, 2, ?, '{}', 60, 10, 5, 0, 0, 0, 'k', 'r', ?)`, r.id, r.state, result); err != nil {
			t.Fatal(err)
		}
	}
	o := alertstest.Outbox(db, &alertstest.Slack{})
	s := TaskEvents{DB: db, Batch: sqlbatch.Tx{DB: db}, Database: "DB"}
	now := time.Date(2030, 6, 1, 10, 0, 0, 0, time.UTC)
	n, err := s.Emit(ctx, o, now)
	if err != nil || n != 3 {
		t.Fatalf("told %d %v, want 3 events", n, err)
	}
	if n, err := s.Emit(ctx, o, now.Add(5*time.Minute)); err != nil || n != 0 {
		t.Fatalf("second run told %d %v", n, err)
	}
	var got string
	if err := db.QueryRow(`SELECT group_concat(type || ':' || (body ->> '$.data.task_id'), ',') FROM (SELECT type, body FROM alert_events ORDER BY type, body ->> '$.data.task_id')`).Scan(&got); err != nil ||
		got != "task.finished:2,task.finished:3,task.paused:1" {
		t.Fatalf("events %q %v", got, err)
	}
	var untold int64
	db.QueryRow(`SELECT COUNT(*) FROM replay_tasks WHERE state IN ('paused', 'done', 'cancelled') AND told_state IS NOT state`).Scan(&untold)
	if untold != 0 {
		t.Fatalf("%d tasks not marked told", untold)
	}
	if plan := sqlitetest.Plan(t, db, `SELECT id FROM replay_tasks WHERE state IN ('paused', 'done', 'cancelled') AND told_state IS NOT state ORDER BY updated_at LIMIT ?`, int64(20)); len(plan) == 0 ||
		plan[0] != "SCAN replay_tasks USING INDEX idx_replay_tasks_untold" {
		t.Fatalf("plan %q", plan)
	}
}

// A task resumed after the run read it (before its batch) is not marked
// and not told: the event is guarded by the mark in the same batch.
func TestTaskResumedMeanwhileIsNotTold(t *testing.T) {
	db := sqlitetest.New(t)
	if _, err := db.Exec(`INSERT INTO replay_tasks(id, created_at, updated_at, state, filter, rate_per_minute, matched, sent,
		slot_origin, pos_failed_at, pos_id, created_by, request_id, canary_result)
		VALUES (1, 1, 2, 'paused', '{}', 60, 10, 5, 0, 0, 0, 'k', 'r',
		'{"sent":5,"succeeded":1,"failed_again":4,"ratio":0.2,"passed":false,"reasons":["x"],"at":1}')`); err != nil {
		t.Fatal(err)
	}
	o := alertstest.Outbox(db, &alertstest.Slack{})
	resume := func() {
		if _, err := db.Exec(`UPDATE replay_tasks SET state = 'running', updated_at = 3 WHERE id = 1`); err != nil {
			t.Fatal(err)
		}
	}
	s := TaskEvents{DB: db, Batch: beforeBatch{Runner: sqlbatch.Tx{DB: db}, before: resume}, Database: "DB"}
	if _, err := s.Emit(ctx, o, time.Date(2030, 6, 1, 10, 0, 0, 0, time.UTC)); err != nil {
		t.Fatal(err)
	}
	var events int64
	var told sql.NullString
	db.QueryRow(`SELECT COUNT(*) FROM alert_events`).Scan(&events)
	db.QueryRow(`SELECT told_state FROM replay_tasks WHERE id = 1`).Scan(&told)
	if events != 0 || told.Valid {
		t.Errorf("a task resumed meanwhile: %d events, told_state %v", events, told)
	}
}

// beforeBatch runs before ahead of each batch it is given.
type beforeBatch struct {
	sqlbatch.Runner
	before func()
}

func (r beforeBatch) Batch(ctx context.Context, stmts ...sqlbatch.Stmt) ([]json.RawMessage, error) {
	r.before()
	return r.Runner.Batch(ctx, stmts...)
}
