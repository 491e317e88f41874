// Package receiver is the stand-in for the services redrive's alert
// channels deliver to (alerts.Channel): a Standard Webhooks endpoint, a
// PagerDuty Events API v2 endpoint and a Slack incoming webhook in one
// http.Handler that records what it receives, with a switch that makes
// them fail for drills. `make dev` runs it (cmd/devreceiver) and the
// end-to-end tests start it on 127.0.0.1.
//
//	POST /webhook      Standard Webhooks: verified with Config.Secret; each webhook-id kept once
//	POST /v2/enqueue   PagerDuty Events API v2: routing_key must be Config.RoutingKey; incidents by dedup_key
//	POST /slack        Slack incoming webhook: {"text": ...}
//	POST /__fault      {"status": 503}: every route above answers 503 until {"status": 0}
//	GET  /__received   everything recorded (Received)
package receiver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/redrive/redrive/alerts"
	"github.com/redrive/redrive/clock"
)

// MaxBodyBytes is the largest request body read; a larger one is answered 413.
const MaxBodyBytes = 1 << 20

// DefaultTolerance is how far a webhook-timestamp may be from now when
// Config.Tolerance is zero (the reference libraries' 5 minutes).
const DefaultTolerance = 5 * time.Minute

// Config is what a Receiver accepts.
type Config struct {
	// Secret is the Standard Webhooks signing secret ("whsec_" and 24 to
	// 64 bytes in base64) POST /webhook verifies signatures with. Required.
	Secret string
	// RoutingKey is the one routing_key POST /v2/enqueue accepts. Required.
	RoutingKey string
	// Tolerance is how far a webhook-timestamp may be from now
	// (DefaultTolerance when zero).
	Tolerance time.Duration
	// Log gets one line per received event, without secrets (nil: none).
	Log *slog.Logger
	// Clock is the time signatures are checked at (nil: the wall clock).
	Clock clock.Clock
}

// Receiver is the stand-in's http.Handler. Its methods read what it
// recorded and set its fault; all are safe for concurrent use.
type Receiver struct {
	cfg Config
	mux *http.ServeMux

	mu        sync.Mutex
	changed   chan struct{} // closed and replaced on every change
	webhooks  []Webhook
	byID      map[string]int // webhook-id -> index in webhooks
	dupes     int
	pdEvents  []PagerDutyEvent
	incidents []Incident
	byDedup   map[string]int // dedup_key -> index in incidents
	generated int            // dedup keys made up for triggers without one
	slack     []string
	refused   int
	faulted   int
	fault     int
}

// Received is everything a Receiver recorded (GET /__received).
type Received struct {
	// Webhooks are the distinct messages POST /webhook accepted, in the
	// order first received.
	Webhooks []Webhook `json:"webhooks"`
	// WebhookDuplicates counts redeliveries of a webhook-id already received.
	WebhookDuplicates int `json:"webhook_duplicates"`
	// PagerDutyEvents are the events POST /v2/enqueue accepted, in order.
	PagerDutyEvents []PagerDutyEvent `json:"pagerduty_events"`
	// Incidents are the PagerDuty incidents by dedup_key, in the order opened.
	Incidents []Incident `json:"incidents"`
	// SlackTexts are the texts POST /slack received, in order.
	SlackTexts []string `json:"slack_texts"`
	// Refused counts requests answered 4xx: a bad signature, an invalid
	// event, a body too large, an unknown route.
	Refused int `json:"refused"`
	// Faulted counts requests answered the fault status.
	Faulted int `json:"faulted"`
	// Fault is the status every receiving route answers, 0 when none.
	Fault int `json:"fault"`
}

// New checks cfg and returns its Receiver.
func New(cfg Config) (*Receiver, error) {
	if _, err := alerts.SignStandardWebhook(cfg.Secret, "check", 0, nil); err != nil {
		return nil, fmt.Errorf("receiver: secret: %w", err)
	}
	if cfg.RoutingKey == "" {
		return nil, errors.New("receiver: a routing key is required")
	}
	if cfg.Tolerance == 0 {
		cfg.Tolerance = DefaultTolerance
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	r := &Receiver{cfg: cfg, changed: make(chan struct{}), byID: map[string]int{}, byDedup: map[string]int{}}
	r.mux = http.NewServeMux()
	r.mux.HandleFunc("POST "+WebhookPath, r.receiving(r.webhook))
	r.mux.HandleFunc("POST "+PagerDutyPath, r.receiving(r.enqueue))
	r.mux.HandleFunc("POST "+SlackPath, r.receiving(r.slackText))
	r.mux.HandleFunc("POST "+FaultPath, r.setFault)
	r.mux.HandleFunc("GET "+ReceivedPath, r.received)
	r.mux.HandleFunc("/", r.unknown)
	return r, nil
}

// The routes.
const (
	WebhookPath   = "/webhook"
	PagerDutyPath = "/v2/enqueue"
	SlackPath     = "/slack"
	FaultPath     = "/__fault"
	ReceivedPath  = "/__received"
)

// routeMethods is each route's method, for a 405's Allow header.
var routeMethods = map[string]string{
	WebhookPath: http.MethodPost, PagerDutyPath: http.MethodPost, SlackPath: http.MethodPost,
	FaultPath: http.MethodPost, ReceivedPath: http.MethodGet,
}

// ServeHTTP implements http.Handler.
func (r *Receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) { r.mux.ServeHTTP(w, req) }

// receiving wraps a receiving route: while a fault is set, the request is
// answered its status unread.
func (r *Receiver) receiving(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		fault := r.fault
		if fault != 0 {
			r.faulted++
			r.changedLocked()
		}
		r.mu.Unlock()
		if fault != 0 {
			writeJSON(w, fault, errorBody("fault", fmt.Sprintf("fault drill: every receiving route answers %d (POST %s {\"status\":0} clears it)", fault, FaultPath)))
			return
		}
		h(w, req)
	}
}

// SetFault makes every receiving route answer status (300 to 599); 0 or
// 200 clears it.
func (r *Receiver) SetFault(status int) error {
	if status == http.StatusOK {
		status = 0
	}
	if status != 0 && (status < 300 || status > 599) {
		return fmt.Errorf("receiver: fault status %d: want 0, 200, or 300 to 599", status)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.fault = status
	r.changedLocked()
	return nil
}

func (r *Receiver) setFault(w http.ResponseWriter, req *http.Request) {
	var in struct {
		Status *int `json:"status"`
	}
	body, ok := r.readBody(w, req)
	if !ok {
		return
	}
	if err := decodeStrict(body, &in); err != nil || in.Status == nil {
		r.refuse(w, http.StatusBadRequest, "invalid_body", `want {"status": <0, 200, or 300 to 599>}`)
		return
	}
	if err := r.SetFault(*in.Status); err != nil {
		r.refuse(w, http.StatusBadRequest, "invalid_status", err.Error())
		return
	}
	r.cfg.Log.Info("receiver: fault", "status", *in.Status)
	writeJSON(w, http.StatusOK, map[string]int{"fault": *in.Status})
}

func (r *Receiver) received(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, r.Received())
}

// unknown answers a path no route has (404) or a route's path with
// another method (405).
func (r *Receiver) unknown(w http.ResponseWriter, req *http.Request) {
	if m, ok := routeMethods[req.URL.Path]; ok {
		w.Header().Set("Allow", m)
		r.refuse(w, http.StatusMethodNotAllowed, "method_not_allowed", fmt.Sprintf("%s takes %s", req.URL.Path, m))
		return
	}
	r.refuse(w, http.StatusNotFound, "not_found", fmt.Sprintf("no route %s", req.URL.Path))
}

// Received returns a copy of everything recorded.
func (r *Receiver) Received() Received {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.receivedLocked()
}

func (r *Receiver) receivedLocked() Received {
	return Received{
		Webhooks:          append([]Webhook{}, r.webhooks...),
		WebhookDuplicates: r.dupes,
		PagerDutyEvents:   append([]PagerDutyEvent{}, r.pdEvents...),
		Incidents:         append([]Incident{}, r.incidents...),
		SlackTexts:        append([]string{}, r.slack...),
		Refused:           r.refused,
		Faulted:           r.faulted,
		Fault:             r.fault,
	}
}

// Webhooks returns the distinct webhook messages, in the order received.
func (r *Receiver) Webhooks() []Webhook { return r.Received().Webhooks }

// PagerDutyEvents returns the accepted PagerDuty events, in order.
func (r *Receiver) PagerDutyEvents() []PagerDutyEvent { return r.Received().PagerDutyEvents }

// Incidents returns the PagerDuty incidents, in the order opened.
func (r *Receiver) Incidents() []Incident { return r.Received().Incidents }

// SlackTexts returns the Slack texts, in order.
func (r *Receiver) SlackTexts() []string { return r.Received().SlackTexts }

// Wait returns what was recorded once cond holds for it, checking again
// on every change, or ctx's error (with the last look) when ctx ends first.
func (r *Receiver) Wait(ctx context.Context, cond func(Received) bool) (Received, error) {
	for {
		r.mu.Lock()
		got, changed := r.receivedLocked(), r.changed
		r.mu.Unlock()
		if cond(got) {
			return got, nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return got, ctx.Err()
		}
	}
}

// changedLocked wakes the Waits; r.mu is held.
func (r *Receiver) changedLocked() {
	close(r.changed)
	r.changed = make(chan struct{})
}

// readBody reads req's body up to MaxBodyBytes; on failure it has answered.
func (r *Receiver) readBody(w http.ResponseWriter, req *http.Request) ([]byte, bool) {
	body, err := io.ReadAll(http.MaxBytesReader(w, req.Body, MaxBodyBytes))
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		r.refuse(w, http.StatusRequestEntityTooLarge, "body_too_large", fmt.Sprintf("the body is over %d bytes", MaxBodyBytes))
		return nil, false
	case err != nil:
		r.refuse(w, http.StatusBadRequest, "unreadable_body", "the body could not be read")
		return nil, false
	}
	return body, true
}

// refuse counts a refused request and answers it the JSON error envelope.
func (r *Receiver) refuse(w http.ResponseWriter, status int, code, message string) {
	r.countRefused()
	writeJSON(w, status, errorBody(code, message))
}

func (r *Receiver) countRefused() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.refused++
	r.changedLocked()
}

// errorBody is the envelope of every refusal but PagerDuty's:
// {"error": {"code": ..., "message": ...}}.
func errorBody(code, message string) any {
	return map[string]map[string]string{"error": {"code": code, "message": message}}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// decodeStrict decodes one JSON value with no unknown field and nothing after it.
func decodeStrict(body []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("data after the JSON value")
	}
	return nil
}
