package dlq

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/redrive/redrive/internal/sqlitetest"
)

// result is an Audited for the tests.
type result struct {
	outcome string
	n       int
}

func (r result) AuditOutcome() string { return r.outcome }
func (r result) AuditCounts() any     { return map[string]int{"n": r.n} }

// auditRows reads back every admin_audit row as "action outcome counts error".
func auditRows(t *testing.T, a Audit) []string {
	t.Helper()
	p, err := a.Page(ctx, AuditParams{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for i := len(p.Entries) - 1; i >= 0; i-- {
		e := p.Entries[i]
		line := e.Action + " " + e.Outcome + " " + string(e.Counts)
		if e.Error != nil {
			line += " " + e.Error.Code + ": " + e.Error.Message
		}
		out = append(out, line)
	}
	return out
}

// Run records each mode as it says: around (a started row finished after
// the action), after (one row once answered), within (the action's own
// row; Run records only a failure). A failure is recorded with the code
// its error describes, or INTERNAL_ERROR naming the request, never its text.
func TestAuditRunRecordsEachMode(t *testing.T) {
	t.Parallel()
	var logs bytes.Buffer
	a := Audit{DB: sqlitetest.New(t), Cursors: NewCursors("s"), Clock: fixedClock, Log: slog.New(slog.NewTextHandler(&logs, nil))}
	start := AuditStart{Action: ActionReplay, Requester: Requester{RequestID: "r1", KeyFingerprint: "fp"}}
	run := func(mode AuditMode, res Audited, err error) {
		t.Helper()
		var sawStarted bool
		got, gotErr := a.Run(ctx, start, mode, func(context.Context) (Audited, error) {
			rows := auditRows(t, a)
			sawStarted = len(rows) > 0 && strings.HasPrefix(rows[len(rows)-1], "replay started")
			return res, err
		})
		if got != res || !errors.Is(gotErr, err) {
			t.Fatalf("Run = %v, %v; want %v, %v", got, gotErr, res, err)
		}
		if sawStarted != (mode == AuditAround) {
			t.Fatalf("mode %d: a started row during the action = %v", mode, sawStarted)
		}
	}
	run(AuditAround, result{OutcomePartial, 2}, nil)
	run(AuditAfter, result{OutcomeOK, 3}, nil)
	run(AuditWithin, result{OutcomeOK, 4}, nil) // the action writes its own row
	run(AuditWithin, nil, InputErr("INVALID_DELAY", "bad delay"))
	run(AuditAround, result{OutcomeOK, 5}, errors.New("D1_ERROR: secret detail"))
	run(AuditAfter, nil, &InputError{Status: 409, Code: "ROWS_MOVING", Message: "moving"})
	want := []string{
		`replay partial {"n":2}`,
		`replay ok {"n":3}`,
		`replay error null INVALID_DELAY: bad delay`,
		`replay error {"n":5} INTERNAL_ERROR: internal error; see the worker log for request r1`,
		`replay error null ROWS_MOVING: moving`,
	}
	if got := auditRows(t, a); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("audit rows:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if logs.Len() != 0 {
		t.Fatalf("nothing should be logged: %s", logs.String())
	}
}

// Run goes on when the caller's context is cancelled (an action that
// started is recorded as it ended); when the start cannot be recorded the
// action does not run; when the end cannot, the result still returns and
// the log says so.
func TestAuditRunWhenTheLogFails(t *testing.T) {
	t.Parallel()
	db := sqlitetest.New(t)
	var logs bytes.Buffer
	a := Audit{DB: db, Cursors: NewCursors("s"), Clock: fixedClock, Log: slog.New(slog.NewTextHandler(&logs, nil))}
	start := AuditStart{Action: ActionReplay, Requester: Requester{RequestID: "r2"}}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	res, err := a.Run(cancelled, start, AuditAround, func(ctx context.Context) (Audited, error) {
		if ctx.Err() != nil {
			t.Error("the action saw the caller's cancellation")
		}
		return result{OutcomeOK, 1}, nil
	})
	if err != nil || res == nil {
		t.Fatalf("Run after cancel = %v, %v", res, err)
	}
	if _, err := db.Exec(`CREATE TRIGGER no_finish BEFORE UPDATE ON admin_audit BEGIN SELECT RAISE(ABORT, 'disk full'); END`); err != nil {
		t.Fatal(err)
	}
	res, err = a.Run(ctx, start, AuditAround, func(context.Context) (Audited, error) { return result{OutcomeOK, 2}, nil })
	if err != nil || res.AuditCounts().(map[string]int)["n"] != 2 {
		t.Fatalf("Run with a failing finish = %v, %v; want the result", res, err)
	}
	if !strings.Contains(logs.String(), "audit: could not record the action") || !strings.Contains(logs.String(), "request_id=r2") {
		t.Fatalf("log = %q", logs.String())
	}
	if _, err := db.Exec(`CREATE TRIGGER no_begin BEFORE INSERT ON admin_audit BEGIN SELECT RAISE(ABORT, 'disk full'); END`); err != nil {
		t.Fatal(err)
	}
	ran := false
	if _, err := a.Run(ctx, start, AuditAround, func(context.Context) (Audited, error) { ran = true; return nil, nil }); err == nil || ran {
		t.Fatalf("Run with a failing begin: err %v, ran %v; want an error and no action", err, ran)
	}
}

// describe finds the code of a wrapped or joined error by walking the
// tree with type assertions (the TinyGo build panics on errors.As with an
// interface target), and names the request for anything else.
func TestDescribeWalksWrappedAndJoinedErrors(t *testing.T) {
	t.Parallel()
	in := InputErr("INVALID_DELAY", "bad delay")
	for _, c := range []struct {
		err  error
		want string
	}{
		{in, "INVALID_DELAY: bad delay"},
		{fmt.Errorf("replay: %w", in), "INVALID_DELAY: bad delay"},
		{fmt.Errorf("outer: %w", fmt.Errorf("inner: %w", in)), "INVALID_DELAY: bad delay"},
		{errors.Join(errors.New("D1_ERROR: detail"), in), "INVALID_DELAY: bad delay"},
		{fmt.Errorf("%w and %w", errors.New("x"), &InputError{Code: "ROWS_MOVING", Message: "m"}), "ROWS_MOVING: m"},
		{errors.New("D1_ERROR: secret"), "INTERNAL_ERROR: internal error; see the worker log for request r9"},
		{fmt.Errorf("wrapped: %w", errors.New("D1_ERROR: secret")), "INTERNAL_ERROR: internal error; see the worker log for request r9"},
	} {
		e := describe(c.err, "r9")
		if got := e.Code + ": " + e.Message; got != c.want {
			t.Errorf("describe(%v) = %s, want %s", c.err, got, c.want)
		}
	}
}
