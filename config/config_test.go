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
