package upkeep

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/redrive/redrive/alerts"
	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/dlq/resolve"
	"github.com/redrive/redrive/sqlbatch"
)

// TaskEvents tells on-call about replay tasks of one database (an
// alerts.Source): task.paused when a task's canary failed and paused it,
// task.finished when a task is done or cancelled. A task is told once per
// state it reaches (replay_tasks.told_state); a task paused by an operator
// is marked told without an event. It reads the tasks not told yet through
// idx_replay_tasks_untold (a handful), at most taskEventsLimit a run; the
// events and the mark are committed together (alerts.Outbox.Commit; their
// ids are fixed by the task, its state and its last change).
type TaskEvents struct {
	DB    *sql.DB
	Batch sqlbatch.Runner
	// Database is the binding (dlq.JobName names the source).
	Database string
}

const taskEventsLimit = 20

// Name implements alerts.Source.
func (s TaskEvents) Name() string { return dlq.JobName("task_events", s.Database) }

type untoldTask struct {
	ID, UpdatedAt, Sent, SendFailed, Matched int64
	State                                    string
	Result                                   sql.NullString
}

// Emit implements alerts.Source.
func (s TaskEvents) Emit(ctx context.Context, o *alerts.Outbox, now time.Time) (int, error) {
	rows, err := s.DB.QueryContext(ctx, `SELECT id, state, updated_at, sent, send_failed, matched, canary_result FROM replay_tasks
		WHERE state IN ('paused', 'done', 'cancelled') AND told_state IS NOT state ORDER BY updated_at LIMIT ?`, int64(taskEventsLimit))
	if err != nil {
		return 0, fmt.Errorf("untold tasks: %w", err)
	}
	var tasks []untoldTask
	for rows.Next() {
		var t untoldTask
		if err := rows.Scan(&t.ID, &t.State, &t.UpdatedAt, &t.Sent, &t.SendFailed, &t.Matched, &t.Result); err != nil {
			rows.Close()
			return 0, fmt.Errorf("untold tasks: %w", err)
		}
		tasks = append(tasks, t)
	}
	rows.Close()
	if err := rows.Err(); err != nil || len(tasks) == 0 {
		return 0, err
	}
	var evs []alerts.Keyed
	marks := make([][3]any, 0, len(tasks))
	for _, t := range tasks {
		marks = append(marks, [3]any{t.ID, t.State, t.UpdatedAt})
		if ev, ok := s.event(t, now); ok {
			evs = append(evs, ev)
		}
	}
	js, _ := json.Marshal(marks) // integers and strings always marshal
	mark := sqlbatch.Stmt{SQL: `UPDATE replay_tasks SET told_state = state
		WHERE (id, state, updated_at) IN (SELECT value ->> 0, value ->> 1, value ->> 2 FROM json_each(?1))`, Args: []any{string(js)}}
	if _, err := o.Commit(ctx, s.Database, s.Batch, []sqlbatch.Stmt{mark}, evs, now, toldNow); err != nil {
		return 0, fmt.Errorf("tell tasks: %w", err)
	}
	return len(evs), nil
}

// toldNow is the guard of a task's event (alerts.Outbox.Record): the mark
// reached the task, which was still in the state the event tells.
const toldNow = `EXISTS (SELECT 1 FROM replay_tasks t WHERE t.id = CAST(j.value ->> 'key' AS INTEGER) AND t.told_state = t.state)`

// event is the event telling t (none for a pause without a failed canary).
func (s TaskEvents) event(t untoldTask, now time.Time) (alerts.Keyed, bool) {
	var res resolve.CanaryResult
	canaryFailed := t.Result.Valid && json.Unmarshal([]byte(t.Result.String), &res) == nil && !res.Passed
	data := map[string]any{"task_id": t.ID, "database": s.Database, "state": t.State, "sent": t.Sent, "send_failed": t.SendFailed, "matched": t.Matched}
	ev := alerts.Event{ID: alerts.EventID("task", s.Database, fmt.Sprint(t.ID), t.State, fmt.Sprint(t.UpdatedAt)),
		Timestamp: alerts.Timestamp(now), DedupKey: alerts.DedupKey(fmt.Sprintf("task:%s:%d", s.Database, t.ID)), Data: data}
	switch {
	case t.State == resolve.TaskPaused && canaryFailed:
		ev.Type, ev.Severity = alerts.TaskPaused, "warning"
		data["canary"] = res
		ev.Summary = fmt.Sprintf("PAUSED replay task %d: its canary failed, %d of %d succeeded (ratio %.2f), %d failed again: %s",
			t.ID, res.Succeeded, res.Sent, res.Ratio, res.FailedAgain, strings.Join(res.Reasons, "; "))
	case t.State == resolve.TaskDone || t.State == resolve.TaskCancelled:
		ev.Type, ev.Severity = alerts.TaskFinished, "info"
		ev.Summary = fmt.Sprintf("FINISHED replay task %d (%s): %d of %d rows sent, %d sends failed", t.ID, t.State, t.Sent, t.Matched, t.SendFailed)
	default:
		return alerts.Keyed{}, false
	}
	return alerts.Keyed{Event: ev, Key: fmt.Sprint(t.ID)}, true
}
