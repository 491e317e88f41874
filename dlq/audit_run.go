package dlq

import (
	"context"
	"log/slog"
)

// AuditMode says how an action reaches admin_audit.
type AuditMode int

const (
	// AuditAround: a row before the action runs ("started"), completed
	// after with its outcome. For actions with effects outside D1 (queue
	// sends), so a worker that dies mid-action leaves a row that says so.
	AuditAround AuditMode = iota
	// AuditWithin: the action writes its finished row itself, in the same
	// batch as its change (FinishedAuditStmt); only a failure (nothing
	// changed) is recorded by Run.
	AuditWithin
	// AuditAfter: one finished row once the action has answered. For dry
	// runs, which change nothing.
	AuditAfter
)

// Audited is the typed result of an audited action: what its entry
// records besides the start.
type Audited interface {
	// AuditOutcome is the entry's outcome: OutcomeOK, OutcomePartial or
	// OutcomeFailed.
	AuditOutcome() string
	// AuditCounts is the entry's counts: a JSON-encodable value, or nil.
	AuditCounts() any
}

// AuditDescriber is an error that says what its audit entry records: the
// code and message of the answer's envelope. *InputError is one; an error
// that is none is recorded as INTERNAL_ERROR, its own text (D1's, say)
// kept for the log.
type AuditDescriber interface {
	AuditError() *AuditError
}

// AuditError is what e's audit entry records: its code and message.
func (e *InputError) AuditError() *AuditError { return &AuditError{Code: e.Code, Message: e.Message} }

// Run runs act and records it in a.DB as mode says, then returns act's
// result and error. With AuditAround, if the start cannot be recorded act
// does not run and that error is returned; if the outcome cannot be
// recorded, act's result is still returned (the row stays "started") and
// a.Log says so. act runs to its end even if ctx is cancelled (the client
// went away): an action that started is recorded as it ended. A failed act
// (error) is recorded with OutcomeError and the error's AuditError, and
// with its result's counts when it returns a result too.
func (a Audit) Run(ctx context.Context, s AuditStart, mode AuditMode, act func(context.Context) (Audited, error)) (Audited, error) {
	ctx = context.WithoutCancel(ctx)
	var id int64
	if mode == AuditAround {
		var err error
		if id, err = a.Begin(ctx, s); err != nil {
			return nil, err
		}
	}
	res, actErr := act(ctx)
	var outcome string
	var counts any
	if res != nil {
		outcome, counts = res.AuditOutcome(), res.AuditCounts()
	}
	var entryErr *AuditError
	if actErr != nil {
		outcome, entryErr = OutcomeError, describe(actErr, s.RequestID)
	}
	var err error
	switch {
	case mode == AuditAround:
		err = a.Finish(ctx, id, outcome, counts, entryErr)
	case mode == AuditAfter || actErr != nil:
		err = a.Record(ctx, s, outcome, counts, entryErr)
	}
	if err != nil {
		log := a.Log
		if log == nil {
			log = slog.Default()
		}
		log.ErrorContext(ctx, "audit: could not record the action", "request_id", s.RequestID, "audit_id", id, "error", err.Error())
	}
	return res, actErr
}

// describe is what the audit entry of an action that failed with err
// records (AuditDescriber); an internal error's own text goes to the log
// line the admin API writes with the request id, never to the audit log.
func describe(err error, requestID string) *AuditError {
	if e := describedBy(err); e != nil {
		return e
	}
	return &AuditError{Code: "INTERNAL_ERROR", Message: "internal error; see the worker log for request " + requestID}
}

// describedBy is the AuditError of the first AuditDescriber in err's tree
// (nil: none). It walks the tree itself, with type assertions: errors.As
// with an interface target panics in the TinyGo build ("reflect:
// unimplemented: AssignableTo with interface"), which left the request
// unanswered until worker.mjs's limit.
func describedBy(err error) *AuditError {
	if d, ok := err.(AuditDescriber); ok {
		if e := d.AuditError(); e != nil {
			return e
		}
	}
	switch u := err.(type) {
	case interface{ Unwrap() error }:
		return describedBy(u.Unwrap())
	case interface{ Unwrap() []error }:
		for _, e := range u.Unwrap() {
			if d := describedBy(e); d != nil {
				return d
			}
		}
	}
	return nil
}
