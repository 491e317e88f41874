package upkeep

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/alerts"
	"github.com/redrive/redrive/internal/sqlitetest"
	"github.com/redrive/redrive/metrics"
)

// job_failing lists every failing job, by name, with its error cut to 200
// bytes, never inside a character.
func TestJobFailingDetailListsEachJob(t *testing.T) {
	db := sqlitetest.New(t)
	runs := metrics.JobRuns{DB: db}
	for job, msg := range map[string]string{
		"a_short":   "d1 down",
		"b_exact":   strings.Repeat("é", 100),
		"c_longer":  strings.Repeat("é", 101),
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
	on, detail, err := alerts.JobFailing{DB: db}.Check(ctx, alertT0)
	want := "a_short failed at 2030-06-01T10:00:00Z: d1 down; b_exact failed at 2030-06-01T10:00:00Z: " + strings.Repeat("é", 100) +
		"; c_longer failed at 2030-06-01T10:00:00Z: " + strings.Repeat("é", 100) + "…"
	if err != nil || !on || detail != want {
		t.Fatalf("firing %v %v\n got %q\nwant %q", on, err, detail, want)
	}
}
