//go:build e2e

package e2e

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/enrichment"
)

type canaryTask struct {
	ID           int64  `json:"id"`
	State        string `json:"state"`
	Sent         int64  `json:"sent"`
	CanaryResult *struct {
		Sent        int64    `json:"sent"`
		Succeeded   int64    `json:"succeeded"`
		FailedAgain int64    `json:"failed_again"`
		Passed      bool     `json:"passed"`
		Reasons     []string `json:"reasons"`
	} `json:"canary_result"`
}

// canaryBeers registers beers that the fake provider fails with a 500 until
// they reach the DLQ, then sets how each behaves when replayed: good ones
// get an ABV, the others a 500 again.
func canaryBeers(t *testing.T, w *Worker, prefix string, good, bad int) {
	t.Helper()
	var beers []enrichment.Beer
	var tokens []string
	for i := range good + bad {
		kind := "good"
		if i >= good {
			kind = "bad"
		}
		tok := fmt.Sprintf("%s-%s%d", prefix, kind, i)
		w.Provider.On(tok, Behavior{Status: http.StatusInternalServerError})
		beers = append(beers, enrichment.Beer{BeerID: "id-" + tok, BeerName: tok, Brewer: prefix + " Brewing"})
		tokens = append(tokens, tok)
	}
	enrich(t, w, beers...)
	Eventually(t, 120*time.Second, "every beer in the DLQ", func() bool {
		return w.Int(t, `SELECT COUNT(*) FROM dlq_messages WHERE status = 'pending' AND instr(row_key, ?) > 0`, prefix) == int64(good+bad)
	})
	for _, tok := range tokens[:good] {
		w.Provider.On(tok, Behavior{Content: "5.2"})
	}
}

func canaryState(t *testing.T, w *Worker, id int64) canaryTask {
	t.Helper()
	r := w.Admin(t, http.MethodGet, fmt.Sprintf("/admin/dlq/replay-tasks/%d", id), nil)
	if r.Status != http.StatusOK {
		t.Fatalf("%d %s", r.Status, r.Raw)
	}
	var c canaryTask
	r.Decode(t, &c)
	return c
}

// Canary tasks in workerd with the fake provider: a canary whose rows fail
// again (provider 500) pauses its task and fires replay_canary_failed with
// the reasons; one whose rows succeed (beers enriched) lets the task go on.
func TestReplayTaskCanaryPausesOrContinues(t *testing.T) {
	w := shared
	prefix := fmt.Sprintf("cn%d", time.Now().UnixNano()%1_000_000)
	failing, passing := prefix+"f", prefix+"p"
	canaryBeers(t, w, failing, 1, 3)
	canaryBeers(t, w, passing, 3, 0)

	create := func(q string, size int, ratio float64) int64 {
		r := w.Admin(t, http.MethodPost, "/admin/dlq/replay-tasks", map[string]any{"filter": map[string]any{"q": q},
			"rate_per_minute": 600, "canary": map[string]any{"size": size, "min_success_ratio": ratio, "observe_minutes": 60}})
		if r.Status != http.StatusAccepted {
			t.Fatalf("%d %s", r.Status, r.Raw)
		}
		var c canaryTask
		r.Decode(t, &c)
		if c.State != "canary" {
			t.Fatalf("created %+v", c)
		}
		return c.ID
	}
	bad := create(failing, 3, 0.75)
	good := create(passing, 2, 1)
	// The first step sends the canaries (at the real time: deliveries are
	// judged against real enrichment and capture times).
	at := time.Now()
	w.FireCron(t, cronFrequent, at)
	if b, g := canaryState(t, w, bad), canaryState(t, w, good); b.Sent != 3 || g.Sent != 2 || b.State != "canary" || g.State != "canary" {
		t.Fatalf("after the canary step: %+v %+v", b, g)
	}
	// Their outcomes: the failing task's bad beers fail again (lineage
	// brings their rows back to pending), the passing task's beers are enriched.
	Eventually(t, 120*time.Second, "the canary outcomes", func() bool {
		enriched := w.Int(t, `SELECT COUNT(*) FROM beers WHERE instr(beer_id, ?) > 0 AND status = 'enriched'`, passing)
		again := w.Int(t, `SELECT COUNT(*) FROM replay_task_rows r JOIN dlq_messages m ON m.id = r.dlq_id
			WHERE r.task_id = ? AND m.failed_at >= r.deliver_at`, bad)
		badEnriched := w.Int(t, `SELECT COUNT(*) FROM beers WHERE instr(beer_id, ?) > 0 AND status = 'enriched'`, failing)
		return enriched >= 2 && again+badEnriched == 3
	})
	w.FireCron(t, cronFrequent, at.Add(5*time.Minute))
	b := canaryState(t, w, bad)
	if b.State != "paused" || b.CanaryResult == nil || b.CanaryResult.Passed || b.CanaryResult.FailedAgain < 2 ||
		len(b.CanaryResult.Reasons) == 0 || !strings.Contains(strings.Join(b.CanaryResult.Reasons, " "), "500") || b.Sent != 3 {
		t.Fatalf("failing canary: %+v %+v", b, b.CanaryResult)
	}
	g := canaryState(t, w, good)
	if g.CanaryResult == nil || !g.CanaryResult.Passed || g.CanaryResult.Succeeded != 2 || g.Sent != 3 || (g.State != "done" && g.State != "running") {
		t.Fatalf("passing canary: %+v %+v", g, g.CanaryResult)
	}
	// The alert fired (the alerts job ran in the same cron call, after the tasks).
	r := w.Admin(t, http.MethodGet, "/admin/alerts", nil)
	if !strings.Contains(string(r.Raw), `"replay_canary_failed"`) || !strings.Contains(string(r.Raw), fmt.Sprintf("replay task %d paused", bad)) {
		t.Fatalf("alerts: %s", r.Raw)
	}
	// Cancelled: the alert resolves at the next run.
	if r := w.Admin(t, http.MethodPost, fmt.Sprintf("/admin/dlq/replay-tasks/%d/cancel", bad), nil); r.Status != 200 {
		t.Fatalf("cancel: %d %s", r.Status, r.Raw)
	}
}

// A canary larger than one step's allowance goes out over several steps,
// stays a canary when paused and resumed, and is judged on all its rows; a
// canary larger than what matches is judged on every matching row rather
// than ending unjudged.
func TestReplayTaskCanaryIsJudgedOnItsSizeAfterPauseAndResume(t *testing.T) {
	w := shared
	prefix := fmt.Sprintf("cs%d", time.Now().UnixNano()%1_000_000)
	now := time.Now()
	w.Exec(t, seedSQL(prefix+"a", 12, 1, now.Add(-time.Hour).UnixMilli(), jsQueue))
	w.Exec(t, seedSQL(prefix+"b", 3, 1, now.Add(-time.Hour).UnixMilli(), jsQueue))
	canary := map[string]any{"size": 7, "min_success_ratio": 1, "observe_minutes": 30}
	big := createTask(t, w, map[string]any{"filter": map[string]any{"q": prefix + "a"}, "rate_per_minute": 1, "canary": canary})
	few := createTask(t, w, map[string]any{"filter": map[string]any{"q": prefix + "b"}, "rate_per_minute": 1, "canary": canary})
	at := now.Add(time.Minute).Truncate(time.Second)
	w.FireCron(t, cronFrequent, at)
	if b, f := canaryState(t, w, big.ID), canaryState(t, w, few.ID); b.Sent != 5 || b.State != "canary" || f.Sent != 3 || f.State != "canary" {
		t.Fatalf("after the first step (5 slots at 1/min): %+v %+v", b, f)
	}
	taskAct(t, w, big.ID, "pause", http.StatusOK)
	taskAct(t, w, big.ID, "resume", http.StatusOK)
	if b := canaryState(t, w, big.ID); b.State != "canary" {
		t.Fatalf("resumed before its verdict: %+v, want canary", b)
	}
	w.FireCron(t, cronFrequent, at.Add(5*time.Minute))
	if b, f := canaryState(t, w, big.ID), canaryState(t, w, few.ID); b.Sent != 7 || b.CanaryResult != nil || f.Sent != 3 || f.CanaryResult != nil {
		t.Fatalf("after the second step: %+v %+v", b, f)
	}
	// No failure an hour after every delivery: both judged, on 7 and 3 rows.
	w.FireCron(t, cronFrequent, at.Add(time.Hour))
	b, f := canaryState(t, w, big.ID), canaryState(t, w, few.ID)
	if b.CanaryResult == nil || b.CanaryResult.Sent != 7 || !b.CanaryResult.Passed || b.State != "running" || b.Sent != 12 {
		t.Fatalf("big canary: %+v %+v", b, b.CanaryResult)
	}
	if f.CanaryResult == nil || f.CanaryResult.Sent != 3 || !f.CanaryResult.Passed || f.State != "done" {
		t.Fatalf("small canary: %+v %+v", f, f.CanaryResult)
	}
	if d := busiestMinute(taskDeliveries(t, w, big.ID)); d > 1 {
		t.Fatalf("busiest minute %d at 1/min", d)
	}
}
