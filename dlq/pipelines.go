package dlq

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/redrive/redrive/config"
)

// The configured pipelines (var PIPELINES, config.Pipeline): a pipeline's
// rows are the rows whose source_queue is its queue; the row key is stored
// in beer_id, its first label in beer_name, its second in brewer.
//
// They are set once per isolate, before it serves anything (SetPipelines,
// from main.go), and read by every filter, row object and capture; until
// then (and in tests that do not set them) the beer pipeline alone.
var pipelines atomic.Pointer[[]config.Pipeline]

func init() { SetPipelines([]config.Pipeline{config.BeerPipeline()}) }

// SetPipelines sets the configured pipelines (validated by config).
func SetPipelines(ps []config.Pipeline) {
	cp := append([]config.Pipeline(nil), ps...)
	pipelines.Store(&cp)
}

// Pipelines returns the configured pipelines, in configuration order.
func Pipelines() []config.Pipeline { return *pipelines.Load() }

// PipelineByName returns the configured pipeline named name.
func PipelineByName(name string) (config.Pipeline, bool) {
	for _, p := range Pipelines() {
		if p.Name == name {
			return p, true
		}
	}
	return config.Pipeline{}, false
}

// PipelineOfQueue returns the pipeline whose main queue is q.
func PipelineOfQueue(q string) (config.Pipeline, bool) {
	for _, p := range Pipelines() {
		if p.Queue == q {
			return p, true
		}
	}
	return config.Pipeline{}, false
}

// PipelineQueue resolves a pipeline filter: its queue ("" for no filter,
// name ""), or UNKNOWN_PIPELINE.
func PipelineQueue(name string) (string, error) {
	if name == "" {
		return "", nil
	}
	p, ok := PipelineByName(name)
	if !ok {
		var names []string
		for _, p := range Pipelines() {
			names = append(names, p.Name)
		}
		return "", InputErr("UNKNOWN_PIPELINE", "pipeline must be a configured pipeline (%s); got %q",
			strings.Join(names, ", "), ClipName(name))
	}
	return p.Queue, nil
}

// ClipName is s cut to 64 bytes (with an ellipsis), for an error message that
// quotes a name the caller gave.
func ClipName(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}

// sqlString is s as an SQL string literal. Only names config validated
// reach it (pipeline, queue and label names: letters, digits, - and _), and
// it doubles quotes all the same.
func sqlString(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// pipelineFieldsSQL is the json_object arguments of a row's pipeline, key
// and labels (the row object's additions; see Message): the pipeline whose
// queue is source_queue (null when none), beer_id as the key, and the
// pipeline's label names over beer_name and brewer ({} for an
// unconfigured queue). Built from the configured pipelines: at most
// config.MaxPipelines WHEN terms.
func PipelineFieldsSQL() string {
	ps := Pipelines()
	if len(ps) == 0 {
		return `'pipeline', NULL, 'key', beer_id, 'labels', json_object()`
	}
	var name, labels strings.Builder
	name.WriteString("CASE source_queue")
	labels.WriteString("CASE source_queue")
	cols := [config.MaxLabels]string{"beer_name", "brewer"}
	for _, p := range ps {
		fmt.Fprintf(&name, " WHEN %s THEN %s", sqlString(p.Queue), sqlString(p.Name))
		var args []string
		for i, l := range p.Labels {
			args = append(args, sqlString(l.Name), cols[i])
		}
		fmt.Fprintf(&labels, " WHEN %s THEN json_object(%s)", sqlString(p.Queue), strings.Join(args, ", "))
	}
	name.WriteString(" END")
	labels.WriteString(" ELSE json_object() END")
	return `'pipeline', ` + name.String() + `, 'key', beer_id, 'labels', ` + labels.String()
}

// shapeOf is how the bodies of source queue q give their key and labels:
// its pipeline's pointers, or the beer pipeline's for a queue no pipeline
// names (what every queue got before pipelines).
func shapeOf(q string) config.Pipeline {
	if p, ok := PipelineOfQueue(q); ok {
		return p
	}
	return config.BeerPipeline()
}

// MaxLabelBytes bounds a stored label value (beer_name, brewer).
const MaxLabelBytes = MaxFilterText

// maxKeyBytes bounds a row key read through a pipeline's pointer (a
// longer one is poison): the key is indexed and filtered on (beer_id).
const maxKeyBytes = MaxFilterText

// parsePipelineBody reads a body's key and labels through p's pointers (a
// pipeline other than the beer one, which parseBody reads as it always
// did). The key is a JSON string (as is) or number (its JSON text); absent,
// null, empty or anything else is a Problem. Labels as textField.
func parsePipelineBody(trimmed []byte, p config.Pipeline) body {
	var b body
	for i, lp := range p.LabelPointers {
		raw, _ := lp.Resolve(trimmed)
		v := textField(raw)
		if i == 0 {
			b.BeerName = v
		} else {
			b.Brewer = v
		}
	}
	key := "key " + p.Key
	raw, ok := p.KeyPointer.Resolve(trimmed)
	switch {
	case !ok:
		b.Problem = "no " + key
	case string(raw) == "null":
		b.Problem = key + " is null"
	case raw[0] == '"':
		if json.Unmarshal(raw, &b.BeerID) != nil {
			b.Problem = key + " is not a string or number"
		} else if b.BeerID == "" {
			b.Problem = "empty " + key
		}
	case raw[0] == '-' || (raw[0] >= '0' && raw[0] <= '9'):
		b.BeerID = string(raw)
	default:
		b.Problem = key + " is not a string or number"
	}
	if b.Problem == "" && len(b.BeerID) > maxKeyBytes {
		b.BeerID, b.Problem = "", fmt.Sprintf("%s is longer than %d bytes", key, maxKeyBytes)
	}
	return b
}
