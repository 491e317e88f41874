package upkeep

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/config"
	"github.com/redrive/redrive/internal/sqlitetest"
)

// Each pipeline has its own pending-high and oldest-pending alerts with its
// thresholds (orders: 2 rows, 1 hour); the beer pipeline's keep their names
// and cover the beer queue and every queue no other pipeline names.
func TestPipelineAlerts(t *testing.T) {
	t.Parallel()
	ps := withPipelines(t)
	db := sqlitetest.New(t)
	now := alertT0
	conds := PipelineAlerts(db, ps, 100, 24*time.Hour)
	var names []string
	for _, c := range conds {
		names = append(names, c.Name())
	}
	if got := strings.Join(names, ","); got != "dlq_pending_high,dlq_oldest_pending,dlq_pending_high:orders,dlq_oldest_pending:orders,dlq_pending_high:odd,dlq_oldest_pending:odd" {
		t.Fatalf("alerts %s", got)
	}
	check := func(i int, wantFiring bool, wantDetail string) {
		t.Helper()
		on, detail, err := conds[i].Check(ctx, now)
		if err != nil || on != wantFiring || !strings.Contains(detail, wantDetail) {
			t.Errorf("%s: firing=%v detail=%q err=%v; want firing=%v detail containing %q", conds[i].Name(), on, detail, err, wantFiring, wantDetail)
		}
	}
	check(2, false, "0 DLQ rows pending in pipeline orders (threshold 2)")
	check(3, false, "no pending DLQ rows of pipeline orders")
	// Old beer rows and rows of an unconfigured queue: the beer alerts only.
	seed(t, db, row{MsgID: "b1", Key: "b1", Status: "pending", FailedAt: now.Add(-48 * time.Hour)},
		row{MsgID: "b2", Key: "b2", Status: "pending", FailedAt: now.Add(-time.Minute)})
	mustExec(t, db, `UPDATE dlq_messages SET source_queue = 'unrouted' WHERE message_id = 'b2'`)
	for i := range 3 {
		seed(t, db, row{MsgID: fmt.Sprint("o", i), Key: fmt.Sprint("o", i), Status: "pending", FailedAt: now.Add(-time.Duration(30+i) * time.Minute)})
	}
	mustExec(t, db, `UPDATE dlq_messages SET source_queue = 'orders' WHERE message_id LIKE 'o%'`)
	check(0, false, "2 DLQ rows pending (threshold 100)")
	check(1, true, "oldest pending DLQ row failed 48h0m0s ago")
	check(2, true, "3 DLQ rows pending in pipeline orders (threshold 2)")
	check(3, false, "oldest pending DLQ row of pipeline orders failed 32m0s ago")
	check(4, false, "0 DLQ rows pending in pipeline odd")
	check(5, false, "no pending DLQ rows of pipeline odd")
	now = now.Add(time.Hour)
	check(3, true, "oldest pending DLQ row of pipeline orders failed 1h32m0s ago at")
	// An orders row behind more than 100 older pending rows of other queues:
	// found no further, bounded by the 100th oldest.
	mustExec(t, db, `UPDATE dlq_messages SET status = 'acknowledged' WHERE source_queue = 'orders'`)
	for i := range oldestScanMax {
		seed(t, db, row{MsgID: fmt.Sprint("x", i), Key: "x", Status: "pending", FailedAt: now.Add(-time.Duration(30+i) * time.Minute)})
	}
	seed(t, db, row{MsgID: "late", Key: "late", Status: "pending", FailedAt: now.Add(-10 * time.Minute)})
	mustExec(t, db, `UPDATE dlq_messages SET source_queue = 'orders' WHERE message_id = 'late'`)
	check(3, false, "orders failed less than 32m0s ago")
	check(2, false, "1 DLQ rows pending in pipeline orders")
	// With the beer pipeline alone, the alerts are today's.
	only := PipelineAlerts(db, []config.Pipeline{ps[0]}, 5, time.Hour)
	if p, ok := only[0].(PendingHigh); !ok || p.Exclude != nil || p.Queue != "" || p.Threshold != 100 || only[0].Name() != "dlq_pending_high" || len(only) != 2 {
		t.Errorf("beer pipeline alone: %+v", only)
	}
	// PIPELINES without the beer pipeline: the global thresholds, named as today.
	none := PipelineAlerts(db, ps[1:2], 5, time.Hour)
	if p, ok := none[0].(PendingHigh); !ok || p.Threshold != 5 || len(p.Exclude) != 1 || none[2].Name() != "dlq_pending_high:orders" {
		t.Errorf("no beer pipeline: %+v", none)
	}
}
