package resolve

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/dlq/dlqtest"
	"github.com/redrive/redrive/internal/sqlitetest"
	"github.com/redrive/redrive/queue"
	"github.com/redrive/redrive/queue/queuetest"
	"github.com/redrive/redrive/sqlbatch"
)

// propSender is the queue of the property test: it records, per task whose
// step is sending, the rows asked for and when each is to be delivered,
// counted from the real send (the clock at the sendBatch); each send then
// takes some time (the next page goes out later), may fail, and may have a
// pause, resume or cancel land meanwhile (mid).
type propSender struct {
	clock *taskClock
	rng   *rand.Rand
	db    *sql.DB
	task  int64 // the task whose step is sending (0: an ad-hoc replay)
	sent  map[int64][]int64
	at    map[int64][]int64
	mid   func()
	inner queuetest.Sender
}

func (s *propSender) SendBatch(ctx context.Context, q string, msgs []queue.Outgoing) error {
	now := s.clock.Now().UnixMilli()
	defer func() {
		s.clock.Add(time.Duration(s.rng.IntN(1500)) * time.Millisecond)
		if s.mid != nil && s.rng.IntN(3) == 0 {
			s.mid()
			s.mid = nil
		}
	}()
	if s.rng.IntN(20) == 0 {
		return errors.New("queue unavailable")
	}
	if s.task != 0 {
		for _, m := range msgs {
			var id int64
			if err := s.db.QueryRow(`SELECT id FROM dlq_messages WHERE raw_message = ?`, m.Body).Scan(&id); err != nil {
				return fmt.Errorf("sent body %q: %w", m.Body, err)
			}
			s.sent[s.task] = append(s.sent[s.task], id)
			s.at[s.task] = append(s.at[s.task], now+m.Delay.Milliseconds())
		}
	}
	return s.inner.SendBatch(ctx, q, msgs)
}

// Random sequences of create, step (on time, late, missed), pause, resume,
// cancel (between steps and during them), capture (new failures and
// repeat failures of replayed rows), ad-hoc replay and acknowledge, checked
// after every action: a row is sent at most once per task; the deliveries
// a task asks of the queue never exceed its rate in any minute, counted
// from the real send; a canary is judged on exactly its size, or on every
// matching row when fewer match, and a task never leaves its canary
// unjudged; a task is done only with no matching row left; a task's sent count is
// its replay_task_rows, and dlq_tally and dlq_activity equal COUNT(*).
// TASK_PROPERTY_SEQUENCES sets how many sequences (default
// taskPropertySequences: 200, or 30 under the mutation build tag).
func TestReplayTaskProperties(t *testing.T) {
	n := taskPropertySequences
	if testing.Short() {
		n = 30
	}
	if v, err := strconv.Atoi(os.Getenv("TASK_PROPERTY_SEQUENCES")); err == nil && v > 0 {
		n = v
	}
	for seed := range uint64(n) {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) { taskSequence(t, seed) })
	}
}

// taskPropertySequences is how many sequences TestReplayTaskProperties
// runs; mutation_test.go lowers it for `make mutate`.
var taskPropertySequences = 200

func taskSequence(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 29))
	db := sqlitetest.New(t)
	clk := dlqtest.NewTaskClock(taskT0)
	snd := &propSender{clock: clk, rng: rng, db: db, sent: map[int64][]int64{}, at: map[int64][]int64{}}
	ts := newTasks(db, snd, taskT0)
	ts.Replay.Clock = clk.Now
	ts.Replay.BulkMax = 1 + rng.IntN(40)
	ts.Replay.Batch = sqlbatch.Tx{DB: db}
	store := dlq.Store{DB: db, Batch: sqlbatch.Tx{DB: db}}
	ack := Acknowledge{DB: db, Batch: sqlbatch.Tx{DB: db}, BulkMax: 50, Clock: clk.Now}
	var trace []string
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("seed %d after %s: %s", seed, strings.Join(trace, " "), fmt.Sprintf(format, args...))
	}
	msg := 0
	capture := func(n int) {
		var fs []dlq.Failure
		for range n {
			msg++
			fs = append(fs, dlq.Failure{MessageID: fmt.Sprint("m", msg), SourceQueue: "beer-enrichment", Attempts: 4, Class: "transient",
				Body: fmt.Sprintf(`{"beer_id":"b%d","n":%d}`, msg, msg), Reason: fmt.Sprint("transient: status 50", rng.IntN(4)),
				FailedAt: clk.Now().Add(-time.Duration(rng.IntN(100_000)) * time.Millisecond)})
		}
		if _, err := store.Save(ctx, fs); err != nil {
			fail("capture: %v", err)
		}
	}
	pick := func(query string, n int) []int64 {
		rows, err := db.Query(query+` ORDER BY id LIMIT ?`, n)
		if err != nil {
			fail("%s: %v", query, err)
		}
		defer rows.Close()
		var all []int64
		for rows.Next() {
			var id int64
			rows.Scan(&id)
			all = append(all, id)
		}
		rng.Shuffle(len(all), func(i, j int) { all[i], all[j] = all[j], all[i] })
		return all[:min(len(all), 1+rng.IntN(5))]
	}
	var tasks []int64
	judged, done := map[int64]bool{}, map[int64]bool{}
	capture(5 + rng.IntN(40))
	cron := taskT0.Truncate(5 * time.Minute)
	for range 15 + rng.IntN(20) {
		var what string
		switch op := rng.IntN(16); {
		case op < 2 || len(tasks) == 0:
			req := TaskRequest{RatePerMinute: []int64{1, 2, 3, 7, 20, 60, 600}[rng.IntN(7)]}
			if rng.IntN(3) == 0 {
				req.DelaySeconds = int64(rng.IntN(900))
			}
			if rng.IntN(2) == 0 {
				req.Canary = &Canary{Size: 1 + int64(rng.IntN(12)), MinSuccessRatio: []float64{0, 0.5, 1}[rng.IntN(3)],
					ObserveMinutes: 1 + int64(rng.IntN(20))}
			}
			if rng.IntN(4) == 0 {
				req.Filter.Q = fmt.Sprint("status 50", rng.IntN(4))
			}
			task, err := ts.Create(ctx, req, dlq.Requester{})
			if err != nil {
				fail("create: %v", err)
			}
			tasks = append(tasks, task.ID)
			what = fmt.Sprintf("create%d(rate %d, canary %v)", task.ID, req.RatePerMinute, req.Canary != nil)
		case op < 8: // the cron: on time, late, or missed
			cron = cron.Add(5 * time.Minute)
			lag := time.Duration(rng.IntN(3000)) * time.Millisecond
			switch rng.IntN(6) {
			case 0:
				lag += time.Duration(rng.IntN(280)) * time.Second
			case 1:
				cron = cron.Add(5 * time.Minute)
			}
			if at := cron.Add(lag); at.After(clk.Now()) { // real time never goes back
				clk.Set(at)
			}
			what = fmt.Sprintf("cron(+%s)", lag)
			for _, id := range tasks {
				if rng.IntN(4) == 0 { // a pause, resume or cancel during the step
					act := []string{dlq.TaskPause, dlq.TaskResume, dlq.TaskCancel}[rng.IntN(3)]
					snd.mid = func() { ts.Act(ctx, id, act) }
					what += fmt.Sprintf(" [%s%d during]", act, id)
				}
				snd.task = id
				st, err := ts.Step(ctx, id, cron)
				snd.task, snd.mid = 0, nil
				if err != nil {
					fail("step %d: %v", id, err)
				}
				got, err := scanTask(db.QueryRow(`SELECT `+taskColumns+` FROM replay_tasks WHERE id = ?`, id))
				if err != nil {
					fail("task %d: %v", id, err)
				}
				if st.Done != (got.State == TaskDone && got.FinishedAt != nil && *got.FinishedAt == cron.UnixMilli()) {
					fail("step %d reports done %v, task %s", id, st.Done, got.State)
				}
				if got.State == TaskDone && !done[id] {
					// Done as the step ended: nothing left (a failure captured
					// later may still date from before the task's creation).
					done[id] = true
					if n := claimable(t, db, id); n > 0 {
						fail("task %d is done with %d matching rows left", id, n)
					}
				}
				if r := got.CanaryResult; r != nil && !judged[id] {
					judged[id] = true
					// Exactly its size, or every matching row when fewer match.
					if r.Sent > got.Canary.Size || r.Sent < got.Canary.Size && claimable(t, db, id) > 0 {
						fail("task %d's canary of %d judged on %d rows, %d rows left", id, got.Canary.Size, r.Sent, claimable(t, db, id))
					}
				}
			}
		case op < 10:
			id := tasks[rng.IntN(len(tasks))]
			act := []string{dlq.TaskPause, dlq.TaskResume, dlq.TaskCancel}[rng.IntN(3)]
			if _, err := ts.Act(ctx, id, act); err != nil && !errors.As(err, new(*TaskStateError)) {
				fail("%s %d: %v", act, id, err)
			}
			what = fmt.Sprint(act, id)
		case op < 12: // new failures, and repeat failures of replayed rows
			capture(rng.IntN(4))
			var fs []dlq.Failure
			for _, id := range pick(`SELECT id FROM dlq_messages WHERE status = 'replayed'`, 100) {
				var raw string
				db.QueryRow(`SELECT raw_message FROM dlq_messages WHERE id = ?`, id).Scan(&raw)
				msg++
				fs = append(fs, dlq.Failure{MessageID: fmt.Sprint("m", msg), SourceQueue: "beer-enrichment", Body: raw, Attempts: 4,
					Class: "permanent", Reason: "permanent: status 400", FailedAt: clk.Now()})
			}
			if _, err := store.Save(ctx, fs); err != nil {
				fail("repeat failures: %v", err)
			}
			what = fmt.Sprintf("capture(%d repeats)", len(fs))
		case op < 14:
			ids := pick(`SELECT id FROM dlq_messages WHERE status = 'pending'`, 100)
			if len(ids) > 0 {
				if _, err := ts.Replay.Run(ctx, ReplayRequest{Selection: dlq.Selection{IDs: ids}}); err != nil {
					fail("replay: %v", err)
				}
			}
			what = fmt.Sprint("replay", ids)
		default:
			ids := pick(`SELECT id FROM dlq_messages WHERE status = 'pending'`, 100)
			if len(ids) > 0 {
				if _, err := ack.Run(ctx, AcknowledgeRequest{Selection: dlq.Selection{IDs: ids}}); err != nil {
					fail("acknowledge: %v", err)
				}
			}
			what = fmt.Sprint("ack", ids)
		}
		clk.Add(time.Duration(rng.IntN(5000)) * time.Millisecond)
		trace = append(trace, what)
		checkTasks(t, db, snd, tasks, fail)
		checkCounts(t, db, 0, strings.Join(trace, " "))
	}
}

// checkTasks checks the invariants of every task (TestReplayTaskProperties).
func checkTasks(t *testing.T, db *sql.DB, snd *propSender, tasks []int64, fail func(string, ...any)) {
	t.Helper()
	for _, id := range tasks {
		got, err := scanTask(db.QueryRow(`SELECT `+taskColumns+` FROM replay_tasks WHERE id = ?`, id))
		if err != nil {
			fail("task %d: %v", id, err)
		}
		seen := map[int64]bool{}
		for _, rid := range snd.sent[id] {
			if seen[rid] {
				fail("task %d sent row %d twice", id, rid)
			}
			seen[rid] = true
		}
		ats := slices.Sorted(slices.Values(snd.at[id]))
		if b := maxPerMinute(ats); b > int(got.RatePerMinute) {
			fail("task %d asked for %d deliveries in a minute at rate %d", id, b, got.RatePerMinute)
		}
		if rec := deliveries(t, db, id); !slices.Equal(rec, ats) {
			fail("task %d: replay_task_rows records %d deliveries, the queue was asked for %d (or at other times)", id, len(rec), len(ats))
		}
		if n := count(t, db, `SELECT COUNT(*) FROM replay_task_rows WHERE task_id = ?`, id); got.Sent != n || got.Sent != int64(len(ats)) {
			fail("task %d counts %d sent, replay_task_rows %d, the queue %d", id, got.Sent, n, len(ats))
		}
		if got.Canary != nil && (got.State == TaskRunning || got.State == TaskDone) && got.CanaryResult == nil {
			fail("task %d is %s with its canary unjudged", id, got.State)
		}
		if got.Canary != nil && got.CanaryResult == nil && got.Sent > got.Canary.Size {
			fail("task %d sent %d rows before its canary of %d was judged", id, got.Sent, got.Canary.Size)
		}
	}
}

// claimable counts the rows task id could still claim, whatever its state.
func claimable(t *testing.T, db *sql.DB, id int64) int64 {
	t.Helper()
	var filter string
	var posAt, posID int64
	if err := db.QueryRow(`SELECT filter, pos_failed_at, pos_id FROM replay_tasks WHERE id = ?`, id).Scan(&filter, &posAt, &posID); err != nil {
		t.Fatal(err)
	}
	var f dlq.Filter
	if err := json.Unmarshal([]byte(filter), &f); err != nil {
		t.Fatal(err)
	}
	sel := dlq.Selection{Filter: &f}
	cond, args := sel.Where(true, &dlq.Position{FailedAt: posAt, ID: posID})
	return count(t, db, `SELECT COUNT(*) FROM dlq_messages WHERE `+cond+` AND id NOT IN (SELECT dlq_id FROM replay_task_rows WHERE task_id = ?)`,
		append(args, id)...)
}
