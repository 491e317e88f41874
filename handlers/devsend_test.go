package handlers

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/queue"
	"github.com/redrive/redrive/queue/queuetest"
)

// devSendBody is a POST /__dev/send body with n text messages for q.
func devSendBody(q string, n int) string {
	msgs := make([]string, n)
	for i := range msgs {
		msgs[i] = `{"body":"x"}`
	}
	return `{"queue":"` + q + `","messages":[` + strings.Join(msgs, ",") + `]}`
}

// Every bad request is a 400 naming what is wrong, and sends nothing: a
// missing queue or message list, more than 100 messages, a queue without a
// producer binding, an unknown content type, a json body that is not JSON,
// a bytes body that is not base64, a delay outside 0..43,200 s.
func TestDevSendRejectsBadRequests(t *testing.T) {
	api := newAPI(t)
	sender := &queuetest.Sender{Unbound: []string{"nowhere"}}
	api.DevSender = sender
	h := api.Handler()
	msgs := func(m ...string) string { return `{"queue":"q","messages":[` + strings.Join(m, ",") + `]}` }
	required := "queue and 1..100 messages are required"
	for _, c := range []struct{ name, body, code, message string }{
		{"no queue", `{"messages":[{"body":"x"}]}`, "INVALID_REQUEST", required},
		{"empty queue", devSendBody("", 1), "INVALID_REQUEST", required},
		{"no messages", `{"queue":"q"}`, "INVALID_REQUEST", required},
		{"empty messages", devSendBody("q", 0), "INVALID_REQUEST", required},
		{"101 messages", devSendBody("q", 101), "INVALID_REQUEST", required},
		{"unbound queue", devSendBody("nowhere", 1), "UNKNOWN_QUEUE",
			`queue "nowhere" has no producer binding here (a pipeline's queue, or one DEV_SEND_QUEUES names)`},
		{"bad content type", msgs(`{"body":"x"}`, `{"body":"y","content_type":"v8"}`), "INVALID_REQUEST",
			"message 1: content_type must be text, json or bytes"},
		{"unknown type", msgs(`{"body":"x","content_type":"xml"}`), "INVALID_REQUEST", "message 0: content_type must be text, json or bytes"},
		{"json that is not", msgs(`{"body":"{not json","content_type":"json"}`), "INVALID_REQUEST", "message 0: body is not JSON (content_type json)"},
		{"bytes not base64", msgs(`{"body":"%%%","content_type":"bytes"}`), "INVALID_REQUEST", "message 0: body is not base64 (content_type bytes)"},
		{"negative delay", msgs(`{"body":"x","delay_seconds":-1}`), "INVALID_REQUEST", "message 0: delay_seconds must be 0..43200"},
		{"delay past 12 h", msgs(`{"body":"x"}`, `{"body":"x","delay_seconds":43201}`), "INVALID_REQUEST", "message 1: delay_seconds must be 0..43200"},
	} {
		rec, env := do(h, "POST", "/__dev/send", c.body, adminHeaders)
		if rec.Code != 400 || env.Error == nil || env.Error.Code != c.code || env.Error.Message != c.message {
			t.Errorf("%s: %d %s, want 400 %s %q", c.name, rec.Code, rec.Body, c.code, c.message)
		}
	}
	if sender.Calls != 0 {
		t.Fatalf("rejected requests sent %d batches", sender.Calls)
	}
	// The edges themselves go out.
	rec, _ := do(h, "POST", "/__dev/send", msgs(`{"body":"x","delay_seconds":43200}`, `{"body":"","content_type":"bytes"}`), adminHeaders)
	if rec.Code != 200 || sender.Calls != 1 {
		t.Fatalf("a 12-hour delay and an empty bytes body: %d %s", rec.Code, rec.Body)
	}
}

// Up to 100 messages go out in one call, each with the content type and
// delay it was given (text when none).
func TestDevSendSendsWhatItIsGiven(t *testing.T) {
	api := newAPI(t)
	sender := &queuetest.Sender{}
	api.DevSender = sender
	h := api.Handler()

	rec, env := do(h, "POST", "/__dev/send", devSendBody("beer-enrichment-dlq", 100), adminHeaders)
	var got map[string]int
	json.Unmarshal(mustJSON(env.Data), &got)
	if rec.Code != 200 || got["sent"] != 100 || len(sender.Sent["beer-enrichment-dlq"]) != 100 || sender.Calls != 1 {
		t.Fatalf("100 messages: %d %s (calls %d)", rec.Code, rec.Body, sender.Calls)
	}

	body := `{"queue":"q","messages":[{"body":"plain"},{"body":"t","content_type":"text","delay_seconds":0},
		{"body":"{\"beer_id\":\"1\"}","content_type":"json","delay_seconds":30},{"body":"aGk=","content_type":"bytes","delay_seconds":2}]}`
	rec, env = do(h, "POST", "/__dev/send", body, adminHeaders)
	json.Unmarshal(mustJSON(env.Data), &got)
	want := []queue.Outgoing{
		{Body: "plain", ContentType: queue.Text},
		{Body: "t", ContentType: queue.Text},
		{Body: `{"beer_id":"1"}`, ContentType: queue.JSON, Delay: 30 * time.Second},
		{Body: "aGk=", ContentType: queue.Bytes, Delay: 2 * time.Second},
	}
	sent := sender.Sent["q"]
	if rec.Code != 200 || got["sent"] != 4 || len(sent) != len(want) {
		t.Fatalf("mixed messages: %d %s %+v", rec.Code, rec.Body, sent)
	}
	for i := range want {
		if sent[i] != want[i] {
			t.Errorf("message %d: sent %+v, want %+v", i, sent[i], want[i])
		}
	}
}
