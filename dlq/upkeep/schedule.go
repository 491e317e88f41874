package upkeep

import (
	"context"
	"time"

	"github.com/redrive/redrive/alerts"
	"github.com/redrive/redrive/config"
	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/dlq/incidents"
	"github.com/redrive/redrive/dlq/resolve"
	"github.com/redrive/redrive/jobs"
)

// Schedule builds the DLQ's scheduled work once per database of DBs (the
// shared one first): every job and alert that reads or writes DLQ rows,
// groups, replay tasks or kept counts runs against each database, each
// bounded as before (its own batch size and budget), so N databases cost N
// times what one costs a run. A job or alert of a database other than the
// shared one is named base:<binding> (JobName: dlq_retention:TICKETS_DB);
// their job_runs and alert_state rows stay in the shared database. With one
// database it builds exactly the jobs and alerts of before, under the same
// names (docs/pipelines.md "Its own database").
//
// The fields are templates: each method copies one and sets its database.
type Schedule struct {
	// DBs are the databases.
	DBs dlq.Databases
	// Pipelines are the configured pipelines (config.Pipeline.Database
	// says whose rows a database keeps).
	Pipelines []config.Pipeline
	// Rescue is the template of each database's dlq_rescue.
	Rescue Rescue
	// Tasks is the template of each database's dlq_replay_tasks (its
	// Replay's DB and Batch are set per database).
	Tasks resolve.ReplayTasks
	// Retention is the template of each database's dlq_retention: each
	// gets every pipeline, so a queue's rows keep its pipeline's retention
	// in whichever database they lie (the rows a moving pipeline left
	// behind, or an import brought in), and MaxAge applies to the queues
	// no pipeline names.
	Retention Retention
	// AuditRetention is the template of each database's audit_retention.
	AuditRetention AuditRetention
	// Tally is the template of each database's dlq_tally.
	Tally TallyCheck
	// AlertPendingThreshold and AlertOldestPending are the global alert
	// thresholds (PipelineAlerts).
	AlertPendingThreshold int64
	AlertOldestPending    time.Duration
	// RepeatMaxReplays is RepeatFailures.MaxReplays.
	RepeatMaxReplays int64
	// RetentionBehindAfter is RETENTION_BEHIND_ALERT_MINUTES.
	RetentionBehindAfter time.Duration
}

// Rescues is dlq_rescue of each database.
func (u Schedule) Rescues() []jobs.Job {
	var out []jobs.Job
	for _, d := range u.DBs.All {
		r := u.Rescue
		r.DB, r.Database, r.Frozen = d.DB, d.Name, u.DBs.Frozen(d.Name)
		out = append(out, &r)
	}
	return out
}

// ReplayTaskJobs is dlq_replay_tasks of each database (due only while one
// of its tasks runs: one index read per database a tick).
func (u Schedule) ReplayTaskJobs() []jobs.Job {
	var out []jobs.Job
	for _, d := range u.DBs.All {
		t := u.Tasks
		t.Replay.DB, t.Replay.Batch, t.Replay.Frozen = d.DB, d.Batch, u.DBs.Frozen(d.Name)
		out = append(out, &resolve.ReplayTaskJob{Tasks: t, Database: d.Name})
	}
	return out
}

// Retentions is dlq_retention of each database, each with every pipeline
// (a database's rows are mostly its own pipelines', but a pipeline's rows
// can lie in another while it moves: they keep its retention there);
// job_runs is the shared database's.
func (u Schedule) Retentions() []*Retention {
	var out []*Retention
	for _, d := range u.DBs.All {
		r := u.Retention
		r.DB, r.Database, r.Pipelines = d.DB, d.Name, u.Pipelines
		if u.DBs.Many() {
			dbs, name := u.DBs, d.Name
			r.Moving = func(ctx context.Context) ([]string, error) { return dbs.MovingInto(ctx, name) }
		}
		if d.Name != u.DBs.Shared().Name {
			r.Runs = u.DBs.Shared().DB
		}
		out = append(out, &r)
	}
	return out
}

// AuditRetentions is audit_retention of each database.
func (u Schedule) AuditRetentions() []*AuditRetention {
	var out []*AuditRetention
	for _, d := range u.DBs.All {
		a := u.AuditRetention
		a.DB, a.Database = d.DB, d.Name
		if d.Name != u.DBs.Shared().Name {
			a.Runs = u.DBs.Shared().DB
		}
		out = append(out, &a)
	}
	return out
}

// TallyChecks is dlq_tally of each database.
func (u Schedule) TallyChecks() []jobs.Job {
	var out []jobs.Job
	for _, d := range u.DBs.All {
		t := u.Tally
		t.DB, t.Batch, t.Database = d.DB, d.Batch, d.Name
		if d.Name != u.DBs.Shared().Name {
			t.Runs = u.DBs.Shared().DB
		}
		out = append(out, &t)
	}
	return out
}

// PipelineAlerts are PipelineAlerts, each pipeline's read in its database
// (the beer alerts, over the queues no other pipeline names, in the shared one).
func (u Schedule) PipelineAlerts() []alerts.Condition {
	shared := u.DBs.Shared().DB
	out := PipelineAlerts(shared, u.Pipelines, u.AlertPendingThreshold, u.AlertOldestPending)
	for i, c := range out {
		switch c := c.(type) {
		case PendingHigh:
			if c.Queue != "" {
				c.DB = u.DBs.OfQueue(c.Queue).DB
			}
			out[i] = c
		case OldestPending:
			if c.Queue != "" {
				c.DB = u.DBs.OfQueue(c.Queue).DB
			}
			out[i] = c
		}
	}
	return out
}

// RowAlerts are dlq_repeat_failures, replay_canary_failed and
// dlq_cap_evicting of each database (in that order, database by database).
func (u Schedule) RowAlerts() []alerts.Condition {
	var out []alerts.Condition
	for _, d := range u.DBs.All {
		out = append(out,
			RepeatFailures{DB: d.DB, MaxReplays: u.RepeatMaxReplays, Database: d.Name},
			ReplayCanaryFailed{DB: d.DB, Database: d.Name},
			CapEvicting{DB: u.DBs.Shared().DB, Database: d.Name})
	}
	return out
}

// RetentionBehindAlerts are retention_behind of each database's retention
// jobs (each reads their job_runs rows in the shared database).
func (u Schedule) RetentionBehindAlerts() []alerts.Condition {
	var out []alerts.Condition
	for _, d := range u.DBs.All {
		out = append(out, RetentionBehind{DB: u.DBs.Shared().DB, After: u.RetentionBehindAfter, Database: d.Name})
	}
	return out
}

// Lifecycles are the failure groups' lifecycle (incidents.Lifecycle) and
// the replay tasks' events (TaskEvents) of each database; the shared one's
// changes and events are one batch.
func (u Schedule) Lifecycles(autoResolve time.Duration) []alerts.Source {
	var out []alerts.Source
	for _, d := range u.DBs.All {
		batch := dlq.BatchOf(d.Batch, d.DB)
		out = append(out, incidents.Lifecycle{DB: d.DB, Batch: batch, Database: d.Name,
			Pipelines: u.DBs.Pipelines(), AutoResolve: autoResolve},
			TaskEvents{DB: d.DB, Batch: batch, Database: d.Name})
	}
	return out
}
