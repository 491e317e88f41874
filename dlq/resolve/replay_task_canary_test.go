package resolve

import (
	"bytes"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/internal/sqlitetest"
	"github.com/redrive/redrive/queue/queuetest"
)

func TestReplayTaskCanaryChecked(t *testing.T) {
	ts := newTasks(sqlitetest.New(t), &queuetest.Sender{}, taskT0)
	for _, c := range []Canary{{0, 0.5, 10}, {101, 0.5, 10}, {5, -0.1, 10}, {5, 1.1, 10}, {5, 0.5, 0}, {5, 0.5, 1441}} {
		_, err := ts.Check(TaskRequest{RatePerMinute: 1, Canary: &c})
		if ie, ok := err.(*dlq.InputError); !ok || ie.Code != "INVALID_CANARY" {
			t.Errorf("%+v: %v", c, err)
		}
	}
}

// A task paused while in canary and resumed is still in canary: its
// canary is judged before it goes on. Only a task paused by a failed canary
// goes on without one.
func TestReplayTaskCanaryPausedAndResumedIsStillJudged(t *testing.T) {
	db := sqlitetest.New(t)
	seedPending(t, db, 20, taskT0.UnixMilli()-1_000_000)
	ts := newTasks(db, &queuetest.Sender{}, taskT0)
	task, err := ts.Create(ctx, TaskRequest{RatePerMinute: 60, Canary: &Canary{Size: 2, MinSuccessRatio: 1, ObserveMinutes: 10}}, dlq.Requester{})
	if err != nil {
		t.Fatal(err)
	}
	at := taskT0.Add(time.Minute)
	if st, err := ts.Step(ctx, task.ID, at); err != nil || st.Sent != 2 {
		t.Fatalf("canary step %+v %v", st, err)
	}
	if _, err := ts.Act(ctx, task.ID, dlq.TaskPause); err != nil {
		t.Fatal(err)
	}
	r, err := ts.Act(ctx, task.ID, dlq.TaskResume)
	if err != nil || r.State != TaskCanary {
		t.Fatalf("resumed %+v %v, want state canary", r, err)
	}
	// Undecided: nothing more is sent.
	if st, err := ts.Step(ctx, task.ID, at.Add(5*time.Minute)); err != nil || st.Sent != 0 {
		t.Fatalf("undecided step %+v %v", st, err)
	}
	// Decided (no new failure 10 minutes after delivery): judged, then on.
	st, err := ts.Step(ctx, task.ID, at.Add(15*time.Minute))
	if err != nil || !st.CanaryPassed || st.Sent != 18 || !st.Done {
		t.Fatalf("verdict step %+v %v", st, err)
	}
	got, _ := ts.Get(ctx, task.ID)
	if got.CanaryResult == nil || got.CanaryResult.Sent != 2 || !got.CanaryResult.Passed || got.State != TaskDone {
		t.Fatalf("task %+v result %+v", got, got.CanaryResult)
	}
}

// A canary larger than one step's allowance is sent over several steps
// (paced at the rate) and judged on all its rows; one larger than what
// matches is judged on every matching row (not ended unjudged).
func TestReplayTaskCanaryIsJudgedOnItsSize(t *testing.T) {
	for _, c := range []struct {
		rows, size, steps, judgedOn int
	}{
		{30, 10, 2, 10}, // 1/min: 5 slots a step
		{3, 5, 1, 3},    // fewer rows match than its size
	} {
		db := sqlitetest.New(t)
		seedPending(t, db, c.rows, taskT0.UnixMilli()-1_000_000)
		ts := newTasks(db, &queuetest.Sender{}, taskT0)
		task, err := ts.Create(ctx, TaskRequest{RatePerMinute: 1, Canary: &Canary{Size: int64(c.size), MinSuccessRatio: 0.8, ObserveMinutes: 10}}, dlq.Requester{})
		if err != nil {
			t.Fatal(err)
		}
		at := taskT0
		sent := 0
		for range c.steps {
			st, err := ts.Step(ctx, task.ID, at)
			if err != nil || st.CanaryPassed || st.CanaryFailed || st.Done {
				t.Fatalf("%+v: canary step %+v %v", c, st, err)
			}
			sent += st.Sent
			at = at.Add(5 * time.Minute)
		}
		if got, _ := ts.Get(ctx, task.ID); sent != c.judgedOn || got.State != TaskCanary || got.CanaryResult != nil {
			t.Fatalf("%+v: %d canary rows sent, task %+v", c, sent, got)
		}
		// Before their outcome: nothing more is sent.
		if st, err := ts.Step(ctx, task.ID, at); err != nil || st.Sent != 0 || st.CanaryPassed || st.CanaryFailed {
			t.Fatalf("%+v: waiting step %+v %v", c, st, err)
		}
		st, err := ts.Step(ctx, task.ID, at.Add(15*time.Minute))
		if err != nil || !st.CanaryPassed {
			t.Fatalf("%+v: verdict step %+v %v", c, st, err)
		}
		got, _ := ts.Get(ctx, task.ID)
		if r := got.CanaryResult; r == nil || r.Sent != int64(c.judgedOn) || r.Succeeded != int64(c.judgedOn) {
			t.Fatalf("%+v: judged %+v, want on %d rows", c, r, c.judgedOn)
		}
	}
}

// A canary over another pipeline's rows succeeds only by "not dead-lettered
// again within observe_minutes": a beer that happens to share a row's key
// and was enriched says nothing about an order.
func TestReplayTaskCanaryOfAnotherPipeline(t *testing.T) {
	t.Parallel()
	ps := withPipelines(t)
	db := sqlitetest.New(t)
	seedPending(t, db, 4, taskT0.UnixMilli()-1_000_000)
	mustExec(t, db, `UPDATE dlq_messages SET source_queue = 'orders'`)
	ts := newTasks(db, &queuetest.Sender{}, taskT0)
	ts.Replay.Pipelines = ps
	task, err := ts.Create(ctx, TaskRequest{Filter: dlq.Filter{Pipeline: "orders"}, RatePerMinute: 60,
		Canary: &Canary{Size: 2, MinSuccessRatio: 1, ObserveMinutes: 10}}, dlq.Requester{RequestID: "r", KeyFingerprint: "k"})
	if err != nil || task.State != TaskCanary {
		t.Fatalf("%+v %v", task, err)
	}
	at := taskT0.Add(time.Minute)
	if st, err := ts.Step(ctx, task.ID, at); err != nil || st.Sent != 2 {
		t.Fatalf("canary step: %+v %v", st, err)
	}
	mustExec(t, db, `INSERT INTO beers(beer_id, name, status, enriched_at, created_at, updated_at)
		SELECT m.row_key, 'x', 'enriched', r.deliver_at + 1000, 0, 0 FROM replay_task_rows r JOIN dlq_messages m ON m.id = r.dlq_id`)
	if st, _ := ts.Step(ctx, task.ID, at.Add(5*time.Minute)); st.Sent != 0 || st.CanaryPassed || st.CanaryFailed {
		t.Fatalf("an enriched beer decided an order's canary: %+v", st)
	}
	if got, _ := ts.Get(ctx, task.ID); got.Succeeded == nil || *got.Succeeded != 0 {
		t.Fatalf("succeeded before observe: %+v", got)
	}
	st, err := ts.Step(ctx, task.ID, at.Add(15*time.Minute))
	if err != nil || !st.CanaryPassed || st.Sent != 2 {
		t.Fatalf("verdict after observe: %+v %v", st, err)
	}
}

// A canary whose filter matches no row is judged on nothing: it fails
// (even at min_success_ratio 0), pauses the task with its reason, and the
// verdict is logged (pins judgeCanary's r.Sent > 0 and its log).
func TestReplayTaskCanaryWithNoRowFails(t *testing.T) {
	db := sqlitetest.New(t)
	seedPending(t, db, 3, taskT0.UnixMilli()-1_000_000)
	var logs bytes.Buffer
	ts := newTasks(db, &queuetest.Sender{}, taskT0)
	ts.Replay.Log = slog.New(slog.NewJSONHandler(&logs, nil))
	task, err := ts.Create(ctx, TaskRequest{Filter: dlq.Filter{Key: "no such beer"}, RatePerMinute: 60,
		Canary: &Canary{Size: 2, MinSuccessRatio: 0, ObserveMinutes: 1}}, dlq.Requester{})
	if err != nil || task.Matched != 0 {
		t.Fatalf("%+v %v", task, err)
	}
	st, err := ts.Step(ctx, task.ID, taskT0)
	if err != nil || st.Sent != 0 || st.CanaryPassed || !st.CanaryFailed || st.Done {
		t.Fatalf("step %+v %v, want the canary failed", st, err)
	}
	got, _ := ts.Get(ctx, task.ID)
	if r := got.CanaryResult; got.State != TaskPaused || r == nil || r.Passed || r.Sent != 0 || !slices.Contains(r.Reasons, "no canary row could be sent") {
		t.Fatalf("task %+v, result %+v", got, got.CanaryResult)
	}
	if !strings.Contains(logs.String(), `"msg":"replay task: canary judged","task_id":`+fmt.Sprint(task.ID)+`,"passed":false,"sent":0`) {
		t.Fatalf("no verdict logged:\n%s", logs.String())
	}
}

// An error in a step's canary part (its canary does not decode, or the
// verdict's read fails) is the step's error: nothing is sent and the task
// stays in canary, to be judged by a later step (pins Step's n > 0, which
// must not run a send that would drop the error, and canary's err case).
func TestReplayTaskCanaryErrorsAreTheStepsError(t *testing.T) {
	db := sqlitetest.New(t)
	seedPending(t, db, 10, taskT0.UnixMilli()-1_000_000)
	s := &queuetest.Sender{}
	ts := newTasks(db, s, taskT0)
	task, err := ts.Create(ctx, TaskRequest{RatePerMinute: 60, Canary: &Canary{Size: 2, MinSuccessRatio: 1, ObserveMinutes: 1}}, dlq.Requester{})
	if err != nil {
		t.Fatal(err)
	}
	if st, err := ts.Step(ctx, task.ID, taskT0); err != nil || st.Sent != 2 {
		t.Fatalf("canary step %+v %v", st, err)
	}
	at := taskT0.Add(10 * time.Minute) // the canary rows are decided by then
	// The verdict cannot be read.
	mustExec(t, db, `ALTER TABLE beers RENAME TO beers_away`)
	st, err := ts.Step(ctx, task.ID, at)
	if err == nil || !strings.Contains(err.Error(), "replay task canary") || st.Sent != 0 || st.CanaryPassed || st.CanaryFailed {
		t.Fatalf("step without its verdict %+v %v, want the verdict's error", st, err)
	}
	mustExec(t, db, `ALTER TABLE beers_away RENAME TO beers`)
	// The canary does not decode.
	mustExec(t, db, `UPDATE replay_tasks SET canary = '{"size":' WHERE id = ?`, task.ID)
	st, err = ts.Step(ctx, task.ID, at.Add(5*time.Minute))
	if err == nil || !strings.Contains(err.Error(), "replay task canary") || st.Sent != 0 || st.CanaryPassed {
		t.Fatalf("step with a broken canary %+v %v, want its error", st, err)
	}
	if n := count(t, db, `SELECT COUNT(*) FROM replay_tasks WHERE id = ? AND state = 'canary' AND sent = 2`, task.ID); n != 1 || len(s.Sent["beer-enrichment"]) != 2 {
		t.Fatalf("%d sent: want the task still in canary with its 2 rows", len(s.Sent["beer-enrichment"]))
	}
	// Whole again: judged (passed), and the rest is sent.
	mustExec(t, db, `UPDATE replay_tasks SET canary = ? WHERE id = ?`, `{"size":2,"min_success_ratio":1,"observe_minutes":1}`, task.ID)
	st, err = ts.Step(ctx, task.ID, at.Add(10*time.Minute))
	if err != nil || !st.CanaryPassed || st.Sent != 8 || !st.Done {
		t.Fatalf("judged step %+v %v", st, err)
	}
}

// Get counts a sent row (of a beer not enriched since) as succeeded from
// TaskObserve (10 minutes, docs/admin-api.md "Replay tasks") after its
// delivery on, not before.
func TestReplayTaskGetCountsSuccessAfterTaskObserve(t *testing.T) {
	db := sqlitetest.New(t)
	seedPending(t, db, 3, taskT0.UnixMilli()-1_000_000)
	ts := newTasks(db, &queuetest.Sender{}, taskT0)
	task, err := ts.Create(ctx, TaskRequest{RatePerMinute: 60}, dlq.Requester{RequestID: "r", KeyFingerprint: "k"})
	if err != nil {
		t.Fatal(err)
	}
	if st, err := ts.Step(ctx, task.ID, taskT0); err != nil || st.Sent != 3 {
		t.Fatalf("step: %+v %v", st, err)
	}
	const observe = int64(10 * time.Minute / time.Millisecond)
	var first, last int64
	if err := db.QueryRow(`SELECT MIN(deliver_at), MAX(deliver_at) FROM replay_task_rows`).Scan(&first, &last); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		at   int64
		want int64
	}{{first + observe - 1, 0}, {last + observe, 3}} {
		got, err := newTasks(db, &queuetest.Sender{}, time.UnixMilli(c.at)).Get(ctx, task.ID)
		if err != nil || got.Succeeded == nil || *got.Succeeded != c.want {
			var n any = got.Succeeded
			if got.Succeeded != nil {
				n = *got.Succeeded
			}
			t.Errorf("at deliver+%d ms: %v succeeded (%v), want %d", c.at-first, n, err, c.want)
		}
	}
}
