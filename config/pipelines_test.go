package config

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/tailscale/hujson"

	"github.com/redrive/redrive/internal/wranglerconfig"
)

const ordersEntry = `{"name":"orders","queue":"e2e-orders","dlq":"e2e-orders-dlq","producer":"E2E_ORDERS_QUEUE","key":"/order/id","labels":[{"name":"customer","pointer":"/order/customer"}],"consumer":"external","alert_pending_threshold":50,"alert_oldest_hours":12,"retention_days":14}`

const beersEntry = `{"name":"beers","queue":"beer-enrichment","dlq":"beer-enrichment-dlq","producer":"ENRICHMENT_QUEUE","key":"/beer_id","labels":[{"name":"beer_name","pointer":"/beer_name"},{"name":"brewer","pointer":"/brewer"}],"consumer":"redrive"}`

func TestPipelinesUnsetIsTheBeerPipeline(t *testing.T) {
	c, problems := Load(env(map[string]string{"ALERT_PENDING_THRESHOLD": "7", "DLQ_RETENTION_DAYS": "9"}))
	if len(problems) != 0 || len(c.Pipelines) != 1 {
		t.Fatalf("pipelines %+v, problems %v", c.Pipelines, problems)
	}
	p := c.Pipelines[0]
	if p.Name != "beers" || p.Queue != "beer-enrichment" || p.DLQ != "beer-enrichment-dlq" || p.Producer != "ENRICHMENT_QUEUE" ||
		p.Key != "/beer_id" || len(p.Labels) != 2 || p.Labels[1].Name != "brewer" || p.Consumer != ConsumerRedrive || !p.IsBeer() {
		t.Errorf("default pipeline %+v", p)
	}
	if p.AlertPendingThreshold != 7 || p.AlertOldestPending != 24*time.Hour || p.Retention != 9*24*time.Hour {
		t.Errorf("default thresholds %d %v %v", p.AlertPendingThreshold, p.AlertOldestPending, p.Retention)
	}
	if len(p.KeyPointer) != 1 || p.KeyPointer[0] != "beer_id" || len(p.LabelPointers) != 2 {
		t.Errorf("pointers %v %v", p.KeyPointer, p.LabelPointers)
	}
}

func TestPipelinesDeclared(t *testing.T) {
	c, problems := Load(env(map[string]string{"PIPELINES": "[" + beersEntry + "," + ordersEntry + "]", "ALERT_OLDEST_HOURS": "30"}))
	if len(problems) != 0 || len(c.Pipelines) != 2 {
		t.Fatalf("pipelines %+v, problems %v", c.Pipelines, problems)
	}
	o, ok := c.PipelineByName("orders")
	if !ok || o.Queue != "e2e-orders" || o.DLQ != "e2e-orders-dlq" || o.Producer != "E2E_ORDERS_QUEUE" || o.Consumer != ConsumerExternal || o.IsBeer() {
		t.Fatalf("orders %+v", o)
	}
	if o.AlertPendingThreshold != 50 || o.AlertOldestPending != 12*time.Hour || o.Retention != 14*24*time.Hour {
		t.Errorf("orders thresholds %d %v %v", o.AlertPendingThreshold, o.AlertOldestPending, o.Retention)
	}
	if len(o.KeyPointer) != 2 || o.KeyPointer[1] != "id" || len(o.LabelPointers) != 1 || o.LabelPointers[0][1] != "customer" {
		t.Errorf("orders pointers %v %v", o.KeyPointer, o.LabelPointers)
	}
	b, _ := c.PipelineByName("beers")
	if b.AlertOldestPending != 30*time.Hour || b.AlertPendingThreshold != 100 || b.Retention != 30*24*time.Hour {
		t.Errorf("beers takes the global thresholds: %d %v %v", b.AlertPendingThreshold, b.AlertOldestPending, b.Retention)
	}
	if _, ok := c.PipelineByName("nope"); ok {
		t.Error("found an unknown pipeline")
	}
}

// A bad entry is a problem naming it and is off; the others stay on.
func TestPipelinesBadEntryIsOff(t *testing.T) {
	repl := func(old, new string) string { return strings.Replace(ordersEntry, old, new, 1) }
	for name, entry := range map[string]string{
		"bad name":           repl(`"orders"`, `"Orders"`),
		"long name":          repl(`"orders"`, `"`+strings.Repeat("o", 33)+`"`),
		"no queue":           repl(`"queue":"e2e-orders",`, ``),
		"queue is dlq":       repl(`"e2e-orders-dlq"`, `"e2e-orders"`),
		"bad producer":       repl(`"E2E_ORDERS_QUEUE"`, `"E2E ORDERS"`),
		"no key":             repl(`"key":"/order/id",`, ``),
		"bad key":            repl(`"/order/id"`, `"order/id"`),
		"bad escape":         repl(`"/order/id"`, `"/order/~2"`),
		"bad label pointer":  repl(`"/order/customer"`, `"x"`),
		"bad label name":     repl(`"customer"`, `"Customer"`),
		"three labels":       repl(`[{"name":"customer","pointer":"/order/customer"}]`, `[{"name":"a","pointer":"/a"},{"name":"b","pointer":"/b"},{"name":"c","pointer":"/c"}]`),
		"twice a label":      repl(`[{"name":"customer","pointer":"/order/customer"}]`, `[{"name":"a","pointer":"/a"},{"name":"a","pointer":"/b"}]`),
		"bad consumer":       repl(`"external"`, `"js"`),
		"redrive consumer":   repl(`"external"`, `"redrive"`),
		"unknown field":      repl(`"name"`, `"nmae":"x","name"`),
		"field in capitals":  repl(`"queue"`, `"QUEUE":"e2e-x","queue"`),
		"field twice":        repl(`"consumer":"external"`, `"consumer":"redrive","consumer":"external"`),
		"label field case":   repl(`"pointer":"/order/customer"`, `"Pointer":"/order/customer"`),
		"threshold 0":        repl(`"alert_pending_threshold":50`, `"alert_pending_threshold":0`),
		"threshold too big":  repl(`"alert_pending_threshold":50`, `"alert_pending_threshold":1000000001`),
		"oldest too big":     repl(`"alert_oldest_hours":12`, `"alert_oldest_hours":8761`),
		"retention 0":        repl(`"retention_days":14`, `"retention_days":0`),
		"retention fraction": repl(`"retention_days":14`, `"retention_days":1.5`),
		"not an object":      `"orders"`,
	} {
		t.Run(name, func(t *testing.T) {
			c, problems := Load(env(map[string]string{"PIPELINES": "[" + beersEntry + "," + entry + "]"}))
			if len(c.Pipelines) != 1 || c.Pipelines[0].Name != "beers" {
				t.Errorf("pipelines %+v, want beers alone", c.Pipelines)
			}
			if len(problems) != 1 || !strings.Contains(problems[0].Error(), "PIPELINES[1]") || !strings.Contains(problems[0].Error(), "off") {
				t.Errorf("problems %v", problems)
			}
		})
	}
}

func TestPipelinesDuplicatesAreOff(t *testing.T) {
	other := strings.NewReplacer(`"orders"`, `"other"`, `e2e-orders"`, `e2e-other"`, `e2e-orders-dlq`, `e2e-other-dlq`).Replace(ordersEntry)
	for name, second := range map[string]string{
		"same name":     strings.Replace(other, `"other"`, `"orders"`, 1),
		"same queue":    strings.Replace(other, `"e2e-other"`, `"e2e-orders"`, 1),
		"same dlq":      strings.Replace(other, `"e2e-other-dlq"`, `"e2e-orders-dlq"`, 1),
		"dlq is queue":  strings.Replace(other, `"e2e-other-dlq"`, `"e2e-orders"`, 1),
		"queue is dlq ": strings.Replace(other, `"e2e-other"`, `"e2e-orders-dlq"`, 1),
	} {
		c, problems := Load(env(map[string]string{"PIPELINES": "[" + ordersEntry + "," + second + "]"}))
		if len(c.Pipelines) != 1 || c.Pipelines[0].Name != "orders" || len(problems) != 1 {
			t.Errorf("%s: pipelines %+v, problems %v", name, c.Pipelines, problems)
		}
	}
	c, problems := Load(env(map[string]string{"PIPELINES": "[" + ordersEntry + "," + other + "]"}))
	if len(c.Pipelines) != 2 || len(problems) != 0 {
		t.Errorf("two distinct pipelines: %+v %v", c.Pipelines, problems)
	}
}

// JSON that is not an array of objects: reported, the beer pipeline stays on.
func TestPipelinesWholeVarErrorKeepsTheBeerPipeline(t *testing.T) {
	for _, raw := range []string{`{`, `{"name":"orders"}`, `null`, `"x"`, `[` + ordersEntry} {
		c, problems := Load(env(map[string]string{"PIPELINES": raw}))
		if len(c.Pipelines) != 1 || c.Pipelines[0].Name != "beers" || len(problems) != 1 || !strings.Contains(problems[0].Error(), "PIPELINES") {
			t.Errorf("%s: pipelines %+v, problems %v", raw, c.Pipelines, problems)
		}
	}
	c, problems := Load(env(map[string]string{"PIPELINES": `[]`}))
	if len(c.Pipelines) != 0 || len(problems) != 0 {
		t.Errorf("[]: pipelines %+v, problems %v", c.Pipelines, problems)
	}
}

func TestPipelinesAtMost16(t *testing.T) {
	var entries []string
	for i := range MaxPipelines + 1 {
		entries = append(entries, strings.NewReplacer(`"orders"`, `"p`+string(rune('a'+i))+`"`, `"e2e-orders"`, `"q`+string(rune('a'+i))+`"`,
			`"e2e-orders-dlq"`, `"d`+string(rune('a'+i))+`"`).Replace(ordersEntry))
	}
	c, problems := Load(env(map[string]string{"PIPELINES": "[" + strings.Join(entries, ",") + "]"}))
	if len(c.Pipelines) != MaxPipelines || len(problems) != 1 {
		t.Errorf("%d pipelines, problems %v", len(c.Pipelines), problems)
	}
}

// Whatever PIPELINES holds: no panic; every pipeline on is valid (checked
// again through ParsePipelines of itself); names, queues and dlqs unique.
// Seeds are in testdata/fuzz/FuzzParsePipelines.
func FuzzParsePipelines(f *testing.F) {
	f.Add("[" + beersEntry + "," + ordersEntry + "]")
	f.Add(`[{"name":"a","queue":"q","dlq":"d","producer":"P","key":"","labels":[],"consumer":"external"}]`)
	f.Add(`[{"name":"a","queue":"q","dlq":"d","producer":"P","key":"/a~","consumer":"external"}]`)
	f.Add(`{`)
	f.Fuzz(func(t *testing.T, raw string) {
		ps, _ := ParsePipelines(raw, 100, time.Hour, 24*time.Hour)
		seen := map[string]bool{}
		for _, p := range ps {
			if seen["n:"+p.Name] || seen[p.Queue] || seen[p.DLQ] || p.Queue == p.DLQ {
				t.Fatalf("duplicate in %+v", ps)
			}
			seen["n:"+p.Name], seen[p.Queue], seen[p.DLQ] = true, true, true
			if len(p.Labels) > MaxLabels || len(p.LabelPointers) != len(p.Labels) || p.KeyPointer == nil {
				t.Fatalf("pipeline %+v", p)
			}
			if p.Consumer == ConsumerRedrive && !p.IsBeer() {
				t.Fatalf("redrive consumes %s", p.Queue)
			}
			if p.AlertPendingThreshold < 1 || p.AlertOldestPending < time.Hour || p.Retention < 24*time.Hour {
				t.Fatalf("thresholds %+v", p)
			}
		}
	})
}

// Wire binds each pipeline's queue to its producer when the binding is
// present, lists it as missing (capture-only) otherwise, and captures every
// pipeline's DLQ and always the beer DLQ.
func TestWire(t *testing.T) {
	c, _ := Load(env(map[string]string{"PIPELINES": "[" + ordersEntry + "]"}))
	w := Wire(c.Pipelines, func(b string) bool { return b == "ENRICHMENT_QUEUE" })
	if w.Bindings["beer-enrichment"] != "ENRICHMENT_QUEUE" || len(w.Bindings) != 1 {
		t.Errorf("bindings %v", w.Bindings)
	}
	if w.Missing["e2e-orders"] != "E2E_ORDERS_QUEUE" || len(w.Missing) != 1 {
		t.Errorf("missing %v", w.Missing)
	}
	if w.SourceQueue["e2e-orders-dlq"] != "e2e-orders" || w.SourceQueue["beer-enrichment-dlq"] != "beer-enrichment" || len(w.SourceQueue) != 2 {
		t.Errorf("source queues %v", w.SourceQueue)
	}
	w = Wire(c.Pipelines, func(string) bool { return true })
	if w.Bindings["e2e-orders"] != "E2E_ORDERS_QUEUE" || len(w.Bindings) != 2 || len(w.Missing) != 0 {
		t.Errorf("all bound: %v %v", w.Bindings, w.Missing)
	}
	// The beer pipeline without its binding is capture-only too.
	c, _ = Load(env(nil))
	w = Wire(c.Pipelines, func(string) bool { return false })
	if len(w.Bindings) != 0 || w.Missing["beer-enrichment"] != "ENRICHMENT_QUEUE" {
		t.Errorf("nothing bound: %v %v", w.Bindings, w.Missing)
	}
}

// README "Add your own queue" stays under 15 lines, and its PIPELINES
// entry is valid as written.
func TestREADMEAddYourOwnQueue(t *testing.T) {
	raw, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(raw)
	start := strings.Index(text, "\n## Add your own queue\n")
	if start < 0 {
		t.Fatal(`README has no "## Add your own queue" section`)
	}
	section := text[start+1:]
	section = section[:3+strings.Index(section[3:], "\n## ")]
	if n := strings.Count(strings.TrimSpace(section), "\n") + 1; n >= 15 {
		t.Errorf("the section is %d lines, want under 15", n)
	}
	_, value, ok := strings.Cut(section, `"PIPELINES": `)
	if !ok {
		t.Fatal("no PIPELINES entry in the section")
	}
	// The entry as written in wrangler.jsonc vars (an array, or its JSON
	// in a string), read as the worker reads it.
	value, _, _ = strings.Cut(value, "\n```")
	std, err := hujson.Standardize([]byte(`{"PIPELINES": ` + value + `}`))
	if err != nil {
		t.Fatalf("PIPELINES value %s: %v", value, err)
	}
	var vars wranglerconfig.Vars
	if err := json.Unmarshal(std, &vars); err != nil {
		t.Fatalf("PIPELINES value %s: %v", value, err)
	}
	ps, problems := ParsePipelines(vars["PIPELINES"], 100, time.Hour, 24*time.Hour)
	if len(problems) != 0 || len(ps) != 2 || ps[1].Name != "orders" || ps[1].Consumer != ConsumerExternal {
		t.Errorf("README's PIPELINES: %+v %v", ps, problems)
	}
}

func TestPipelinesDatabase(t *testing.T) {
	own := strings.Replace(ordersEntry, `"consumer"`, `"database":"ORDERS_DB","consumer"`, 1)
	c, problems := Load(env(map[string]string{"PIPELINES": "[" + beersEntry + "," + own + "]"}))
	if len(problems) != 0 || len(c.Pipelines) != 2 {
		t.Fatalf("pipelines %+v, problems %v", c.Pipelines, problems)
	}
	if c.Pipelines[0].Database != SharedDatabase || c.Pipelines[1].Database != "ORDERS_DB" {
		t.Errorf("databases %q %q", c.Pipelines[0].Database, c.Pipelines[1].Database)
	}
	for _, bad := range []string{
		strings.Replace(beersEntry, `"consumer"`, `"database":"BEERS_DB","consumer"`, 1), // the beer pipeline stays in DB
		strings.Replace(ordersEntry, `"consumer"`, `"database":"orders-db","consumer"`, 1),
		strings.Replace(ordersEntry, `"consumer"`, `"database":"","consumer"`, 1),
		strings.Replace(ordersEntry, `"consumer"`, `"database":7,"consumer"`, 1),
	} {
		c, problems := Load(env(map[string]string{"PIPELINES": "[" + bad + "]"}))
		if len(problems) != 1 || len(c.Pipelines) != 0 {
			t.Errorf("%s: pipelines %+v, problems %v", bad, c.Pipelines, problems)
		}
	}
	// Naming the shared binding is the default.
	c, problems = Load(env(map[string]string{"PIPELINES": "[" + strings.Replace(beersEntry, `"consumer"`, `"database":"DB","consumer"`, 1) + "]"}))
	if len(problems) != 0 || c.Pipelines[0].Database != SharedDatabase {
		t.Errorf("beers with DB: %+v %v", c.Pipelines, problems)
	}
}
