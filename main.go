//go:build js && wasm

// Command redrive is the Cloudflare Worker: it wires the runtime's env and
// bindings to the handlers and registers the fetch, queue and cron entries.
// platform/worker/worker.mjs runs main() once per isolate and dispatches
// every call to it, so main builds the services once and then blocks.
package main

import (
	"cmp"
	"context"
	"database/sql"
	"log/slog"
	"maps"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/syumai/workers"
	"github.com/syumai/workers/cloudflare/cron"

	"github.com/redrive/redrive/access/cfaccess"
	"github.com/redrive/redrive/alerts"
	"github.com/redrive/redrive/config"
	"github.com/redrive/redrive/consume"
	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/dlq/resolve"
	"github.com/redrive/redrive/dlq/upkeep"
	"github.com/redrive/redrive/enrichment"
	"github.com/redrive/redrive/handlers"
	"github.com/redrive/redrive/jobs"
	"github.com/redrive/redrive/metrics"
	"github.com/redrive/redrive/platform"
	"github.com/redrive/redrive/queue"
	ver "github.com/redrive/redrive/version"
)

// version is set by the Makefile (-ldflags "-X main.version=..."); empty
// means "dev". It has no initializer: TinyGo's -X sets only the variable's
// static value, which a package initializer would then overwrite.
var version string

func main() {
	start()
	workers.Ready()
	select {} // serve calls until the isolate goes away
}

// start builds the services once and registers the fetch, queue and cron
// entries. It is not inlined, and neither are the larger pieces it calls
// (config.Load, the routers, the API and its routes): the TinyGo build
// otherwise inlines each into its one caller (LLVM, then wasm-opt, which
// scripts/tinygo.sh limits), and the main goroutine became one 71 KB
// function, with the package initializers left for run time. V8 compiles it
// on every new instance, and a function that large compiles much more
// slowly per byte: 9–14 ms in Node against 1–2 ms for the whole start and
// first call split up (docs/benchmarks.md "Start-up, third pass: TinyGo flags
// and size").
//
//go:noinline
func start() {
	// Request ids (handlers) are uuids from crypto/rand, which asks the
	// runtime's crypto.getRandomValues for 16 bytes per request: the pool
	// asks once per 256 ids. The ids name requests; they are no secret.
	uuid.EnableRandPool()
	log := slog.New(slog.NewJSONHandler(os.Stdout, nil)).With("service", "redrive")
	cfg, problems := loadConfig()
	for _, p := range problems {
		log.Error("config: invalid value", "problem", p.Error())
	}
	// Every statement's D1 meta (rows read and written, what D1 bills) is
	// counted for the operation it ran in: a route, a queue, a cron job.
	meter := &metrics.Meter{Interval: cfg.D1UsageFlush, Log: log}
	observe := func(ctx context.Context, m platform.D1Meta) {
		meter.Observe(ctx, metrics.Usage{Statements: 1, RowsRead: m.RowsRead, RowsWritten: m.RowsWritten})
	}
	db, batch, err := platform.OpenD1(config.SharedDatabase, observe)
	if err != nil {
		log.Error("startup: no D1 binding", "error", err.Error())
	}
	meter.DB = db
	// A pipeline may keep its rows in a D1 database of its own (its
	// `database`); one whose binding is missing is off: its DLQ's messages
	// are then stored in DB as unroutable, never lost.
	var others map[string]dlq.Store
	cfg.Pipelines, others = openPipelineDatabases(cfg.Pipelines, log, observe)
	// The version failures are stamped with: the version metadata binding's
	// id when the runtime gives one, else the build's version string.
	running := ver.Info{Build: cmp.Or(version, "dev")}
	running.ID, running.Tag, running.Timestamp = platform.VersionMetadata("CF_VERSION_METADATA")
	w := worker{cfg: cfg, log: log, db: db, batch: batch, meter: meter, version: running,
		dbs: dlq.NewDatabases(dlq.Store{DB: db, Batch: batch}, others, cfg.Pipelines)}
	w.pipelines = config.Wire(cfg.Pipelines, platform.HasBinding)
	for q, binding := range w.pipelines.Missing {
		log.Error("config: a pipeline's producer binding is missing; it is capture-only (replay to it is refused)",
			"queue", q, "binding", binding)
	}
	w.sender = platform.Sender{Bindings: w.pipelines.Bindings}

	w.register()
}

// register builds the queue, cron and fetch routers and registers the
// fetch, queue and cron entries with the runtime.
func (w worker) register() {
	cfg, log := w.cfg, w.log
	router := w.queueRouter()
	crons := w.cronRouter()
	api := w.api()
	if cfg.DevRoutes {
		log.Warn("DEV_ROUTES is set: POST /__dev/send, /__dev/sql and /__dev/cron answer requests addressed to a loopback host; never set it in production")
		// wrangler dev's /cdn-cgi/handler/scheduled stops short of a worker
		// with static assets: POST /__dev/cron runs a cron at a chosen time.
		api.DevCron = crons.Run
	}
	platform.Serve(routes(api), handlers.MaxBodyBytes)
	platform.Consume(router.Consume)
	scheduleCrons(crons, log)
}

// scheduleCrons registers the cron entry: each scheduled event runs the
// jobs of its cron. The cron task always returns nil: syumai's cron turns
// an error into a panic that ends this Go instance. Job failures are logged
// at ERROR, recorded in job_runs and alerted on by CronRouter.Run and the
// alerts job.
func scheduleCrons(crons *jobs.CronRouter, log *slog.Logger) {
	cron.ScheduleTaskNonBlock(func(ctx context.Context) error {
		ev, err := cron.NewEvent(ctx)
		if err != nil {
			log.Error("cron: no event", "error", err.Error())
			return nil
		}
		_ = crons.Run(ctx, ev.Cron, ev.ScheduledTime)
		return nil
	})
}

// openPipelineDatabases opens the D1 database of each pipeline that names
// its own and returns the pipelines left on with those databases, keyed by
// binding. A pipeline whose binding is missing is off, and so is one whose
// binding shares its id range with another's (dlq.IDBase): the two
// databases would give different rows the same ids. pipelines' backing
// array is reused (slices.DeleteFunc).
func openPipelineDatabases(pipelines []config.Pipeline, log *slog.Logger,
	observe func(context.Context, platform.D1Meta)) ([]config.Pipeline, map[string]dlq.Store) {
	var named []string
	for _, p := range pipelines {
		named = append(named, p.Database)
	}
	clash := dlq.IDRangeCollisions(named)
	others := map[string]dlq.Store{}
	pipelines = slices.DeleteFunc(pipelines, func(p config.Pipeline) bool {
		if p.Database == config.SharedDatabase {
			return false
		}
		if with, ok := clash[p.Database]; ok {
			log.Error("config: a pipeline's database shares its id range with another binding; the pipeline is off (rename one binding)",
				"pipeline", p.Name, "database", p.Database, "shares_with", strings.Join(with, ","))
			return true
		}
		if _, ok := others[p.Database]; ok {
			return false
		}
		odb, obatch, err := platform.OpenD1(p.Database, observe)
		if err != nil {
			log.Error("config: a pipeline's database binding is missing; the pipeline is off", "pipeline", p.Name, "database", p.Database)
			return true
		}
		others[p.Database] = dlq.Store{DB: odb, Batch: obatch}
		return false
	})
	return pipelines, others
}

// worker holds what the three entry points are built from.
type worker struct {
	cfg   config.Config
	log   *slog.Logger
	db    *sql.DB
	batch platform.D1Batch
	// dbs are the databases of the DLQ rows: db and each pipeline's own.
	dbs dlq.Databases
	// meter counts D1 rows per operation (metrics.Meter).
	meter *metrics.Meter
	// sender sends to the queues this worker produces to.
	sender platform.Sender
	// version is the running worker's version (stamped on failures).
	version ver.Info
	// pipelines is cfg.Pipelines wired to the bindings present.
	pipelines config.Wiring
}

// loadConfig reads the configuration from the environment (not inlined:
// see start).
//
//go:noinline
func loadConfig() (config.Config, []error) {
	return config.Load(platform.Getenv)
}

// routes is the API's root handler (not inlined: see start).
//
//go:noinline
func routes(api *handlers.API) http.Handler {
	return api.Handler()
}

// api builds the HTTP API (fetch; not inlined: see start).
//
//go:noinline
func (w worker) api() *handlers.API {
	cfg := w.cfg
	api := &handlers.API{
		DB:       w.db,
		Batch:    w.batch,
		Log:      w.log,
		Meter:    w.meter,
		Auth:     handlers.Auth{APIKey: cfg.APIKey, AdminSecret: cfg.AdminSecret, ReportToken: cfg.ReportToken},
		Version:  cmp.Or(version, "dev"),
		Running:  w.version,
		Instance: handlers.NewInstance(time.Now()),
		Beers:    &enrichment.Registry{DB: w.db, Sender: w.sender},
		DBs:      w.dbs,

		Sender:             w.sender,
		ReplayDestinations: w.destinations(),
		MissingProducers:   w.pipelines.Missing,
		Backlogs:           w.sender,
		BulkReplayMax:      cfg.BulkReplayMax,
		ReportQueues:       externalQueues(cfg.Pipelines),
		BulkAcknowledgeMax: cfg.BulkAcknowledgeMax,
		Outbox:             w.outbox(),
	}
	if cfg.Access.On() {
		api.Access = &handlers.AccessSignIn{Rules: cfg.Access.Roles, Verifier: &cfaccess.Verifier{TeamDomain: cfg.Access.TeamDomain,
			Audience: cfg.Access.Audience, CertsURL: cfg.Access.CertsURL, Doer: platform.Fetch{}, Now: time.Now, RSA: &platform.WebCryptoRSA{}}}
	}
	if cfg.DevRoutes {
		// The pipelines' main queues and the queues DEV_SEND_QUEUES names
		// (by default the beer DLQ; wrangler.jsonc's test environments name
		// their own), each whose binding is present.
		dev := platform.Sender{Bindings: maps.Clone(w.pipelines.Bindings)}
		for q, binding := range cfg.DevSendQueues {
			if !platform.HasBinding(binding) {
				w.log.Error("config: a DEV_SEND_QUEUES binding is missing; POST /__dev/send refuses its queue", "queue", q, "binding", binding)
				continue
			}
			dev.Bindings[q] = binding
		}
		api.DevSender = dev
	}
	return api
}

// destinations are the queues a replay may be sent to: those the sender
// has a producer binding for (wrangler.jsonc), sorted.
func (w worker) destinations() []string {
	var out []string
	for q := range w.sender.Bindings {
		out = append(out, q)
	}
	slices.Sort(out)
	return out
}

// queueRouter builds the consumers of every queue (queue; not inlined: see
// start).
//
//go:noinline
func (w worker) queueRouter() *consume.Router {
	cfg, db, log := w.cfg, w.db, w.log
	// Every pipeline's DLQ (and the beer DLQ) is captured by one Capture,
	// each row into its pipeline's database (dlq.Databases).
	capture := &dlq.Capture{DB: db, Batch: w.batch, Version: w.version.Stamp(), Log: log, RetryBase: cfg.D1RetryBase,
		SourceQueue: w.pipelines.SourceQueue, Stores: w.dbs}
	consumers := map[string]consume.Consumer{}
	for dlqName := range w.pipelines.SourceQueue {
		consumers[dlqName] = capture
	}
	// Sender: messages deferred while D1 is unavailable go back to the
	// queue as fresh delayed copies (the other deferrals park the beer in D1).
	consumers[queue.Enrichment] = w.enrichmentConsumer()
	// A queue with a consumer in wrangler.jsonc but none here: its
	// messages become DLQ rows (class unroutable) instead of being dropped.
	unroutable := dlq.Unroutable(db, log, cfg.D1RetryBase)
	unroutable.Batch, unroutable.Version = w.batch, w.version.Stamp()
	return &consume.Router{Log: log, Consumers: consumers, Meter: w.meter, Unroutable: unroutable}
}

// enrichmentConsumer is the enrichment queue's consumer (its provider,
// breaker and quota are also the catch-up's key probe).
func (w worker) enrichmentConsumer() *enrichment.Consumer {
	cfg := w.cfg
	return &enrichment.Consumer{DB: w.db, Batch: w.batch, Pipelines: w.dbs.Pipelines(), Version: w.version.Stamp(), Log: w.log, Sender: w.sender,
		Provider: enrichment.ChatProvider{
			URL:     cfg.EnrichmentAPIURL,
			Model:   cfg.EnrichmentModel,
			APIKey:  cfg.EnrichmentAPIKey,
			Timeout: cfg.EnrichmentTimeout,
			Doer:    platform.Fetch{},
		},
		Policy: enrichment.Policy{
			Backoff:            enrichment.Backoff{Base: cfg.EnrichmentBackoffBase, Max: cfg.EnrichmentBackoffMax},
			MaxAttempts:        cfg.EnrichmentMaxAttempts,
			BreakerThreshold:   cfg.BreakerThreshold,
			BreakerCooldown:    cfg.BreakerCooldown,
			BreakerMaxCooldown: cfg.BreakerMaxCooldown,
			DailyLimit:         cfg.DailyEnrichmentLimit,
			D1RetryBase:        cfg.D1RetryBase,
		},
	}
}

// cronRouter builds the scheduled jobs of each cron (scheduled; not
// inlined: see start).
//
//go:noinline
func (w worker) cronRouter() *jobs.CronRouter {
	cfg, db, log := w.cfg, w.db, w.log
	limits := jobs.Limits{ChunkRows: cfg.CronBatchSize, Budget: cfg.CronJobBudget}
	runs := metrics.JobRuns{DB: db}
	consumer := w.enrichmentConsumer()
	keyProbe := &enrichment.KeyProbe{Provider: consumer.Provider, Breaker: consumer.Breaker(), Quota: consumer.Quota()}
	// Every job and alert of the DLQ's rows runs once per database
	// (upkeep.Schedule): the shared one's under the names of before, another's
	// as <job>:<binding>; job_runs and alert_state stay in DB.
	sched := upkeep.Schedule{DBs: w.dbs, Pipelines: cfg.Pipelines,
		Rescue: upkeep.Rescue{Log: log, StuckAfter: cfg.ReplayStuckAfter, Limits: limits},
		Tasks: resolve.ReplayTasks{Limits: limits, Replay: resolve.Replay{Sender: w.sender,
			Log: log, BulkMax: cfg.BulkReplayMax, Destinations: w.destinations(), MissingProducers: w.pipelines.Missing, Pipelines: w.dbs.Pipelines()}},
		Retention: upkeep.Retention{Log: log, MaxAge: cfg.DLQRetention, MaxRowsPerKey: cfg.DLQMaxRowsPerKey,
			AttemptMaxAge: cfg.AttemptRetention, Limits: jobs.Limits{ChunkRows: cfg.RetentionBatchSize, Budget: cfg.CronJobBudget}},
		AuditRetention:        upkeep.AuditRetention{MaxAge: cfg.AuditRetention, Limits: limits},
		AlertPendingThreshold: cfg.AlertPendingThreshold, AlertOldestPending: cfg.AlertOldestPending,
		RepeatMaxReplays: 2, RetentionBehindAfter: cfg.RetentionBehindAlert,
	}
	retentions, auditRetentions := sched.Retentions(), sched.AuditRetentions()
	frequent := append(sched.Rescues(), sched.ReplayTaskJobs()...)
	frequent = append(frequent, &enrichment.CatchUp{DB: db, Log: log, Sender: w.sender, MaxAttempts: cfg.EnrichmentMaxAttempts,
		LostAfter: cfg.EnrichmentQueuedStuck, Limits: limits, Configured: cfg.EnrichmentAPIKey != "", KeyProbe: keyProbe})
	var daily []jobs.Job
	// The daily retention jobs, continued on the frequent cron only while
	// their last run left expired rows behind (one job_runs read when not).
	for _, r := range retentions {
		frequent, daily = append(frequent, jobs.WhileMore{Job: r, Runs: runs}), append(daily, r)
	}
	for _, a := range auditRetentions {
		frequent, daily = append(frequent, jobs.WhileMore{Job: a, Runs: runs}), append(daily, a)
	}
	// Pending-high and oldest-pending per pipeline (the beer pipeline's keep their names).
	conditions := append(sched.PipelineAlerts(), sched.RowAlerts()...)
	conditions = append(conditions, alerts.JobFailing{DB: db}, enrichment.BreakerOpenCondition(db), enrichment.AuthFailingCondition(db))
	conditions = append(conditions, sched.RetentionBehindAlerts()...)
	frequent = append(frequent, &alerts.Engine{DB: db, Log: log, Outbox: w.outbox(), Reminder: cfg.AlertReminder,
		Conditions: conditions, Sources: sched.Lifecycles(cfg.GroupAutoResolve)})
	// After retention: counts what it deleted again (dlq_tally, dlq_activity).
	daily = append(daily, sched.TallyChecks()...)
	return &jobs.CronRouter{Log: log, Recorder: runs, Meter: w.meter, Jobs: map[string][]jobs.Job{
		jobs.Frequent: frequent,
		jobs.Daily:    daily,
	}}
}

// outbox records events in the shared database and delivers them to
// ALERT_CHANNELS (alerts.Outbox).
func (w worker) outbox() *alerts.Outbox {
	shared := w.dbs.Shared()
	return &alerts.Outbox{DB: shared.DB, Batch: shared.Batch, Database: shared.Name, Doer: platform.Fetch{}, Log: w.log,
		Channels: w.cfg.AlertChannels, Attempts: w.cfg.AlertDeliveryAttempts}
}

// externalQueues says whether a queue is the main queue of a configured
// pipeline whose consumer is external: the queues a failure report (POST
// /admin/attempts) may name.
func externalQueues(ps []config.Pipeline) func(string) bool {
	queues := map[string]bool{}
	for _, p := range ps {
		if p.Consumer == config.ConsumerExternal {
			queues[p.Queue] = true
		}
	}
	return func(q string) bool { return queues[q] }
}
