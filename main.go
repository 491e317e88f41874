//go:build js && wasm

// Command redrive is the Cloudflare Worker: it wires the runtime's env and
// bindings to the handlers and registers the fetch, queue and cron entries.
// syumai/workers runs main() once per call, so everything here is per call.
package main

import (
	"context"
	"log/slog"
	"os"

	"github.com/syumai/workers"
	"github.com/syumai/workers/cloudflare/cron"
	"github.com/syumai/workers/cloudflare/fetch"
	"github.com/syumai/workers/cloudflare/queues"

	"github.com/redrive/redrive/config"
	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/enrichment"
	"github.com/redrive/redrive/handlers"
	"github.com/redrive/redrive/metrics"
	"github.com/redrive/redrive/platform"
	"github.com/redrive/redrive/queue"
)

// version is set by the Makefile (-ldflags "-X main.version=...").
var version = "dev"

// Cron expressions; they must match wrangler.jsonc's triggers.crons.
const (
	cronFrequent = "*/5 * * * *"
	cronDaily    = "17 3 * * *"
)

func main() {
	log := slog.New(slog.NewJSONHandler(os.Stdout, nil)).With("service", "redrive")
	db, err := platform.OpenD1("DB")
	if err != nil {
		log.Error("startup: no D1 binding", "error", err.Error())
	}
	cfg, problems := config.Load(platform.Getenv)
	for _, p := range problems {
		log.Error("config: invalid value", "problem", p.Error())
	}

	sender := platform.Sender{Bindings: map[string]string{queue.Enrichment: "ENRICHMENT_QUEUE"}}
	api := &handlers.API{
		DB:      db,
		Log:     log,
		Auth:    handlers.Auth{APIKey: cfg.APIKey, AdminSecret: cfg.AdminSecret},
		Version: version,

		Sender:             sender,
		BulkReplayMax:      cfg.BulkReplayMax,
		BulkAcknowledgeMax: cfg.BulkAcknowledgeMax,
	}
	if cfg.E2ERoutes && platform.HasBinding("E2E_DLQ_QUEUE") {
		api.TestSender = platform.Sender{Bindings: map[string]string{
			queue.Enrichment:    "ENRICHMENT_QUEUE",
			queue.EnrichmentDLQ: "E2E_DLQ_QUEUE",
			"e2e-unrouted":      "E2E_UNROUTED_QUEUE",
		}}
	}

	provider := enrichment.ChatProvider{
		URL:    cfg.EnrichmentAPIURL,
		Model:  cfg.EnrichmentModel,
		APIKey: cfg.EnrichmentAPIKey,
		Client: fetch.NewClient().HTTPClient(fetch.RedirectModeFollow),
	}
	router := &handlers.QueueRouter{Log: log, Consumers: map[string]handlers.BatchConsumer{
		queue.Enrichment:    &enrichment.Consumer{DB: db, Log: log, Provider: provider},
		queue.EnrichmentDLQ: &dlq.Capture{DB: db, Log: log, SourceQueue: map[string]string{queue.EnrichmentDLQ: queue.Enrichment}},
	}}
	crons := &handlers.CronRouter{Log: log, Recorder: metrics.JobRuns{DB: db}, Jobs: map[string][]handlers.Job{
		cronFrequent: {&dlq.Rescue{DB: db, Log: log, StuckAfter: cfg.ReplayStuckAfter}},
		cronDaily:    {},
	}}

	workers.ServeNonBlock(api.Handler())
	queues.ConsumeNonBlock(func(b *queues.MessageBatch) error {
		return router.Consume(context.Background(), b.Queue, platform.Messages(b))
	})
	cron.ScheduleTaskNonBlock(func(ctx context.Context) error {
		ev, err := cron.NewEvent(ctx)
		if err != nil {
			return err
		}
		return crons.Run(ctx, ev.Cron, ev.ScheduledTime)
	})
	workers.Ready()
	select {
	case <-workers.Done():
	case <-cron.Done():
	}
}
