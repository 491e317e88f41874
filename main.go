//go:build js && wasm

// Command redrive is the Cloudflare Worker: it wires the runtime's env and
// bindings to the handlers and registers the fetch, queue and cron entries.
// platform/worker/worker.mjs runs main() once per isolate and dispatches
// every call to it, so main builds the services once and then blocks.
package main

import (
	"context"
	"log/slog"
	"os"
	"time"

	"github.com/syumai/workers"
	"github.com/syumai/workers/cloudflare/cron"
	"github.com/syumai/workers/cloudflare/queues"

	"github.com/redrive/redrive/config"
	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/enrichment"
	"github.com/redrive/redrive/handlers"
	"github.com/redrive/redrive/jobs"
	"github.com/redrive/redrive/metrics"
	"github.com/redrive/redrive/platform"
	"github.com/redrive/redrive/queue"
)

// version is set by the Makefile (-ldflags "-X main.version=...").
var version = "dev"

// Queues of the e2e environment's JavaScript worker (e2e/jsconsumer; bound
// only in wrangler.jsonc's env.e2e).
const (
	e2eJSQueue        = "e2e-js"
	e2eJSDLQ          = "e2e-js-dlq"
	e2eJSProduceQueue = "e2e-js-produce"
)

func main() {
	log := slog.New(slog.NewJSONHandler(os.Stdout, nil)).With("service", "redrive")
	cfg, problems := config.Load(platform.Getenv)
	for _, p := range problems {
		log.Error("config: invalid value", "problem", p.Error())
	}
	// Every statement's D1 meta (rows read and written, what D1 bills) is
	// counted for the operation it ran in: a route, a queue, a cron job.
	meter := &metrics.Meter{Interval: cfg.D1UsageFlush, Log: log}
	db, batch, err := platform.OpenD1("DB", func(ctx context.Context, m platform.D1Meta) {
		meter.Observe(ctx, metrics.Usage{Statements: 1, RowsRead: m.RowsRead, RowsWritten: m.RowsWritten})
	})
	if err != nil {
		log.Error("startup: no D1 binding", "error", err.Error())
	}
	meter.DB = db

	sender := platform.Sender{Bindings: map[string]string{queue.Enrichment: "ENRICHMENT_QUEUE"}}
	api := &handlers.API{
		DB:       db,
		Batch:    batch,
		Log:      log,
		Auth:     handlers.Auth{APIKey: cfg.APIKey, AdminSecret: cfg.AdminSecret},
		Version:  version,
		Instance: handlers.NewInstance(time.Now()),
		Beers:    &enrichment.Registry{DB: db, Sender: sender},
		Meter:    meter,

		Sender:             sender,
		BulkReplayMax:      cfg.BulkReplayMax,
		BulkAcknowledgeMax: cfg.BulkAcknowledgeMax,
	}
	if cfg.E2ERoutes && platform.HasBinding("E2E_DLQ_QUEUE") {
		api.TestSender = platform.Sender{Bindings: map[string]string{
			queue.Enrichment:    "ENRICHMENT_QUEUE",
			queue.EnrichmentDLQ: "E2E_DLQ_QUEUE",
			"e2e-unrouted":      "E2E_UNROUTED_QUEUE",
			e2eJSQueue:          "E2E_JS_QUEUE",
			e2eJSProduceQueue:   "E2E_JS_PRODUCE_QUEUE",
		}}
	}
	capture := &dlq.Capture{DB: db, Log: log, RetryBase: cfg.D1RetryBase,
		SourceQueue: map[string]string{queue.EnrichmentDLQ: queue.Enrichment}}
	consumers := map[string]handlers.BatchConsumer{queue.EnrichmentDLQ: capture}
	if cfg.E2ERoutes && platform.HasBinding("E2E_JS_QUEUE") {
		// The JavaScript worker of the e2e tests (e2e/jsconsumer): its DLQ is
		// captured here and its rows are replayed to its queue.
		sender.Bindings[e2eJSQueue] = "E2E_JS_QUEUE"
		capture.SourceQueue[e2eJSDLQ] = e2eJSQueue
		consumers[e2eJSDLQ] = capture
	}

	// Sender: messages that fail through no fault of their own (D1
	// unavailable, auth, config, quota, breaker open) go back to the queue
	// as fresh delayed copies instead of spending their attempts.
	enricher := &enrichment.Consumer{DB: db, Log: log, Sender: sender,
		Provider: enrichment.ChatProvider{
			URL:     cfg.EnrichmentAPIURL,
			Model:   cfg.EnrichmentModel,
			APIKey:  cfg.EnrichmentAPIKey,
			Timeout: cfg.EnrichmentTimeout,
			Doer:    platform.Fetch{},
		},
		Policy: enrichment.Policy{
			Backoff:          enrichment.Backoff{Base: cfg.EnrichmentBackoffBase, Max: cfg.EnrichmentBackoffMax},
			MaxAttempts:      cfg.EnrichmentMaxAttempts,
			BreakerThreshold: cfg.BreakerThreshold,
			BreakerCooldown:  cfg.BreakerCooldown,
			DailyLimit:       cfg.DailyEnrichmentLimit,
			D1RetryBase:      cfg.D1RetryBase,
		},
	}
	consumers[queue.Enrichment] = enricher
	router := &handlers.QueueRouter{Log: log, Consumers: consumers, Meter: meter,
		// A queue with a consumer in wrangler.jsonc but none here: its
		// messages become DLQ rows (class unroutable) instead of being dropped.
		Unroutable: dlq.Unroutable(db, log, cfg.D1RetryBase),
	}
	limits := dlq.Limits{BatchSize: cfg.CronBatchSize, Budget: cfg.CronJobBudget}
	var notifier dlq.Notifier
	if cfg.AlertWebhookURL != "" {
		notifier = platform.Webhook{URL: cfg.AlertWebhookURL, Timeout: cfg.AlertWebhookTimeout}
	}
	crons := &handlers.CronRouter{Log: log, Recorder: metrics.JobRuns{DB: db}, Meter: meter, Jobs: map[string][]handlers.Job{
		jobs.Frequent: {
			&dlq.Rescue{DB: db, Log: log, StuckAfter: cfg.ReplayStuckAfter, Limits: limits},
			&enrichment.CatchUp{DB: db, Log: log, Sender: sender, MaxAttempts: cfg.EnrichmentMaxAttempts,
				LostAfter: cfg.EnrichmentQueuedStuck, Limits: limits},
			&dlq.Alerts{DB: db, Log: log, Notifier: notifier, Reminder: cfg.AlertReminder, Conditions: []dlq.Condition{
				dlq.PendingHigh{DB: db, Threshold: cfg.AlertPendingThreshold},
				dlq.OldestPending{DB: db, MaxAge: cfg.AlertOldestPending},
				dlq.RepeatFailures{DB: db, MaxReplays: 2},
				dlq.CapEvicting{DB: db},
				dlq.JobFailing{DB: db},
				enrichment.BreakerOpenCondition{DB: db},
				enrichment.AuthFailingCondition{DB: db},
			}},
		},
		jobs.Daily: {
			&dlq.Retention{DB: db, Log: log, MaxAge: cfg.DLQRetention, MaxRowsPerKey: cfg.DLQMaxRowsPerKey,
				AttemptMaxAge: cfg.AttemptRetention, Limits: dlq.Limits{BatchSize: cfg.RetentionBatchSize, Budget: cfg.CronJobBudget}},
			&dlq.AuditRetention{DB: db, MaxAge: cfg.AuditRetention, Limits: limits},
			// After retention: counts what it deleted again (dlq_tally, dlq_activity).
			&dlq.TallyCheck{DB: db, Batch: batch},
		},
	}}

	platform.Serve(api.Handler(), handlers.MaxBodyBytes)
	queues.ConsumeNonBlock(func(b *queues.MessageBatch) error {
		return router.Consume(context.Background(), b.Queue, platform.Messages(b))
	})
	// The cron task always returns nil: syumai's cron turns an error into a
	// panic that ends this Go instance. Job failures are logged at ERROR,
	// recorded in job_runs and alerted on by CronRouter.Run and the alerts job.
	cron.ScheduleTaskNonBlock(func(ctx context.Context) error {
		ev, err := cron.NewEvent(ctx)
		if err != nil {
			log.Error("cron: no event", "error", err.Error())
			return nil
		}
		_ = crons.Run(ctx, ev.Cron, ev.ScheduledTime)
		return nil
	})
	workers.Ready()
	select {} // serve calls until the isolate goes away
}
