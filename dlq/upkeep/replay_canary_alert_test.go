package upkeep

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/dlq/resolve"
	"github.com/redrive/redrive/internal/sqlitetest"
	"github.com/redrive/redrive/queue/queuetest"
)

// A canary task sends its first rows alone, waits for their outcome, then
// goes on (enough succeeded) or pauses itself and fires replay_canary_failed.
func TestReplayTaskCanary(t *testing.T) {
	for _, c := range []struct {
		name    string
		fail    int // canary rows that fail again
		ratio   float64
		passed  bool
		wantFin string
	}{
		{"passes", 1, 0.7, true, resolve.TaskDone},
		{"passes at exactly its ratio", 1, 0.75, true, resolve.TaskDone},
		{"fails", 2, 0.7, false, resolve.TaskPaused},
	} {
		t.Run(c.name, func(t *testing.T) {
			db := sqlitetest.New(t)
			seedPending(t, db, 20, taskT0.UnixMilli()-1_000_000)
			s := &queuetest.Sender{}
			ts := newTasks(db, s, taskT0)
			task, err := ts.Create(ctx, resolve.TaskRequest{RatePerMinute: 60, Canary: &resolve.Canary{Size: 4, MinSuccessRatio: c.ratio, ObserveMinutes: 10}},
				dlq.Requester{RequestID: "r", KeyFingerprint: "k"})
			if err != nil || task.State != resolve.TaskCanary || task.Canary == nil || task.CanaryResult != nil {
				t.Fatalf("%+v %v", task, err)
			}
			at := taskT0.Add(time.Minute)
			st, err := ts.Step(ctx, task.ID, at)
			if err != nil || st.Sent != 4 {
				t.Fatalf("canary step: %+v %v", st, err)
			}
			// Undecided: another step sends nothing.
			if st, err := ts.Step(ctx, task.ID, at.Add(time.Minute)); err != nil || st.Sent != 0 || st.CanaryPassed || st.CanaryFailed {
				t.Fatalf("undecided step: %+v %v", st, err)
			}
			// Outcomes: one beer enriched after delivery, c.fail rows failed again.
			rows, _ := db.Query(`SELECT r.dlq_id, r.deliver_at, m.row_key FROM replay_task_rows r JOIN dlq_messages m ON m.id = r.dlq_id
				WHERE task_id = ? ORDER BY dlq_id`, task.ID)
			type sentRow struct {
				id, at int64
				beer   string
			}
			var sent []sentRow
			for rows.Next() {
				var r sentRow
				rows.Scan(&r.id, &r.at, &r.beer)
				sent = append(sent, r)
			}
			rows.Close()
			for i, r := range sent[:c.fail] {
				mustExec(t, db, `UPDATE dlq_messages SET status = 'pending', failed_at = ?, failure_reason = ? WHERE id = ?`,
					r.at+1000, "permanent: provider said 400 #"+string(rune('a'+i)), r.id)
			}
			mustExec(t, db, `INSERT INTO beers(beer_id, name, status, enriched_at, created_at, updated_at) VALUES (?, 'x', 'enriched', ?, 0, 0)`, sent[3].beer, sent[3].at+5000)
			// Two rows are still undecided before observe_minutes.
			if st, _ := ts.Step(ctx, task.ID, at.Add(5*time.Minute)); st.Sent != 0 || st.CanaryPassed || st.CanaryFailed {
				t.Fatalf("before observe: %+v", st)
			}
			st, err = ts.Step(ctx, task.ID, at.Add(15*time.Minute))
			if err != nil || st.CanaryPassed != c.passed || st.CanaryFailed == c.passed {
				t.Fatalf("verdict step: %+v %v", st, err)
			}
			got, _ := ts.Get(ctx, task.ID)
			if got.CanaryResult == nil || got.CanaryResult.Passed != c.passed || got.CanaryResult.FailedAgain != int64(c.fail) ||
				got.CanaryResult.Succeeded != int64(4-c.fail) || len(got.CanaryResult.Reasons) != c.fail {
				t.Fatalf("result %+v", got.CanaryResult)
			}
			firing, detail, err := ReplayCanaryFailed{DB: db}.Check(context.Background(), taskT0)
			if err != nil || firing == c.passed {
				t.Fatalf("alert %v %q %v", firing, detail, err)
			}
			if c.passed {
				// Went on in the verdict step: the other 16 rows were sent.
				if st.Sent != 16 || got.State != c.wantFin || got.Sent != 20 {
					t.Fatalf("after a passed canary: %+v %+v", st, got)
				}
				return
			}
			if got.State != resolve.TaskPaused || got.Sent != 4 || !strings.Contains(detail, "provider said 400") || !strings.Contains(detail, "2/4") {
				t.Fatalf("after a failed canary: %+v %q", got, detail)
			}
			// Resumed by an operator: the task goes on and the alert resolves.
			if _, err := ts.Act(ctx, task.ID, dlq.TaskResume); err != nil {
				t.Fatal(err)
			}
			if firing, _, _ := (ReplayCanaryFailed{DB: db}).Check(ctx, taskT0); firing {
				t.Fatal("alert still firing after resume")
			}
			if st, err := ts.Step(ctx, task.ID, at.Add(20*time.Minute)); err != nil || st.Sent != 16 {
				t.Fatalf("after resume: %+v %v", st, err)
			}
		})
	}
}
