package config

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/tailscale/hujson"

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

// In every environment of wrangler.jsonc, each queue of DEV_SEND_QUEUES (its
// default at the top level) is sent to through a producer binding of that
// queue; the e2e and bench environments name the queues their tests send
// to through POST /__dev/send.
func TestWranglerDevSendQueuesAreBound(t *testing.T) {
	root, err := sqlitetest.Root()
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := wranglerconfig.Load(root)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{
		"":      {"beer-enrichment-dlq"},
		"e2e":   {"beer-enrichment-dlq", "e2e-js-produce", "e2e-orders-dlq", "e2e-tickets-dlq", "e2e-unrouted"},
		"bench": {"beer-enrichment-dlq", "bench1-dlq", "bench2-dlq", "bench3-dlq", "bench4-dlq"},
	}
	for name, env := range cfg.All() {
		c, _ := Load(func(k string) string { return env.Vars[k] })
		var queues []string
		for q, binding := range c.DevSendQueues {
			queues = append(queues, q)
			bound := false
			for _, pr := range env.Queues.Producers {
				bound = bound || (pr.Binding == binding && pr.Queue == q)
			}
			if !bound {
				t.Errorf("env %q: DEV_SEND_QUEUES: no producer %s of %s", name, binding, q)
			}
		}
		slices.Sort(queues)
		if w, ok := want[name]; ok && !slices.Equal(queues, w) {
			t.Errorf("env %q: DEV_SEND_QUEUES has %v, want %v", name, queues, w)
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

// wrangler.jsonc writes its structured vars (PIPELINES, DEV_SEND_QUEUES) as
// JSON, not as JSON escaped in a string; the string form still works: in
// every environment, each structured var given as a string holding the same
// JSON loads the same Config as the JSON value.
func TestWranglerStructuredVarsEitherForm(t *testing.T) {
	root, err := sqlitetest.Root()
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile(filepath.Join(root, "wrangler.jsonc"))
	if err != nil {
		t.Fatal(err)
	}
	std, err := hujson.Standardize(src)
	if err != nil {
		t.Fatal(err)
	}
	type rawEnv struct {
		Vars map[string]json.RawMessage `json:"vars"`
	}
	var raw struct {
		rawEnv
		Env map[string]rawEnv `json:"env"`
	}
	if err := json.Unmarshal(std, &raw); err != nil {
		t.Fatal(err)
	}
	envs := map[string]rawEnv{"": raw.rawEnv}
	for name, e := range raw.Env {
		envs[name] = e
	}
	path := filepath.Join(t.TempDir(), "wrangler.jsonc")
	load := func(vars map[string]json.RawMessage) Config {
		t.Helper()
		b, err := json.Marshal(map[string]any{"vars": vars})
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		cfg, err := wranglerconfig.LoadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		c, problems := Load(func(k string) string { return cfg.Vars[k] })
		if len(problems) != 0 {
			t.Errorf("%s: %v", b, problems)
		}
		return c
	}
	structured := 0
	for name, e := range envs {
		for _, v := range []string{"PIPELINES", "DEV_SEND_QUEUES"} {
			value, ok := e.Vars[v]
			if !ok {
				continue
			}
			if value[0] != '[' && value[0] != '{' {
				t.Errorf("env %q: %s is %.20s..., want it written as JSON (an array or object), not in a string", name, v, value)
				continue
			}
			structured++
			asJSON := load(e.Vars)
			text, err := json.Marshal(string(value)) // the same JSON, as written, in a string
			if err != nil {
				t.Fatal(err)
			}
			vars := maps.Clone(e.Vars)
			vars[v] = text
			asString := load(vars)
			if !reflect.DeepEqual(asJSON, asString) {
				t.Errorf("env %q: %s as JSON and as a string load different configs:\n%+v\n%+v", name, v, asJSON, asString)
			}
		}
	}
	if structured < 4 {
		t.Errorf("checked %d structured vars, want PIPELINES and DEV_SEND_QUEUES of env.e2e and env.bench", structured)
	}
}
