package jobs_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/jobs"
)

type jobFunc struct {
	name string
	run  func() (map[string]any, error)
}

func (j jobFunc) Name() string                                           { return j.name }
func (j jobFunc) Run(context.Context, time.Time) (map[string]any, error) { return j.run() }

type recorder struct{ runs map[string]error }

func (r *recorder) RecordRun(_ context.Context, job string, _ time.Time, _ time.Duration, err error, _ map[string]any) error {
	r.runs[job] = err
	return nil
}

func TestCronRouterRunsEveryJobAndReportsFailures(t *testing.T) {
	rec := &recorder{runs: map[string]error{}}
	c := &jobs.CronRouter{Log: slog.New(slog.DiscardHandler), Recorder: rec, Jobs: map[string][]jobs.Job{"* * * * *": {
		jobFunc{"fails", func() (map[string]any, error) { return nil, errors.New("d1 down") }},
		jobFunc{"panics", func() (map[string]any, error) { panic("bug") }},
		jobFunc{"works", func() (map[string]any, error) { return map[string]any{"n": 1}, nil }},
	}}}
	err := c.Run(context.Background(), "* * * * *", time.Now())
	if err == nil || !strings.Contains(err.Error(), "d1 down") || !strings.Contains(err.Error(), "bug") {
		t.Fatalf("err = %v", err)
	}
	if len(rec.runs) != 3 || rec.runs["works"] != nil || rec.runs["fails"] == nil || rec.runs["panics"] == nil {
		t.Fatalf("runs = %v", rec.runs)
	}
	if err := c.Run(context.Background(), "unknown", time.Now()); err != nil {
		t.Fatalf("unknown cron: %v", err)
	}
}
