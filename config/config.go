// Package config reads redrive's vars and secrets from the Worker env in one
// place: every knob, its default and its bounds are here, and a bad value is
// reported (and replaced by its default) instead of silently misbehaving.
package config

import (
	"fmt"
	"strconv"
	"time"

	"github.com/redrive/redrive/access/cfaccess"
	"github.com/redrive/redrive/alerts"
	"github.com/redrive/redrive/outbound"
)

// Config is every setting of the worker. Vars come from wrangler.jsonc
// ("vars"), secrets from `wrangler secret put` (or .dev.vars locally). What
// each one means, with its default and bounds, is documented once: docs/configuration.md
// "Configuration" (a test checks its defaults and bounds against Load).
type Config struct {
	// APIKey is the secret API_KEY.
	APIKey string
	// AdminSecret is the secret ADMIN_SECRET.
	AdminSecret string

	// EnrichmentAPIURL is var ENRICHMENT_API_URL.
	EnrichmentAPIURL string
	// EnrichmentModel is var ENRICHMENT_MODEL.
	EnrichmentModel string
	// EnrichmentAPIKey is the secret ENRICHMENT_API_KEY.
	EnrichmentAPIKey string
	// EnrichmentTimeout is var ENRICHMENT_TIMEOUT_MS.
	EnrichmentTimeout time.Duration
	// EnrichmentBackoffBase is var ENRICHMENT_BACKOFF_BASE_SECONDS.
	EnrichmentBackoffBase time.Duration
	// EnrichmentBackoffMax is var ENRICHMENT_BACKOFF_MAX_SECONDS.
	EnrichmentBackoffMax time.Duration
	// EnrichmentMaxAttempts is var ENRICHMENT_MAX_ATTEMPTS.
	EnrichmentMaxAttempts int
	// BreakerThreshold is var ENRICHMENT_BREAKER_THRESHOLD.
	BreakerThreshold int
	// BreakerCooldown is var ENRICHMENT_BREAKER_COOLDOWN_SECONDS.
	BreakerCooldown time.Duration
	// BreakerMaxCooldown is var ENRICHMENT_BREAKER_MAX_COOLDOWN_SECONDS.
	BreakerMaxCooldown time.Duration
	// DailyEnrichmentLimit is var DAILY_ENRICHMENT_LIMIT.
	DailyEnrichmentLimit int64

	// EnrichmentQueuedStuck is var ENRICHMENT_QUEUED_STUCK_MINUTES.
	EnrichmentQueuedStuck time.Duration

	// D1RetryBase is var D1_RETRY_BASE_SECONDS.
	D1RetryBase time.Duration

	// ReplayStuckAfter is var DLQ_REPLAY_STUCK_MINUTES.
	ReplayStuckAfter time.Duration

	// Scheduled jobs (see docs/operations.md "Scheduled jobs").

	// CronBatchSize is var CRON_BATCH_SIZE.
	CronBatchSize int
	// RetentionBatchSize is var DLQ_RETENTION_BATCH_SIZE.
	RetentionBatchSize int
	// CronJobBudget is var CRON_JOB_BUDGET_SECONDS.
	CronJobBudget time.Duration
	// DLQRetention is var DLQ_RETENTION_DAYS.
	DLQRetention time.Duration
	// DLQMaxRowsPerKey is var DLQ_MAX_ROWS_PER_KEY.
	DLQMaxRowsPerKey int
	// AttemptRetention is var ATTEMPT_RETENTION_DAYS.
	AttemptRetention time.Duration
	// AuditRetention is var AUDIT_RETENTION_DAYS.
	AuditRetention time.Duration

	// AlertWebhookURL is the secret ALERT_WEBHOOK_URL.
	AlertWebhookURL string
	// AlertWebhookTimeout is var ALERT_WEBHOOK_TIMEOUT_SECONDS.
	AlertWebhookTimeout time.Duration
	// AlertPendingThreshold is var ALERT_PENDING_THRESHOLD.
	AlertPendingThreshold int64
	// AlertOldestPending is var ALERT_OLDEST_HOURS.
	AlertOldestPending time.Duration
	// AlertReminder is var ALERT_REMINDER_MINUTES.
	AlertReminder time.Duration
	// RetentionBehindAlert is var RETENTION_BEHIND_ALERT_MINUTES.
	RetentionBehindAlert time.Duration
	// AlertChannels is var ALERT_CHANNELS (config/alertchannels.go), or
	// ALERT_WEBHOOK_URL alone as one slack channel.
	AlertChannels []alerts.Channel
	// AlertDeliveryAttempts is var ALERT_DELIVERY_ATTEMPTS.
	AlertDeliveryAttempts int
	// GroupAutoResolve is var GROUP_AUTO_RESOLVE_MINUTES.
	GroupAutoResolve time.Duration

	// BulkReplayMax is var DLQ_BULK_REPLAY_MAX.
	BulkReplayMax int
	// BulkAcknowledgeMax is var DLQ_BULK_ACKNOWLEDGE_MAX.
	BulkAcknowledgeMax int

	// D1UsageFlush is var D1_USAGE_FLUSH_SECONDS.
	D1UsageFlush time.Duration

	// DevRoutes is var DEV_ROUTES.
	DevRoutes bool
	// DevSendQueues is var DEV_SEND_QUEUES: the queues POST /__dev/send
	// may send to besides the pipelines' main queues, each with its
	// producer binding (config/devsend.go).
	DevSendQueues map[string]string

	// Pipelines is var PIPELINES: the queues whose dead letters redrive
	// captures, each validated (config/pipelines.go); the beer pipeline
	// alone when unset.
	Pipelines []Pipeline
	// ReportToken is the secret REPORT_TOKEN: the bearer token external
	// consumers report failed attempts with (POST /admin/attempts).
	ReportToken string
	// Access is Cloudflare Access sign-in (docs/configuration.md): off
	// (TeamDomain empty) unless ACCESS_TEAM_DOMAIN and ACCESS_AUD are set.
	Access Access
}

// Access is the Cloudflare Access application requests come through.
type Access struct {
	// TeamDomain is var ACCESS_TEAM_DOMAIN (https://<team>.cloudflareaccess.com), the tokens' issuer.
	TeamDomain string
	// Audience is var ACCESS_AUD: the application's AUD tag.
	Audience string
	// CertsURL is var ACCESS_CERTS_URL: where the team's keys are fetched
	// ("": TeamDomain's /cdn-cgi/access/certs; the stand-in's locally).
	CertsURL string
	// Roles is var ACCESS_ROLES: who gets which role and pipelines.
	Roles cfaccess.Rules
}

// On reports whether Access sign-in is configured.
func (a Access) On() bool { return a.TeamDomain != "" }

// Load reads the config through getenv. Invalid values are replaced by their
// defaults and returned as problems for the caller to log loudly.
func Load(getenv func(string) string) (Config, []error) {
	l := loader{getenv: getenv}
	return l.load(), l.problems
}

func (l *loader) load() Config {
	getenv := l.getenv
	c := Config{
		APIKey:           getenv("API_KEY"),
		AdminSecret:      getenv("ADMIN_SECRET"),
		EnrichmentAPIURL: l.str("ENRICHMENT_API_URL", "https://api.perplexity.ai/chat/completions"),
		EnrichmentModel:  l.str("ENRICHMENT_MODEL", "sonar"),
		EnrichmentAPIKey: getenv("ENRICHMENT_API_KEY"),
		ReplayStuckAfter: l.minutes("DLQ_REPLAY_STUCK_MINUTES", 10, 1, 24*60),
		DevRoutes:        l.str("DEV_ROUTES", "") == "1",

		CronBatchSize:         int(l.int("CRON_BATCH_SIZE", 1000, 1, 10000)),
		RetentionBatchSize:    int(l.int("DLQ_RETENTION_BATCH_SIZE", 10000, 100, 50000)),
		CronJobBudget:         l.seconds("CRON_JOB_BUDGET_SECONDS", 20, 1, 300),
		DLQRetention:          l.days("DLQ_RETENTION_DAYS", 30, 1, 3650),
		DLQMaxRowsPerKey:      int(l.int("DLQ_MAX_ROWS_PER_KEY", 1000, 1, 1_000_000)),
		AttemptRetention:      l.days("ATTEMPT_RETENTION_DAYS", 7, 1, 365),
		AuditRetention:        l.days("AUDIT_RETENTION_DAYS", 90, 1, 3650),
		AlertWebhookURL:       l.webhookURL("ALERT_WEBHOOK_URL"),
		AlertWebhookTimeout:   l.seconds("ALERT_WEBHOOK_TIMEOUT_SECONDS", 5, 1, 30),
		AlertPendingThreshold: l.int("ALERT_PENDING_THRESHOLD", 100, 1, 1_000_000_000),
		AlertOldestPending:    time.Duration(l.int("ALERT_OLDEST_HOURS", 24, 1, 8760)) * time.Hour,
		AlertReminder:         l.minutes("ALERT_REMINDER_MINUTES", 360, 5, 10080),
		RetentionBehindAlert:  l.minutes("RETENTION_BEHIND_ALERT_MINUTES", 60, 5, 10080),
		EnrichmentTimeout:     l.ms("ENRICHMENT_TIMEOUT_MS", 15000, 100, 120000),
		EnrichmentBackoffBase: l.seconds("ENRICHMENT_BACKOFF_BASE_SECONDS", 30, 1, maxDelaySeconds),
		EnrichmentBackoffMax:  l.seconds("ENRICHMENT_BACKOFF_MAX_SECONDS", 3600, 1, maxDelaySeconds),
		EnrichmentMaxAttempts: int(l.int("ENRICHMENT_MAX_ATTEMPTS", 4, 1, 101)),
		BreakerThreshold:      int(l.int("ENRICHMENT_BREAKER_THRESHOLD", 5, 1, 1000)),
		BreakerCooldown:       l.seconds("ENRICHMENT_BREAKER_COOLDOWN_SECONDS", 60, 1, maxDelaySeconds),
		BreakerMaxCooldown:    l.seconds("ENRICHMENT_BREAKER_MAX_COOLDOWN_SECONDS", 900, 1, 1200),
		DailyEnrichmentLimit:  l.int("DAILY_ENRICHMENT_LIMIT", 500, 1, 10_000_000),
		BulkReplayMax:         int(l.int("DLQ_BULK_REPLAY_MAX", 500, 1, 5000)),
		BulkAcknowledgeMax:    int(l.int("DLQ_BULK_ACKNOWLEDGE_MAX", 5000, 1, 50000)),

		EnrichmentQueuedStuck: l.minutes("ENRICHMENT_QUEUED_STUCK_MINUTES", 60, 15, 10080),
		D1RetryBase:           l.seconds("D1_RETRY_BASE_SECONDS", 300, 1, 3600),
		D1UsageFlush:          time.Duration(l.int("D1_USAGE_FLUSH_SECONDS", 60, 0, 3600)) * time.Second,
	}
	c.ReportToken, c.Access = getenv("REPORT_TOKEN"), l.access()
	if err := outbound.CheckURL(c.EnrichmentAPIURL); err != nil {
		// The key goes only where outbound.CheckURL allows: without it no
		// provider call is made.
		l.problems = append(l.problems, fmt.Errorf("ENRICHMENT_API_URL: %v; provider calls are off (the key is not sent)", err))
		c.EnrichmentAPIKey = ""
	}
	var problems []error
	c.Pipelines, problems = ParsePipelines(l.str("PIPELINES", ""), c.AlertPendingThreshold, c.AlertOldestPending, c.DLQRetention)
	l.problems = append(l.problems, problems...)
	l.problems = append(l.problems, checkAccessPipelines(c.Access, c.Pipelines)...)
	l.incidents(&c)
	c.DevSendQueues, problems = ParseDevSendQueues(l.str("DEV_SEND_QUEUES", DefaultDevSendQueues))
	l.problems = append(l.problems, problems...)
	if c.EnrichmentBackoffBase > c.EnrichmentBackoffMax {
		l.problems = append(l.problems, fmt.Errorf("ENRICHMENT_BACKOFF_BASE_SECONDS (%s) exceeds ENRICHMENT_BACKOFF_MAX_SECONDS (%s); using the max as base",
			c.EnrichmentBackoffBase, c.EnrichmentBackoffMax))
		c.EnrichmentBackoffBase = c.EnrichmentBackoffMax
	}
	return c
}

// maxDelaySeconds is Cloudflare Queues' limit on a retry or send delay (12 h).
const maxDelaySeconds = 43200

// Spec is how Load reads one var: its default and, for integers, its bounds.
type Spec struct {
	Name, Default string
	// Min and Max bound an integer var; both 0 for other vars.
	Min, Max int64
}

type loader struct {
	getenv   func(string) string
	problems []error
	specs    []Spec
}

// Specs returns how Load reads each var, in the order it reads them.
func Specs() []Spec {
	l := loader{getenv: func(string) string { return "" }}
	l.load()
	return l.specs
}

func (l *loader) str(name, def string) string {
	l.specs = append(l.specs, Spec{Name: name, Default: def})
	if v := l.getenv(name); v != "" {
		return v
	}
	return def
}

// int reads an integer in [lo, hi]; unset means def.
func (l *loader) int(name string, def, lo, hi int64) int64 {
	l.specs = append(l.specs, Spec{Name: name, Default: strconv.FormatInt(def, 10), Min: lo, Max: hi})
	raw := l.getenv(name)
	if raw == "" {
		return def
	}
	n, err := strconv.ParseInt(raw, 10, 64)
	if err != nil || n < lo || n > hi {
		l.problems = append(l.problems, fmt.Errorf("%s=%q: want an integer in %d..%d; using %d", name, raw, lo, hi, def))
		return def
	}
	return n
}

func (l *loader) seconds(name string, def, lo, hi int64) time.Duration {
	return time.Duration(l.int(name, def, lo, hi)) * time.Second
}

func (l *loader) minutes(name string, def, lo, hi int64) time.Duration {
	return time.Duration(l.int(name, def, lo, hi)) * time.Minute
}

// webhookURL reads a URL a token may be sent to (outbound.CheckURL:
// https://, or http:// to a loopback host); anything else is reported
// (without echoing the URL, which may embed a token) and turns alerts off.
func (l *loader) webhookURL(name string) string {
	raw := l.getenv(name)
	if raw == "" {
		return ""
	}
	if err := outbound.CheckURL(raw); err != nil {
		l.problems = append(l.problems, fmt.Errorf("%s: %v; alerts are only logged", name, err))
		return ""
	}
	return raw
}

func (l *loader) days(name string, def, lo, hi int64) time.Duration {
	return time.Duration(l.int(name, def, lo, hi)) * 24 * time.Hour
}

func (l *loader) ms(name string, def, lo, hi int64) time.Duration {
	return time.Duration(l.int(name, def, lo, hi)) * time.Millisecond
}
