package config

import (
	"reflect"
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
	if c.ReplayStuckAfter != 10*time.Minute || c.DevRoutes {
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
	c, problems = Load(env(map[string]string{"DLQ_REPLAY_STUCK_MINUTES": "30", "DEV_ROUTES": "1"}))
	if c.ReplayStuckAfter != 30*time.Minute || !c.DevRoutes || len(problems) != 0 {
		t.Errorf("got %+v %v", c, problems)
	}
}

func TestScheduledJobKnobs(t *testing.T) {
	c, problems := Load(env(nil))
	if len(problems) != 0 {
		t.Fatal(problems)
	}
	want := Config{CronBatchSize: 1000, CronJobBudget: 20 * time.Second, DLQRetention: 30 * 24 * time.Hour,
		DLQMaxRowsPerKey: 1000, AttemptRetention: 7 * 24 * time.Hour, AuditRetention: 90 * 24 * time.Hour,
		AlertWebhookTimeout: 5 * time.Second, AlertPendingThreshold: 100, AlertOldestPending: 24 * time.Hour,
		AlertReminder: 360 * time.Minute}
	got := Config{CronBatchSize: c.CronBatchSize, CronJobBudget: c.CronJobBudget, DLQRetention: c.DLQRetention,
		DLQMaxRowsPerKey: c.DLQMaxRowsPerKey, AttemptRetention: c.AttemptRetention, AuditRetention: c.AuditRetention,
		AlertWebhookURL: c.AlertWebhookURL, AlertWebhookTimeout: c.AlertWebhookTimeout, AlertPendingThreshold: c.AlertPendingThreshold,
		AlertOldestPending: c.AlertOldestPending, AlertReminder: c.AlertReminder}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("defaults:\n got %+v\nwant %+v", got, want)
	}

	c, problems = Load(env(map[string]string{
		"CRON_BATCH_SIZE": "50", "CRON_JOB_BUDGET_SECONDS": "5", "DLQ_RETENTION_DAYS": "2", "DLQ_MAX_ROWS_PER_KEY": "3",
		"ATTEMPT_RETENTION_DAYS": "1", "AUDIT_RETENTION_DAYS": "10", "ALERT_WEBHOOK_URL": "http://127.0.0.1:9/hook",
		"ALERT_WEBHOOK_TIMEOUT_SECONDS": "2", "ALERT_PENDING_THRESHOLD": "5", "ALERT_OLDEST_HOURS": "2", "ALERT_REMINDER_MINUTES": "15",
	}))
	if len(problems) != 0 || c.CronBatchSize != 50 || c.CronJobBudget != 5*time.Second || c.DLQRetention != 48*time.Hour ||
		c.DLQMaxRowsPerKey != 3 || c.AttemptRetention != 24*time.Hour || c.AuditRetention != 240*time.Hour ||
		c.AlertWebhookURL != "http://127.0.0.1:9/hook" || c.AlertWebhookTimeout != 2*time.Second || c.AlertPendingThreshold != 5 ||
		c.AlertOldestPending != 2*time.Hour || c.AlertReminder != 15*time.Minute {
		t.Errorf("set values: %+v %v", c, problems)
	}

	// Out of bounds or malformed: default, and one problem each.
	bad := map[string]string{
		"CRON_BATCH_SIZE": "0", "CRON_JOB_BUDGET_SECONDS": "301", "DLQ_RETENTION_DAYS": "0", "DLQ_MAX_ROWS_PER_KEY": "x",
		"ATTEMPT_RETENTION_DAYS": "366", "AUDIT_RETENTION_DAYS": "-1", "ALERT_WEBHOOK_TIMEOUT_SECONDS": "31",
		"ALERT_PENDING_THRESHOLD": "0", "ALERT_OLDEST_HOURS": "1.5", "ALERT_REMINDER_MINUTES": "4",
		"ALERT_WEBHOOK_URL": "ftp://secret-token@example/x",
	}
	c, problems = Load(env(bad))
	if len(problems) != len(bad) {
		t.Errorf("problems = %d, want %d: %v", len(problems), len(bad), problems)
	}
	for _, p := range problems {
		if strings.Contains(p.Error(), "secret-token") {
			t.Errorf("problem echoes the webhook URL: %v", p)
		}
	}
	if c.CronBatchSize != 1000 || c.CronJobBudget != 20*time.Second || c.DLQRetention != 30*24*time.Hour || c.DLQMaxRowsPerKey != 1000 ||
		c.AttemptRetention != 7*24*time.Hour || c.AuditRetention != 90*24*time.Hour || c.AlertWebhookTimeout != 5*time.Second ||
		c.AlertPendingThreshold != 100 || c.AlertOldestPending != 24*time.Hour || c.AlertReminder != 360*time.Minute || c.AlertWebhookURL != "" {
		t.Errorf("bad values must fall back to defaults: %+v", c)
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

func TestEnrichmentQueuedStuckKnob(t *testing.T) {
	c, problems := Load(env(nil))
	if c.EnrichmentQueuedStuck != time.Hour || len(problems) != 0 {
		t.Fatalf("default %v %v", c.EnrichmentQueuedStuck, problems)
	}
	for raw, want := range map[string]time.Duration{"15": 15 * time.Minute, "10080": 7 * 24 * time.Hour, "90": 90 * time.Minute} {
		c, problems := Load(env(map[string]string{"ENRICHMENT_QUEUED_STUCK_MINUTES": raw}))
		if c.EnrichmentQueuedStuck != want || len(problems) != 0 {
			t.Errorf("%s: %v %v", raw, c.EnrichmentQueuedStuck, problems)
		}
	}
	// Below the bound (close to the 5-minute cron), above a week, or not a number: default and reported.
	for _, raw := range []string{"14", "5", "10081", "1h", "-60"} {
		c, problems := Load(env(map[string]string{"ENRICHMENT_QUEUED_STUCK_MINUTES": raw}))
		if c.EnrichmentQueuedStuck != time.Hour || len(problems) != 1 || !strings.Contains(problems[0].Error(), "ENRICHMENT_QUEUED_STUCK_MINUTES") {
			t.Errorf("%s: %v %v", raw, c.EnrichmentQueuedStuck, problems)
		}
	}
}

func TestRetentionBatchSize(t *testing.T) {
	c, problems := Load(env(nil))
	if c.RetentionBatchSize != 10000 || len(problems) != 0 {
		t.Fatalf("default %d %v", c.RetentionBatchSize, problems)
	}
	c, problems = Load(env(map[string]string{"DLQ_RETENTION_BATCH_SIZE": "500"}))
	if c.RetentionBatchSize != 500 || len(problems) != 0 {
		t.Fatalf("set %d %v", c.RetentionBatchSize, problems)
	}
	c, problems = Load(env(map[string]string{"DLQ_RETENTION_BATCH_SIZE": "50001"}))
	if c.RetentionBatchSize != 10000 || len(problems) != 1 {
		t.Fatalf("out of range %d %v", c.RetentionBatchSize, problems)
	}
}

func TestD1RetryBase(t *testing.T) {
	c, problems := Load(env(nil))
	if c.D1RetryBase != 300*time.Second || len(problems) != 0 {
		t.Fatalf("default %v %v", c.D1RetryBase, problems)
	}
	for raw, want := range map[string]time.Duration{"1": time.Second, "3600": time.Hour, "60": time.Minute} {
		c, problems := Load(env(map[string]string{"D1_RETRY_BASE_SECONDS": raw}))
		if c.D1RetryBase != want || len(problems) != 0 {
			t.Errorf("%s: %v %v", raw, c.D1RetryBase, problems)
		}
	}
	for _, raw := range []string{"0", "3601", "-5", "5m", "1.5"} {
		c, problems := Load(env(map[string]string{"D1_RETRY_BASE_SECONDS": raw}))
		if c.D1RetryBase != 300*time.Second || len(problems) != 1 || !strings.Contains(problems[0].Error(), "D1_RETRY_BASE_SECONDS") {
			t.Errorf("%s: %v %v", raw, c.D1RetryBase, problems)
		}
	}
}

func TestRetentionBehindAlertBounds(t *testing.T) {
	c, problems := Load(env(nil))
	if c.RetentionBehindAlert != time.Hour || len(problems) != 0 {
		t.Errorf("default %v %v", c.RetentionBehindAlert, problems)
	}
	for v, want := range map[string]time.Duration{"5": 5 * time.Minute, "10080": 7 * 24 * time.Hour} {
		c, problems = Load(env(map[string]string{"RETENTION_BEHIND_ALERT_MINUTES": v}))
		if c.RetentionBehindAlert != want || len(problems) != 0 {
			t.Errorf("%s: %v %v", v, c.RetentionBehindAlert, problems)
		}
	}
	for _, v := range []string{"4", "10081", "0", "-5", "1h"} {
		c, problems = Load(env(map[string]string{"RETENTION_BEHIND_ALERT_MINUTES": v}))
		if c.RetentionBehindAlert != time.Hour || len(problems) != 1 || !strings.Contains(problems[0].Error(), "RETENTION_BEHIND_ALERT_MINUTES") {
			t.Errorf("%s: want the default and one problem, got %v %v", v, c.RetentionBehindAlert, problems)
		}
	}
}

// The provider's key and the webhook's token go only to https://, or to
// http:// on a loopback host; any other URL is a problem, and the secret is
// not sent: the provider's key is dropped (calls are off), the webhook off.
func TestSecretURLsWantHTTPS(t *testing.T) {
	for _, c := range []struct {
		url string
		ok  bool
	}{
		{"https://provider.example/v1/chat/completions", true},
		{"http://127.0.0.1:8787/chat", true},
		{"http://localhost:8787/chat", true},
		{"http://[::1]:8787/chat", true},
		{"http://provider.example/v1/chat/completions", false},
		{"http://10.1.2.3/chat", false},
		{"ftp://provider.example/x", false},
		{"not a url", false},
	} {
		got, problems := Load(env(map[string]string{"ENRICHMENT_API_URL": c.url, "ENRICHMENT_API_KEY": "pk-secret",
			"ALERT_WEBHOOK_URL": c.url}))
		if c.ok {
			if len(problems) != 0 || got.EnrichmentAPIURL != c.url || got.EnrichmentAPIKey != "pk-secret" || got.AlertWebhookURL != c.url {
				t.Errorf("%s: %+v %v", c.url, got, problems)
			}
			continue
		}
		if len(problems) != 2 || got.EnrichmentAPIKey != "" || got.AlertWebhookURL != "" {
			t.Errorf("%s: want two problems, no provider key and no webhook: key %q webhook %q %v", c.url, got.EnrichmentAPIKey, got.AlertWebhookURL, problems)
		}
		for _, p := range problems {
			if strings.Contains(p.Error(), "pk-secret") {
				t.Errorf("%s: problem echoes the key: %v", c.url, p)
			}
		}
	}
}
