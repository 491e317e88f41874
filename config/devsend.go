package config

import (
	"encoding/json"
	"fmt"
	"slices"
)

// DefaultDevSendQueues is DEV_SEND_QUEUES when unset: the beer DLQ through
// DEV_DLQ_QUEUE, the producer binding the top level of wrangler.jsonc has
// for POST /__dev/send (make dev).
const DefaultDevSendQueues = `{"beer-enrichment-dlq":"DEV_DLQ_QUEUE"}`

// ParseDevSendQueues reads DEV_SEND_QUEUES (raw; DefaultDevSendQueues when
// empty): a JSON object of queue name to producer binding name, the queues
// POST /__dev/send may send to besides the pipelines' main queues. Each bad
// entry is a problem and is left out; JSON that is not such an object is a
// problem and the default applies. It never panics.
func ParseDevSendQueues(raw string) (map[string]string, []error) {
	if raw == "" {
		raw = DefaultDevSendQueues
	}
	var entries map[string]json.RawMessage
	if err := json.Unmarshal([]byte(raw), &entries); err != nil || entries == nil {
		msg := "not a JSON object"
		if err != nil {
			msg = err.Error()
		}
		def, _ := ParseDevSendQueues(DefaultDevSendQueues)
		return def, []error{fmt.Errorf(`DEV_SEND_QUEUES: %s; want {"queue name":"producer binding name",...}; using %s`, msg, DefaultDevSendQueues)}
	}
	queues := make([]string, 0, len(entries))
	for q := range entries {
		queues = append(queues, q)
	}
	slices.Sort(queues) // the problems in a stable order
	out := map[string]string{}
	var problems []error
	for _, q := range queues {
		var binding string
		err := json.Unmarshal(entries[q], &binding)
		switch {
		case !validQueueName(q):
			err = fmt.Errorf("want a queue name")
		case err != nil:
			err = fmt.Errorf("binding %s: want a string", entries[q])
		case !validBindingName(binding):
			err = fmt.Errorf("binding %q: want a binding name", binding)
		}
		if err != nil {
			problems = append(problems, fmt.Errorf("DEV_SEND_QUEUES[%q]: %v; /__dev/send refuses that queue", q, err))
			continue
		}
		out[q] = binding
	}
	return out, problems
}
