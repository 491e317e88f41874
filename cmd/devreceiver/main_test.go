package main

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/alerts"
	"github.com/redrive/redrive/internal/receiver"
)

// A webhook channel given DevSecret delivers to the stand-in, and the
// stand-in logs the event without the secret or the signature.
func TestAChannelWithTheDevSecretDelivers(t *testing.T) {
	var logs bytes.Buffer
	s, err := start("127.0.0.1:0", receiver.Config{Secret: DevSecret, RoutingKey: DevRoutingKey, Log: slog.New(slog.NewJSONHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ev := alerts.Event{ID: alerts.EventID("dev"), Type: alerts.GroupOpened, Timestamp: "2026-03-01T10:00:00.000Z",
		Severity: "error", DedupKey: alerts.DedupKey("group:x"), Summary: "New group", Data: map[string]any{}}
	body, _ := json.Marshal(ev)
	ch := alerts.Channel{Name: "dev", Type: alerts.ChannelWebhook, URL: s.URL + receiver.WebhookPath, Secret: DevSecret}
	if err := ch.Check(); err != nil {
		t.Fatal(err)
	}
	out, _, err := ch.Request(ev, body, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(out.Method, out.URL, bytes.NewReader(out.Body))
	for k, v := range out.Header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d", resp.StatusCode)
	}
	if ws := s.Receiver.Webhooks(); len(ws) != 1 || ws[0].ID != ev.ID {
		t.Fatalf("received %+v", ws)
	}
	if l := logs.String(); !strings.Contains(l, ev.ID) || strings.Contains(l, strings.TrimPrefix(DevSecret, "whsec_")) || strings.Contains(l, out.Header["webhook-signature"]) {
		t.Fatalf("log:\n%s", l)
	}
}

func TestTheStandInRefuses(t *testing.T) {
	if _, err := start("0.0.0.0:0", receiver.Config{Secret: DevSecret, RoutingKey: DevRoutingKey}); err == nil {
		t.Fatal("listening beyond loopback was allowed")
	}
	if _, err := start("127.0.0.1:0", receiver.Config{Secret: "whsec_short", RoutingKey: DevRoutingKey}); err == nil {
		t.Fatal("a bad secret was accepted")
	}
}
