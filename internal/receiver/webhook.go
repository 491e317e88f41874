package receiver

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"

	"github.com/redrive/redrive/alerts"
)

// Webhook is one distinct message POST /webhook accepted.
type Webhook struct {
	// ID is its webhook-id (the event's id).
	ID string `json:"id"`
	// Timestamp is the webhook-timestamp of its first delivery.
	Timestamp int64 `json:"timestamp"`
	// Body is the body as received (the event's JSON).
	Body json.RawMessage `json:"body"`
	// Duplicates counts its redeliveries (the same webhook-id again).
	Duplicates int `json:"duplicates"`
}

// Event decodes the body.
func (wh Webhook) Event() (alerts.Event, error) {
	var ev alerts.Event
	err := json.Unmarshal(wh.Body, &ev)
	return ev, err
}

// webhook verifies a Standard Webhooks message (401 unless it verifies),
// requires its body to be a JSON object whose "id" is the webhook-id
// (400), and keeps it once per id: a redelivery is answered 200 too and
// counted as a duplicate.
func (r *Receiver) webhook(w http.ResponseWriter, req *http.Request) {
	body, ok := r.readBody(w, req)
	if !ok {
		return
	}
	id, ts := req.Header.Get(alerts.HeaderWebhookID), req.Header.Get(alerts.HeaderWebhookTimestamp)
	err := alerts.VerifyStandardWebhook(r.cfg.Secret, id, ts, req.Header.Get(alerts.HeaderWebhookSignature),
		body, r.cfg.Clock.Now(), r.cfg.Tolerance)
	if err != nil {
		r.cfg.Log.Warn("receiver: webhook refused", "webhook_id", id, "error", err.Error())
		r.refuse(w, http.StatusUnauthorized, "invalid_signature", err.Error())
		return
	}
	var ev alerts.Event
	if err := json.Unmarshal(body, &ev); err != nil || ev.ID != id {
		r.refuse(w, http.StatusBadRequest, "invalid_body", fmt.Sprintf("want an event (a JSON object) whose id is the webhook-id %q", id))
		return
	}
	sec, _ := strconv.ParseInt(ts, 10, 64) // verified: digits only
	dup := r.keepWebhook(Webhook{ID: id, Timestamp: sec, Body: json.RawMessage(body)})
	r.cfg.Log.Info("receiver: webhook", "webhook_id", id, "type", ev.Type, "severity", ev.Severity,
		"pipeline", ev.Pipeline, "summary", ev.Summary, "duplicate", dup)
	writeJSON(w, http.StatusOK, map[string]any{"id": id, "duplicate": dup})
}

// keepWebhook records wh, or counts it as a duplicate of its id.
func (r *Receiver) keepWebhook(wh Webhook) (duplicate bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	defer r.changedLocked()
	if i, ok := r.byID[wh.ID]; ok {
		r.webhooks[i].Duplicates++
		r.dupes++
		return true
	}
	r.byID[wh.ID] = len(r.webhooks)
	r.webhooks = append(r.webhooks, wh)
	return false
}

// slackText records a Slack incoming webhook's text and answers "ok" as
// Slack does.
func (r *Receiver) slackText(w http.ResponseWriter, req *http.Request) {
	body, ok := r.readBody(w, req)
	if !ok {
		return
	}
	var in struct {
		Text *string `json:"text"`
	}
	if err := json.Unmarshal(body, &in); err != nil || in.Text == nil || *in.Text == "" {
		r.refuse(w, http.StatusBadRequest, "invalid_payload", `want {"text": "<non-empty>"}`)
		return
	}
	r.mu.Lock()
	r.slack = append(r.slack, *in.Text)
	r.changedLocked()
	r.mu.Unlock()
	r.cfg.Log.Info("receiver: slack", "text", *in.Text)
	w.Header().Set("Content-Type", "text/plain")
	w.Write([]byte("ok"))
}
