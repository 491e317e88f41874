package upkeep

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/alerts"
	"github.com/redrive/redrive/internal/sqlitetest"
	"github.com/redrive/redrive/metrics"
)

var alertT0 = time.Date(2030, 6, 1, 10, 0, 0, 0, time.UTC)

func TestConditions(t *testing.T) {
	db := sqlitetest.New(t)
	now := alertT0
	check := func(c alerts.Condition, wantFiring bool, wantDetail string) {
		t.Helper()
		on, detail, err := c.Check(ctx, now)
		if err != nil || on != wantFiring || !strings.Contains(detail, wantDetail) {
			t.Fatalf("%s: firing=%v detail=%q err=%v; want firing=%v detail containing %q", c.Name(), on, detail, err, wantFiring, wantDetail)
		}
	}
	pending, oldest := PendingHigh{DB: db, Threshold: 2}, OldestPending{DB: db, MaxAge: 24 * time.Hour}
	repeat, capped, failing := RepeatFailures{DB: db, MaxReplays: 2}, CapEvicting{DB: db}, alerts.JobFailing{DB: db}
	check(pending, false, "0 DLQ rows pending (threshold 2)")
	check(oldest, false, "no pending DLQ rows")
	check(repeat, false, "no pending DLQ rows replayed more than 2 times")
	check(capped, false, "retention has not run yet")
	check(failing, false, "every job's last run succeeded")

	seed(t, db,
		row{MsgID: "p1", Key: "b1", Status: "pending", FailedAt: now.Add(-25 * time.Hour), ReplayCount: 3},
		row{MsgID: "p2", Key: "b2", Status: "pending", FailedAt: now.Add(-time.Hour)},
		row{MsgID: "p3", Key: "b3", Status: "pending", FailedAt: now.Add(-time.Hour), ReplayCount: 2},
		row{MsgID: "r1", Key: "b4", Status: "replayed", FailedAt: now.Add(-90 * time.Hour), ReplayedAt: now, ReplayCount: 9},
	)
	check(pending, true, "3 DLQ rows pending (threshold 2)")
	check(oldest, true, "oldest pending DLQ row failed 25h0m0s ago")
	check(repeat, true, "1 pending DLQ rows replayed more than 2 times: b1 (3 replays)")

	runs := metrics.JobRuns{DB: db}
	runs.RecordRun(ctx, RetentionJobName, now, time.Second, nil, map[string]any{"deleted_cap": 4, "cap_keys": []string{"beer-enrichment:b9"}})
	check(capped, true, `evicted 4 rows over the per-key cap; queue:key ["beer-enrichment:b9"]`)
	runs.RecordRun(ctx, RetentionJobName, now.Add(day), time.Second, nil, map[string]any{"deleted_cap": 0})
	check(capped, false, "evicted no rows")

	runs.RecordRun(ctx, "dlq_rescue", now, time.Second, errors.New("rescue: "+strings.Repeat("x", 300)), nil)
	check(failing, true, "dlq_rescue failed at 2030-06-01T10:00:00Z: rescue: xxx")
	runs.RecordRun(ctx, "dlq_rescue", now, time.Second, nil, nil)
	check(failing, false, "every job's last run succeeded")
}

// The retention_behind detail when it does not fire says which job is
// still within the time ("catching up: ...") or that every last run
// finished, and the count a run left reads "at least N" at
// ExpiredLeftCountMax, where countUpTo stops counting, N below it, and "an
// unknown number of" when the run could not count.
func TestRetentionBehindDetailSaysWhatIsLeft(t *testing.T) {
	db := sqlitetest.New(t)
	c := RetentionBehind{DB: db, After: time.Hour}
	record := func(job, summary string) {
		t.Helper()
		if _, err := db.Exec(`INSERT INTO job_runs(job, last_run_at, last_duration_ms, last_ok, last_summary) VALUES (?, ?, 1, 1, ?)
			ON CONFLICT(job) DO UPDATE SET last_summary = excluded.last_summary`, job, alertT0.UnixMilli(), summary); err != nil {
			t.Fatal(err)
		}
	}
	detail := func() string {
		t.Helper()
		firing, d, err := c.Check(ctx, alertT0)
		if err != nil || firing {
			t.Fatalf("firing %v, %q, %v", firing, d, err)
		}
		return d
	}
	finished := "every retention job's last run finished"
	if d := detail(); d != finished {
		t.Fatalf("no runs: %q", d)
	}
	record(RetentionJobName, `{"more":false,"expired_left":0,"behind_since":null}`)
	record(AuditRetentionJobName, `{"more":false,"expired_left":0}`)
	if d := detail(); d != finished {
		t.Fatalf("both finished: %q", d)
	}
	since := alertT0.Add(-time.Minute).UnixMilli()
	for left, text := range map[string]string{
		fmt.Sprint(ExpiredLeftCountMax - 1): fmt.Sprintf("): %d left after", ExpiredLeftCountMax-1),
		fmt.Sprint(ExpiredLeftCountMax):     fmt.Sprintf("): at least %d left after", ExpiredLeftCountMax),
		"null":                              "): an unknown number of left after",
	} {
		record(AuditRetentionJobName, fmt.Sprintf(`{"more":true,"expired_left":%s,"behind_since":%d}`, left, since))
		want := "catching up: " + AuditRetentionJobName + " has had expired rows left since " + alerts.Stamp(since) + " (1m0s; threshold 1h0m0s" + text
		if d := detail(); !strings.HasPrefix(d, want) {
			t.Fatalf("expired_left %s: %q, want %q...", left, d, want)
		}
	}
}
