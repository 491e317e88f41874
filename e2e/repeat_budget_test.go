//go:build e2e

package e2e

import (
	"strings"
	"testing"
	"time"
)

// The 5-minute cron reads at most 1,000 rows a run whatever the backlog's
// shape, here at 100,000 rows with the repeat-failure alert firing on two
// shapes: about 2,000 pending rows replayed more than
// twice (replay counts spread, with ties), and about 70,000 pending rows
// replayed once or twice with only 29 replayed more (the alert's
// query read every one of the 70,000 then: fewer than its count's bound
// were over the limit).
func TestFrequentCronBudgetWithRepeatFailures(t *testing.T) {
	w := startWorker(t, rowsVars)
	now := time.Now().UnixMilli()
	w.Exec(t, seedCapturedSQL(100_000, now))
	w.Exec(t, seedSignaturesSQL)
	frequent := func(op string) bool { return strings.HasPrefix(op, "cron ") }
	at := time.Now()
	for _, shape := range []struct{ name, sql string }{
		{"2,000 replayed more than twice", `UPDATE dlq_messages SET replay_count = CASE WHEN status = 'pending' AND id % 35 = 0 THEN 3 + (id / 35) % 40 ELSE 0 END`},
		{"70,000 replayed once or twice, 29 more", `UPDATE dlq_messages SET replay_count = CASE WHEN status <> 'pending' THEN 0
			WHEN id % 1750 = 7 THEN 3 + id % 3 ELSE 1 + id % 2 END`},
	} {
		w.Exec(t, shape.sql)
		repeat := w.Int(t, `SELECT COUNT(*) FROM dlq_messages WHERE status = 'pending' AND replay_count > 2`)
		for run := 1; run <= 2; run++ {
			at = at.Add(time.Minute)
			before := settledUsage(t, w)
			w.FireCron(t, cronFrequent, at)
			after := settledUsage(t, w)
			d := usageDelta(before, after, frequent)
			for op := range after {
				if o := usageDelta(before, after, opIs(op)); frequent(op) && o.Statements > 0 {
					t.Logf("%s, run %d: %-24s read %7d written %4d statements %3d", shape.name, run, op, o.RowsRead, o.RowsWritten, o.Statements)
				}
			}
			if d.Statements == 0 {
				t.Fatalf("%s, run %d: no statement measured", shape.name, run)
			}
			if d.RowsRead > 1_000 {
				t.Errorf("%s, run %d: the 5-minute cron read %d rows (%d pending rows replayed more than twice), budget 1,000", shape.name, run, d.RowsRead, repeat)
			}
		}
		if n := w.Int(t, `SELECT COUNT(*) FROM alert_state WHERE name = 'dlq_repeat_failures' AND firing = 1`); n != 1 || repeat == 0 {
			t.Errorf("%s: the repeat-failure alert is not firing (%d rows over the limit)", shape.name, repeat)
		}
	}
}
