package config

import (
	"strconv"
	"strings"
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

// In every environment of wrangler.jsonc, each pipeline of PIPELINES has
// its DLQ consumed by this worker and its producer binding bound to its
// queue; a pipeline redrive consumes has its main queue consumed here,
// dead-lettering to its DLQ. The e2e environment declares beers, js and orders.
func TestWranglerPipelinesAreBound(t *testing.T) {
	root, err := sqlitetest.Root()
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := wranglerconfig.Load(root)
	if err != nil {
		t.Fatal(err)
	}
	for name, env := range cfg.All() {
		c, _ := Load(func(k string) string { return env.Vars[k] })
		var names []string
		for _, p := range c.Pipelines {
			names = append(names, p.Name)
			if _, ok := env.Consumer(p.DLQ); !ok {
				t.Errorf("env %q: pipeline %s: no consumer of its dlq %s", name, p.Name, p.DLQ)
			}
			bound := false
			for _, pr := range env.Queues.Producers {
				bound = bound || (pr.Binding == p.Producer && pr.Queue == p.Queue)
			}
			if !bound {
				t.Errorf("env %q: pipeline %s: no producer %s of %s", name, p.Name, p.Producer, p.Queue)
			}
			if p.Consumer == ConsumerRedrive {
				if main, ok := env.Consumer(p.Queue); !ok || main.DeadLetterQueue != p.DLQ {
					t.Errorf("env %q: pipeline %s: %s not consumed here with dead_letter_queue %s", name, p.Name, p.Queue, p.DLQ)
				}
			}
		}
		if name == "e2e" && strings.Join(names, ",") != "beers,js,orders,tickets" {
			t.Errorf("env e2e: pipelines %v, want beers, js, orders, tickets", names)
		}
	}
}

// In every environment of wrangler.jsonc, each pipeline's database is a
// D1 binding of that environment (DB, the shared one, in every
// environment); the e2e environment keeps every pipeline on DB and binds
// TICKETS_DB, where the tests of a pipeline on its own database run tickets
// (e2e Options.OwnDatabases).
func TestWranglerPipelineDatabasesAreBound(t *testing.T) {
	root, err := sqlitetest.Root()
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := wranglerconfig.Load(root)
	if err != nil {
		t.Fatal(err)
	}
	for name, env := range cfg.All() {
		bound := map[string]bool{}
		for _, b := range env.D1Bindings() {
			bound[b] = true
		}
		if !bound[SharedDatabase] {
			t.Errorf("env %q: no D1 binding %s", name, SharedDatabase)
		}
		c, _ := Load(func(k string) string { return env.Vars[k] })
		got := map[string]string{}
		for _, p := range c.Pipelines {
			got[p.Name] = p.Database
			if !bound[p.Database] {
				t.Errorf("env %q: pipeline %s: database %s is not a d1_databases binding", name, p.Name, p.Database)
			}
		}
		if name == "e2e" && (!bound["TICKETS_DB"] || got["tickets"] != SharedDatabase || got["beers"] != SharedDatabase || got["orders"] != SharedDatabase || got["js"] != SharedDatabase) {
			t.Errorf("env e2e: databases %v", got)
		}
	}
}
