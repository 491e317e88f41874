package jobs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/redrive/redrive/clock"
	"github.com/redrive/redrive/metrics"
)

// Job is one named piece of scheduled work. Jobs are idempotent (a repeated
// or overlapping run changes nothing twice) and bounded (batch sizes and a
// wall-time budget; what is left waits for the next run).
type Job interface {
	Name() string
	// Run does the work due at now and returns a short summary for the log.
	Run(ctx context.Context, now time.Time) (summary map[string]any, err error)
}

// DueJob is a Job that is not always due on its cron: the router asks Due
// before running it and, when it is not due, skips it without a trace (no
// run, no log line above DEBUG, no job_runs record: the last record, which
// alerts and metrics read, stays the job's last real run). A Due that fails
// is logged at ERROR and the job is skipped this time (its next tick asks
// again); the error is returned with the others.
type DueJob interface {
	Job
	Due(ctx context.Context, now time.Time) (bool, error)
}

// LastRuns tells whether a job's last recorded run ended with work left
// (metrics.JobRuns.LastMore: one job_runs row read).
type LastRuns interface {
	LastMore(ctx context.Context, job string) (bool, error)
}

// WhileMore registers Job on a second, more frequent cron, where it is due
// only while the job's last recorded run (on either cron) ended with work
// left ("more": true in its summary). A daily job with a backlog larger
// than one run's budget is then continued every few minutes, each run
// bounded as usual, until a run finishes; the daily run stays the normal
// case and the frequent ticks cost one primary-key read each.
type WhileMore struct {
	Job
	Runs LastRuns
}

// Due implements DueJob.
func (w WhileMore) Due(ctx context.Context, _ time.Time) (bool, error) {
	return w.Runs.LastMore(ctx, w.Name())
}

// RunRecorder stores each job's last run (see metrics.JobRuns).
type RunRecorder interface {
	RecordRun(ctx context.Context, job string, startedAt time.Time, duration time.Duration, runErr error, summary map[string]any) error
}

// CronRouter maps each cron expression of wrangler.jsonc to its jobs.
type CronRouter struct {
	Jobs     map[string][]Job
	Recorder RunRecorder
	Log      *slog.Logger
	// Clock measures durations; time.Now when nil.
	Clock clock.Clock
	// Meter counts D1's rows read and written per job (each run is an
	// operation named "cron <job>", its run record included) and is flushed
	// after the jobs of a tick; nil: nothing is counted.
	Meter *metrics.Meter
}

// Run runs every job registered for cron at scheduled time now, one after
// the other, each recorded and logged as one summary line; a DueJob that is
// not due is skipped and leaves no record. One failing (or panicking) job
// does not stop the others.
//
// A failure is reported, never hidden: an ERROR log line with the job's
// error, a job_runs record with last_ok = 0 and failures + 1 (exported by
// /admin/metrics as redrive_job_failures_total), and the job_failing alert
// raised by the next alerts run. Run also returns the joined errors, for
// callers and tests; the worker's cron entry must NOT hand them to
// syumai/workers' cron, which turns a returned error into a Go panic that
// ends the Go instance (and every call in flight on it).
func (c *CronRouter) Run(ctx context.Context, cron string, now time.Time) error {
	jobs, ok := c.Jobs[cron]
	if !ok {
		c.Log.WarnContext(ctx, "cron: no jobs for expression", "cron", cron)
		return nil
	}
	var errs []error
	defer c.Meter.Flush(ctx) // a nil Meter counts nothing
	for _, j := range jobs {
		if d, ok := j.(DueJob); ok {
			due, err := c.due(ctx, d, now)
			if err != nil {
				errs = append(errs, fmt.Errorf("job %s: due: %w", j.Name(), err))
				c.Log.ErrorContext(ctx, "cron: could not tell whether the job is due; skipped", "job", j.Name(), "cron", cron,
					"scheduled_at", now.UnixMilli(), "error", err.Error())
				continue
			}
			if !due {
				c.Log.DebugContext(ctx, "cron: job not due", "job", j.Name(), "cron", cron, "scheduled_at", now.UnixMilli())
				continue
			}
		}
		jctx, op := metrics.Start(ctx, metrics.CronOp(j.Name()))
		start := c.Clock.Now()
		summary, err := c.runOne(jctx, j, now)
		dur := c.Clock.Now().Sub(start)
		// The job's own statements (its run record follows).
		attrs := append([]any{"job", j.Name(), "cron", cron, "scheduled_at", now.UnixMilli(), "duration_ms", dur.Milliseconds(), "summary", summary},
			op.LogAttrs()...)
		if err != nil {
			errs = append(errs, fmt.Errorf("job %s: %w", j.Name(), err))
			c.Log.ErrorContext(ctx, "cron: job failed", append(attrs, "error", err.Error())...)
		} else {
			c.Log.InfoContext(ctx, "cron: job done", attrs...)
		}
		if c.Recorder != nil {
			if rerr := c.Recorder.RecordRun(jctx, j.Name(), now, dur, err, summary); rerr != nil {
				errs = append(errs, fmt.Errorf("record run of %s: %w", j.Name(), rerr))
				c.Log.ErrorContext(ctx, "cron: could not record run", "job", j.Name(), "error", rerr.Error())
			}
		}
	}
	return errors.Join(errs...)
}

func (c *CronRouter) due(ctx context.Context, d DueJob, now time.Time) (due bool, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic: %v", p)
		}
	}()
	return d.Due(ctx, now)
}

func (c *CronRouter) runOne(ctx context.Context, j Job, now time.Time) (summary map[string]any, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic: %v", p)
		}
	}()
	return j.Run(ctx, now)
}
