package dlq

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/redrive/redrive/config"
	"github.com/redrive/redrive/internal/text"
)

// Pipelines are the configured pipelines (var PIPELINES, config.Pipeline),
// in configuration order: a pipeline's rows are the rows whose
// source_queue is its queue; the row key is stored in row_key, its first
// label in label_1, its second in label_2. A Store carries them to every
// filter, row object and capture it serves, and each service has them;
// main.go gives them to NewDatabases, which hands them to each database's
// store. Nil Pipelines are the beer pipeline alone (native tests, and
// every deployment before pipelines); an empty non-nil list is none.
type Pipelines []config.Pipeline

// All returns the pipelines in configuration order (nil: the beer one).
func (ps Pipelines) All() []config.Pipeline {
	if ps == nil {
		return []config.Pipeline{config.BeerPipeline()}
	}
	return ps
}

// ByName returns the pipeline named name.
func (ps Pipelines) ByName(name string) (config.Pipeline, bool) {
	for _, p := range ps.All() {
		if p.Name == name {
			return p, true
		}
	}
	return config.Pipeline{}, false
}

// OfQueue returns the pipeline whose main queue is q.
func (ps Pipelines) OfQueue(q string) (config.Pipeline, bool) {
	for _, p := range ps.All() {
		if p.Queue == q {
			return p, true
		}
	}
	return config.Pipeline{}, false
}

// Queue resolves a pipeline filter: its queue ("" for no filter, name
// ""), or UNKNOWN_PIPELINE.
func (ps Pipelines) Queue(name string) (string, error) {
	if name == "" {
		return "", nil
	}
	p, ok := ps.ByName(name)
	if !ok {
		var names []string
		for _, p := range ps.All() {
			names = append(names, p.Name)
		}
		return "", InputErr("UNKNOWN_PIPELINE", "pipeline must be a configured pipeline (%s); got %q",
			strings.Join(names, ", "), ClipName(name))
	}
	return p.Queue, nil
}

// ClipName is s cut to at most 64 bytes at a character boundary (with an ellipsis), for an error message that
// quotes a name the caller gave.
func ClipName(s string) string { return text.Clip(s, 64) }

// sqlString is s as an SQL string literal. Only names config validated
// reach it (pipeline, queue and label names: letters, digits, - and _), and
// it doubles quotes all the same.
func sqlString(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// FieldsSQL is the json_object arguments of a row's pipeline, key
// and labels (the row object's additions; see Message): the pipeline whose
// queue is source_queue (null when none), row_key as the key, and the
// pipeline's label names over label_1 and label_2 ({} for an
// unconfigured queue). Built from the configured pipelines: at most
// config.MaxPipelines WHEN terms.
func (ps Pipelines) FieldsSQL() string {
	if len(ps.All()) == 0 {
		return `'pipeline', NULL, 'key', row_key, 'labels', json_object()`
	}
	var name, labels strings.Builder
	name.WriteString("CASE source_queue")
	labels.WriteString("CASE source_queue")
	cols := [config.MaxLabels]string{"label_1", "label_2"}
	for _, p := range ps.All() {
		fmt.Fprintf(&name, " WHEN %s THEN %s", sqlString(p.Queue), sqlString(p.Name))
		var args []string
		for i, l := range p.Labels {
			args = append(args, sqlString(l.Name), cols[i])
		}
		fmt.Fprintf(&labels, " WHEN %s THEN json_object(%s)", sqlString(p.Queue), strings.Join(args, ", "))
	}
	name.WriteString(" END")
	labels.WriteString(" ELSE json_object() END")
	return `'pipeline', ` + name.String() + `, 'key', row_key, 'labels', ` + labels.String()
}

// shapeOf is how the bodies of source queue q give their key and labels:
// its pipeline's pointers, or the beer pipeline's for a queue no pipeline
// names (what every queue got before pipelines).
func (ps Pipelines) shapeOf(q string) config.Pipeline {
	if p, ok := ps.OfQueue(q); ok {
		return p
	}
	return config.BeerPipeline()
}

// MaxLabelBytes bounds a stored label value (label_1, label_2).
const MaxLabelBytes = MaxFilterText

// maxKeyBytes bounds a row key read through a pipeline's pointer (a
// longer one is poison): the key is indexed and filtered on (row_key).
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
			b.Label1 = v
		} else {
			b.Label2 = v
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
		if json.Unmarshal(raw, &b.Key) != nil {
			b.Problem = key + " is not a string or number"
		} else if b.Key == "" {
			b.Problem = "empty " + key
		}
	case raw[0] == '-' || (raw[0] >= '0' && raw[0] <= '9'):
		b.Key = string(raw)
	default:
		b.Problem = key + " is not a string or number"
	}
	if b.Problem == "" && len(b.Key) > maxKeyBytes {
		b.Key, b.Problem = "", fmt.Sprintf("%s is longer than %d bytes", key, maxKeyBytes)
	}
	return b
}
