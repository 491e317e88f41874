package jobs_test

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/dlq/upkeep"
	"github.com/redrive/redrive/internal/sqlitetest"
	"github.com/redrive/redrive/jobs"
	"github.com/redrive/redrive/metrics"
)

type jobRun struct {
	lastRunAt, runs int64
	summary         string
}

func lastRun(t *testing.T, runs metrics.JobRuns, job string) jobRun {
	t.Helper()
	var r jobRun
	err := runs.DB.QueryRow(`SELECT last_run_at, runs, last_summary FROM job_runs WHERE job = ?`, job).Scan(&r.lastRunAt, &r.runs, &r.summary)
	if err != nil {
		t.Fatalf("job_runs of %s: %v", job, err)
	}
	return r
}

// A jobs.WhileMore job on the frequent cron runs only while its last recorded
// run said more. When it is not due it is skipped without a trace: not run,
// no INFO line, and its job_runs record stays that of its last real run
// (which alerts and metrics read). Once a run finishes it stops being due.
func TestWhileMoreRunsOnlyWhileTheLastRunLeftWork(t *testing.T) {
	db := sqlitetest.New(t)
	runs := metrics.JobRuns{DB: db}
	var logs bytes.Buffer
	left, calls := 0, 0
	job := jobFunc{"backlog", func() (map[string]any, error) {
		calls++
		left = max(0, left-2)
		return map[string]any{"more": left > 0, "left": left}, nil
	}}
	c := &jobs.CronRouter{Log: slog.New(slog.NewJSONHandler(&logs, nil)), Recorder: runs, Jobs: map[string][]jobs.Job{
		"daily":    {job},
		"frequent": {jobs.WhileMore{Job: job, Runs: runs}},
	}}
	at := time.Date(2030, 6, 1, 3, 17, 0, 0, time.UTC)
	fire := func(cron string) {
		t.Helper()
		at = at.Add(5 * time.Minute)
		if err := c.Run(context.Background(), cron, at); err != nil {
			t.Fatal(err)
		}
	}

	fire("frequent") // never ran: not due
	if calls != 0 || logs.Len() != 0 {
		t.Fatalf("a job that never ran was run (%d) or logged: %s", calls, logs.String())
	}
	if n := count(t, db, `SELECT COUNT(*) FROM job_runs`); n != 0 {
		t.Fatalf("a skipped run was recorded (%d rows)", n)
	}

	left = 5
	fire("daily") // 3 left: more
	daily := lastRun(t, runs, "backlog")
	if daily.runs != 1 || !strings.Contains(daily.summary, `"more":true`) {
		t.Fatalf("daily run %+v", daily)
	}
	fire("frequent") // due: 1 left, more
	fire("frequent") // due: 0 left, finished
	if calls != 3 || left != 0 {
		t.Fatalf("calls %d, left %d", calls, left)
	}
	done := lastRun(t, runs, "backlog")
	if done.runs != 3 || done.lastRunAt != at.UnixMilli() || !strings.Contains(done.summary, `"more":false`) {
		t.Fatalf("after the catch-up %+v", done)
	}
	logs.Reset()
	for range 3 {
		fire("frequent") // finished: not due, nothing recorded or logged
	}
	if calls != 3 || lastRun(t, runs, "backlog") != done || logs.Len() != 0 {
		t.Fatalf("a finished job ran again (%d calls) or its record changed (%+v) or it logged %s", calls, lastRun(t, runs, "backlog"), logs.String())
	}
}

type failingRuns struct{ err error }

func (f failingRuns) LastMore(context.Context, string) (bool, error) {
	if f.err == nil {
		panic("no D1")
	}
	return false, f.err
}

// A due check that fails (or panics) skips the job, leaves no record, logs
// at ERROR and is returned with the other errors; the other jobs still run.
func TestDueCheckFailureSkipsTheJobLoudly(t *testing.T) {
	for _, runs := range []failingRuns{{errors.New("d1 down")}, {}} {
		db := sqlitetest.New(t)
		var logs bytes.Buffer
		ran := 0
		job := jobFunc{"backlog", func() (map[string]any, error) { ran++; return nil, nil }}
		other := jobFunc{"other", func() (map[string]any, error) { ran += 10; return nil, nil }}
		c := &jobs.CronRouter{Log: slog.New(slog.NewJSONHandler(&logs, nil)), Recorder: metrics.JobRuns{DB: db}, Jobs: map[string][]jobs.Job{
			"frequent": {jobs.WhileMore{Job: job, Runs: runs}, other},
		}}
		err := c.Run(context.Background(), "frequent", time.Now())
		if err == nil || !strings.Contains(err.Error(), "job backlog: due") {
			t.Fatalf("error %v", err)
		}
		if ran != 10 || count(t, db, `SELECT COUNT(*) FROM job_runs WHERE job = 'backlog'`) != 0 {
			t.Fatalf("ran %d; backlog records %d", ran, count(t, db, `SELECT COUNT(*) FROM job_runs WHERE job = 'backlog'`))
		}
		if !strings.Contains(logs.String(), `"level":"ERROR","msg":"cron: could not tell whether the job is due; skipped"`) {
			t.Fatalf("log %s", logs.String())
		}
	}
}

// The retention job registered on both crons, as main does: a daily run
// that runs out of budget is continued by the frequent cron until the
// backlog is gone (pending and replaying rows untouched), then the frequent
// cron skips it and its last summary, which dlq_cap_evicting reads, stays.
func TestRetentionBacklogIsContinuedByTheFrequentCron(t *testing.T) {
	db := sqlitetest.New(t)
	runs := metrics.JobRuns{DB: db}
	now := time.Date(2030, 6, 1, 3, 17, 0, 0, time.UTC)
	clock := now
	limits := jobs.Limits{ChunkRows: 100, Budget: 3 * time.Second, Clock: func() time.Time { clock = clock.Add(time.Second); return clock }}
	retention := &upkeep.Retention{DB: db, Log: slog.New(slog.DiscardHandler), MaxAge: 30 * 24 * time.Hour, MaxRowsPerKey: 1000,
		AttemptMaxAge: 7 * 24 * time.Hour, Limits: limits}
	audit := &upkeep.AuditRetention{DB: db, MaxAge: 90 * 24 * time.Hour, Limits: limits}
	c := &jobs.CronRouter{Log: slog.New(slog.DiscardHandler), Recorder: runs, Jobs: map[string][]jobs.Job{
		"17 3 * * *":  {retention, audit},
		"*/5 * * * *": {jobs.WhileMore{Job: retention, Runs: runs}, jobs.WhileMore{Job: audit, Runs: runs}},
	}}
	old := now.Add(-60 * 24 * time.Hour).UnixMilli()
	if _, err := db.Exec(fmt.Sprintf(`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 1010)
		INSERT INTO dlq_messages(message_id, last_message_id, row_key, status, failed_at, acknowledged_at, replayed_at, replaying_at, updated_at)
		SELECT 'm' || i, 'm' || i, 'b' || (i %% 7), CASE WHEN i > 1005 THEN 'pending' WHEN i > 1000 THEN 'replaying' WHEN i %% 2 = 0 THEN 'acknowledged' ELSE 'replayed' END,
			%[1]d, %[1]d, %[1]d, %[1]d, 7 FROM n`, old)); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(fmt.Sprintf(`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 450)
		INSERT INTO admin_audit(at, action, request_id, key_fingerprint, outcome) SELECT %d, 'replay', 'r' || i, 'k', 'ok' FROM n`,
		now.Add(-100*24*time.Hour).UnixMilli())); err != nil {
		t.Fatal(err)
	}

	if err := c.Run(context.Background(), "17 3 * * *", now); err != nil {
		t.Fatal(err)
	}
	first := lastRun(t, runs, upkeep.RetentionJobName)
	if !strings.Contains(first.summary, `"more":true`) || !strings.Contains(lastRun(t, runs, upkeep.AuditRetentionJobName).summary, `"more":true`) {
		t.Fatalf("the daily runs did not run out of budget: %s", first.summary)
	}
	at, frequentRuns := now, 0
	for {
		at = at.Add(5 * time.Minute)
		if err := c.Run(context.Background(), "*/5 * * * *", at); err != nil {
			t.Fatal(err)
		}
		frequentRuns++
		r, a := lastRun(t, runs, upkeep.RetentionJobName), lastRun(t, runs, upkeep.AuditRetentionJobName)
		if !strings.Contains(r.summary, `"more":true`) && !strings.Contains(a.summary, `"more":true`) {
			break
		}
		if frequentRuns > 20 {
			t.Fatalf("still behind after %d frequent runs: %s %s", frequentRuns, r.summary, a.summary)
		}
	}
	if frequentRuns < 2 {
		t.Fatalf("caught up in %d frequent runs; the test wants several", frequentRuns)
	}
	if n := count(t, db, `SELECT COUNT(*) FROM dlq_messages WHERE updated_at = 7`); n != 10 {
		t.Fatalf("%d rows left, want the 5 pending and 5 replaying rows untouched", n)
	}
	if n := count(t, db, `SELECT COUNT(*) FROM dlq_messages WHERE status IN ('pending', 'replaying')`); n != 10 {
		t.Fatalf("pending and replaying rows: %d", n)
	}
	if n := count(t, db, `SELECT COUNT(*) FROM admin_audit`); n != 0 {
		t.Fatalf("%d audit records left", n)
	}
	done := lastRun(t, runs, upkeep.RetentionJobName)
	for range 3 {
		at = at.Add(5 * time.Minute)
		if err := c.Run(context.Background(), "*/5 * * * *", at); err != nil {
			t.Fatal(err)
		}
	}
	if got := lastRun(t, runs, upkeep.RetentionJobName); got != done {
		t.Fatalf("a skipped run changed the record: %+v, was %+v", got, done)
	}
}

func count(t *testing.T, db interface {
	QueryRow(string, ...any) *sql.Row
}, query string, args ...any) int64 {
	t.Helper()
	var n int64
	if err := db.QueryRow(query, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return n
}
