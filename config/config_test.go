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

func TestBulkLimits(t *testing.T) {
	c, problems := Load(env(nil))
	if c.BulkReplayMax != 500 || c.BulkAcknowledgeMax != 5000 || len(problems) != 0 {
		t.Errorf("defaults: replay %d acknowledge %d %v", c.BulkReplayMax, c.BulkAcknowledgeMax, problems)
	}
	c, problems = Load(env(map[string]string{"DLQ_BULK_REPLAY_MAX": "50", "DLQ_BULK_ACKNOWLEDGE_MAX": "100"}))
	if c.BulkReplayMax != 50 || c.BulkAcknowledgeMax != 100 || len(problems) != 0 {
		t.Errorf("set: %d %d %v", c.BulkReplayMax, c.BulkAcknowledgeMax, problems)
	}
	c, problems = Load(env(map[string]string{"DLQ_BULK_REPLAY_MAX": "0", "DLQ_BULK_ACKNOWLEDGE_MAX": "1e9"}))
	if c.BulkReplayMax != 500 || c.BulkAcknowledgeMax != 5000 || len(problems) != 2 {
		t.Errorf("out of range must fall back to defaults and be reported: %d %d %v", c.BulkReplayMax, c.BulkAcknowledgeMax, problems)
	}
}
