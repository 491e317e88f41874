// Package config reads redrive's vars and secrets from the Worker env in one
// place: every knob, its default and its bounds are here, and a bad value is
// reported (and replaced by its default) instead of silently misbehaving.
package config

import (
	"fmt"
	"net/url"
	"strconv"
	"time"
)

// Config is every setting of the worker. Vars come from wrangler.jsonc
// ("vars"), secrets from `wrangler secret put` (or .dev.vars locally).
type Config struct {
	// APIKey (secret API_KEY) is required in X-API-Key on /admin/*.
	APIKey string
	// AdminSecret (secret ADMIN_SECRET) is required in X-Admin-Secret on /admin/*.
	AdminSecret string

	// EnrichmentAPIURL (ENRICHMENT_API_URL) is the OpenAI-compatible chat-completions endpoint.
	EnrichmentAPIURL string
	// EnrichmentModel (ENRICHMENT_MODEL) is the model name sent to the provider.
	EnrichmentModel string
	// EnrichmentAPIKey (secret ENRICHMENT_API_KEY) authenticates provider calls.
	// When unset every message fails with a configuration error (and is retried).
	EnrichmentAPIKey string
	// EnrichmentTimeout (ENRICHMENT_TIMEOUT_MS, default 15000, 100..120000) aborts a
	// provider call in flight (AbortSignal.timeout); a timeout is a transient failure.
	EnrichmentTimeout time.Duration
	// EnrichmentBackoffBase (ENRICHMENT_BACKOFF_BASE_SECONDS, default 30, 1..43200) is
	// the first cap of the exponential backoff: attempt n waits a uniformly random
	// 1 s..min(max, base*2^(n-1)) (full jitter).
	EnrichmentBackoffBase time.Duration
	// EnrichmentBackoffMax (ENRICHMENT_BACKOFF_MAX_SECONDS, default 3600, 1..43200) caps
	// the backoff; 43200 s is Queues' 12 h limit on a retry delay. Never below the base.
	EnrichmentBackoffMax time.Duration
	// EnrichmentMaxAttempts (ENRICHMENT_MAX_ATTEMPTS, default 4, 1..101) must equal the
	// main consumer's max_retries + 1: a failure on this attempt marks the beer failed.
	EnrichmentMaxAttempts int
	// BreakerThreshold (ENRICHMENT_BREAKER_THRESHOLD, default 5, 1..1000) consecutive
	// transient provider failures open the circuit breaker.
	BreakerThreshold int
	// BreakerCooldown (ENRICHMENT_BREAKER_COOLDOWN_SECONDS, default 60, 1..43200) is how
	// long the breaker stays open before one half-open probe may call the provider.
	BreakerCooldown time.Duration
	// DailyEnrichmentLimit (DAILY_ENRICHMENT_LIMIT, default 500, 1..10000000) is the
	// number of provider calls allowed per UTC day; further messages wait for the reset.
	DailyEnrichmentLimit int64

	// EnrichmentQueuedStuck (ENRICHMENT_QUEUED_STUCK_MINUTES, default 60, 15..10080) is
	// how long a `queued` beer may show no sign of its message (no update, no
	// retry due) before the catch-up job sends it again: its message was lost.
	// Keep it above the queue's worst backlog (a message that is only late is
	// sent twice; the consumer acks the extra one). The catch-up also treats a
	// gap this long between its own runs as downtime and then waits this long
	// before declaring anything lost, so it must stay well above the 5-minute cron.
	EnrichmentQueuedStuck time.Duration

	// D1RetryBase (D1_RETRY_BASE_SECONDS, default 300, 1..3600) spaces the
	// retries of work that failed because D1 is unavailable (down, refusing
	// queries, a table missing): the DLQ consumer retries a message it could
	// not store after min(12 h, base*2^(n-1)) on its n-th delivery, so with
	// the shipped max_retries of 10 it survives a D1 outage of about 45 h
	// (dlq.SurvivableOutage); the enrichment consumer hands such messages
	// back to its queue (a fresh copy, no attempt spent) after the same delay.
	D1RetryBase time.Duration

	// ReplayStuckAfter (DLQ_REPLAY_STUCK_MINUTES, default 10) is how long a DLQ row may
	// stay `replaying` before the rescue job returns it to `pending`.
	ReplayStuckAfter time.Duration

	// Scheduled jobs (see README "Scheduled jobs").

	// CronBatchSize (CRON_BATCH_SIZE, default 1000, 1..10000) is the most rows one
	// statement of a maintenance job deletes or updates (retention, rescue).
	CronBatchSize int
	// RetentionBatchSize (DLQ_RETENTION_BATCH_SIZE, default 10000, 100..50000) is
	// the most rows one DELETE of the daily retention removes. Deletes cost no
	// subrequest and little per row, so fewer, larger statements finish sooner
	// (100k expired rows: 1.8 s in batches of 1000, 1.2 s in batches of 10000,
	// locally); each holds D1 for about 0.1 s.
	RetentionBatchSize int
	// CronJobBudget (CRON_JOB_BUDGET_SECONDS, default 20, 1..300) is the wall time
	// after which a job starts no new batch; what is left waits for its next run.
	// Twenty seconds of mostly D1 waits is well inside the cron CPU limit (30 s).
	CronJobBudget time.Duration
	// DLQRetention (DLQ_RETENTION_DAYS, default 30, 1..3650) is how long an
	// `acknowledged` or `replayed` DLQ row is kept after that action.
	DLQRetention time.Duration
	// DLQMaxRowsPerKey (DLQ_MAX_ROWS_PER_KEY, default 1000, 1..1000000) is how many
	// `acknowledged`/`replayed` rows are kept per beer_id (newest first).
	DLQMaxRowsPerKey int
	// AttemptRetention (ATTEMPT_RETENTION_DAYS, default 7, 1..365) is how long a
	// message_attempts record is kept.
	AttemptRetention time.Duration
	// AuditRetention (AUDIT_RETENTION_DAYS, default 90, 1..3650) is how long an
	// admin audit record is kept.
	AuditRetention time.Duration

	// AlertWebhookURL (secret ALERT_WEBHOOK_URL, default none) receives alerts as
	// Slack-compatible JSON ({"text": ...}). Unset: alerts are only logged.
	// It usually embeds a token: set it with `wrangler secret put`, never log it.
	AlertWebhookURL string
	// AlertWebhookTimeout (ALERT_WEBHOOK_TIMEOUT_SECONDS, default 5, 1..30) aborts a
	// webhook call that takes longer.
	AlertWebhookTimeout time.Duration
	// AlertPendingThreshold (ALERT_PENDING_THRESHOLD, default 100, 1..1000000000):
	// alert while more DLQ rows than this are `pending`.
	AlertPendingThreshold int64
	// AlertOldestPending (ALERT_OLDEST_HOURS, default 24, 1..8760): alert while
	// the oldest `pending` DLQ row failed longer ago than this.
	AlertOldestPending time.Duration
	// AlertReminder (ALERT_REMINDER_MINUTES, default 360, 5..10080) is how often a
	// still-firing alert is sent again.
	AlertReminder time.Duration
	// RetentionBehindAlert (RETENTION_BEHIND_ALERT_MINUTES, default 60, 5..10080):
	// alert (retention_behind) while a retention job has had expired rows left
	// for longer than this, its continuation on the frequent cron included.
	// With the shipped settings a backlog of a million expired rows is gone
	// in a few runs; an hour leaves room for ten times that.
	RetentionBehindAlert time.Duration

	// BulkReplayMax (DLQ_BULK_REPLAY_MAX, default 500, 1..5000) is the most rows one
	// bulk replay request claims and sends; the caller continues with the
	// returned cursor. Each 100 rows cost one queue sendBatch subrequest.
	BulkReplayMax int
	// BulkAcknowledgeMax (DLQ_BULK_ACKNOWLEDGE_MAX, default 5000, 1..50000) is the
	// most rows one bulk acknowledge request moves (one UPDATE statement).
	BulkAcknowledgeMax int

	// D1UsageFlush (D1_USAGE_FLUSH_SECONDS, default 60, 0..3600) is the least
	// time between two writes of an isolate's D1 usage counts (rows read and
	// written per operation, /admin/metrics); each write is one row written.
	// An isolate that is evicted loses at most this much of its counts. 0
	// writes after every operation (the e2e budget tests).
	D1UsageFlush time.Duration

	// DevRoutes (DEV_ROUTES=1) enables POST /__dev/send, which puts any
	// message on a queue this worker has a producer binding for. Local runs
	// set it in .dev.vars and the e2e environment in its vars; production
	// never sets it.
	DevRoutes bool
}

// Load reads the config through getenv. Invalid values are replaced by their
// defaults and returned as problems for the caller to log loudly.
func Load(getenv func(string) string) (Config, []error) {
	l := loader{getenv: getenv}
	c := Config{
		APIKey:           getenv("API_KEY"),
		AdminSecret:      getenv("ADMIN_SECRET"),
		EnrichmentAPIURL: l.str("ENRICHMENT_API_URL", "https://api.perplexity.ai/chat/completions"),
		EnrichmentModel:  l.str("ENRICHMENT_MODEL", "sonar"),
		EnrichmentAPIKey: getenv("ENRICHMENT_API_KEY"),
		ReplayStuckAfter: l.minutes("DLQ_REPLAY_STUCK_MINUTES", 10, 1, 24*60),
		DevRoutes:        getenv("DEV_ROUTES") == "1",

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
		DailyEnrichmentLimit:  l.int("DAILY_ENRICHMENT_LIMIT", 500, 1, 10_000_000),
		BulkReplayMax:         int(l.int("DLQ_BULK_REPLAY_MAX", 500, 1, 5000)),
		BulkAcknowledgeMax:    int(l.int("DLQ_BULK_ACKNOWLEDGE_MAX", 5000, 1, 50000)),

		EnrichmentQueuedStuck: l.minutes("ENRICHMENT_QUEUED_STUCK_MINUTES", 60, 15, 10080),
		D1RetryBase:           l.seconds("D1_RETRY_BASE_SECONDS", 300, 1, 3600),
		D1UsageFlush:          time.Duration(l.int("D1_USAGE_FLUSH_SECONDS", 60, 0, 3600)) * time.Second,
	}
	if c.EnrichmentBackoffBase > c.EnrichmentBackoffMax {
		l.problems = append(l.problems, fmt.Errorf("ENRICHMENT_BACKOFF_BASE_SECONDS (%s) exceeds ENRICHMENT_BACKOFF_MAX_SECONDS (%s); using the max as base",
			c.EnrichmentBackoffBase, c.EnrichmentBackoffMax))
		c.EnrichmentBackoffBase = c.EnrichmentBackoffMax
	}
	return c, l.problems
}

// maxDelaySeconds is Cloudflare Queues' limit on a retry or send delay (12 h).
const maxDelaySeconds = 43200

type loader struct {
	getenv   func(string) string
	problems []error
}

func (l *loader) str(name, def string) string {
	if v := l.getenv(name); v != "" {
		return v
	}
	return def
}

// int reads an integer in [lo, hi]; unset means def.
func (l *loader) int(name string, def, lo, hi int64) int64 {
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

// webhookURL reads an absolute http(s) URL; anything else is reported
// (without echoing the value: it may hold a token) and ignored.
func (l *loader) webhookURL(name string) string {
	raw := l.getenv(name)
	if raw == "" {
		return ""
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		l.problems = append(l.problems, fmt.Errorf("%s: want an absolute http(s) URL; alerts are only logged", name))
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
