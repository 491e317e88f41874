package config

import (
	"maps"
	"strings"
	"testing"
)

// Unset, DEV_SEND_QUEUES is the beer DLQ through DEV_DLQ_QUEUE (the
// top-level wrangler.jsonc binding); set, it is what it says, alone.
func TestDevSendQueues(t *testing.T) {
	c, problems := Load(env(nil))
	if want := map[string]string{BeerDLQ: "DEV_DLQ_QUEUE"}; len(problems) != 0 || !maps.Equal(c.DevSendQueues, want) {
		t.Errorf("unset: %v %v, want %v", c.DevSendQueues, problems, want)
	}
	c, problems = Load(env(map[string]string{"DEV_SEND_QUEUES": `{"e2e-unrouted":"E2E_UNROUTED_QUEUE","bench1-dlq":"BENCH1_DLQ_QUEUE"}`}))
	if want := map[string]string{"e2e-unrouted": "E2E_UNROUTED_QUEUE", "bench1-dlq": "BENCH1_DLQ_QUEUE"}; len(problems) != 0 || !maps.Equal(c.DevSendQueues, want) {
		t.Errorf("set: %v %v, want %v", c.DevSendQueues, problems, want)
	}
	c, problems = Load(env(map[string]string{"DEV_SEND_QUEUES": `{}`}))
	if len(problems) != 0 || c.DevSendQueues == nil || len(c.DevSendQueues) != 0 {
		t.Errorf("{}: %v %v, want no queue", c.DevSendQueues, problems)
	}
}

// JSON that is not an object of strings is a problem naming the var and
// the default applies; a bad entry is a problem naming it and is left out.
func TestDevSendQueuesInvalid(t *testing.T) {
	def := map[string]string{BeerDLQ: "DEV_DLQ_QUEUE"}
	for _, raw := range []string{`not json`, `["e2e-unrouted"]`, `"e2e-unrouted"`, `null`, `{"a":"B"`} {
		c, problems := Load(env(map[string]string{"DEV_SEND_QUEUES": raw}))
		if !maps.Equal(c.DevSendQueues, def) || len(problems) != 1 ||
			!strings.HasPrefix(problems[0].Error(), "DEV_SEND_QUEUES: ") || !strings.Contains(problems[0].Error(), "using "+DefaultDevSendQueues) {
			t.Errorf("%s: %v %v", raw, c.DevSendQueues, problems)
		}
	}
	for raw, bad := range map[string]string{
		`{"ok-q":"OK","bad queue":"B"}`:   `DEV_SEND_QUEUES["bad queue"]: want a queue name`,
		`{"ok-q":"OK","":"B"}`:            `DEV_SEND_QUEUES[""]: want a queue name`,
		`{"ok-q":"OK","q":"9B"}`:          `DEV_SEND_QUEUES["q"]: binding "9B": want a binding name`,
		`{"ok-q":"OK","q":""}`:            `DEV_SEND_QUEUES["q"]: binding "": want a binding name`,
		`{"ok-q":"OK","q":["B"]}`:         `DEV_SEND_QUEUES["q"]: binding ["B"]: want a string`,
		`{"ok-q":"OK","q":{"binding":1}}`: `DEV_SEND_QUEUES["q"]: binding {"binding":1}: want a string`,
	} {
		c, problems := Load(env(map[string]string{"DEV_SEND_QUEUES": raw}))
		if !maps.Equal(c.DevSendQueues, map[string]string{"ok-q": "OK"}) || len(problems) != 1 || !strings.HasPrefix(problems[0].Error(), bad) ||
			!strings.HasSuffix(problems[0].Error(), "/__dev/send refuses that queue") {
			t.Errorf("%s: %v %v, want the problem %s", raw, c.DevSendQueues, problems, bad)
		}
	}
}

func FuzzParseDevSendQueues(f *testing.F) {
	for _, s := range []string{"", DefaultDevSendQueues, `{"a":"B","c":1}`, `[]`, `{"a":null}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		queues, _ := ParseDevSendQueues(raw)
		for q, b := range queues {
			if !validQueueName(q) || !validBindingName(b) {
				t.Fatalf("%q: kept %q: %q", raw, q, b)
			}
		}
	})
}
