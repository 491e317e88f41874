package config

import (
	"strconv"
	"testing"

	"github.com/redrive/redrive/internal/sqlitetest"
	"github.com/redrive/redrive/internal/wranglerconfig"
	"github.com/redrive/redrive/queue"
)

// In every environment of wrangler.jsonc, the enrichment consumer's last
// attempt (max_retries + 1) is the one the worker treats as last
// (ENRICHMENT_MAX_ATTEMPTS), and every var parses and is in bounds.
func TestWranglerVarsMatchTheQueues(t *testing.T) {
	root, err := sqlitetest.Root()
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := wranglerconfig.Load(root)
	if err != nil {
		t.Fatal(err)
	}
	for name, env := range cfg.All() {
		c, ok := env.Consumer(queue.Enrichment)
		if !ok || c.MaxRetries == nil {
			t.Errorf("env %q: no %s consumer with max_retries", name, queue.Enrichment)
			continue
		}
		attempts, err := strconv.Atoi(env.Vars["ENRICHMENT_MAX_ATTEMPTS"])
		if err != nil || attempts != *c.MaxRetries+1 {
			t.Errorf("env %q: ENRICHMENT_MAX_ATTEMPTS %q, want max_retries + 1 = %d", name, env.Vars["ENRICHMENT_MAX_ATTEMPTS"], *c.MaxRetries+1)
		}
		if c.DeadLetterQueue != queue.EnrichmentDLQ {
			t.Errorf("env %q: %s dead-letters to %q, want %s", name, queue.Enrichment, c.DeadLetterQueue, queue.EnrichmentDLQ)
		}
		if _, problems := Load(func(k string) string { return env.Vars[k] }); len(problems) > 0 {
			t.Errorf("env %q: %v", name, problems)
		}
	}
}
