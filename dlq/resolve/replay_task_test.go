package resolve

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/dlq/dlqtest"
	"github.com/redrive/redrive/internal/sqlitetest"
	"github.com/redrive/redrive/jobs"
	"github.com/redrive/redrive/queue"
	"github.com/redrive/redrive/queue/queuetest"
	"github.com/redrive/redrive/sqlbatch"
)

var taskT0 = time.UnixMilli(1_750_000_000_000)

func newTasks(db *sql.DB, s queue.Sender, now time.Time) ReplayTasks {
	r := newReplay(db, s)
	r.Clock = func() time.Time { return now }
	r.Destinations = []string{"beer-enrichment", "staging"}
	return ReplayTasks{Replay: r}
}

func seedPending(t *testing.T, db *sql.DB, n int, failedAt int64) []int64 {
	t.Helper()
	rows := make([]adminRow, n)
	for i := range rows {
		rows[i] = adminRow{Key: fmt.Sprint(i), Label1: fmt.Sprintf("Beer %d", i), FailedAt: failedAt + int64(i)}
	}
	return insert(t, db, rows...)
}

// deliveries returns the deliver_at of each row a task sent, and checks
// that no row was sent twice.
func deliveries(t *testing.T, db *sql.DB, task int64) []int64 {
	t.Helper()
	rows, err := db.Query(`SELECT deliver_at FROM replay_task_rows WHERE task_id = ? ORDER BY deliver_at`, task)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []int64
	for rows.Next() {
		var at int64
		rows.Scan(&at)
		out = append(out, at)
	}
	return out
}

// maxPerMinute is the most deliveries in any 60 s window starting on a whole second.
func maxPerMinute(ats []int64) int {
	best := 0
	for i := range ats {
		j := sort.Search(len(ats), func(j int) bool { return ats[j] >= ats[i]+60_000 })
		best = max(best, j-i)
	}
	return best
}

func TestReplayTaskDeliversEvenlyAtItsRateOnce(t *testing.T) {
	db := sqlitetest.New(t)
	ids := seedPending(t, db, 700, taskT0.UnixMilli()-1_000_000)
	s := &queuetest.Sender{}
	ts := newTasks(db, s, taskT0)
	task, err := ts.Create(ctx, TaskRequest{RatePerMinute: 60}, dlq.Requester{RequestID: "r", KeyFingerprint: "k"})
	if err != nil {
		t.Fatal(err)
	}
	if task.State != TaskRunning || task.Matched != 700 || task.Remaining != 700 {
		t.Fatalf("created %+v", task)
	}
	// Steps at the cron's times: the slots of 5 minutes at 60 per 60.999 s
	// (296, then 295), then the rest.
	var sentPerStep []int
	for i := range 4 {
		st, err := ts.Step(ctx, task.ID, taskT0.Add(time.Duration(i)*5*time.Minute+time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		sentPerStep = append(sentPerStep, st.Sent)
	}
	if fmt.Sprint(sentPerStep) != "[296 295 109 0]" {
		t.Fatalf("sent per step %v", sentPerStep)
	}
	got, _ := ts.Get(ctx, task.ID)
	if got.State != TaskDone || got.Sent != 700 || got.Remaining != 0 || got.EstimatedFinishAt != nil {
		t.Fatalf("task %+v", got)
	}
	ats := deliveries(t, db, task.ID)
	if len(ats) != 700 || maxPerMinute(ats) > 60 {
		t.Fatalf("%d deliveries, at most %d in a minute", len(ats), maxPerMinute(ats))
	}
	// 700 messages at 60 per 60.999 s: 699 slots of 1016.65 ms from the
	// first to the last, rounded up to the whole second of its send.
	if span := ats[len(ats)-1] - ats[0]; span != 711_000 {
		t.Fatalf("span %d ms", span)
	}
	sent := sentRows(t, db, s, "beer-enrichment")
	if len(sent) != 700 || count(t, db, `SELECT COUNT(*) FROM dlq_messages WHERE status = 'replayed' AND replay_count = 1`) != 700 {
		t.Fatalf("sent %d", len(sent))
	}
	seen := map[int64]bool{}
	for _, id := range sent {
		if seen[id] {
			t.Fatalf("row %d sent twice", id)
		}
		seen[id] = true
	}
	// Delays put each message on its slot: the first step asks for 0..300 s
	// (slot 295 is 299.911 s after the first).
	first := s.Sent["beer-enrichment"][:296]
	if first[0].Delay != 0 || first[295].Delay != 300*time.Second {
		t.Fatalf("delays %v .. %v", first[0].Delay, first[295].Delay)
	}
	_ = ids
}

func TestReplayTaskDelaySecondsStartsLater(t *testing.T) {
	db := sqlitetest.New(t)
	seedPending(t, db, 10, 1000)
	s := &queuetest.Sender{}
	ts := newTasks(db, s, taskT0)
	task, err := ts.Create(ctx, TaskRequest{RatePerMinute: 120, DelaySeconds: 600}, dlq.Requester{})
	if err != nil {
		t.Fatal(err)
	}
	if st, _ := ts.Step(ctx, task.ID, taskT0.Add(time.Minute)); st.Sent != 0 || st.Done {
		t.Fatalf("before its start: %+v", st)
	}
	if st, _ := ts.Step(ctx, task.ID, taskT0.Add(6*time.Minute)); st.Sent != 10 || !st.Done {
		t.Fatalf("after: %+v", st)
	}
	// Slots start at creation + 600 s: the step at +6 min asks for 240 s and more.
	if d := s.Sent["beer-enrichment"][0].Delay; d != 240*time.Second {
		t.Fatalf("first delay %v", d)
	}
}

func TestReplayTaskPauseResumeCancel(t *testing.T) {
	db := sqlitetest.New(t)
	seedPending(t, db, 50, 1000)
	s := &queuetest.Sender{}
	ts := newTasks(db, s, taskT0)
	task, _ := ts.Create(ctx, TaskRequest{RatePerMinute: 2}, dlq.Requester{})
	if st, _ := ts.Step(ctx, task.ID, taskT0); st.Sent != 10 {
		t.Fatalf("step 1 %+v", st)
	}
	if p, err := ts.Act(ctx, task.ID, dlq.TaskPause); err != nil || p.State != TaskPaused {
		t.Fatalf("pause %+v %v", p, err)
	}
	if st, _ := ts.Step(ctx, task.ID, taskT0.Add(5*time.Minute)); st.Held || st.Sent != 0 {
		t.Fatalf("a paused task took a step: %+v", st)
	}
	var se *TaskStateError
	if _, err := ts.Act(ctx, task.ID, dlq.TaskPause); !errors.As(err, &se) {
		t.Fatalf("pausing twice: %v", err)
	}
	if r, err := ts.Act(ctx, task.ID, dlq.TaskResume); err != nil || r.State != TaskRunning {
		t.Fatalf("resume %+v %v", r, err)
	}
	// Resumed an hour later: it starts from then, not in a burst.
	st, _ := ts.Step(ctx, task.ID, taskT0.Add(time.Hour))
	if st.Sent != 10 {
		t.Fatalf("after resume %+v", st)
	}
	if c, err := ts.Act(ctx, task.ID, dlq.TaskCancel); err != nil || c.State != TaskCancelled || c.FinishedAt == nil || c.Remaining != 0 {
		t.Fatalf("cancel %+v %v", c, err)
	}
	if st, _ := ts.Step(ctx, task.ID, taskT0.Add(2*time.Hour)); st.Held {
		t.Fatal("a cancelled task took a step")
	}
	if _, err := ts.Act(ctx, task.ID, dlq.TaskResume); !errors.As(err, &se) {
		t.Fatalf("resuming a cancelled task: %v", err)
	}
	if n := count(t, db, `SELECT COUNT(*) FROM dlq_messages WHERE status = 'pending'`); n != 30 {
		t.Fatalf("%d rows pending after cancel, want 30 (never sent)", n)
	}
	if _, err := ts.Act(ctx, 999, dlq.TaskPause); !errors.Is(err, ErrTaskNotFound) {
		t.Fatalf("unknown task: %v", err)
	}
}

func TestReplayTaskAndAdHocReplaysSendEachRowOnce(t *testing.T) {
	db := sqlitetest.New(t)
	ids := seedPending(t, db, 400, 1000)
	s := &queuetest.Sender{}
	ts := newTasks(db, s, taskT0)
	ts.Replay.BulkMax = 50 // many claims, interleaved with the ad-hoc replays
	task, _ := ts.Create(ctx, TaskRequest{RatePerMinute: 600}, dlq.Requester{})
	var wg sync.WaitGroup
	errs := make(chan error, 20)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := g * 5; i < 400; i += 40 {
				if _, err := ts.Replay.Run(ctx, ReplayRequest{Selection: dlq.Selection{IDs: ids[i : i+5]}}); err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Add(2)
	for k := range 2 { // two overlapping cron runs: one holds the task
		go func() {
			defer wg.Done()
			if _, err := ts.Step(ctx, task.ID, taskT0.Add(time.Duration(k)*time.Millisecond)); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	ts.Step(ctx, task.ID, taskT0.Add(5*time.Minute))
	sent := sentRows(t, db, s, "beer-enrichment")
	seen := map[int64]int{}
	for _, id := range sent {
		seen[id]++
	}
	for id, n := range seen {
		if n != 1 {
			t.Fatalf("row %d sent %d times", id, n)
		}
	}
	if len(seen) != 400 {
		t.Fatalf("%d rows sent, want 400", len(seen))
	}
}

func TestReplayTaskRejectsBadInputAndForeignDestinations(t *testing.T) {
	db := sqlitetest.New(t)
	ts := newTasks(db, &queuetest.Sender{}, taskT0)
	for _, req := range []TaskRequest{
		{RatePerMinute: 0}, {RatePerMinute: MaxTaskRate + 1}, {RatePerMinute: 1, DelaySeconds: -1},
		{RatePerMinute: 1, Filter: dlq.Filter{Status: "replayed"}}, {RatePerMinute: 1, Destination: "somewhere-else"},
	} {
		var ie *dlq.InputError
		if _, err := ts.Create(ctx, req, dlq.Requester{}); !errors.As(err, &ie) {
			t.Fatalf("%+v: %v", req, err)
		}
	}
	seedPending(t, db, 3, 1000)
	s := &queuetest.Sender{}
	ts = newTasks(db, s, taskT0)
	task, err := ts.Create(ctx, TaskRequest{RatePerMinute: 10, Destination: "staging"}, dlq.Requester{})
	if err != nil {
		t.Fatal(err)
	}
	ts.Step(ctx, task.ID, taskT0)
	if len(s.Sent["staging"]) != 3 || len(s.Sent["beer-enrichment"]) != 0 {
		t.Fatalf("sent %v", s.Sent)
	}
}

// Every limit of a task request is accepted at its edge and refused one
// past it (Check, which Create runs first).
func TestReplayTaskCheckAcceptsEveryLimitAtItsEdge(t *testing.T) {
	ts := newTasks(sqlitetest.New(t), &queuetest.Sender{}, taskT0)
	canary := func(size int64, ratio float64, observe int64) *Canary {
		return &Canary{Size: size, MinSuccessRatio: ratio, ObserveMinutes: observe}
	}
	ok := []TaskRequest{
		{RatePerMinute: 1}, {RatePerMinute: MaxTaskRate},
		{RatePerMinute: 1, DelaySeconds: 0}, {RatePerMinute: 1, DelaySeconds: dlq.MaxDelaySeconds},
		{RatePerMinute: 1, Canary: canary(1, 0, 1)}, {RatePerMinute: 1, Canary: canary(MaxCanarySize, 1, MaxCanaryObserve)},
	}
	for _, req := range ok {
		if _, err := ts.Check(req); err != nil {
			t.Errorf("%+v %+v: %v", req, req.Canary, err)
		}
	}
	bad := []TaskRequest{
		{RatePerMinute: 0}, {RatePerMinute: MaxTaskRate + 1},
		{RatePerMinute: 1, DelaySeconds: -1}, {RatePerMinute: 1, DelaySeconds: dlq.MaxDelaySeconds + 1},
		{RatePerMinute: 1, Canary: canary(0, 0.5, 1)}, {RatePerMinute: 1, Canary: canary(MaxCanarySize+1, 0.5, 1)},
		{RatePerMinute: 1, Canary: canary(1, -0.01, 1)}, {RatePerMinute: 1, Canary: canary(1, 1.01, 1)},
		{RatePerMinute: 1, Canary: canary(1, math.NaN(), 1)},
		{RatePerMinute: 1, Canary: canary(1, 0.5, 0)}, {RatePerMinute: 1, Canary: canary(1, 0.5, MaxCanaryObserve+1)},
	}
	for _, req := range bad {
		var ie *dlq.InputError
		if _, err := ts.Check(req); !errors.As(err, &ie) {
			t.Errorf("%+v %+v: %v, want an input error", req, req.Canary, err)
		}
	}
}

// A step holds its task for taskLease: another step in that time is not
// held (it would send the same slots twice); after it, the hold of a step
// that died (never released) lapses and the task goes on.
func TestReplayTaskStepHoldLapsesAfterTheLease(t *testing.T) {
	db := sqlitetest.New(t)
	seedPending(t, db, 30, taskT0.UnixMilli()-1_000_000)
	ts := newTasks(db, &queuetest.Sender{}, taskT0)
	task, err := ts.Create(ctx, TaskRequest{RatePerMinute: 1}, dlq.Requester{})
	if err != nil {
		t.Fatal(err)
	}
	// A step that died while holding the task at taskT0.
	mustExec(t, db, `UPDATE replay_tasks SET step_at = ? WHERE id = ?`, taskT0.UnixMilli(), task.ID)
	for _, c := range []struct {
		after time.Duration
		held  bool
	}{{time.Minute, false}, {taskLease - time.Millisecond, false}, {taskLease, true}} {
		st, err := ts.Step(ctx, task.ID, taskT0.Add(c.after))
		if err != nil || st.Held != c.held {
			t.Fatalf("a step %s after the dead one: held %v (%v), want %v", c.after, st.Held, err, c.held)
		}
	}
}

// What a task reports as remaining and when it should finish: the rows not
// yet sent (sent and failed sends both count as done), and the delivery
// time of the next slot (or now, if that is past) plus the rest at the rate.
func TestReplayTaskDerivesRemainingAndFinish(t *testing.T) {
	const origin = 1_750_000_000_000
	task := func(state string, matched, sent, failed int64) Task {
		return Task{State: state, Matched: matched, Sent: sent, SendFailed: failed, RatePerMinute: 2, slotOrigin: origin}
	}
	for _, c := range []struct {
		t         Task
		now       int64
		remaining int64
		finish    int64 // 0: none
	}{
		// The 5th slot (4 done) goes at origin + 121.998 s (2 per 60.999 s);
		// 6 more take 182.997 s.
		{task(TaskRunning, 10, 3, 1), origin, 6, origin + 121_998 + 182_997},
		{task(TaskRunning, 10, 3, 1), origin + 500_000, 6, origin + 500_000 + 182_997},
		{task(TaskRunning, 10, 9, 3), origin, 0, origin + 365_994},
		{task(TaskPaused, 10, 3, 1), origin, 6, 0},
		{task(TaskCanary, 10, 2, 0), origin, 8, 0},
		{task(TaskDone, 10, 3, 1), origin, 0, 0},
		{task(TaskCancelled, 10, 3, 1), origin, 0, 0},
	} {
		tk := c.t
		tk.derive(c.now)
		var finish int64
		if tk.EstimatedFinishAt != nil {
			finish = *tk.EstimatedFinishAt
		}
		if tk.Remaining != c.remaining || finish != c.finish {
			t.Errorf("%s %d/%d/%d at %d: remaining %d, finish %d; want %d, %d", tk.State, tk.Matched, tk.Sent, tk.SendFailed,
				c.now-origin, tk.Remaining, finish-origin, c.remaining, c.finish-origin)
		}
	}
}

// timedSender records when each message is asked to be delivered,
// counted from the real send (the clock at the sendBatch), then lets the
// send take lag (its own I/O: the next page goes out later), and calls
// hook, when set, after the send.
type timedSender struct {
	clock     *taskClock
	lag       func() time.Duration
	deliverAt []int64
	inner     queuetest.Sender
	hook      func(call int)
	calls     int
}

func (s *timedSender) SendBatch(ctx context.Context, q string, msgs []queue.Outgoing) error {
	at := s.clock.Now().UnixMilli()
	for _, m := range msgs {
		s.deliverAt = append(s.deliverAt, at+m.Delay.Milliseconds())
	}
	err := s.inner.SendBatch(ctx, q, msgs)
	if s.lag != nil {
		s.clock.Add(s.lag())
	}
	s.calls++
	if s.hook != nil {
		s.hook(s.calls)
	}
	return err
}

// hookRunner runs batches in a transaction and calls after, when set,
// after each one with its number.
type hookRunner struct {
	db    *sql.DB
	after func(call int)
	calls int
}

func (h *hookRunner) Batch(ctx context.Context, stmts ...sqlbatch.Stmt) ([]json.RawMessage, error) {
	out, err := sqlbatch.Tx{DB: h.db}.Batch(ctx, stmts...)
	h.calls++
	if h.after != nil {
		h.after(h.calls)
	}
	return out, err
}

// A step's delays are counted from its real send, not from the cron's
// scheduled time: a step that runs late (other jobs first), whose pages go
// out one after another, followed by one on time, still asks for at most
// rate deliveries in any minute, and replay_task_rows records those real
// delivery times.
func TestReplayTaskPacesFromTheRealSend(t *testing.T) {
	db := sqlitetest.New(t)
	seedPending(t, db, 700, taskT0.UnixMilli()-1_000_000)
	clk := dlqtest.NewTaskClock(taskT0)
	s := &timedSender{clock: clk, lag: func() time.Duration { return 1234 * time.Millisecond }}
	ts := newTasks(db, s, taskT0)
	ts.Replay.Clock = clk.Now
	ts.Replay.BulkMax = 40
	task, err := ts.Create(ctx, TaskRequest{RatePerMinute: 60}, dlq.Requester{})
	if err != nil {
		t.Fatal(err)
	}
	at := taskT0.Add(time.Minute).Truncate(time.Minute)
	for i, late := range []time.Duration{20*time.Second + 517*time.Millisecond, 0, 3*time.Second + 71*time.Millisecond} {
		sched := at.Add(time.Duration(i) * 5 * time.Minute)
		clk.Set(sched.Add(late))
		if _, err := ts.Step(ctx, task.ID, sched); err != nil {
			t.Fatal(err)
		}
	}
	got := append([]int64(nil), s.deliverAt...)
	slices.Sort(got)
	if len(got) < 600 {
		t.Fatalf("%d sent, want at least 600", len(got))
	}
	if b := maxPerMinute(got); b > 60 {
		t.Fatalf("a minute holds %d deliveries at rate 60", b)
	}
	if rec := deliveries(t, db, task.ID); !slices.Equal(rec, got) {
		t.Fatalf("replay_task_rows records other delivery times than the sends asked for")
	}
}

// A step sends the slots before its next step exactly: the slot at its
// time + Window is the next step's, the one before it its own.
func TestReplayTaskStepSendsItsSlotsExactly(t *testing.T) {
	for _, delaySec := range []int64{60, 61} {
		db := sqlitetest.New(t)
		seedPending(t, db, 100, taskT0.UnixMilli()-1_000_000)
		ts := newTasks(db, &queuetest.Sender{}, taskT0)
		task, err := ts.Create(ctx, TaskRequest{RatePerMinute: 7, DelaySeconds: delaySec}, dlq.Requester{})
		if err != nil {
			t.Fatal(err)
		}
		sc := schedule{rate: 7, origin: taskT0.Add(time.Duration(delaySec) * time.Second).UnixMilli()}
		// A step whose horizon is exactly slot 20: it sends slots 0..19.
		now := time.UnixMilli(sc.at(20) - DefaultTaskWindow.Milliseconds())
		st, err := ts.Step(ctx, task.ID, now)
		if err != nil || st.Sent != 20 {
			t.Fatalf("delay %d: a step up to slot 20 sent %d (%v), want 20", delaySec, st.Sent, err)
		}
		// The next, 1 ms after slot 40's horizon, sends slots 20..40.
		now = time.UnixMilli(sc.at(40) - DefaultTaskWindow.Milliseconds() + 1)
		if st, err := ts.Step(ctx, task.ID, now); err != nil || st.Sent != 21 {
			t.Fatalf("delay %d: the next step sent %d (%v), want 21", delaySec, st.Sent, err)
		}
		ats := deliveries(t, db, task.ID)
		if ats[0] != sc.at(0) || ats[40] != ceilSecond(sc.at(40)-now.UnixMilli())+now.UnixMilli() {
			t.Fatalf("delay %d: first and last deliveries %d, %d", delaySec, ats[0]-sc.origin, ats[40]-sc.origin)
		}
	}
}

// A pause that lands during a step stops it: its next claim takes
// nothing, and the step does not report (or make) the task done.
func TestReplayTaskPauseDuringAStepClaimsNothingMore(t *testing.T) {
	db := sqlitetest.New(t)
	seedPending(t, db, 50, taskT0.UnixMilli()-1_000_000)
	clk := dlqtest.NewTaskClock(taskT0)
	s := &timedSender{clock: clk}
	ts := newTasks(db, s, taskT0)
	ts.Replay.BulkMax = 5
	task, _ := ts.Create(ctx, TaskRequest{RatePerMinute: 60}, dlq.Requester{})
	s.hook = func(call int) {
		if call == 1 {
			if _, err := ts.Act(ctx, task.ID, dlq.TaskPause); err != nil {
				t.Error(err)
			}
		}
	}
	job := &ReplayTaskJob{Tasks: ts}
	sum, err := job.Run(ctx, taskT0)
	if err != nil || sum["sent"] != 5 || sum["done"] != 0 || sum["tasks"] != 1 {
		t.Fatalf("run %v %v, want 5 sent and no task done", sum, err)
	}
	got, _ := ts.Get(ctx, task.ID)
	if got.State != TaskPaused || got.Sent != 5 || got.FinishedAt != nil {
		t.Fatalf("task %+v", got)
	}
	if n := count(t, db, `SELECT COUNT(*) FROM dlq_messages WHERE status = 'pending'`); n != 45 {
		t.Fatalf("%d rows pending, want 45", n)
	}
}

// A pause and a resume that land during a step, around a claim that
// therefore found nothing: the task is still running with rows left, so
// the step leaves it running.
func TestReplayTaskPauseAndResumeDuringAStepDoNotEndIt(t *testing.T) {
	db := sqlitetest.New(t)
	seedPending(t, db, 50, taskT0.UnixMilli()-1_000_000)
	clk := dlqtest.NewTaskClock(taskT0)
	s := &timedSender{clock: clk}
	ts := newTasks(db, s, taskT0)
	ts.Replay.BulkMax = 5
	hr := &hookRunner{db: db}
	ts.Replay.Batch = hr
	task, _ := ts.Create(ctx, TaskRequest{RatePerMinute: 60}, dlq.Requester{})
	s.hook = func(call int) {
		if call == 1 {
			ts.Act(ctx, task.ID, dlq.TaskPause)
		}
	}
	// Batch 1 claims, 2 settles, 3 claims (nothing: paused); then resumed.
	hr.after = func(call int) {
		if call == 3 {
			if _, err := ts.Act(ctx, task.ID, dlq.TaskResume); err != nil {
				t.Error(err)
			}
		}
	}
	st, err := ts.Step(ctx, task.ID, taskT0)
	if err != nil || st.Sent != 5 || st.Done {
		t.Fatalf("step %+v %v", st, err)
	}
	got, _ := ts.Get(ctx, task.ID)
	if got.State != TaskRunning || got.Remaining != 45 || got.FinishedAt != nil {
		t.Fatalf("task %+v: want running with 45 rows left", got)
	}
	hr.after, s.hook = nil, nil
	if st, err := ts.Step(ctx, task.ID, taskT0.Add(5*time.Minute)); err != nil || st.Sent != 45 || !st.Done {
		t.Fatalf("the next step %+v %v", st, err)
	}
}

// One run of the job steps at most maxTasksPerRun tasks, oldest first, and
// sums what their steps did; more says a task was left for the next run
// (pins Run's maxTasksPerRun+1, len(ids) > maxTasksPerRun and the done
// count).
func TestReplayTaskJobRunStepsAtMostTenTasks(t *testing.T) {
	db := sqlitetest.New(t)
	seedPending(t, db, 100, taskT0.UnixMilli()-1_000_000)
	ts := newTasks(db, &queuetest.Sender{}, taskT0)
	var tasks []int64
	for range maxTasksPerRun + 1 {
		task, err := ts.Create(ctx, TaskRequest{RatePerMinute: 1}, dlq.Requester{})
		if err != nil {
			t.Fatal(err)
		}
		tasks = append(tasks, task.ID)
	}
	job := &ReplayTaskJob{Tasks: ts}
	// 11 running: the 10 oldest take a step of 5 slots each (1/min).
	sum, err := job.Run(ctx, taskT0)
	if err != nil || fmt.Sprint(sum) != "map[done:0 more:true send_failed:0 sent:50 tasks:10]" {
		t.Fatalf("run with 11 tasks: %v %v", sum, err)
	}
	if last, _ := ts.Get(ctx, tasks[10]); last.Steps != 0 {
		t.Fatalf("the 11th task took %d steps in a run of 10", last.Steps)
	}
	// Exactly 10 running: all of them step, nothing is left over.
	if _, err := ts.Act(ctx, tasks[0], dlq.TaskCancel); err != nil {
		t.Fatal(err)
	}
	sum, err = job.Run(ctx, taskT0.Add(5*time.Minute))
	if err != nil || fmt.Sprint(sum) != "map[done:0 more:false send_failed:0 sent:50 tasks:10]" {
		t.Fatalf("run with 10 tasks: %v %v", sum, err)
	}
	// Nothing left to send: each of the 10 finds none and is done.
	sum, err = job.Run(ctx, taskT0.Add(10*time.Minute))
	if err != nil || fmt.Sprint(sum) != "map[done:10 more:false send_failed:0 sent:0 tasks:10]" {
		t.Fatalf("last run: %v %v", sum, err)
	}
	if n := count(t, db, `SELECT COUNT(*) FROM replay_tasks WHERE state = 'done'`); n != 10 {
		t.Fatalf("%d tasks done, want 10", n)
	}
}

// A run whose budget is spent still takes its first task's step and then
// stops, with more set; the step's failed sends are summed as send_failed
// (pins Run's i > 0 && budget.Spent() and the send_failed sum).
func TestReplayTaskJobRunStopsWhenItsBudgetIsSpent(t *testing.T) {
	db := sqlitetest.New(t)
	seedPending(t, db, 20, taskT0.UnixMilli()-1_000_000)
	ts := newTasks(db, &queuetest.Sender{Err: errors.New("queue down")}, taskT0)
	// The budget's clock moves 1 s on each reading: spent at the first check.
	ts.Limits = jobs.Limits{Budget: time.Second, Clock: (&fakeClock{T: taskT0, Step: time.Second}).Now}
	first, _ := ts.Create(ctx, TaskRequest{RatePerMinute: 1}, dlq.Requester{})
	second, _ := ts.Create(ctx, TaskRequest{RatePerMinute: 1}, dlq.Requester{})
	sum, err := (&ReplayTaskJob{Tasks: ts}).Run(ctx, taskT0)
	if err != nil || fmt.Sprint(sum) != "map[done:0 more:true send_failed:5 sent:0 tasks:1]" {
		t.Fatalf("run: %v %v", sum, err)
	}
	a, _ := ts.Get(ctx, first.ID)
	b, _ := ts.Get(ctx, second.ID)
	if a.Steps != 1 || a.SendFailed != 5 || b.Steps != 0 {
		t.Fatalf("first task %d steps, %d failed sends; second %d steps", a.Steps, a.SendFailed, b.Steps)
	}
	if n := count(t, db, `SELECT COUNT(*) FROM dlq_messages WHERE status = 'pending'`); n != 20 {
		t.Fatalf("%d rows pending, want all 20 (their sends failed)", n)
	}
}

// List returns the newest tasks first, at most limit, with their derived
// counts; a failed read is an error (pins List's error checks).
func TestReplayTaskListNewestFirst(t *testing.T) {
	db := sqlitetest.New(t)
	seedPending(t, db, 4, taskT0.UnixMilli()-1_000_000)
	ts := newTasks(db, &queuetest.Sender{}, taskT0)
	var ids []int64
	for _, rate := range []int64{1, 2, 3} {
		task, err := ts.Create(ctx, TaskRequest{RatePerMinute: rate}, dlq.Requester{})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, task.ID)
	}
	got, err := ts.List(ctx, 2, "", dlq.Scope{})
	if err != nil || len(got) != 2 {
		t.Fatalf("list: %d tasks, %v", len(got), err)
	}
	if got[0].ID != ids[2] || got[1].ID != ids[1] || got[0].RatePerMinute != 3 || got[0].Remaining != 4 || got[0].EstimatedFinishAt == nil {
		t.Fatalf("list %+v, want tasks %d and %d, newest first, 4 rows remaining", got, ids[2], ids[1])
	}
	mustExec(t, db, `UPDATE replay_tasks SET created_at = 'not a time' WHERE id = ?`, ids[2])
	if got, err := ts.List(ctx, 2, "", dlq.Scope{}); err == nil || !strings.Contains(err.Error(), "replay tasks") {
		t.Fatalf("a row that does not scan: %v, %v", got, err)
	}
	mustExec(t, db, `DROP TABLE replay_tasks`)
	if got, err := ts.List(ctx, 2, "", dlq.Scope{}); err == nil || got != nil {
		t.Fatalf("without its table: %v, %v", got, err)
	}
}

// Slot k is delivered at origin + ceil((k-base)·slotSpan/rate) ms, counted
// from the stored slot_base (pins schedule.at's arithmetic), and a task's
// slots start on a whole second (ceilSecond).
func TestReplayTaskScheduleSlots(t *testing.T) {
	for _, c := range []struct {
		s       schedule
		k, want int64
	}{
		{schedule{rate: 7, origin: 1000}, 0, 1000},
		{schedule{rate: 7, origin: 1000}, 1, 1000 + 8715}, // 8714.14 rounded up
		{schedule{rate: 7, origin: 1000}, 7, 1000 + 60_999},
		{schedule{rate: 60, origin: 0}, 1, 1017}, // 1016.65
		{schedule{rate: 1, origin: 0}, 2, 121_998},
		{schedule{rate: 7, origin: 1000, base: 3}, 3, 1000},
		{schedule{rate: 7, origin: 1000, base: 3}, 10, 1000 + 60_999},
	} {
		if got := c.s.at(c.k); got != c.want {
			t.Errorf("%+v at(%d) = %d, want %d", c.s, c.k, got, c.want)
		}
	}
	for ms, want := range map[int64]int64{0: 0, 1: 1000, 999: 1000, 1000: 1000, 1001: 2000, 1_750_000_000_001: 1_750_000_001_000} {
		if got := ceilSecond(ms); got != want {
			t.Errorf("ceilSecond(%d) = %d, want %d", ms, got, want)
		}
	}
}

// failFirstSender fails its first SendBatch, then sends.
type failFirstSender struct {
	queuetest.Sender
	calls int
}

func (s *failFirstSender) SendBatch(ctx context.Context, q string, msgs []queue.Outgoing) error {
	s.calls++
	if s.calls == 1 {
		return errors.New("queue unavailable")
	}
	return s.Sender.SendBatch(ctx, q, msgs)
}

// A failed send uses its slot: the next step goes on from the slot after
// the task's sent and failed rows, so the rate holds across steps (pins
// hold's seq = sent + send_failed).
func TestReplayTaskFailedSendsKeepTheirSlots(t *testing.T) {
	db := sqlitetest.New(t)
	seedPending(t, db, 20, taskT0.UnixMilli()-1_000_000)
	s := &failFirstSender{}
	ts := newTasks(db, s, taskT0)
	ts.Replay.BulkMax = 2
	task, _ := ts.Create(ctx, TaskRequest{RatePerMinute: 1}, dlq.Requester{})
	// Slots 0..4 (pages of 2, 2, 1): the first page's send fails.
	if st, err := ts.Step(ctx, task.ID, taskT0); err != nil || st.Sent != 3 || st.SendFailed != 2 {
		t.Fatalf("first step %+v %v", st, err)
	}
	// The next step starts at slot 5 (304.995 s), not at slot 3.
	if st, err := ts.Step(ctx, task.ID, taskT0.Add(5*time.Minute)); err != nil || st.Sent != 5 {
		t.Fatalf("second step %+v %v", st, err)
	}
	ats := deliveries(t, db, task.ID)
	if len(ats) != 8 || ats[3]-taskT0.UnixMilli() != 305_000 || maxPerMinute(ats) > 1 {
		t.Fatalf("deliveries at %v ms after the start (%d in a minute), want slots 2..9 at 1 a minute", offsets(ats, taskT0), maxPerMinute(ats))
	}
}

func offsets(ats []int64, from time.Time) []int64 {
	out := make([]int64, len(ats))
	for i, at := range ats {
		out[i] = at - from.UnixMilli()
	}
	return out
}

// A release that fails is the step's error; the step's sends stay
// recorded and the task stays held until the lease lapses, then the next
// step goes on from where this one stopped (pins Step's release error).
func TestReplayTaskStepReleaseFailureIsAnError(t *testing.T) {
	db := sqlitetest.New(t)
	seedPending(t, db, 20, taskT0.UnixMilli()-1_000_000)
	s := &queuetest.Sender{}
	ts := newTasks(db, s, taskT0)
	task, _ := ts.Create(ctx, TaskRequest{RatePerMinute: 1}, dlq.Requester{})
	mustExec(t, db, `CREATE TRIGGER no_release BEFORE UPDATE OF step_at ON replay_tasks WHEN NEW.step_at IS NULL
		BEGIN SELECT RAISE(ABORT, 'release refused'); END`)
	st, err := ts.Step(ctx, task.ID, taskT0)
	if err == nil || !strings.Contains(err.Error(), "replay task release") || st.Sent != 5 || st.Done {
		t.Fatalf("step %+v %v, want 5 sent and the release's error", st, err)
	}
	mustExec(t, db, `DROP TRIGGER no_release`)
	if st, err := ts.Step(ctx, task.ID, taskT0.Add(5*time.Minute)); err != nil || st.Held {
		t.Fatalf("a step within the lease %+v %v, want not held", st, err)
	}
	if st, err := ts.Step(ctx, task.ID, taskT0.Add(taskLease)); err != nil || !st.Held || st.Sent != 5 {
		t.Fatalf("after the lease %+v %v, want 5 more sent", st, err)
	}
	if got := sentRows(t, db, s, "beer-enrichment"); len(got) != 10 || len(deliveries(t, db, task.ID)) != 10 {
		t.Fatalf("%d rows sent, want 10", len(got))
	}
}
