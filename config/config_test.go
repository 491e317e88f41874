package config

import (
	"strings"
	"testing"
	"time"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestDefaults(t *testing.T) {
	c, problems := Load(env(nil))
	if len(problems) != 0 {
		t.Fatalf("problems with empty env: %v", problems)
	}
	if c.EnrichmentAPIURL != "https://api.perplexity.ai/chat/completions" || c.EnrichmentModel != "sonar" {
		t.Errorf("provider defaults: %+v", c)
	}
	if c.ReplayStuckAfter != 10*time.Minute || c.E2ERoutes {
		t.Errorf("defaults: %+v", c)
	}
}

func TestInvalidValuesFallBackAndAreReported(t *testing.T) {
	c, problems := Load(env(map[string]string{"DLQ_REPLAY_STUCK_MINUTES": "-4"}))
	if c.ReplayStuckAfter != 10*time.Minute {
		t.Errorf("ReplayStuckAfter = %v, want default", c.ReplayStuckAfter)
	}
	if len(problems) != 1 || !strings.Contains(problems[0].Error(), "DLQ_REPLAY_STUCK_MINUTES") {
		t.Errorf("problems = %v", problems)
	}
	c, problems = Load(env(map[string]string{"DLQ_REPLAY_STUCK_MINUTES": "30", "E2E_ROUTES": "1"}))
	if c.ReplayStuckAfter != 30*time.Minute || !c.E2ERoutes || len(problems) != 0 {
		t.Errorf("got %+v %v", c, problems)
	}
}

func TestEnrichmentPolicyDefaults(t *testing.T) {
	c, _ := Load(env(nil))
	if c.EnrichmentTimeout != 15*time.Second || c.EnrichmentBackoffBase != 30*time.Second || c.EnrichmentBackoffMax != time.Hour ||
		c.EnrichmentMaxAttempts != 4 || c.BreakerThreshold != 5 || c.BreakerCooldown != time.Minute || c.DailyEnrichmentLimit != 500 {
		t.Errorf("enrichment defaults: %+v", c)
	}
}

func TestEnrichmentPolicyBounds(t *testing.T) {
	c, problems := Load(env(map[string]string{
		"ENRICHMENT_TIMEOUT_MS":               "250",
		"ENRICHMENT_BACKOFF_BASE_SECONDS":     "2",
		"ENRICHMENT_BACKOFF_MAX_SECONDS":      "43200",
		"ENRICHMENT_MAX_ATTEMPTS":             "11",
		"ENRICHMENT_BREAKER_THRESHOLD":        "3",
		"ENRICHMENT_BREAKER_COOLDOWN_SECONDS": "8",
		"DAILY_ENRICHMENT_LIMIT":              "2",
	}))
	if len(problems) != 0 || c.EnrichmentTimeout != 250*time.Millisecond || c.EnrichmentBackoffBase != 2*time.Second ||
		c.EnrichmentBackoffMax != 12*time.Hour || c.EnrichmentMaxAttempts != 11 || c.BreakerThreshold != 3 ||
		c.BreakerCooldown != 8*time.Second || c.DailyEnrichmentLimit != 2 {
		t.Errorf("got %+v %v", c, problems)
	}
	// Over Queues' 12 h delay limit, zero limits and a base above the max are all reported.
	c, problems = Load(env(map[string]string{
		"ENRICHMENT_BACKOFF_MAX_SECONDS": "43201",
		"DAILY_ENRICHMENT_LIMIT":         "0",
		"ENRICHMENT_TIMEOUT_MS":          "soon",
	}))
	if len(problems) != 3 || c.EnrichmentBackoffMax != time.Hour || c.DailyEnrichmentLimit != 500 || c.EnrichmentTimeout != 15*time.Second {
		t.Errorf("got %+v %v", c, problems)
	}
	c, problems = Load(env(map[string]string{"ENRICHMENT_BACKOFF_BASE_SECONDS": "120", "ENRICHMENT_BACKOFF_MAX_SECONDS": "60"}))
	if len(problems) != 1 || !strings.Contains(problems[0].Error(), "ENRICHMENT_BACKOFF_BASE_SECONDS") || c.EnrichmentBackoffBase != time.Minute {
		t.Errorf("base above max: %+v %v", c, problems)
	}
}
