package jobs_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/alerts"
	"github.com/redrive/redrive/alerts/alertstest"
	"github.com/redrive/redrive/internal/sqlitetest"
	"github.com/redrive/redrive/jobs"
	"github.com/redrive/redrive/metrics"
)

// A failing job is logged at ERROR with one summary line, recorded in
// job_runs (last_ok 0, failures + 1) and raised by the job_failing alert on
// the next alerts run; the next success clears it.
func TestCronFailureIsLoggedRecordedAndAlerted(t *testing.T) {
	db := sqlitetest.New(t)
	var logs bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&logs, nil))
	fail := true
	c := &jobs.CronRouter{Log: log, Recorder: metrics.JobRuns{DB: db}, Jobs: map[string][]jobs.Job{"*/5 * * * *": {
		jobFunc{"flaky", func() (map[string]any, error) {
			if fail {
				return map[string]any{"done": 0}, errors.New("d1 down")
			}
			return map[string]any{"done": 2}, nil
		}},
	}}}
	at := time.Date(2030, 6, 1, 10, 0, 0, 0, time.UTC)
	if err := c.Run(context.Background(), "*/5 * * * *", at); err == nil {
		t.Fatal("the joined error is still returned to the caller")
	}
	var line struct {
		Level, Msg, Job, Error string
		Summary                map[string]any
	}
	if err := json.Unmarshal(bytes.TrimSpace(logs.Bytes()), &line); err != nil {
		t.Fatalf("want exactly one JSON log line: %v\n%s", err, logs.String())
	}
	if line.Level != "ERROR" || line.Job != "flaky" || line.Error != "d1 down" || line.Summary["done"] != float64(0) {
		t.Fatalf("log line %+v", line)
	}
	var ok, runs, failures int
	var lastErr string
	db.QueryRow(`SELECT last_ok, runs, failures, last_error FROM job_runs WHERE job = 'flaky'`).Scan(&ok, &runs, &failures, &lastErr)
	if ok != 0 || runs != 1 || failures != 1 || lastErr != "d1 down" {
		t.Fatalf("job_runs: ok=%d runs=%d failures=%d err=%q", ok, runs, failures, lastErr)
	}

	n := &alertstest.Slack{}
	alerts := &alerts.Engine{DB: db, Log: log, Outbox: alertstest.Outbox(db, n), Reminder: time.Hour, Conditions: []alerts.Condition{alerts.JobFailing{DB: db}}}
	if _, err := alerts.Run(context.Background(), at.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if got := n.Take(); len(got) != 1 || !strings.HasPrefix(got[0], "[redrive] FIRING job_failing: flaky failed at 2030-06-01T10:00:00Z: d1 down") {
		t.Fatalf("alerts %q", got)
	}

	fail = false
	if err := c.Run(context.Background(), "*/5 * * * *", at.Add(5*time.Minute)); err != nil {
		t.Fatal(err)
	}
	db.QueryRow(`SELECT last_ok, runs, failures FROM job_runs WHERE job = 'flaky'`).Scan(&ok, &runs, &failures)
	if ok != 1 || runs != 2 || failures != 1 {
		t.Fatalf("job_runs after success: ok=%d runs=%d failures=%d", ok, runs, failures)
	}
	if _, err := alerts.Run(context.Background(), at.Add(6*time.Minute)); err != nil {
		t.Fatal(err)
	}
	if got := n.Take(); len(got) != 1 || !strings.HasPrefix(got[0], "[redrive] RESOLVED job_failing") {
		t.Fatalf("alerts %q", got)
	}
}
