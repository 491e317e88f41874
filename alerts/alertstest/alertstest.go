// Package alertstest has what tests of alerts' users share: a
// Slack-compatible receiver and an outbox that delivers to it.
package alertstest

import (
	"context"
	"database/sql"
	"encoding/json"
	"log/slog"
	"sync"

	"github.com/redrive/redrive/alerts"
	"github.com/redrive/redrive/outbound"
	"github.com/redrive/redrive/sqlbatch"
)

// Slack records the texts posted to it (an outbound.Doer) and answers
// Status (200 when 0).
type Slack struct {
	mu     sync.Mutex
	texts  []string
	Status int
	Calls  int
}

// Do implements outbound.Doer.
func (s *Slack) Do(_ context.Context, req outbound.Request) (outbound.Response, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.Calls++
	if s.Status != 0 && s.Status != 200 {
		return outbound.Response{Status: s.Status}, nil
	}
	var body struct{ Text string }
	if err := json.Unmarshal(req.Body, &body); err != nil {
		return outbound.Response{Status: 400}, nil
	}
	s.texts = append(s.texts, body.Text)
	return outbound.Response{Status: 200}, nil
}

// Take returns the texts received since the last Take.
func (s *Slack) Take() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.texts
	s.texts = nil
	return out
}

// Outbox is an outbox in db delivering every event to doer as the slack
// channel "hook", without jitter.
func Outbox(db *sql.DB, doer outbound.Doer) *alerts.Outbox {
	return &alerts.Outbox{DB: db, Batch: sqlbatch.Tx{DB: db}, Doer: doer, Log: slog.New(slog.DiscardHandler), Attempts: 3,
		Jitter:   func() float64 { return 0 },
		Channels: []alerts.Channel{{Name: "hook", Type: alerts.ChannelSlack, URL: "http://127.0.0.1:9/hook"}}}
}
