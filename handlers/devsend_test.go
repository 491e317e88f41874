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

func TestDevSendRejectsMissingQueueOrMessages(t *testing.T) {
	api := newAPI(t)
	sender := &queuetest.Sender{}
	api.DevSender = sender
	h := api.Handler()
	for name, body := range map[string]string{
		"no queue":         `{"messages":[{"body":"x"}]}`,
		"empty queue":      devSendBody("", 1),
		"no messages":      `{"queue":"q"}`,
		"empty messages":   devSendBody("q", 0),
		"101 messages":     devSendBody("q", 101),
		"bad content type": `{"queue":"q","messages":[{"body":"x"},{"body":"y","content_type":"v8"}]}`,
		"unknown type":     `{"queue":"q","messages":[{"body":"x","content_type":"xml"}]}`,
	} {
		rec, env := do(h, "POST", "/__dev/send", body, adminHeaders)
		want := "queue and 1..100 messages are required"
		if strings.Contains(name, "type") {
			want = "content_type must be text, json or bytes"
		}
		if rec.Code != 400 || env.Error == nil || env.Error.Code != "INVALID_REQUEST" || env.Error.Message != want {
			t.Errorf("%s: %d %s", name, rec.Code, rec.Body)
		}
	}
	if sender.Calls != 0 {
		t.Fatalf("rejected requests sent %d batches", sender.Calls)
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
