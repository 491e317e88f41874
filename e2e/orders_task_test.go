//go:build e2e

package e2e

import (
	"fmt"
	"testing"
	"time"

	"github.com/redrive/redrive/dlq"
)

// A canaried replay task over orders rows: an orders row has no beer to
// become enriched, so its canary succeeds when it is not dead-lettered
// again within observe_minutes. Flaky orders (failing until a time now
// past) pass their canary and the task replays the rest, each body arriving
// byte-identical; declined cards fail again and pause their task.
func TestOrdersReplayTaskCanary(t *testing.T) {
	w := startJSWorker(t)
	base := int(time.Now().UnixNano() % 1_000_000_000)
	until := time.Now().Add(30 * time.Second)
	flaky := []string{
		orderBody(base+1, "acme", "gateway timeout", fmt.Sprintf(`,"class":"transient","fail_until":%d`, until.UnixMilli())),
		orderBody(base+2, "globex", "gateway timeout", fmt.Sprintf(`,"class":"transient","fail_until":%d`, until.UnixMilli())),
		orderBody(base+3, "acme", "gateway timeout", fmt.Sprintf(`,"class":"transient","fail_until":%d`, until.UnixMilli())),
	}
	declined := []string{orderBody(base+4, "initech", "card declined", ""), orderBody(base+5, "initech", "card declined", "")}
	w.sendOrders(t, append(append([]string{}, flaky...), declined...)...)
	Eventually(t, 120*time.Second, "every order captured", func() bool {
		for _, b := range append(append([]string{}, flaky...), declined...) {
			if _, found := w.orderRow(t, b); !found {
				return false
			}
		}
		return true
	})
	if time.Now().After(until) {
		t.Fatalf("the flaky orders were captured after %s: they did not fail three times", until)
	}
	flakySig := dlq.SignatureIn("e2e-orders", "transient", fmt.Sprintf("gateway timeout (order %d)", base+1)).Key
	declinedSig := dlq.SignatureIn("e2e-orders", "permanent", fmt.Sprintf("card declined (order %d)", base+4)).Key
	for _, b := range flaky {
		if r, _ := w.orderRow(t, b); r.Signature != flakySig || r.FailureCount != 3 {
			t.Fatalf("flaky row %+v, want signature %s", r, flakySig)
		}
	}
	Eventually(t, 60*time.Second, "the flaky orders' failures are over", func() bool { return time.Now().After(until.Add(time.Second)) })

	canary := map[string]any{"size": 1, "min_success_ratio": 1, "observe_minutes": 1}
	good := createTask(t, w, map[string]any{"filter": map[string]any{"source_queue": ordersQueue, "signature": flakySig},
		"rate_per_minute": 600, "canary": canary})
	bad := createTask(t, w, map[string]any{"filter": map[string]any{"source_queue": ordersQueue, "signature": declinedSig},
		"rate_per_minute": 600, "canary": canary})
	if good.Matched != 3 || bad.Matched != 2 {
		t.Fatalf("tasks matched %d and %d rows, want 3 and 2", good.Matched, bad.Matched)
	}
	at := time.Now()
	w.FireCron(t, cronFrequent, at) // sends each task's canary row
	if g, b := canaryState(t, w, good.ID), canaryState(t, w, bad.ID); g.Sent != 1 || b.Sent != 1 || g.State != "canary" || b.State != "canary" {
		t.Fatalf("after the canary step: %+v %+v", g, b)
	}
	// The flaky canary is delivered and acked; the declined one fails again.
	Eventually(t, 120*time.Second, "the canary outcomes", func() bool {
		delivered := 0
		for _, b := range flaky {
			delivered += len(w.orderDeliveries(t, b)) - 3
		}
		again := w.Int(t, `SELECT COUNT(*) FROM replay_task_rows r JOIN dlq_messages m ON m.id = r.dlq_id
			WHERE r.task_id = ? AND m.failed_at >= r.deliver_at`, bad.ID)
		return delivered == 1 && again == 1
	})
	// Judged once observe_minutes has passed since the canary's delivery.
	w.FireCron(t, cronFrequent, at.Add(5*time.Minute))
	b := canaryState(t, w, bad.ID)
	if b.State != "paused" || b.CanaryResult == nil || b.CanaryResult.Passed || b.CanaryResult.FailedAgain != 1 {
		t.Fatalf("declined canary: %+v %+v", b, b.CanaryResult)
	}
	g := canaryState(t, w, good.ID)
	if g.CanaryResult == nil || !g.CanaryResult.Passed || g.CanaryResult.Succeeded != 1 || g.CanaryResult.FailedAgain != 0 {
		t.Fatalf("flaky canary: %+v %+v", g, g.CanaryResult)
	}
	// The task goes on: every flaky order is delivered once more, byte-identical, and acked.
	Eventually(t, 120*time.Second, "the good task done", func() bool {
		if getTask(t, w, good.ID).State != "done" {
			w.FireCron(t, cronFrequent, at.Add(10*time.Minute))
			return false
		}
		return true
	})
	Eventually(t, 60*time.Second, "every flaky order delivered after its replay", func() bool {
		for _, b := range flaky {
			if len(w.orderDeliveries(t, b)) != 4 {
				return false
			}
		}
		return true
	})
	for _, b := range flaky {
		d := w.orderDeliveries(t, b)
		r, _ := w.orderRow(t, b)
		if d[3].Attempts != 1 || d[3].TypeOf != "object" || d[3].MessageID == r.MessageID || r.ReplayCount != 1 || r.Status == "pending" {
			t.Fatalf("flaky order after the task: row %+v deliveries %+v", r, d)
		}
	}
}
