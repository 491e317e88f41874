package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/redrive/redrive/internal/jsonpointer"
	"github.com/redrive/redrive/internal/strictjson"
)

// Consumer values of a pipeline: who consumes its main queue.
const (
	// ConsumerRedrive: redrive consumes the main queue (only the beer
	// pipeline, whose consumer is enrichment/).
	ConsumerRedrive = "redrive"
	// ConsumerExternal: another worker consumes the main queue; redrive
	// consumes only the dead-letter queue.
	ConsumerExternal = "external"
)

// BeerQueue is the beer pipeline's main queue, the only one redrive itself
// consumes (queue.Enrichment).
const BeerQueue = "beer-enrichment"

// MaxLabels is the most labels a pipeline has: they are stored in the two
// label columns of dlq_messages (label_1, label_2).
const MaxLabels = 2

// MaxPipelines bounds PIPELINES: every scheduled per-pipeline loop (alerts,
// retention) runs over at most this many.
const MaxPipelines = 16

// Label is a value of a pipeline's messages that is shown, filtered and
// searched: a name and the JSON pointer that reads it from the body.
type Label struct {
	// Name is how the API names the label (^[a-z][a-z0-9_]{0,31}$).
	Name string `json:"name"`
	// Pointer is an RFC 6901 JSON pointer into the message body.
	Pointer string `json:"pointer"`
}

// Pipeline is one queue whose dead letters redrive captures (var
// PIPELINES; README "Add your own queue"). Its rows are the rows of
// dlq_messages whose source_queue is Queue.
type Pipeline struct {
	// Name names the pipeline in the API (^[a-z][a-z0-9_-]{0,31}$), unique.
	Name string `json:"name"`
	// Queue is the main queue, where its messages fail (and replays go).
	Queue string `json:"queue"`
	// DLQ is the queue's dead_letter_queue, which redrive consumes.
	DLQ string `json:"dlq"`
	// Producer is the producer binding of Queue that replay sends through.
	Producer string `json:"producer"`
	// Key is the JSON pointer of the row key (stored in column row_key).
	Key string `json:"key"`
	// Labels are at most MaxLabels labels (stored in label_1, label_2).
	Labels []Label `json:"labels"`
	// Consumer is ConsumerRedrive or ConsumerExternal.
	Consumer string `json:"consumer"`
	// AlertPendingThreshold is the pipeline's pending rows that raise its
	// pending-high alert (ALERT_PENDING_THRESHOLD when not given).
	AlertPendingThreshold int64 `json:"alert_pending_threshold"`
	// AlertOldestPending is the age of its oldest pending row that raises
	// its oldest-pending alert (ALERT_OLDEST_HOURS when not given).
	AlertOldestPending time.Duration `json:"-"`
	// Retention is how long its acknowledged/replayed rows are kept
	// (DLQ_RETENTION_DAYS when not given).
	Retention time.Duration `json:"-"`
	// Database is the D1 binding that holds its rows, attempts, groups,
	// tasks and kept counts (SharedDatabase when not given).
	Database string `json:"database"`

	// KeyPointer and LabelPointers are Key and Labels' pointers, parsed.
	KeyPointer    jsonpointer.Pointer   `json:"-"`
	LabelPointers []jsonpointer.Pointer `json:"-"`
}

// SharedDatabase is the D1 binding every pipeline uses unless it names its
// own: it also holds what is not a pipeline's (beers, jobs, alerts, audit of
// settings).
const SharedDatabase = "DB"

// BeerPipeline is the beer pipeline's entry: the seed's beer_id, beer_name
// and brewer are its key and labels. With PIPELINES unset it is the only one.
func BeerPipeline() Pipeline {
	p := Pipeline{Name: "beers", Queue: BeerQueue, DLQ: BeerDLQ, Producer: "ENRICHMENT_QUEUE",
		Key: "/beer_id", Labels: []Label{{Name: "beer_name", Pointer: "/beer_name"}, {Name: "brewer", Pointer: "/brewer"}},
		Consumer: ConsumerRedrive, Database: SharedDatabase}
	p.KeyPointer, p.LabelPointers = mustPointers(p)
	return p
}

// pipelineEntry is one PIPELINES entry as written (thresholds optional).
type pipelineEntry struct {
	Name                  string  `json:"name"`
	Queue                 string  `json:"queue"`
	DLQ                   string  `json:"dlq"`
	Producer              string  `json:"producer"`
	Key                   *string `json:"key"`
	Labels                []Label `json:"labels"`
	Consumer              string  `json:"consumer"`
	AlertPendingThreshold *int64  `json:"alert_pending_threshold"`
	AlertOldestHours      *int64  `json:"alert_oldest_hours"`
	RetentionDays         *int64  `json:"retention_days"`
	Database              *string `json:"database"`
}

// Bounds of the per-pipeline thresholds: those of the global vars.
const (
	minPendingThreshold, maxPendingThreshold = 1, 1_000_000_000
	minOldestHours, maxOldestHours           = 1, 8760
	minRetentionDays, maxRetentionDays       = 1, 3650
)

// ParsePipelines reads PIPELINES (raw) with the global defaults of the
// thresholds. Unset: the beer pipeline alone. Each bad entry is a problem
// and is left out (the others stay on); JSON that is not an array of
// objects is a problem and the beer pipeline alone stays on. It never panics
// (FuzzParsePipelines).
func ParsePipelines(raw string, pending int64, oldest, retention time.Duration) ([]Pipeline, []error) {
	def := BeerPipeline()
	def.AlertPendingThreshold, def.AlertOldestPending, def.Retention = pending, oldest, retention
	if raw == "" {
		return []Pipeline{def}, nil
	}
	var entries []json.RawMessage
	if err := json.Unmarshal([]byte(raw), &entries); err != nil || entries == nil {
		msg := "not a JSON array"
		if err != nil {
			msg = err.Error()
		}
		return []Pipeline{def}, []error{fmt.Errorf("PIPELINES: %s; only the beer pipeline is on", msg)}
	}
	var out []Pipeline
	var problems []error
	if len(entries) > MaxPipelines {
		problems = append(problems, fmt.Errorf("PIPELINES: %d entries, at most %d; entries after the %dth are off", len(entries), MaxPipelines, MaxPipelines))
		entries = entries[:MaxPipelines]
	}
	names, queues := map[string]bool{}, map[string]bool{}
	for i, e := range entries {
		p, err := parsePipeline(e, pending, oldest, retention)
		if err == nil {
			switch {
			case names[p.Name]:
				err = fmt.Errorf("name %q is used by an earlier entry", p.Name)
			case queues[p.Queue]:
				err = fmt.Errorf("queue %q is used by an earlier entry", p.Queue)
			case queues[p.DLQ]:
				err = fmt.Errorf("dlq %q is used by an earlier entry", p.DLQ)
			}
		}
		if err != nil {
			problems = append(problems, fmt.Errorf("PIPELINES[%d]%s: %w; this pipeline is off", i, entryName(e), err))
			continue
		}
		names[p.Name], queues[p.Queue], queues[p.DLQ] = true, true, true
		out = append(out, p)
	}
	return out, problems
}

// entryName is ` ("name")` when the entry has a readable name, for problems.
func entryName(e json.RawMessage) string {
	var n struct {
		Name string `json:"name"`
	}
	if json.Unmarshal(e, &n) == nil && validPipelineName(n.Name) {
		return fmt.Sprintf(" (%q)", n.Name)
	}
	return ""
}

// parsePipeline reads one PIPELINES entry (raw) into a Pipeline, with the
// global defaults of the thresholds it does not give. The error says what
// is wrong with the entry.
func parsePipeline(raw json.RawMessage, pending int64, oldest, retention time.Duration) (Pipeline, error) {
	var e pipelineEntry
	if err := strictjson.Decode(raw, &e, "the entry"); err != nil {
		return Pipeline{}, err
	}
	p := Pipeline{Name: e.Name, Queue: e.Queue, DLQ: e.DLQ, Producer: e.Producer, Labels: e.Labels, Consumer: e.Consumer,
		AlertPendingThreshold: pending, AlertOldestPending: oldest, Retention: retention, Database: SharedDatabase}
	if err := e.checkFields(); err != nil {
		return p, err
	}
	if e.Database != nil {
		switch {
		case !validBindingName(*e.Database):
			return p, fmt.Errorf("database %q: want a D1 binding name", *e.Database)
		case *e.Database != SharedDatabase && e.Queue == BeerQueue:
			return p, fmt.Errorf("database %q: the beer pipeline stays in %s, beside the beers enrichment keeps", *e.Database, SharedDatabase)
		}
		p.Database = *e.Database
	}
	if err := p.parsePointers(*e.Key, e.Labels); err != nil {
		return p, err
	}
	if err := p.applyThresholds(e); err != nil {
		return p, err
	}
	return p, nil
}

// checkFields checks the entry's names, queues, producer binding, key,
// label count and consumer: the first that is wrong is the error.
func (e pipelineEntry) checkFields() error {
	switch {
	case !validPipelineName(e.Name):
		return fmt.Errorf("name %q: want ^[a-z][a-z0-9_-]{0,31}$", e.Name)
	case !validQueueName(e.Queue):
		return fmt.Errorf("queue %q: want a queue name", e.Queue)
	case !validQueueName(e.DLQ):
		return fmt.Errorf("dlq %q: want a queue name", e.DLQ)
	case e.Queue == e.DLQ:
		return errors.New("queue and dlq are the same queue")
	case !validBindingName(e.Producer):
		return fmt.Errorf("producer %q: want a binding name", e.Producer)
	case e.Key == nil:
		return errors.New("key: want a JSON pointer")
	case len(e.Labels) > MaxLabels:
		return fmt.Errorf("%d labels, at most %d", len(e.Labels), MaxLabels)
	case e.Consumer != ConsumerRedrive && e.Consumer != ConsumerExternal:
		return fmt.Errorf("consumer %q: want %q or %q", e.Consumer, ConsumerRedrive, ConsumerExternal)
	case e.Consumer == ConsumerRedrive && e.Queue != BeerQueue:
		return fmt.Errorf("consumer %q: redrive consumes only %s (the beer pipeline); want %q", e.Consumer, BeerQueue, ConsumerExternal)
	}
	return nil
}

// parsePointers sets p's Key to key and parses it and the labels' pointers
// (KeyPointer, LabelPointers); label names must be valid and unique. p's
// Labels become empty, not nil, when there are none.
func (p *Pipeline) parsePointers(key string, labels []Label) error {
	p.Key = key
	var err error
	if p.KeyPointer, err = jsonpointer.Parse(p.Key); err != nil {
		return fmt.Errorf("key: %v", err)
	}
	seen := map[string]bool{}
	for _, l := range labels {
		if !validLabelName(l.Name) || seen[l.Name] {
			return fmt.Errorf("label name %q: want ^[a-z][a-z0-9_]{0,31}$, unique", l.Name)
		}
		seen[l.Name] = true
		lp, err := jsonpointer.Parse(l.Pointer)
		if err != nil {
			return fmt.Errorf("label %s: %v", l.Name, err)
		}
		p.LabelPointers = append(p.LabelPointers, lp)
	}
	if p.Labels == nil {
		p.Labels = []Label{}
	}
	return nil
}

// applyThresholds sets p's alert thresholds and retention to those the
// entry gives, each checked against the bounds of its global var.
func (p *Pipeline) applyThresholds(e pipelineEntry) error {
	if e.AlertPendingThreshold != nil {
		if v := *e.AlertPendingThreshold; v < minPendingThreshold || v > maxPendingThreshold {
			return fmt.Errorf("alert_pending_threshold %d: want %d..%d", v, minPendingThreshold, maxPendingThreshold)
		}
		p.AlertPendingThreshold = *e.AlertPendingThreshold
	}
	if e.AlertOldestHours != nil {
		if v := *e.AlertOldestHours; v < minOldestHours || v > maxOldestHours {
			return fmt.Errorf("alert_oldest_hours %d: want %d..%d", v, minOldestHours, maxOldestHours)
		}
		p.AlertOldestPending = time.Duration(*e.AlertOldestHours) * time.Hour
	}
	if e.RetentionDays != nil {
		if v := *e.RetentionDays; v < minRetentionDays || v > maxRetentionDays {
			return fmt.Errorf("retention_days %d: want %d..%d", v, minRetentionDays, maxRetentionDays)
		}
		p.Retention = time.Duration(*e.RetentionDays) * 24 * time.Hour
	}
	return nil
}

func mustPointers(p Pipeline) (jsonpointer.Pointer, []jsonpointer.Pointer) {
	key, err := jsonpointer.Parse(p.Key)
	if err != nil {
		panic(err)
	}
	var labels []jsonpointer.Pointer
	for _, l := range p.Labels {
		lp, err := jsonpointer.Parse(l.Pointer)
		if err != nil {
			panic(err)
		}
		labels = append(labels, lp)
	}
	return key, labels
}

// IsBeer reports whether p is the beer pipeline (its main queue is the one
// enrichment/ consumes).
func (p Pipeline) IsBeer() bool { return p.Queue == BeerQueue }

// PipelineByName returns the configured pipeline named name.
func (c Config) PipelineByName(name string) (Pipeline, bool) {
	for _, p := range c.Pipelines {
		if p.Name == name {
			return p, true
		}
	}
	return Pipeline{}, false
}

// Wiring is what the configured pipelines make of the worker (main.go): the
// sender's producer bindings, the DLQs captured, the capture-only queues.
type Wiring struct {
	// Bindings maps a main queue to its producer binding, for each pipeline
	// whose binding is present (and the beer queue's when present: the
	// enrichment consumer and the catch-up send to it).
	Bindings map[string]string
	// Missing maps a main queue to its producer binding that is absent: the
	// pipeline is capture-only.
	Missing map[string]string
	// SourceQueue maps each captured DLQ to its main queue (dlq.Capture).
	// The beer DLQ is always in it, as before PIPELINES: its rows have no
	// pipeline when the beer entry is off.
	SourceQueue map[string]string
}

// BeerDLQ is the beer pipeline's dead-letter queue (queue.EnrichmentDLQ).
const BeerDLQ = "beer-enrichment-dlq"

// Wire builds the Wiring of ps given which bindings the runtime has.
func Wire(ps []Pipeline, hasBinding func(string) bool) Wiring {
	w := Wiring{Bindings: map[string]string{}, Missing: map[string]string{}, SourceQueue: map[string]string{BeerDLQ: BeerQueue}}
	if hasBinding("ENRICHMENT_QUEUE") {
		w.Bindings[BeerQueue] = "ENRICHMENT_QUEUE"
	}
	for _, p := range ps {
		w.SourceQueue[p.DLQ] = p.Queue
		if hasBinding(p.Producer) {
			w.Bindings[p.Queue] = p.Producer
			continue
		}
		delete(w.Bindings, p.Queue)
		w.Missing[p.Queue] = p.Producer
	}
	return w
}
