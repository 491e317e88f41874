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
	EnrichmentAPIKey string

	// ReplayStuckAfter (DLQ_REPLAY_STUCK_MINUTES, default 10) is how long a DLQ row may
	// stay `replaying` before the rescue job returns it to `pending`.
	ReplayStuckAfter time.Duration

	// BulkReplayMax (DLQ_BULK_REPLAY_MAX, default 500, 1..5000) is the most rows one
	// bulk replay request claims and sends; the caller continues with the
	// returned cursor. Each 100 rows cost one queue sendBatch subrequest.
	BulkReplayMax int
	// BulkAcknowledgeMax (DLQ_BULK_ACKNOWLEDGE_MAX, default 5000, 1..50000) is the
	// most rows one bulk acknowledge request moves (one UPDATE statement).
	BulkAcknowledgeMax int

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

		BulkReplayMax:      int(l.int("DLQ_BULK_REPLAY_MAX", 500, 1, 5000)),
		BulkAcknowledgeMax: int(l.int("DLQ_BULK_ACKNOWLEDGE_MAX", 5000, 1, 50000)),
	}
	return c, l.problems
}

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
