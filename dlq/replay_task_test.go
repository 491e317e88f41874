package dlq

import (
	"database/sql"
	"errors"
	"fmt"
	"math"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/redrive/redrive/internal/sqlitetest"
	"github.com/redrive/redrive/queue"
	"github.com/redrive/redrive/queue/queuetest"
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
		rows[i] = adminRow{beerID: fmt.Sprint(i), beerName: fmt.Sprintf("Beer %d", i), failedAt: failedAt + int64(i)}
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
	task, err := ts.Create(ctx, TaskRequest{RatePerMinute: 60}, Requester{RequestID: "r", KeyFingerprint: "k"})
	if err != nil {
		t.Fatal(err)
	}
	if task.State != TaskRunning || task.Matched != 700 || task.Remaining != 700 {
		t.Fatalf("created %+v", task)
	}
	// Steps at the cron's times: 300 each (5 minutes at 60/min), then 100.
	var sentPerStep []int
	for i := range 4 {
		st, err := ts.Step(ctx, task.ID, taskT0.Add(time.Duration(i)*5*time.Minute+time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		sentPerStep = append(sentPerStep, st.Sent)
	}
	if fmt.Sprint(sentPerStep) != "[300 300 100 0]" {
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
	// 700 messages at 60/min: 11 min 39 s from the first to the last.
	if span := ats[len(ats)-1] - ats[0]; span != 699_000 {
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
	// Delays put each message on its slot: the first step asks for 0..299 s.
	first := s.Sent["beer-enrichment"][:300]
	if first[0].Delay != 0 || first[299].Delay != 299*time.Second {
		t.Fatalf("delays %v .. %v", first[0].Delay, first[299].Delay)
	}
	_ = ids
}

func TestReplayTaskDelaySecondsStartsLater(t *testing.T) {
	db := sqlitetest.New(t)
	seedPending(t, db, 10, 1000)
	s := &queuetest.Sender{}
	ts := newTasks(db, s, taskT0)
	task, err := ts.Create(ctx, TaskRequest{RatePerMinute: 120, DelaySeconds: 600}, Requester{})
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
	task, _ := ts.Create(ctx, TaskRequest{RatePerMinute: 2}, Requester{})
	if st, _ := ts.Step(ctx, task.ID, taskT0); st.Sent != 10 {
		t.Fatalf("step 1 %+v", st)
	}
	if p, err := ts.Act(ctx, task.ID, TaskPause); err != nil || p.State != TaskPaused {
		t.Fatalf("pause %+v %v", p, err)
	}
	if st, _ := ts.Step(ctx, task.ID, taskT0.Add(5*time.Minute)); st.Held || st.Sent != 0 {
		t.Fatalf("a paused task took a step: %+v", st)
	}
	var se *TaskStateError
	if _, err := ts.Act(ctx, task.ID, TaskPause); !errors.As(err, &se) {
		t.Fatalf("pausing twice: %v", err)
	}
	if r, err := ts.Act(ctx, task.ID, TaskResume); err != nil || r.State != TaskRunning {
		t.Fatalf("resume %+v %v", r, err)
	}
	// Resumed an hour later: it starts from then, not in a burst.
	st, _ := ts.Step(ctx, task.ID, taskT0.Add(time.Hour))
	if st.Sent != 10 {
		t.Fatalf("after resume %+v", st)
	}
	if c, err := ts.Act(ctx, task.ID, TaskCancel); err != nil || c.State != TaskCancelled || c.FinishedAt == nil || c.Remaining != 0 {
		t.Fatalf("cancel %+v %v", c, err)
	}
	if st, _ := ts.Step(ctx, task.ID, taskT0.Add(2*time.Hour)); st.Held {
		t.Fatal("a cancelled task took a step")
	}
	if _, err := ts.Act(ctx, task.ID, TaskResume); !errors.As(err, &se) {
		t.Fatalf("resuming a cancelled task: %v", err)
	}
	if n := count(t, db, `SELECT COUNT(*) FROM dlq_messages WHERE status = 'pending'`); n != 30 {
		t.Fatalf("%d rows pending after cancel, want 30 (never sent)", n)
	}
	if _, err := ts.Act(ctx, 999, TaskPause); !errors.Is(err, ErrTaskNotFound) {
		t.Fatalf("unknown task: %v", err)
	}
}

func TestReplayTaskAndAdHocReplaysSendEachRowOnce(t *testing.T) {
	db := sqlitetest.New(t)
	ids := seedPending(t, db, 400, 1000)
	s := &queuetest.Sender{}
	ts := newTasks(db, s, taskT0)
	ts.Replay.BulkMax = 50 // many claims, interleaved with the ad-hoc replays
	task, _ := ts.Create(ctx, TaskRequest{RatePerMinute: 600}, Requester{})
	var wg sync.WaitGroup
	errs := make(chan error, 20)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := g * 5; i < 400; i += 40 {
				if _, err := ts.Replay.Run(ctx, ReplayRequest{Selection: Selection{IDs: ids[i : i+5]}}); err != nil {
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
		{RatePerMinute: 1, Filter: Filter{Status: "replayed"}}, {RatePerMinute: 1, Destination: "somewhere-else"},
	} {
		var ie *InputError
		if _, err := ts.Create(ctx, req, Requester{}); !errors.As(err, &ie) {
			t.Fatalf("%+v: %v", req, err)
		}
	}
	seedPending(t, db, 3, 1000)
	s := &queuetest.Sender{}
	ts = newTasks(db, s, taskT0)
	task, err := ts.Create(ctx, TaskRequest{RatePerMinute: 10, Destination: "staging"}, Requester{})
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
		{RatePerMinute: 1, DelaySeconds: 0}, {RatePerMinute: 1, DelaySeconds: MaxDelaySeconds},
		{RatePerMinute: 1, Canary: canary(1, 0, 1)}, {RatePerMinute: 1, Canary: canary(MaxCanarySize, 1, MaxCanaryObserve)},
	}
	for _, req := range ok {
		if _, err := ts.Check(req); err != nil {
			t.Errorf("%+v %+v: %v", req, req.Canary, err)
		}
	}
	bad := []TaskRequest{
		{RatePerMinute: 0}, {RatePerMinute: MaxTaskRate + 1},
		{RatePerMinute: 1, DelaySeconds: -1}, {RatePerMinute: 1, DelaySeconds: MaxDelaySeconds + 1},
		{RatePerMinute: 1, Canary: canary(0, 0.5, 1)}, {RatePerMinute: 1, Canary: canary(MaxCanarySize+1, 0.5, 1)},
		{RatePerMinute: 1, Canary: canary(1, -0.01, 1)}, {RatePerMinute: 1, Canary: canary(1, 1.01, 1)},
		{RatePerMinute: 1, Canary: canary(1, math.NaN(), 1)},
		{RatePerMinute: 1, Canary: canary(1, 0.5, 0)}, {RatePerMinute: 1, Canary: canary(1, 0.5, MaxCanaryObserve+1)},
	}
	for _, req := range bad {
		var ie *InputError
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
	task, err := ts.Create(ctx, TaskRequest{RatePerMinute: 1}, Requester{})
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
		// The 5th slot (4 done) goes at origin + 120 s; 6 more at 2 a minute take 180 s.
		{task(TaskRunning, 10, 3, 1), origin, 6, origin + 300_000},
		{task(TaskRunning, 10, 3, 1), origin + 500_000, 6, origin + 680_000},
		{task(TaskRunning, 10, 9, 3), origin, 0, origin + 360_000},
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
