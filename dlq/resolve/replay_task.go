package resolve

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/jobs"
	"github.com/redrive/redrive/sqlbatch"
)

// Replay task states (replay_tasks.state).
const (
	TaskRunning = "running"
	// TaskCanary: the task sent its canary rows and waits for their outcome.
	TaskCanary    = "canary"
	TaskPaused    = "paused"
	TaskDone      = "done"
	TaskCancelled = "cancelled"
)

const (
	// MaxTaskRate is the most messages per minute a task may ask for: a
	// 5-minute step then sends at most 3,000 messages (30 sendBatch calls).
	MaxTaskRate = 600
	// DefaultTaskWindow is how far ahead one step schedules deliveries:
	// the interval of the cron that advances tasks (jobs.Frequent).
	DefaultTaskWindow = 5 * time.Minute
	// taskLease is how long a step holds its task; a step that died is
	// taken over by a later run after it.
	taskLease = 10 * time.Minute
	// TaskObserve is how long after its delivery a sent row without a new
	// failure counts as succeeded (when, in the beer pipeline, its beer was
	// not enriched first: only rows of beer-enrichment join beers).
	TaskObserve = 10 * time.Minute
	// maxTasksPerRun bounds one run of the job (each task is one step).
	maxTasksPerRun = 10
)

// ErrTaskNotFound: no replay task has the id.
var ErrTaskNotFound = errors.New("replay task not found")

// TaskStateError is a pause, resume or cancel that the task's state does
// not allow (the admin API answers 409 with code INVALID_STATE).
type TaskStateError struct {
	Action, State string
}

func (e *TaskStateError) Error() string {
	return fmt.Sprintf("cannot %s a task that is %s", e.Action, e.State)
}

// ReplayTasks are durable replays (POST /admin/dlq/replay-tasks): a filter
// replayed at a rate. A task lives in replay_tasks and is advanced by the
// 5-minute cron (ReplayTaskJob): each step claims at most what the rate
// allows until the next step (Window) and sends it with staggered delays,
// so that deliveries are even at the rate without a long-running request.
//
// Every step claims, sends and settles through Replay (the one atomic
// claim pending -> replaying of every replay), so a task and an ad-hoc
// replay never send the same row; the rows a task sent are recorded in
// replay_task_rows in the settle's batch, with the task's new position and
// counts, and its claims skip them: a row is sent at most once per task,
// whatever restarts or overlapping cron runs happen. A task covers the
// matching pending rows that failed at or before its creation, newest
// failure first (the bulk replay's order); a row that fails again after
// the task sent it is not sent again by it.
type ReplayTasks struct {
	// Replay claims, sends and settles (its DB, Batch, Sender, Clock,
	// Destinations and BulkMax, the most rows one claim takes).
	Replay Replay
	// Window is how far ahead a step schedules (DefaultTaskWindow when 0).
	Window time.Duration
	// Limits bounds one run of the job (its wall-time budget).
	Limits jobs.Limits
}

// TaskRequest creates a replay task.
type TaskRequest struct {
	// Filter selects the rows (any list filter; pending rows only).
	Filter dlq.Filter
	// RatePerMinute is the delivery rate, 1..MaxTaskRate.
	RatePerMinute int64
	// DelaySeconds postpones the first delivery, 0..MaxDelaySeconds.
	DelaySeconds int64
	// Destination replaces each row's source_queue (see Replay.Destinations).
	Destination string
	// Canary, when set, sends the first Size rows alone and continues only
	// if enough of them succeed (see Canary).
	Canary *Canary
}

// Canary limits.
const (
	MaxCanarySize    = 100
	MaxCanaryObserve = 24 * 60
)

// Canary is a task's trial: its first Size rows go alone (state canary);
// each then either succeeds (no new failure within ObserveMinutes of it,
// for every pipeline; in the beer pipeline also its beer enriched after
// its delivery, which decides earlier) or fails again (a repeat
// failure after its delivery, found by lineage). Once every canary row is
// decided, the task continues (running) if succeeded/size >=
// MinSuccessRatio, else it pauses itself and the alert replay_canary_failed
// fires with the failure reasons, until it is resumed or cancelled.
type Canary struct {
	Size            int64   `json:"size"`
	MinSuccessRatio float64 `json:"min_success_ratio"`
	ObserveMinutes  int64   `json:"observe_minutes"`
}

// CanaryResult is how a task's canary ended.
type CanaryResult struct {
	// Sent is the number of canary rows sent; Succeeded and FailedAgain split them.
	Sent        int64   `json:"sent"`
	Succeeded   int64   `json:"succeeded"`
	FailedAgain int64   `json:"failed_again"`
	Ratio       float64 `json:"ratio"`
	Passed      bool    `json:"passed"`
	// Reasons are the distinct failure reasons of the rows that failed again (at most 5).
	Reasons []string `json:"reasons"`
	At      int64    `json:"at"`
}

// Task is a replay task as the admin API shows it (handlers/openapi.json).
type Task struct {
	ID            int64           `json:"id"`
	State         string          `json:"state"`
	Filter        json.RawMessage `json:"filter"`
	RatePerMinute int64           `json:"rate_per_minute"`
	DelaySeconds  int64           `json:"delay_seconds"`
	Destination   *string         `json:"destination"`
	// Matched counts the replayable pending rows that matched at creation.
	Matched int64 `json:"matched"`
	// Sent counts rows sent; SendFailed rows whose send failed (they went
	// back to pending and the task does not send them again).
	Sent       int64 `json:"sent"`
	SendFailed int64 `json:"send_failed"`
	// Succeeded and FailedAgain (GET .../{id} only) count sent rows whose
	// beer was enriched after their delivery or that did not fail again
	// within TaskObserve of it, and rows that failed again after it.
	Succeeded   *int64 `json:"succeeded,omitempty"`
	FailedAgain *int64 `json:"failed_again,omitempty"`
	// Remaining is matched - sent - send_failed while the task may still send (else 0).
	Remaining int64 `json:"remaining"`
	// EstimatedFinishAt is when the last remaining row should be delivered
	// at the rate (running tasks only).
	EstimatedFinishAt *int64 `json:"estimated_finish_at"`
	Steps             int64  `json:"steps"`
	CreatedAt         int64  `json:"created_at"`
	UpdatedAt         int64  `json:"updated_at"`
	LastStepAt        *int64 `json:"last_step_at"`
	FinishedAt        *int64 `json:"finished_at"`
	CreatedBy         string `json:"created_by"`
	// Principal names who created the task (null: before principals).
	Principal *string `json:"principal"`
	// Canary is the task's canary (null: none); CanaryResult how it ended
	// (null while undecided, or without a canary).
	Canary       *Canary       `json:"canary"`
	CanaryResult *CanaryResult `json:"canary_result"`

	slotOrigin, slotBase int64
}

// CreatedTask is a task just created (its JSON is the task's), with what
// the audit entry of its creation records.
type CreatedTask struct {
	Task
	request TaskRequest
}

// AuditOutcome is ok.
func (CreatedTask) AuditOutcome() string { return dlq.OutcomeOK }

// AuditCounts are the task's id, matched rows and the request's rate,
// delay, destination and canary.
func (t CreatedTask) AuditCounts() any {
	counts := map[string]any{"task_id": t.ID, "matched": t.Matched, "rate_per_minute": t.request.RatePerMinute,
		"delay_seconds": t.request.DelaySeconds, "destination": t.request.Destination}
	if t.request.Canary != nil {
		counts["canary"] = t.request.Canary
	}
	return counts
}

// ActedTask is a task just paused, resumed or cancelled (its JSON is the
// task's), with what the audit entry of the action records.
type ActedTask struct {
	Task
	id int64
}

// AuditOutcome is ok.
func (ActedTask) AuditOutcome() string { return dlq.OutcomeOK }

// AuditCounts are the task's id and its state after the action.
func (t ActedTask) AuditCounts() any { return map[string]any{"task_id": t.id, "state": t.State} }

const taskColumns = `id, state, filter, rate_per_minute, delay_seconds, destination, matched, sent, send_failed,
	steps, created_at, updated_at, last_step_at, finished_at, created_by, slot_origin, slot_base, canary, canary_result, principal`

func scanTask(sc interface{ Scan(...any) error }) (Task, error) {
	var t Task
	var filter string
	var canary, result sql.NullString
	if err := sc.Scan(&t.ID, &t.State, &filter, &t.RatePerMinute, &t.DelaySeconds, &t.Destination, &t.Matched, &t.Sent, &t.SendFailed,
		&t.Steps, &t.CreatedAt, &t.UpdatedAt, &t.LastStepAt, &t.FinishedAt, &t.CreatedBy, &t.slotOrigin, &t.slotBase, &canary, &result, &t.Principal); err != nil {
		return t, err
	}
	if canary.Valid {
		t.Canary = new(Canary)
		if err := json.Unmarshal([]byte(canary.String), t.Canary); err != nil {
			return t, fmt.Errorf("task canary: %w", err)
		}
	}
	if result.Valid {
		t.CanaryResult = new(CanaryResult)
		if err := json.Unmarshal([]byte(result.String), t.CanaryResult); err != nil {
			return t, fmt.Errorf("task canary result: %w", err)
		}
	}
	t.Filter = json.RawMessage(filter)
	return t, nil
}

// derive fills Remaining and EstimatedFinishAt at now (ms).
func (t *Task) derive(now int64) {
	t.Remaining = 0
	if t.State == TaskRunning || t.State == TaskPaused || t.State == TaskCanary {
		t.Remaining = max(t.Matched-t.Sent-t.SendFailed, 0)
	}
	t.EstimatedFinishAt = nil
	if t.State == TaskRunning {
		s := schedule{rate: t.RatePerMinute, origin: t.slotOrigin, base: t.slotBase}
		next := max(s.at(t.Sent+t.SendFailed), now)
		at := next + t.Remaining*slotSpan/t.RatePerMinute
		t.EstimatedFinishAt = &at
	}
}

// schedule places a task's messages: slot k is delivered at
// origin + ceil((k-base)·slotSpan/rate) ms. A queue's delay is whole
// seconds counted from the send, so a message lands up to 999 ms after its
// slot; slots rate apart are slotSpan = 60.999 s apart, so any minute
// holds at most rate deliveries whenever each send happens. A schedule only
// ever moves later (a late step or send moves origin to its own time).
type schedule struct {
	rate, origin, base int64
}

// slotSpan is the time (ms) that rate consecutive slots take.
const slotSpan = 60_999

func (s schedule) at(k int64) int64 {
	return s.origin + ((k-s.base)*slotSpan+s.rate-1)/s.rate
}

// ceilSecond is ms rounded up to a whole second.
func ceilSecond(ms int64) int64 { return (ms + 999) / 1000 * 1000 }

func (ts ReplayTasks) window() time.Duration {
	if ts.Window <= 0 {
		return DefaultTaskWindow
	}
	return ts.Window
}

// Check validates req without touching anything.
func (ts ReplayTasks) Check(req TaskRequest) (dlq.Filter, error) {
	f, err := req.Filter.NormalizePending(ts.Replay.Pipelines)
	if err != nil {
		return f, err
	}
	if req.RatePerMinute < 1 || req.RatePerMinute > MaxTaskRate {
		return f, dlq.InputErr("INVALID_RATE", "rate_per_minute must be an integer in 1..%d", MaxTaskRate)
	}
	if req.DelaySeconds < 0 || req.DelaySeconds > dlq.MaxDelaySeconds {
		return f, dlq.InputErr("INVALID_DELAY", "delay_seconds must be an integer in 0..%d", dlq.MaxDelaySeconds)
	}
	if c := req.Canary; c != nil {
		if c.Size < 1 || c.Size > MaxCanarySize {
			return f, dlq.InputErr("INVALID_CANARY", "canary.size must be an integer in 1..%d", MaxCanarySize)
		}
		if !(c.MinSuccessRatio >= 0 && c.MinSuccessRatio <= 1) {
			return f, dlq.InputErr("INVALID_CANARY", "canary.min_success_ratio must be a number in 0..1")
		}
		if c.ObserveMinutes < 1 || c.ObserveMinutes > MaxCanaryObserve {
			return f, dlq.InputErr("INVALID_CANARY", "canary.observe_minutes must be an integer in 1..%d", MaxCanaryObserve)
		}
	}
	if err := ts.Replay.CheckDestination(req.Destination); err != nil {
		return f, err
	}
	return f, ts.Replay.checkTarget(req.Destination, &f)
}

// taskCond is the condition of the rows task id may still claim: its
// filter's replayable pending rows after its position, not sent by it yet,
// while the task is running (a pause or cancel stops a step in flight).
func taskCond(f dlq.Filter, id, posFailedAt, posID int64, frozen []string) (string, []any) {
	sel := dlq.Selection{Filter: &f}
	cond, args := sel.Where(true, &dlq.Position{FailedAt: posFailedAt, ID: posID})
	cond += ` AND id NOT IN (SELECT dlq_id FROM replay_task_rows WHERE task_id = ?)
		AND EXISTS (SELECT 1 FROM replay_tasks WHERE id = ? AND state IN ('running', 'canary'))`
	args = append(args, id, id)
	if len(frozen) > 0 {
		// A task whose filter names no pipeline (made while one database
		// was bound) skips the rows of pipelines stored elsewhere.
		cond += ` AND +source_queue NOT IN (SELECT value FROM json_each(?))`
		args = append(args, dlq.JSONList(frozen))
	}
	return cond, args
}

// frozenQueue is the queue of the task's filter (its pipeline's, or its
// source_queue) when its rows here are frozen (Replay.Frozen: the
// pipeline is stored in another database, its rows here move), else "".
func (st *taskStep) frozenQueue() string {
	q := st.f.SourceQueue
	if p, ok := st.r.Pipelines.ByName(st.f.Pipeline); ok {
		q = p.Queue
	}
	if q != "" && slices.Contains(st.r.Frozen, q) {
		return q
	}
	return ""
}

// pauseMoving pauses the task held by st (one conditional statement),
// whose rows move to their pipeline's database: it sends nothing from
// rows that are being copied. Its rows are replayed by a task created
// again in that database once they are imported (docs/operations.md).
func (st *taskStep) pauseMoving(ctx context.Context, q string) error {
	if _, err := st.r.DB.ExecContext(ctx, `UPDATE replay_tasks SET state = 'paused', step_at = NULL, last_step_at = ?1, updated_at = ?1
		WHERE id = ?2 AND steps = ?3 AND state IN ('running', 'canary')`, st.nowMs, st.id, st.steps); err != nil {
		return fmt.Errorf("replay task pause: %w", err)
	}
	if st.r.Log != nil {
		st.r.Log.Warn("replay task paused: its pipeline is stored in another database now; import its rows there and create the task again there",
			"task_id", st.id, "queue", q)
	}
	return nil
}

// Create stores a new running task (one statement, which also counts the
// rows it matches: one read per matching pending row, as a dry run).
func (ts ReplayTasks) Create(ctx context.Context, req TaskRequest, by dlq.Requester) (Task, error) {
	f, err := ts.Check(req)
	if err != nil {
		return Task{}, err
	}
	return ts.create(ctx, req, f, by)
}

// create is Create of a checked request (f, its normalized filter, from Check).
func (ts ReplayTasks) create(ctx context.Context, req TaskRequest, f dlq.Filter, by dlq.Requester) (Task, error) {
	now := ts.Replay.Clock.Now().UnixMilli()
	fjs, _ := json.Marshal(f)
	sel := dlq.Selection{Filter: &f}
	cond, args := sel.Where(true, &dlq.Position{FailedAt: now, ID: dlq.MaxSafeInteger})
	var dest, canary any
	if req.Destination != "" {
		dest = req.Destination
	}
	state := TaskRunning
	if req.Canary != nil {
		js, _ := json.Marshal(req.Canary)
		canary, state = string(js), TaskCanary
	}
	all := []any{now, now, state, canary, string(fjs), req.RatePerMinute, req.DelaySeconds, dest, ceilSecond(now + req.DelaySeconds*1000),
		now, int64(dlq.MaxSafeInteger), by.KeyFingerprint, by.RequestID, dlq.NullIfEmpty(by.Principal)}
	all = append(all, args...)
	row := ts.Replay.DB.QueryRowContext(ctx, `INSERT INTO replay_tasks(created_at, updated_at, state, canary, filter, rate_per_minute,
			delay_seconds, destination, slot_origin, pos_failed_at, pos_id, created_by, request_id, principal, matched)
		SELECT ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, (SELECT COUNT(*) FROM dlq_messages WHERE `+cond+`)
		RETURNING `+taskColumns, all...)
	t, err := scanTask(row)
	if err != nil {
		return Task{}, fmt.Errorf("replay task create: %w", err)
	}
	t.derive(now)
	return t, nil
}

// List returns the newest limit tasks (stored counts only: one row each).
// pipeline, when set, keeps the tasks that can replay that configured
// pipeline's rows: those whose filter names its queue, and those of every
// queue; it reads the tasks newer than the last one returned (a table that
// grows by one row per task an operator creates).
func (ts ReplayTasks) List(ctx context.Context, limit int, pipeline string, scope dlq.Scope) ([]Task, error) {
	queue, err := ts.Replay.Pipelines.Queue(pipeline)
	if err != nil {
		return nil, err
	}
	var queues any // a scope's queues: only the tasks of its pipelines (never one of every pipeline)
	if !scope.All() {
		queues = dlq.JSONList(scope.Queues(ts.Replay.Pipelines))
	}
	rows, err := ts.Replay.DB.QueryContext(ctx, `SELECT `+taskColumns+` FROM replay_tasks
		WHERE (?2 IS NULL OR COALESCE(filter ->> '$.source_queue', ?2) = ?2)
		AND (?3 IS NULL OR filter ->> '$.source_queue' IN (SELECT value FROM json_each(?3))) ORDER BY id DESC LIMIT ?1`,
		int64(limit), dlq.NullIfEmpty(queue), queues)
	if err != nil {
		return nil, fmt.Errorf("replay tasks: %w", err)
	}
	defer rows.Close()
	now := ts.Replay.Clock.Now().UnixMilli()
	out := []Task{}
	for rows.Next() {
		t, err := scanTask(rows)
		if err != nil {
			return nil, fmt.Errorf("replay tasks: %w", err)
		}
		t.derive(now)
		out = append(out, t)
	}
	return out, rows.Err()
}

// InScope refuses (ErrTaskNotFound) task id when it may replay rows of a
// pipeline scope does not reach: its filter names another queue, or none.
// It reads the task's row (nothing when scope reaches every pipeline).
func (ts ReplayTasks) InScope(ctx context.Context, id int64, scope dlq.Scope) error {
	if scope.All() {
		return nil
	}
	var in bool
	err := ts.Replay.DB.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM replay_tasks WHERE id = ?1
		AND filter ->> '$.source_queue' IN (SELECT value FROM json_each(?2)))`, id, dlq.JSONList(scope.Queues(ts.Replay.Pipelines))).Scan(&in)
	if err != nil {
		return fmt.Errorf("replay task scope: %w", err)
	}
	if !in {
		return ErrTaskNotFound
	}
	return nil
}

// Get returns one task with its outcomes (Succeeded, FailedAgain), which
// read about 3 rows per row it sent.
func (ts ReplayTasks) Get(ctx context.Context, id int64) (Task, error) {
	t, err := scanTask(ts.Replay.DB.QueryRowContext(ctx, `SELECT `+taskColumns+` FROM replay_tasks WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return Task{}, ErrTaskNotFound
	}
	if err != nil {
		return Task{}, fmt.Errorf("replay task: %w", err)
	}
	now := ts.Replay.Clock.Now().UnixMilli()
	var ok, again int64
	if err := ts.Replay.DB.QueryRowContext(ctx, `SELECT
			COALESCE(SUM(m.failed_at < r.deliver_at AND ((b.status = 'enriched' AND b.enriched_at >= r.deliver_at)
				OR r.deliver_at + ? <= ?)), 0) AS task_succeeded,
			COALESCE(SUM(m.failed_at >= r.deliver_at), 0) AS task_failed_again
		FROM replay_task_rows r JOIN dlq_messages m ON m.id = r.dlq_id LEFT JOIN beers b ON b.beer_id = m.row_key AND m.source_queue = 'beer-enrichment'
		WHERE r.task_id = ?`, TaskObserve.Milliseconds(), now, id).Scan(&ok, &again); err != nil {
		return Task{}, fmt.Errorf("replay task outcomes: %w", err)
	}
	t.Succeeded, t.FailedAgain = &ok, &again
	t.derive(now)
	return t, nil
}

// Act pauses (running or canary -> paused), resumes (paused -> canary
// while its canary is undecided, else running) or cancels (running, canary
// or paused -> cancelled) task id in one conditional statement. Rows not
// sent stay pending. A step in flight claims nothing more once the change
// is committed. Only a task whose canary was judged (a failed canary
// pauses it) goes on without one.
func (ts ReplayTasks) Act(ctx context.Context, id int64, action string) (Task, error) {
	var from, to string
	switch action {
	case dlq.TaskPause:
		from, to = `state IN ('running', 'canary')`, `'paused'`
	case dlq.TaskResume:
		from, to = `state = 'paused'`, `CASE WHEN canary IS NOT NULL AND canary_result IS NULL THEN 'canary' ELSE 'running' END`
	case dlq.TaskCancel:
		from, to = `state IN ('running', 'paused', 'canary')`, `'cancelled'`
	default:
		return Task{}, dlq.InputErr("INVALID_REQUEST", "unknown task action %q", action)
	}
	now := ts.Replay.Clock.Now().UnixMilli()
	finished := any(nil) // finished_at: set by a cancel only
	if action == dlq.TaskCancel {
		finished = now
	}
	t, err := scanTask(ts.Replay.DB.QueryRowContext(ctx, `UPDATE replay_tasks SET state = `+to+`, updated_at = ?,
			finished_at = COALESCE(?, finished_at)
		WHERE id = ? AND `+from+` RETURNING `+taskColumns, now, finished, id))
	if errors.Is(err, sql.ErrNoRows) {
		cur, gerr := ts.Get(ctx, id)
		if gerr != nil {
			return Task{}, gerr
		}
		return cur, &TaskStateError{Action: action, State: cur.State}
	}
	if err != nil {
		return Task{}, fmt.Errorf("replay task %s: %w", action, err)
	}
	t.derive(now)
	return t, nil
}

// ReplayTaskJob advances the running replay tasks, one step each, on the
// 5-minute cron. It is due only while a task is running (one index read).
type ReplayTaskJob struct {
	Tasks ReplayTasks
	// Database is the binding of Tasks.Replay.DB (JobName).
	Database string
}

// Name implements jobs.Job.
func (j *ReplayTaskJob) Name() string { return dlq.JobName("dlq_replay_tasks", j.Database) }

// Due implements jobs.DueJob.
func (j *ReplayTaskJob) Due(ctx context.Context, _ time.Time) (bool, error) {
	var due bool
	err := j.Tasks.Replay.DB.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM replay_tasks WHERE state IN ('running', 'canary'))`).Scan(&due)
	return due, err
}

// Run takes one step of each running task (at most maxTasksPerRun, while
// the budget lasts).
func (j *ReplayTaskJob) Run(ctx context.Context, now time.Time) (map[string]any, error) {
	rows, err := j.Tasks.Replay.DB.QueryContext(ctx, `SELECT id FROM replay_tasks WHERE state IN ('running', 'canary') ORDER BY id LIMIT ?`,
		int64(maxTasksPerRun+1))
	if err != nil {
		return nil, fmt.Errorf("replay tasks: %w", err)
	}
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return nil, fmt.Errorf("replay tasks: %w", err)
		}
		ids = append(ids, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("replay tasks: %w", err)
	}
	more := len(ids) > maxTasksPerRun
	ids = ids[:min(len(ids), maxTasksPerRun)]
	budget := j.Tasks.Limits.Start()
	sum := map[string]any{"tasks": 0, "sent": 0, "send_failed": 0, "done": 0}
	var errs []error
	for i, id := range ids {
		if i > 0 && budget.Spent() {
			more = true
			break
		}
		st, err := j.Tasks.Step(ctx, id, now)
		if err != nil {
			errs = append(errs, fmt.Errorf("task %d: %w", id, err))
		}
		if st.Held {
			sum["tasks"] = sum["tasks"].(int) + 1
			sum["sent"] = sum["sent"].(int) + st.Sent
			sum["send_failed"] = sum["send_failed"].(int) + st.SendFailed
			if st.Done {
				sum["done"] = sum["done"].(int) + 1
			}
		}
	}
	sum["more"] = more
	return sum, errors.Join(errs...)
}

// StepResult is what one step of a task did.
type StepResult struct {
	// Held is false when the task was not running or another step held it.
	Held             bool
	Sent, SendFailed int
	// Done: the task has no matching rows left and is now done.
	Done bool
	// CanaryPassed / CanaryFailed: this step judged the task's canary.
	CanaryPassed, CanaryFailed bool
}

// Step advances task id at scheduled time now: it holds the task (one
// conditional statement), works out how many slots fall before now+Window,
// claims and sends that many rows (pages of at most Replay.BulkLimit), each
// with the delay that puts it on its slot counted from its own send, and
// releases the task. A canary task sends canary rows until Size are out (or
// no matching row is left), then sends nothing until judgeCanary decides.
// The task is done when a claim found fewer rows than it asked for and, as
// the step releases it (one statement), it is still running and no
// matching row is left: a pause, resume or cancel during a step never ends
// the task.
func (ts ReplayTasks) Step(ctx context.Context, id int64, now time.Time) (StepResult, error) {
	ctx = context.WithoutCancel(ctx)
	nowMs := now.UnixMilli()
	// The step's clock: the real time of each claim, send and settle,
	// never before the step's scheduled time.
	r := ts.Replay
	r.Clock = func() time.Time {
		if t := ts.Replay.Clock.Now(); t.After(now) {
			return t
		}
		return now
	}
	st, err := ts.hold(ctx, r, id, nowMs)
	if st == nil {
		return StepResult{}, err
	}
	if err != nil {
		return st.res, err
	}
	if q := st.frozenQueue(); q != "" {
		return st.res, st.pauseMoving(ctx, q)
	}
	n := st.budget(nowMs + ts.window().Milliseconds())
	var stepErr error
	exhausted := false
	if st.state == TaskCanary {
		n, exhausted, stepErr = st.canary(ctx, n)
	}
	if n > 0 {
		exhausted, stepErr = st.send(ctx, n)
	}
	after, err := st.release(ctx, exhausted && stepErr == nil)
	if err != nil {
		stepErr = errors.Join(stepErr, err)
	}
	st.res.Done = exhausted && after == TaskDone
	return st.res, stepErr
}

// taskStep is one step of a replay task: the task row as hold read it and
// the state Step's parts share (the schedule, the claim position and the
// result), updated as rows are sent.
type taskStep struct {
	ts    ReplayTasks
	r     Replay // with the step's clock
	id    int64
	nowMs int64
	f     dlq.Filter
	dest  sql.NullString
	// steps identifies this hold; sent is the task's sent count as held.
	steps, sent  int64
	posAt, posID int64
	state        string
	canaryJS     sql.NullString
	s            schedule
	// seq is the slot of the next row claimed; next, of the next row sent.
	seq, next int64
	res       StepResult
}

// hold holds task id for this step (one conditional UPDATE ... RETURNING
// on replay_tasks: steps, step_at, updated_at) if it is running or in
// canary and no other step holds it, and reads its filter, schedule and
// position. It returns nil, nil when the task was not held; a non-nil step
// (res.Held set) with an error when its filter does not decode.
func (ts ReplayTasks) hold(ctx context.Context, r Replay, id, nowMs int64) (*taskStep, error) {
	st := &taskStep{ts: ts, r: r, id: id, nowMs: nowMs}
	var filter string
	var rate, failed, origin, base int64
	err := r.DB.QueryRowContext(ctx, `UPDATE replay_tasks SET steps = steps + 1, step_at = ?1, updated_at = ?1
		WHERE id = ?2 AND state IN ('running', 'canary') AND (step_at IS NULL OR step_at <= ?3)
		RETURNING steps, filter, rate_per_minute, destination, sent, send_failed, slot_origin, slot_base, pos_failed_at, pos_id,
			state, canary`,
		nowMs, id, nowMs-taskLease.Milliseconds()).Scan(&st.steps, &filter, &rate, &st.dest, &st.sent, &failed, &origin, &base, &st.posAt, &st.posID,
		&st.state, &st.canaryJS)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("replay task hold: %w", err)
	}
	st.res.Held = true
	if err := json.Unmarshal([]byte(filter), &st.f); err != nil {
		return st, fmt.Errorf("replay task filter: %w", err)
	}
	st.s = schedule{rate: rate, origin: origin, base: base}
	st.seq = st.sent + failed
	st.next = st.seq
	return st, nil
}

// budget moves the schedule to start from now when the task is late
// (paused, or the first step), never in a burst, and returns how many slots
// fall before horizon (ms).
func (st *taskStep) budget(horizon int64) int64 {
	if late := st.r.Clock.Now().UnixMilli() - st.s.at(st.seq); late > 0 {
		// Late (paused, or the first step): start again from now, never in a burst.
		st.s.origin += late
	}
	n := int64(0)
	for st.s.at(st.seq+n) < horizon {
		n++
	}
	return n
}

// delay places the next message sent on the next slot, counted from its
// send; a send later than its slot (other jobs, earlier pages) moves the
// rest of the schedule later, never sooner.
func (st *taskStep) delay(sendAt int64) time.Duration {
	if late := sendAt - st.s.at(st.next); late > 0 {
		st.s.origin += late
	}
	d := (st.s.at(st.next) - sendAt + 999) / 1000
	st.next++
	return time.Duration(d) * time.Second
}

// canary runs the canary part of a step given n slots: it sends canary rows
// until Size are out, then judges the canary with judgeCanary. It returns
// the slots left for the rest of the step (0 unless the canary passed in
// this step), whether a claim ran short, and the error, if any.
func (st *taskStep) canary(ctx context.Context, n int64) (int64, bool, error) {
	var c Canary
	if err := json.Unmarshal([]byte(st.canaryJS.String), &c); err != nil {
		return 0, false, fmt.Errorf("replay task canary: %w", err)
	}
	var stepErr error
	exhausted := false
	judge := st.sent >= c.Size
	if !judge {
		// The canary rows go alone, until size of them are out;
		// judged once they are, or once none is left.
		exhausted, stepErr = st.send(ctx, min(n, c.Size-st.sent))
		judge = exhausted && stepErr == nil
	}
	if judge {
		// Once every canary row is decided, go on (in this very
		// step) or pause; until then, wait.
		decided, passed, err := st.ts.judgeCanary(ctx, st.id, st.steps, c, st.nowMs)
		switch {
		case err != nil:
			stepErr = err
		case decided && passed:
			st.res.CanaryPassed = true
		case decided:
			st.res.CanaryFailed = true
		}
	}
	if !st.res.CanaryPassed {
		n = 0
	}
	return n, exhausted, stepErr
}

// send claims and sends up to k rows, in pages of at most BulkLimit (each
// page: one claim, its sends, one settle batch that also records the rows
// and the task's progress); short: a claim found fewer rows than it asked
// for (none left, or the task no longer running).
func (st *taskStep) send(ctx context.Context, k int64) (short bool, err error) {
	r := st.r
	for k > 0 {
		limit := min(k, int64(r.BulkLimit()))
		cond, args := taskCond(st.f, st.id, st.posAt, st.posID, st.r.Frozen)
		cs, claimAt, err := r.claim(ctx, dlq.NewestFirst(cond), append(args, limit))
		if err != nil {
			return false, err
		}
		if len(cs) == 0 {
			return true, nil
		}
		last := cs[len(cs)-1]
		st.seq += int64(len(cs))
		st.posAt, st.posID = last.failedAt, last.id
		k -= int64(len(cs))
		claimedN := int64(len(cs))
		plan := sendPlan{
			delay:       st.delay,
			destination: st.dest.String,
			settle: func(ids []int64, deliverAt []int64) []sqlbatch.Stmt {
				return st.progress(ids, deliverAt, claimedN)
			},
		}
		var rr ReplayResult
		if err := r.sendAndSettle(ctx, cs, claimAt, plan, &rr); err != nil {
			return false, err
		}
		st.res.Sent += rr.ReplayedCount
		st.res.SendFailed += rr.FailedCount
		if int64(len(cs)) < limit {
			return true, nil
		}
	}
	return false, nil
}

// progress returns the statements a page's settle batch gets (see
// sendPlan.settle): the sent rows ids, each with its deliverAt, into
// replay_task_rows, and the task's counts, schedule and claim position,
// if this step still holds it; claimed is how many rows the page claimed.
func (st *taskStep) progress(ids []int64, deliverAt []int64, claimed int64) []sqlbatch.Stmt {
	pairs := make([][2]int64, len(ids))
	for i, rid := range ids {
		pairs[i] = [2]int64{rid, deliverAt[i]}
	}
	pjs, _ := json.Marshal(pairs)
	return []sqlbatch.Stmt{
		{SQL: `INSERT OR IGNORE INTO replay_task_rows(task_id, dlq_id, deliver_at)
			SELECT ?, value ->> '$[0]', value ->> '$[1]' FROM json_each(?)`, Args: []any{st.id, string(pjs)}},
		{SQL: `UPDATE replay_tasks SET sent = sent + ?, send_failed = send_failed + ?, slot_origin = ?, slot_base = ?,
			pos_failed_at = ?, pos_id = ?, updated_at = ? WHERE id = ? AND steps = ?`,
			Args: []any{int64(len(ids)), claimed - int64(len(ids)), st.s.origin, st.s.base, st.posAt, st.posID, st.nowMs, st.id, st.steps}},
	}
}

// release ends the step's hold (one UPDATE on replay_tasks, if this step
// still holds it) and returns the task's state after it. When exhausted (a
// claim ran short, no error), the release also ends the task if it is still
// running with no matching row left, decided in the release itself.
func (st *taskStep) release(ctx context.Context, exhausted bool) (string, error) {
	release := `UPDATE replay_tasks SET step_at = NULL, last_step_at = ?, updated_at = ? WHERE id = ? AND steps = ? RETURNING state`
	args := []any{st.nowMs, st.nowMs, st.id, st.steps}
	if exhausted {
		// Done only if still running with no matching row left, decided in
		// the release itself: a claim that found nothing because the task
		// was paused (and maybe resumed since) does not end it.
		cond, cargs := taskCond(st.f, st.id, st.posAt, st.posID, st.r.Frozen)
		release = `UPDATE replay_tasks SET step_at = NULL, last_step_at = ?, updated_at = ?,
				finished_at = CASE WHEN e.none_left AND replay_tasks.state = 'running' THEN ? ELSE replay_tasks.finished_at END,
				state = CASE WHEN e.none_left AND replay_tasks.state = 'running' THEN 'done' ELSE replay_tasks.state END
			FROM (SELECT NOT EXISTS (SELECT 1 FROM dlq_messages WHERE ` + cond + `) AS none_left) AS e
			WHERE replay_tasks.id = ? AND replay_tasks.steps = ? RETURNING replay_tasks.state`
		args = append(append([]any{st.nowMs, st.nowMs, st.nowMs}, cargs...), st.id, st.steps)
	}
	var after string
	if err := st.r.DB.QueryRowContext(ctx, release, args...).Scan(&after); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return after, fmt.Errorf("replay task release: %w", err)
	}
	return after, nil
}

// judgeCanary decides task id's canary (its rows sent so far, all of them
// canary rows) at now: undecided while a canary row has neither succeeded
// nor failed again; else the task moves on to running (passed) or pauses
// itself, with its canary_result, in one conditional statement. Reads
// about 3 rows per canary row (at most MaxCanarySize).
func (ts ReplayTasks) judgeCanary(ctx context.Context, id, steps int64, c Canary, now int64) (decided, passed bool, err error) {
	var r CanaryResult
	var reasons string
	if err := ts.Replay.DB.QueryRowContext(ctx, `SELECT COUNT(*) AS canary_sent,
			COALESCE(SUM(m.failed_at < r.deliver_at AND ((b.status = 'enriched' AND b.enriched_at >= r.deliver_at)
				OR r.deliver_at + ?1 <= ?2)), 0) AS canary_ok,
			COALESCE(SUM(m.failed_at >= r.deliver_at), 0) AS canary_again,
			(SELECT json_group_array(reason) FROM (SELECT DISTINCT m2.failure_reason AS reason
				FROM replay_task_rows r2 JOIN dlq_messages m2 ON m2.id = r2.dlq_id
				WHERE r2.task_id = ?3 AND m2.failed_at >= r2.deliver_at AND m2.failure_reason IS NOT NULL LIMIT 5)) AS canary_reasons
		FROM replay_task_rows r JOIN dlq_messages m ON m.id = r.dlq_id LEFT JOIN beers b ON b.beer_id = m.row_key AND m.source_queue = 'beer-enrichment'
		WHERE r.task_id = ?3`, c.ObserveMinutes*60_000, now, id).Scan(&r.Sent, &r.Succeeded, &r.FailedAgain, &reasons); err != nil {
		return false, false, fmt.Errorf("replay task canary: %w", err)
	}
	if r.Succeeded+r.FailedAgain < r.Sent {
		return false, false, nil
	}
	if err := json.Unmarshal([]byte(reasons), &r.Reasons); err != nil {
		return false, false, fmt.Errorf("replay task canary reasons: %w", err)
	}
	if r.Sent > 0 {
		r.Ratio = float64(r.Succeeded) / float64(r.Sent)
	} else {
		r.Reasons = append(r.Reasons, "no canary row could be sent")
	}
	r.Passed, r.At = r.Sent > 0 && r.Ratio >= c.MinSuccessRatio, now
	js, _ := json.Marshal(r)
	to := TaskPaused
	if r.Passed {
		to = TaskRunning
	}
	res, err := ts.Replay.DB.ExecContext(ctx, `UPDATE replay_tasks SET state = ?, canary_result = ?, updated_at = ?
		WHERE id = ? AND state = 'canary' AND steps = ?`, to, string(js), now, id, steps)
	if err != nil {
		return false, false, fmt.Errorf("replay task canary verdict: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return false, false, nil // paused or cancelled meanwhile
	}
	if ts.Replay.Log != nil {
		ts.Replay.Log.InfoContext(ctx, "replay task: canary judged", "task_id", id, "passed", r.Passed, "sent", r.Sent,
			"succeeded", r.Succeeded, "failed_again", r.FailedAgain)
	}
	return true, r.Passed, nil
}
