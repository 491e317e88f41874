package resolve

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"

	"github.com/redrive/redrive/dlq"
)

// Actions are the admin API's actions on DLQ rows and replay tasks, over
// every database: each method is one action. It validates its request
// once, chooses the database it acts on (that of its rows or task:
// Databases.OfSelection, OfFilter, Holding), runs there, and records
// itself in that database's audit log with its typed result (dlq.Audit.Run).
// The caller parses and authorises; it never chooses a database.
type Actions struct {
	// DBs are the databases of the DLQ rows and the configured pipelines.
	DBs dlq.Databases
	// Replay and Acknowledge are the services each database's action
	// copies, with that database's DB and Batch.
	Replay      Replay
	Acknowledge Acknowledge
	// Audit is the audit log each action writes to, in its database.
	Audit dlq.Audit
}

// in is x with every service on database d.
func (x Actions) in(d dlq.Database) Actions {
	x.Replay.DB, x.Replay.Batch = d.DB, d.Batch
	x.Acknowledge.DB, x.Acknowledge.Batch = d.DB, d.Batch
	x.Audit.DB = d.DB
	return x
}

// ofSelection is x on the database of sel's rows (Databases.OfSelection).
func (x Actions) ofSelection(ctx context.Context, sel dlq.Selection) (Actions, error) {
	d, err := x.DBs.OfSelection(ctx, sel)
	if err != nil {
		return x, err
	}
	return x.in(d), nil
}

// holdingTask is x on the database that holds task id (Databases.Holding),
// a task of scope's pipelines (ReplayTasks.InScope).
func (x Actions) holdingTask(ctx context.Context, id int64, scope dlq.Scope) (Actions, error) {
	d, err := x.DBs.Holding(ctx, "replay_tasks", []int64{id})
	if err != nil {
		return x, err
	}
	x = x.in(d)
	return x, x.tasks().InScope(ctx, id, scope)
}

func (x Actions) tasks() ReplayTasks { return ReplayTasks{Replay: x.Replay} }

// scoped is sel limited to by's scope: its filter to a pipeline of the
// scope, which it names (dlq.Scope.BulkFilter). Its ids are checked once their database is
// known (inScope).
func (x Actions) scoped(sel dlq.Selection, by dlq.Requester) (dlq.Selection, error) {
	if sel.Filter == nil || by.Scope.All() {
		return sel, nil
	}
	f, err := by.Scope.BulkFilter(x.DBs.Pipelines(), *sel.Filter)
	sel.Filter = &f
	return sel, err
}

// inScope refuses (404 NOT_FOUND) ids of which one is not a row of by's
// pipelines in x's database (dlq.Scope.CheckScope).
func (x Actions) inScope(ctx context.Context, ids []int64, by dlq.Requester) error {
	err := by.Scope.CheckScope(ctx, x.DBs.Pipelines(), x.Replay.DB, ids)
	if id, ok := dlq.OutOfScopeID(err); ok {
		return &dlq.InputError{Status: http.StatusNotFound, Code: "NOT_FOUND",
			Message: fmt.Sprintf("no DLQ message with id %q", strconv.FormatInt(id, 10))}
	}
	return err
}

// auditQueue is the one queue an action on sel by by concerns (the audit
// entry's, which scoped credentials list): sel's normalized filter's, or
// the one queue of by's scope ("" otherwise).
func (x Actions) auditQueue(sel dlq.Selection, by dlq.Requester) string {
	if sel.Filter != nil {
		return sel.Filter.SourceQueue
	}
	if qs := by.Scope.Queues(x.DBs.Pipelines()); len(qs) == 1 {
		return qs[0]
	}
	return ""
}

// onRows is x on the database of sel's rows (ofSelection), for a
// requester whose scope reaches all of them: sel's filter is scoped
// already (scoped), its ids are checked here (inScope).
func (x Actions) onRows(ctx context.Context, sel dlq.Selection, by dlq.Requester) (Actions, error) {
	x, err := x.ofSelection(ctx, sel)
	if err != nil {
		return x, err
	}
	return x, x.inScope(ctx, sel.IDs, by)
}

// ReplayRows replays req's rows (ReplayResult), or with dryRun reports
// what it would replay (dlq.Preview), audited as replay.
func (x Actions) ReplayRows(ctx context.Context, req ReplayRequest, by dlq.Requester, dryRun bool) (dlq.Audited, error) {
	var err error
	if req.Selection, err = x.scoped(req.Selection, by); err != nil {
		return nil, err
	}
	sel, pos, limit, err := x.Replay.validate(req)
	if err != nil {
		return nil, err
	}
	if x, err = x.onRows(ctx, req.Selection, by); err != nil {
		return nil, err
	}
	start := dlq.AuditStart{Action: dlq.ActionReplay, Requester: by, DryRun: dryRun, IDs: req.IDs, Filter: req.Filter,
		Queue: x.auditQueue(sel, by)}
	if dryRun {
		return x.Audit.Run(ctx, start, dlq.AuditAfter, func(ctx context.Context) (dlq.Audited, error) {
			return x.Replay.dryRun(ctx, sel, pos)
		})
	}
	return x.Audit.Run(ctx, start, dlq.AuditAround, func(ctx context.Context) (dlq.Audited, error) {
		return x.Replay.run(ctx, req, sel, pos, limit)
	})
}

// AcknowledgeRows acknowledges req's rows (AcknowledgeResult), or with
// dryRun reports what it would acknowledge (dlq.Preview), audited as
// acknowledge (the change writes its own entry in its batch).
func (x Actions) AcknowledgeRows(ctx context.Context, req AcknowledgeRequest, dryRun bool) (dlq.Audited, error) {
	var err error
	if req.Selection, err = x.scoped(req.Selection, req.By); err != nil {
		return nil, err
	}
	sel, err := x.Acknowledge.validate(req)
	if err != nil {
		return nil, err
	}
	if x, err = x.onRows(ctx, req.Selection, req.By); err != nil {
		return nil, err
	}
	start := dlq.AuditStart{Action: dlq.ActionAcknowledge, Requester: req.By, DryRun: dryRun, IDs: req.IDs, Filter: req.Filter, Note: req.Note,
		Queue: x.auditQueue(sel, req.By)}
	if dryRun {
		return x.Audit.Run(ctx, start, dlq.AuditAfter, func(ctx context.Context) (dlq.Audited, error) {
			return dlq.PreviewRows(ctx, x.Acknowledge.DB, x.Acknowledge.Pipelines, sel, false, nil)
		})
	}
	return x.Audit.Run(ctx, start, dlq.AuditWithin, func(ctx context.Context) (dlq.Audited, error) {
		return x.Acknowledge.run(ctx, req, sel)
	})
}

// ReplayEdited sends req's edited body in place of its row's
// (EditedReplayResult), audited as replay_edited. A row that does not
// exist is ErrRowNotFound, one that cannot be replayed edited a
// *RowStateError.
func (x Actions) ReplayEdited(ctx context.Context, req EditedReplayRequest, by dlq.Requester) (dlq.Audited, error) {
	x, err := x.onRows(ctx, dlq.Selection{IDs: []int64{req.ID}}, by)
	if err != nil {
		return nil, err
	}
	body, err := x.Replay.CheckEdited(req)
	if err != nil {
		return nil, err
	}
	start := dlq.AuditStart{Action: dlq.ActionReplayEdited, Requester: by, IDs: []int64{req.ID}, Note: req.Note,
		Queue: x.auditQueue(dlq.Selection{}, by)}
	return x.Audit.Run(ctx, start, dlq.AuditAround, func(ctx context.Context) (dlq.Audited, error) {
		res, err := x.Replay.runEdited(ctx, req, body)
		return res, notFound(err, "DLQ message", req.ID)
	})
}

// CreateTask stores a new replay task in the database of the rows it
// replays, where its cron step runs (CreatedTask), audited as replay_task.
func (x Actions) CreateTask(ctx context.Context, req TaskRequest, by dlq.Requester) (dlq.Audited, error) {
	var err error
	if req.Filter, err = by.Scope.BulkFilter(x.DBs.Pipelines(), req.Filter); err != nil {
		return nil, err
	}
	f, err := x.tasks().Check(req)
	if err != nil {
		return nil, err
	}
	d, err := x.DBs.OfFilter(&f)
	if err != nil {
		return nil, err
	}
	x = x.in(d)
	start := dlq.AuditStart{Action: dlq.ActionReplayTask, Requester: by, Filter: &f}
	return x.Audit.Run(ctx, start, dlq.AuditAround, func(ctx context.Context) (dlq.Audited, error) {
		t, err := x.tasks().create(ctx, req, f, by)
		return CreatedTask{Task: t, request: req}, err
	})
}

// ActOnTask pauses, resumes or cancels task id (ActedTask), audited as
// replay_task_<action>. A task that does not exist is ErrTaskNotFound,
// one in a state the action does not apply to a *TaskStateError.
func (x Actions) ActOnTask(ctx context.Context, id int64, action string, by dlq.Requester) (dlq.Audited, error) {
	x, err := x.holdingTask(ctx, id, by.Scope)
	if err != nil {
		return nil, err
	}
	start := dlq.AuditStart{Action: dlq.ActionReplayTask + "_" + action, Requester: by, Queue: x.auditQueue(dlq.Selection{}, by)}
	return x.Audit.Run(ctx, start, dlq.AuditAround, func(ctx context.Context) (dlq.Audited, error) {
		t, err := x.tasks().Act(ctx, id, action)
		return ActedTask{Task: t, id: id}, notFound(err, "replay task", id)
	})
}

// Task reads task id from the database that holds it (ErrTaskNotFound
// when scope does not reach its pipeline).
func (x Actions) Task(ctx context.Context, id int64, scope dlq.Scope) (Task, error) {
	x, err := x.holdingTask(ctx, id, scope)
	if err != nil {
		return Task{}, err
	}
	return x.tasks().Get(ctx, id)
}

// Tasks lists the newest limit tasks that can replay pipeline's rows
// (every pipeline's when ""): from its database, or from every database,
// merged newest first (each reads at most limit rows). A scoped
// requester names a pipeline of its scope or has one (dlq.Scope.Pipeline)
// and sees the tasks of that pipeline alone.
func (x Actions) Tasks(ctx context.Context, limit int, pipeline string, scope dlq.Scope) ([]Task, error) {
	pipeline, err := scope.Pipeline(pipeline)
	if err != nil {
		return nil, err
	}
	if pipeline != "" || !x.DBs.Many() {
		return x.in(x.DBs.OfPipeline(pipeline)).tasks().List(ctx, limit, pipeline, scope)
	}
	var all []Task
	for _, d := range x.DBs.All {
		ts, err := x.in(d).tasks().List(ctx, limit, "", scope)
		if err != nil {
			return nil, err
		}
		all = append(all, ts...)
	}
	slices.SortStableFunc(all, func(a, b Task) int {
		return cmp.Or(cmp.Compare(b.CreatedAt, a.CreatedAt), cmp.Compare(b.ID, a.ID))
	})
	return all[:min(limit, len(all))], nil
}

// notFoundError is ErrRowNotFound or ErrTaskNotFound (errors.Is holds)
// with what its audit entry records.
type notFoundError struct {
	sentinel error
	what     string
	id       int64
}

func (e *notFoundError) Error() string { return e.sentinel.Error() }
func (e *notFoundError) Unwrap() error { return e.sentinel }

// AuditError is NOT_FOUND, naming the id.
func (e *notFoundError) AuditError() *dlq.AuditError {
	return &dlq.AuditError{Code: "NOT_FOUND", Message: fmt.Sprintf("no %s with id %q", e.what, strconv.FormatInt(e.id, 10))}
}

// notFound is err, with what its audit entry records when it says that
// id was not found.
func notFound(err error, what string, id int64) error {
	for _, s := range []error{ErrRowNotFound, ErrTaskNotFound} {
		if errors.Is(err, s) {
			return &notFoundError{sentinel: s, what: what, id: id}
		}
	}
	return err
}

// AuditError is INVALID_STATE with e's text.
func (e *RowStateError) AuditError() *dlq.AuditError {
	return &dlq.AuditError{Code: "INVALID_STATE", Message: e.Error()}
}

// AuditError is INVALID_STATE with e's text.
func (e *TaskStateError) AuditError() *dlq.AuditError {
	return &dlq.AuditError{Code: "INVALID_STATE", Message: e.Error()}
}
