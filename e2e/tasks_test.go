//go:build e2e

package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

// Replay tasks (docs/admin-api.md "Replay tasks") in workerd: the task's step runs on
// the 5-minute cron (fired through /__dev/cron at chosen times) and sends
// through the real queue binding with per-message delays. The delays asked
// for are recorded in replay_task_rows (deliver_at = send time + delay), so
// evenness is checked on the decisions, without waiting minutes for them.

type taskView struct {
	ID                int64  `json:"id"`
	State             string `json:"state"`
	Matched           int64  `json:"matched"`
	Sent              int64  `json:"sent"`
	SendFailed        int64  `json:"send_failed"`
	Remaining         int64  `json:"remaining"`
	Steps             int64  `json:"steps"`
	EstimatedFinishAt *int64 `json:"estimated_finish_at"`
	FailedAgain       *int64 `json:"failed_again"`
	Succeeded         *int64 `json:"succeeded"`
}

func createTask(t *testing.T, w *Worker, body map[string]any) taskView {
	t.Helper()
	r := w.Admin(t, http.MethodPost, "/admin/dlq/replay-tasks", body)
	if r.Status != http.StatusAccepted {
		t.Fatalf("create task: %d %s", r.Status, r.Raw)
	}
	var v taskView
	r.Decode(t, &v)
	return v
}

func getTask(t *testing.T, w *Worker, id int64) taskView {
	t.Helper()
	r := w.Admin(t, http.MethodGet, fmt.Sprintf("/admin/dlq/replay-tasks/%d", id), nil)
	if r.Status != http.StatusOK {
		t.Fatalf("get task: %d %s", r.Status, r.Raw)
	}
	var v taskView
	r.Decode(t, &v)
	return v
}

func taskAct(t *testing.T, w *Worker, id int64, action string, want int) {
	t.Helper()
	if r := w.Admin(t, http.MethodPost, fmt.Sprintf("/admin/dlq/replay-tasks/%d/%s", id, action), nil); r.Status != want {
		t.Fatalf("%s: %d %s", action, r.Status, r.Raw)
	}
}

// taskDeliveries returns the delivery times (ms) the task asked for, sorted.
func taskDeliveries(t *testing.T, w *Worker, id int64) []int64 {
	t.Helper()
	rows, err := w.DB(t).Query(`SELECT deliver_at FROM replay_task_rows WHERE task_id = ? ORDER BY deliver_at`, id)
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

// busiestMinute is the most deliveries in any 60 s window.
func busiestMinute(ats []int64) int {
	best := 0
	for i := range ats {
		j := sort.Search(len(ats), func(j int) bool { return ats[j] >= ats[i]+60_000 })
		best = max(best, j-i)
	}
	return best
}

// lastStepUsage reads the D1 rows of the latest dlq_replay_tasks run from
// the worker's log (each job's summary line carries its own).
func lastStepUsage(t *testing.T, w *Worker) (read, written int64) {
	t.Helper()
	sc := bufio.NewScanner(strings.NewReader(w.Log()))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	found := false
	for sc.Scan() {
		line := sc.Text()
		i := strings.Index(line, `{"time"`)
		if i < 0 || !strings.Contains(line, `"job":"dlq_replay_tasks"`) {
			continue
		}
		var rec struct {
			Read    int64 `json:"d1_rows_read"`
			Written int64 `json:"d1_rows_written"`
		}
		if json.Unmarshal([]byte(line[i:]), &rec) == nil {
			read, written, found = rec.Read, rec.Written, true
		}
	}
	if !found {
		t.Fatal("no dlq_replay_tasks line in the worker log")
	}
	return read, written
}

func TestReplayTaskDeliversEvenlyOnceAtItsRate(t *testing.T) {
	w := shared
	prefix := fmt.Sprintf("tk%d", time.Now().UnixNano()%1_000_000)
	now := time.Now()
	base := now.Add(-time.Hour).UnixMilli()
	w.Exec(t, seedSQL(prefix, 300, 1, base, jsQueue))
	// The rows' own failure window (seedSQL: base - i ms): the claim reads
	// the index range of these 300 rows only, whatever else the shared
	// worker holds, so the step's rows read are deterministic.
	window := map[string]any{"source_queue": jsQueue, "failed_after": base - 299, "failed_before": base + 1}
	task := createTask(t, w, map[string]any{"filter": window, "rate_per_minute": 120})
	if task.State != "running" || task.Matched != 300 || task.Remaining != 300 || task.EstimatedFinishAt == nil {
		t.Fatalf("created %+v", task)
	}
	at := now.Add(time.Minute).Truncate(time.Second)
	w.FireCron(t, cronFrequent, at)
	read, written := lastStepUsage(t, w)
	t.Logf("one step of 300 rows: %d rows read, %d written (%.1f / %.1f per row)", read, written, float64(read)/300, float64(written)/300)
	// 60 read per row: the replay's claim and settle with their tally and
	// failure-group bookkeeping, the task's own rows (docs/admin-api.md "Replay tasks").
	if written > 300*10+100 || read > 300*60+1000 {
		t.Errorf("a step of 300 rows read %d and wrote %d rows: over its budget (60 read, 10 written per row)", read, written)
	}
	w.FireCron(t, cronFrequent, at.Add(5*time.Minute))
	got := getTask(t, w, task.ID)
	if got.State != "done" || got.Sent != 300 || got.SendFailed != 0 || got.Remaining != 0 {
		t.Fatalf("task %+v", got)
	}
	ats := taskDeliveries(t, w, task.ID)
	if len(ats) != 300 {
		t.Fatalf("%d rows recorded, want 300", len(ats))
	}
	busiest := busiestMinute(ats)
	span := float64(ats[len(ats)-1]-ats[0]) / 60_000
	t.Logf("300 rows at 120/min: first to last delivery %.2f min (%.1f/min measured), busiest minute %d", span, 299/span, busiest)
	if busiest > 120 {
		t.Fatalf("a minute holds %d deliveries, over the rate of 120", busiest)
	}
	if n := w.Int(t, `SELECT COUNT(*) FROM dlq_messages WHERE label_1 LIKE ? AND status = 'replayed' AND replay_count = 1`, prefix+"-%"); n != 300 {
		t.Fatalf("%d rows replayed once, want 300", n)
	}
}

func TestReplayTaskPauseResumeCancel(t *testing.T) {
	w := shared
	prefix := fmt.Sprintf("tp%d", time.Now().UnixNano()%1_000_000)
	now := time.Now()
	w.Exec(t, seedSQL(prefix, 20, 1, now.Add(-time.Hour).UnixMilli(), jsQueue))
	task := createTask(t, w, map[string]any{"filter": map[string]any{"q": prefix}, "rate_per_minute": 1})
	at := now.Add(time.Minute).Truncate(time.Second)
	w.FireCron(t, cronFrequent, at)
	if got := getTask(t, w, task.ID); got.Sent != 5 || got.State != "running" {
		t.Fatalf("after a step at 1/min: %+v", got)
	}
	taskAct(t, w, task.ID, "pause", http.StatusOK)
	taskAct(t, w, task.ID, "pause", http.StatusConflict)
	w.FireCron(t, cronFrequent, at.Add(5*time.Minute))
	if got := getTask(t, w, task.ID); got.Sent != 5 || got.State != "paused" {
		t.Fatalf("paused task moved: %+v", got)
	}
	taskAct(t, w, task.ID, "resume", http.StatusOK)
	w.FireCron(t, cronFrequent, at.Add(10*time.Minute))
	if got := getTask(t, w, task.ID); got.Sent != 10 || got.State != "running" || got.Remaining != 10 {
		t.Fatalf("after resume: %+v", got)
	}
	taskAct(t, w, task.ID, "cancel", http.StatusOK)
	taskAct(t, w, task.ID, "resume", http.StatusConflict)
	w.FireCron(t, cronFrequent, at.Add(15*time.Minute))
	if got := getTask(t, w, task.ID); got.Sent != 10 || got.State != "cancelled" {
		t.Fatalf("cancelled task moved: %+v", got)
	}
	if n := w.Int(t, `SELECT COUNT(*) FROM dlq_messages WHERE label_1 LIKE ? AND status = 'pending'`, prefix+"-%"); n != 10 {
		t.Fatalf("%d rows pending after cancel, want the 10 never sent", n)
	}
	if n := w.Int(t, `SELECT COUNT(*) FROM admin_audit WHERE action LIKE 'replay_task%' AND counts ->> '$.task_id' = ?`, task.ID); n != 6 {
		t.Fatalf("%d audit entries for the task, want 6: create, pause twice, resume, cancel, resume", n)
	}
	// The task's rows were delivered at most one a minute.
	if b := busiestMinute(taskDeliveries(t, w, task.ID)); b > 1 {
		t.Fatalf("busiest minute %d at 1/min", b)
	}
}

func TestReplayTaskAndAdHocReplaysSendEachRowOnce(t *testing.T) {
	w := shared
	prefix := fmt.Sprintf("tc%d", time.Now().UnixNano()%1_000_000)
	now := time.Now()
	w.Exec(t, seedSQL(prefix, 200, 1, now.Add(-time.Hour).UnixMilli(), jsQueue))
	ids := ownIDs(t, w, prefix)
	task := createTask(t, w, map[string]any{"filter": map[string]any{"q": prefix}, "rate_per_minute": 600})
	var wg sync.WaitGroup
	var mu sync.Mutex
	adHoc := map[int64]int{}
	errs := make(chan error, 50)
	started := make(chan struct{})
	var once sync.Once
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer once.Do(func() { close(started) })
			for i := g * 10; i+10 <= len(ids); i += 40 {
				r, err := w.Do(http.MethodPost, "/admin/dlq/replay", map[string]any{"ids": ids[i : i+10]}, AdminHeaders())
				if err != nil || r.Status != http.StatusOK {
					errs <- fmt.Errorf("replay: %v %v", err, r)
					return
				}
				var res struct {
					ReplayedIDs []int64 `json:"replayed_ids"`
				}
				json.Unmarshal(r.Data, &res)
				mu.Lock()
				for _, id := range res.ReplayedIDs {
					adHoc[id]++
				}
				mu.Unlock()
				once.Do(func() { close(started) })
			}
		}()
	}
	wg.Add(2)
	for k := range 2 { // overlapping cron runs, once the ad-hoc replays are under way
		go func() {
			defer wg.Done()
			<-started
			if err := fireCronAsync(w, cronFrequent, now.Add(time.Duration(k)*time.Second)); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	w.FireCron(t, cronFrequent, now.Add(6*time.Minute))
	got := getTask(t, w, task.ID)
	inTask := map[int64]bool{}
	rows, err := w.DB(t).Query(`SELECT dlq_id FROM replay_task_rows WHERE task_id = ?`, task.ID)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id int64
		rows.Scan(&id)
		inTask[id] = true
	}
	rows.Close()
	for id, n := range adHoc {
		if n > 1 || inTask[id] {
			t.Fatalf("row %d sent %d times ad hoc, by the task too: %v", id, n, inTask[id])
		}
	}
	if len(adHoc)+len(inTask) != 200 || got.Sent != int64(len(inTask)) {
		t.Fatalf("%d rows sent ad hoc + %d by the task (task says %d), want 200 in all", len(adHoc), len(inTask), got.Sent)
	}
	if n := w.Int(t, `SELECT COUNT(*) FROM dlq_messages WHERE label_1 LIKE ? AND status = 'replayed' AND replay_count = 1`, prefix+"-%"); n != 200 {
		t.Fatalf("%d rows replayed exactly once, want 200", n)
	}
	t.Logf("ad hoc %d, task %d", len(adHoc), len(inTask))
	if len(adHoc) == 0 || len(inTask) == 0 {
		t.Fatalf("no overlap exercised: ad hoc %d, task %d", len(adHoc), len(inTask))
	}
}

func TestReplayDestinationOutsideTheBindingsIsRejected(t *testing.T) {
	for path, body := range map[string]map[string]any{
		"/admin/dlq/replay":       {"ids": []int64{1}, "destination": "not-bound"},
		"/admin/dlq/replay-tasks": {"rate_per_minute": 10, "destination": "beer-enrichment-dlq-x"},
	} {
		r := shared.Admin(t, http.MethodPost, path, body)
		if r.Status != http.StatusBadRequest || !strings.Contains(string(r.Raw), "INVALID_DESTINATION") {
			t.Fatalf("%s: %d %s", path, r.Status, r.Raw)
		}
	}
}
