package upkeep_test

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/alerts"
	"github.com/redrive/redrive/alerts/alertstest"
	"github.com/redrive/redrive/config"
	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/dlq/upkeep"
	"github.com/redrive/redrive/internal/sqlitetest"
	"github.com/redrive/redrive/jobs"
	"github.com/redrive/redrive/metrics"
)

const dayMS = 24 * 60 * 60 * 1000

// upkeepCrons builds the DLQ's jobs of u on two crons as main.go's
// cronRouter does (less the enrichment jobs).
func upkeepCrons(u upkeep.Schedule, runs metrics.JobRuns) *jobs.CronRouter {
	frequent := append(u.Rescues(), u.ReplayTaskJobs()...)
	var daily []jobs.Job
	for _, r := range u.Retentions() {
		frequent, daily = append(frequent, jobs.WhileMore{Job: r, Runs: runs}), append(daily, r)
	}
	for _, a := range u.AuditRetentions() {
		frequent, daily = append(frequent, jobs.WhileMore{Job: a, Runs: runs}), append(daily, a)
	}
	conditions := append(u.PipelineAlerts(), u.RowAlerts()...)
	conditions = append(conditions, u.RetentionBehindAlerts()...)
	frequent = append(frequent, &alerts.Engine{DB: u.DBs.Shared().DB, Log: slog.New(slog.DiscardHandler), Reminder: time.Hour,
		Conditions: conditions, Sources: u.Lifecycles(time.Hour), Outbox: alertstest.Outbox(u.DBs.Shared().DB, &alertstest.Slack{})})
	daily = append(daily, u.TallyChecks()...)
	return &jobs.CronRouter{Log: slog.New(slog.DiscardHandler), Recorder: runs,
		Jobs: map[string][]jobs.Job{jobs.Frequent: frequent, jobs.Daily: daily}}
}

func testUpkeep(dbs dlq.Databases, ps []config.Pipeline) upkeep.Schedule {
	limits := jobs.Limits{ChunkRows: 100, Budget: 10 * time.Second}
	return upkeep.Schedule{DBs: dbs, Pipelines: ps,
		Rescue:                upkeep.Rescue{Log: slog.New(slog.DiscardHandler), StuckAfter: 10 * time.Minute, Limits: limits},
		Retention:             upkeep.Retention{Log: slog.New(slog.DiscardHandler), MaxAge: 30 * 24 * time.Hour, MaxRowsPerKey: 1000, AttemptMaxAge: 7 * 24 * time.Hour, Limits: limits},
		AuditRetention:        upkeep.AuditRetention{MaxAge: 90 * 24 * time.Hour, Limits: limits},
		AlertPendingThreshold: 100, AlertOldestPending: 24 * time.Hour, RepeatMaxReplays: 2, RetentionBehindAfter: time.Hour}
}

func names[T interface{ Name() string }](xs []T) []string {
	var out []string
	for _, x := range xs {
		out = append(out, x.Name())
	}
	return out
}

// With one database the upkeep is the jobs and alerts of before: the same
// names (job_runs, alert_state keys) and one of each.
func TestUpkeepOfOneDatabaseKeepsTheNames(t *testing.T) {
	u := testUpkeep(dlq.Single(dlq.Store{DB: sqlitetest.New(t)}), []config.Pipeline{config.BeerPipeline(),
		{Name: "orders", Queue: "orders"}})
	got := strings.Join(slices.Concat(names(u.Rescues()), names(u.ReplayTaskJobs()), names(u.Retentions()),
		names(u.AuditRetentions()), names(u.TallyChecks()), names(u.PipelineAlerts()), names(u.RowAlerts()),
		names(u.RetentionBehindAlerts()), names(u.Lifecycles(time.Hour))), ",")
	want := "dlq_rescue,dlq_replay_tasks,dlq_retention,audit_retention,dlq_tally," +
		"dlq_pending_high,dlq_oldest_pending,dlq_pending_high:orders,dlq_oldest_pending:orders," +
		"dlq_repeat_failures,replay_canary_failed,dlq_cap_evicting,retention_behind,group_lifecycle,task_events"
	if got != want {
		t.Fatalf("names\n got %s\nwant %s", got, want)
	}
	if r := u.Retentions()[0]; r.Runs != nil || len(r.Pipelines) != 2 {
		t.Fatalf("retention of the one database: runs %v, pipelines %v", r.Runs, r.Pipelines)
	}
}

// With a pipeline on a database of its own, every DLQ job and alert runs
// on each database: the daily cron deletes each one's expired rows (the
// tickets pipeline's 7 days in its database, the 30 days of the rest in
// DB), each job recorded in DB's job_runs under its name (:TICKETS_DB for
// the other database), nothing recorded in the other; the tally check of
// the other database reads its previous summary there (a second run
// recounts nothing); the frequent cron raises the tickets pipeline's
// pending and oldest-pending alerts and the other database's
// repeat-failures alert, each read in the database of its rows, and
// announces its new signatures.
func TestUpkeepRunsEachJobOnEachDatabase(t *testing.T) {
	t.Parallel()
	shared, own := sqlitetest.New(t), sqlitetest.New(t)
	if _, err := own.Exec(dlq.SeedIDsSQL("TICKETS_DB")); err != nil {
		t.Fatal(err)
	}
	tickets := config.Pipeline{Name: "tickets", Queue: "e2e-tickets", DLQ: "e2e-tickets-dlq", Key: "/ticket", Consumer: config.ConsumerExternal,
		Database: "TICKETS_DB", Retention: 7 * 24 * time.Hour, AlertPendingThreshold: 1, AlertOldestPending: 24 * time.Hour}
	ps := []config.Pipeline{config.BeerPipeline(), tickets}
	dbs := dlq.NewDatabases(dlq.Store{DB: shared}, map[string]dlq.Store{"TICKETS_DB": {DB: own}}, ps)
	u := testUpkeep(dbs, ps)
	runs := metrics.JobRuns{DB: shared}
	c := upkeepCrons(u, runs)

	now := time.Date(2030, 6, 1, 3, 17, 0, 0, time.UTC)
	at := func(days int) int64 { return now.UnixMilli() - int64(days)*dayMS }
	insert := func(db *sql.DB, id, queue, status string, acted int64, replays int) {
		t.Helper()
		if _, err := db.Exec(`INSERT INTO dlq_messages(message_id, last_message_id, row_key, source_queue, status, failed_at,
			acknowledged_at, replay_count, signature, failure_reason, updated_at)
			VALUES (?1, ?1, ?1, ?2, ?3, ?4, ?5, ?6, ?7, 'boom', 7)`, id, queue, status, acted-dayMS, acted, replays, "sig-"+queue); err != nil {
			t.Fatal(err)
		}
	}
	insert(own, "t-ack-8d", "e2e-tickets", "acknowledged", at(8), 0)
	insert(own, "t-ack-6d", "e2e-tickets", "acknowledged", at(6), 0)
	insert(own, "t-pending-1", "e2e-tickets", "pending", at(1), 3)
	insert(own, "t-pending-2", "e2e-tickets", "pending", at(1), 0)
	insert(shared, "b-ack-31d", config.BeerQueue, "acknowledged", at(31), 0)
	insert(shared, "b-ack-8d", config.BeerQueue, "acknowledged", at(8), 0)
	for i, db := range []*sql.DB{shared, own} {
		// A signature is one cause in one queue: one group per database.
		if _, err := db.Exec(`INSERT INTO dlq_signatures(signature, class, text, first_seen, last_seen, source_queue)
			VALUES (?, 'permanent', 'boom', 1, 1, 'q')`, fmt.Sprint("sig-new-", i)); err != nil {
			t.Fatal(err)
		}
	}

	if err := c.Run(context.Background(), jobs.Daily, now); err != nil {
		t.Fatal(err)
	}
	left := func(db *sql.DB) string {
		rows, err := db.Query(`SELECT message_id FROM dlq_messages ORDER BY message_id`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var ids []string
		for rows.Next() {
			var id string
			rows.Scan(&id)
			ids = append(ids, id)
		}
		return strings.Join(ids, ",")
	}
	if got := left(own); got != "t-ack-6d,t-pending-1,t-pending-2" {
		t.Errorf("TICKETS_DB keeps %s, want t-ack-6d and the pending rows", got)
	}
	if got := left(shared); got != "b-ack-8d" {
		t.Errorf("DB keeps %s, want b-ack-8d", got)
	}
	jobNames := func(db *sql.DB) string {
		rows, err := db.Query(`SELECT job FROM job_runs ORDER BY job`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var out []string
		for rows.Next() {
			var j string
			rows.Scan(&j)
			out = append(out, j)
		}
		return strings.Join(out, ",")
	}
	if got := jobNames(shared); got != "audit_retention,audit_retention:TICKETS_DB,dlq_retention,dlq_retention:TICKETS_DB,dlq_tally,dlq_tally:TICKETS_DB" {
		t.Errorf("job_runs of DB: %s", got)
	}
	if got := jobNames(own); got != "" {
		t.Errorf("job_runs in TICKETS_DB: %s", got)
	}
	var sum string
	if err := shared.QueryRow(`SELECT last_summary FROM job_runs WHERE job = 'dlq_tally:TICKETS_DB'`).Scan(&sum); err != nil ||
		!strings.Contains(sum, `"retention_deleted":1`) || !strings.Contains(sum, `"recounted_statuses":true`) {
		t.Fatalf("first tally of TICKETS_DB: %s %v", sum, err)
	}
	if err := c.Run(context.Background(), jobs.Daily, now.Add(24*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := shared.QueryRow(`SELECT last_summary FROM job_runs WHERE job = 'dlq_tally:TICKETS_DB'`).Scan(&sum); err != nil ||
		!strings.Contains(sum, `"recounted_statuses":false`) {
		t.Fatalf("second tally of TICKETS_DB (retention deleted nothing since): %s %v", sum, err)
	}

	if err := c.Run(context.Background(), jobs.Frequent, now.Add(25*time.Hour)); err != nil {
		t.Fatal(err)
	}
	firing := func(name string) bool {
		var f int64
		err := shared.QueryRow(`SELECT firing FROM alert_state WHERE name = ?`, name).Scan(&f)
		return err == nil && f == 1
	}
	for name, want := range map[string]bool{"dlq_pending_high:tickets": true, "dlq_repeat_failures:TICKETS_DB": true,
		"dlq_oldest_pending:tickets": true, "dlq_repeat_failures": false, "dlq_pending_high": false, "dlq_oldest_pending": false} {
		if firing(name) != want {
			t.Errorf("alert %s firing %v, want %v", name, !want, want)
		}
	}
	for _, db := range []*sql.DB{shared, own} {
		var announced int64
		if err := db.QueryRow(`SELECT COUNT(*) FROM dlq_signatures WHERE announced_at IS NOT NULL`).Scan(&announced); err != nil || announced != 1 {
			t.Errorf("signatures announced: %d %v", announced, err)
		}
	}
	if !strings.Contains(jobNames(shared), "alerts") {
		t.Error("no alerts run recorded")
	}
	var latest int64
	if err := shared.QueryRow(`SELECT COUNT(*) FROM alert_events WHERE type = 'group.opened'`).Scan(&latest); err != nil || latest != 2 {
		t.Errorf("group.opened events in DB's outbox: %d %v, want one per database", latest, err)
	}
	if got := jobNames(shared); !strings.Contains(got, "dlq_rescue,dlq_rescue:TICKETS_DB") || !strings.Contains(got, "alerts") {
		t.Errorf("job_runs after the frequent cron: %s", got)
	}
	var n int64
	if err := own.QueryRow(`SELECT COUNT(*) FROM alert_state`).Scan(&n); err != nil || n != 0 {
		t.Errorf("alert_state rows in TICKETS_DB: %d %v", n, err)
	}
}

// The audit retention of a database other than the shared one reads its
// previous run in the shared database's job_runs, where its runs are
// recorded: a backlog that lasts two runs keeps the first run's
// behind_since (pins upkeep.go's Runs of AuditRetentions).
func TestUpkeepAuditRetentionOfAnotherDatabaseContinuesItsBacklog(t *testing.T) {
	t.Parallel()
	shared, own := sqlitetest.New(t), sqlitetest.New(t)
	if _, err := own.Exec(dlq.SeedIDsSQL("TICKETS_DB")); err != nil {
		t.Fatal(err)
	}
	tickets := config.Pipeline{Name: "tickets", Queue: "e2e-tickets", DLQ: "e2e-tickets-dlq", Key: "/ticket", Consumer: config.ConsumerExternal,
		Database: "TICKETS_DB"}
	ps := []config.Pipeline{config.BeerPipeline(), tickets}
	dbs := dlq.NewDatabases(dlq.Store{DB: shared}, map[string]dlq.Store{"TICKETS_DB": {DB: own}}, ps)
	u := testUpkeep(dbs, ps)
	// One record a chunk, and each budget check finds the budget spent: a
	// run deletes one record and leaves the rest.
	var tick time.Time
	u.AuditRetention.Limits = jobs.Limits{ChunkRows: 1, Budget: time.Second, Clock: func() time.Time { tick = tick.Add(time.Hour); return tick }}
	old := time.Date(2029, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 4 {
		a := dlq.Audit{DB: own, Clock: func() time.Time { return old.Add(time.Duration(i) * time.Minute) }}
		if err := a.Record(context.Background(), dlq.AuditStart{Action: dlq.ActionAcknowledge}, dlq.OutcomeOK, nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	runs := metrics.JobRuns{DB: shared}
	c := &jobs.CronRouter{Log: slog.New(slog.DiscardHandler), Recorder: runs,
		Jobs: map[string][]jobs.Job{jobs.Daily: {u.AuditRetentions()[1]}}}
	first := time.Date(2030, 6, 1, 3, 0, 0, 0, time.UTC)
	var sum struct {
		Expired     int64  `json:"expired"`
		More        bool   `json:"more"`
		BehindSince *int64 `json:"behind_since"`
	}
	for i, now := range []time.Time{first, first.Add(24 * time.Hour)} {
		if err := c.Run(context.Background(), jobs.Daily, now); err != nil {
			t.Fatal(err)
		}
		if ok, err := runs.LastSummary(context.Background(), "audit_retention:TICKETS_DB", &sum); !ok || err != nil {
			t.Fatalf("run %d: no summary in DB's job_runs: %v", i, err)
		}
		if sum.Expired != 1 || !sum.More || sum.BehindSince == nil || *sum.BehindSince != first.UnixMilli() {
			t.Fatalf("run %d: %+v, want 1 expired, more, behind since the first run (%d)", i, sum, first.UnixMilli())
		}
	}
}
