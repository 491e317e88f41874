// Package config reads redrive's vars and secrets from the Worker env in one
// place: every knob, its default and its bounds are here, and a bad value is
// reported (and replaced by its default) instead of silently misbehaving.
package config

import (
	"fmt"
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

	// ReplayStuckAfter (DLQ_REPLAY_STUCK_MINUTES, default 10) is how long a DLQ row may
	// stay `replaying` before the rescue job returns it to `pending`.
	ReplayStuckAfter time.Duration

	// E2ERoutes (E2E_ROUTES=1) enables the test send route; only the e2e
	// wrangler environment sets it (and binds the producers it needs).
	E2ERoutes bool
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
		E2ERoutes:        getenv("E2E_ROUTES") == "1",

		EnrichmentTimeout:     l.ms("ENRICHMENT_TIMEOUT_MS", 15000, 100, 120000),
		EnrichmentBackoffBase: l.seconds("ENRICHMENT_BACKOFF_BASE_SECONDS", 30, 1, maxDelaySeconds),
		EnrichmentBackoffMax:  l.seconds("ENRICHMENT_BACKOFF_MAX_SECONDS", 3600, 1, maxDelaySeconds),
		EnrichmentMaxAttempts: int(l.int("ENRICHMENT_MAX_ATTEMPTS", 4, 1, 101)),
		BreakerThreshold:      int(l.int("ENRICHMENT_BREAKER_THRESHOLD", 5, 1, 1000)),
		BreakerCooldown:       l.seconds("ENRICHMENT_BREAKER_COOLDOWN_SECONDS", 60, 1, maxDelaySeconds),
		DailyEnrichmentLimit:  l.int("DAILY_ENRICHMENT_LIMIT", 500, 1, 10_000_000),
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

func (l *loader) ms(name string, def, lo, hi int64) time.Duration {
	return time.Duration(l.int(name, def, lo, hi)) * time.Millisecond
}

func (l *loader) bool(name string, def bool) bool {
	raw := l.getenv(name)
	if raw == "" {
		return def
	}
	b, err := strconv.ParseBool(raw)
	if err != nil {
		l.problems = append(l.problems, fmt.Errorf("%s=%q: want true or false; using %v", name, raw, def))
		return def
	}
	return b
}
