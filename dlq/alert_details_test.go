package dlq

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/internal/sqlitetest"
	"github.com/redrive/redrive/metrics"
)

// job_failing lists every failing job, by name, with its error cut to 200
// characters (not bytes).
func TestJobFailingDetailListsEachJob(t *testing.T) {
	db := sqlitetest.New(t)
	runs := metrics.JobRuns{DB: db}
	for job, msg := range map[string]string{
		"a_short":   "d1 down",
		"b_exact":   strings.Repeat("é", 200),
		"c_longer":  strings.Repeat("é", 201),
		"d_working": "",
	} {
		var err error
		if msg != "" {
			err = errors.New(msg)
		}
		if rerr := runs.RecordRun(ctx, job, alertT0, time.Second, err, nil); rerr != nil {
			t.Fatal(rerr)
		}
	}
	on, detail, err := JobFailing{DB: db}.Check(ctx, alertT0)
	want := "a_short failed at 2030-06-01T10:00:00Z: d1 down; b_exact failed at 2030-06-01T10:00:00Z: " + strings.Repeat("é", 200) +
		"; c_longer failed at 2030-06-01T10:00:00Z: " + strings.Repeat("é", 200) + "…"
	if err != nil || !on || detail != want {
		t.Fatalf("firing %v %v\n got %q\nwant %q", on, err, detail, want)
	}
}

// An alerts job without a positive reminder interval refuses to run and
// notifies nothing.
func TestAlertsNeedAPositiveReminder(t *testing.T) {
	for _, reminder := range []time.Duration{0, -time.Minute} {
		a, rec := newAlerts(t, &switchCond{name: "c", firing: true})
		a.Reminder = reminder
		if _, err := a.Run(ctx, alertT0); err == nil || err.Error() != "alerts: Reminder must be positive" {
			t.Errorf("reminder %v: err %v", reminder, err)
		}
		if n := count(t, a.DB, `SELECT COUNT(*) FROM alert_state`); n != 0 || len(rec.take()) != 0 {
			t.Errorf("reminder %v: %d alert rows", reminder, n)
		}
	}
}
