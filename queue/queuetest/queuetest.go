// Package queuetest provides in-memory fakes of package queue's interfaces
// for native tests of the consumers.
package queuetest

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/redrive/redrive/queue"
)

// Message is a fake delivered message that records how it was settled.
type Message struct {
	MsgID   string
	Attempt int
	SentAt  time.Time
	Text    string
	// Type is the content type Body reports (queue.Text when empty: a
	// string body, as the runtime delivers one sent as text).
	Type       queue.ContentType
	Acked      bool
	Retried    bool
	RetryDelay time.Duration
}

var _ queue.Message = (*Message)(nil)

func (m *Message) ID() string           { return m.MsgID }
func (m *Message) Attempts() int        { return m.Attempt }
func (m *Message) Timestamp() time.Time { return m.SentAt }
func (m *Message) Body() (string, queue.ContentType) {
	if m.Type == "" {
		return m.Text, queue.Text
	}
	return m.Text, m.Type
}
func (m *Message) Ack()                  { m.Acked = true }
func (m *Message) Retry(d time.Duration) { m.Retried, m.RetryDelay = true, d }
func (m *Message) Settled() bool         { return m.Acked || m.Retried }

// New returns a text message with attempt 1.
func New(id, body string) *Message {
	return &Message{MsgID: id, Attempt: 1, Text: body, SentAt: time.Unix(0, 0)}
}

// Batch converts fakes to the interface slice the consumers take.
func Batch(msgs ...*Message) []queue.Message {
	out := make([]queue.Message, len(msgs))
	for i, m := range msgs {
		out[i] = m
	}
	return out
}

// Sender records sent messages per queue; Err, when set, fails every send.
type Sender struct {
	mu   sync.Mutex
	Sent map[string][]queue.Outgoing
	Err  error
	// Calls counts SendBatch calls.
	Calls int
	// Unbound are the queues Sends denies (every other has a binding).
	Unbound []string
}

// Sends reports whether queueName is not one of Unbound.
func (s *Sender) Sends(queueName string) bool { return !slices.Contains(s.Unbound, queueName) }

// SendBatch implements queue.Sender.
func (s *Sender) SendBatch(_ context.Context, queueName string, msgs []queue.Outgoing) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.Calls++
	if s.Err != nil {
		return s.Err
	}
	if s.Sent == nil {
		s.Sent = map[string][]queue.Outgoing{}
	}
	s.Sent[queueName] = append(s.Sent[queueName], msgs...)
	return nil
}

// Messages returns a copy of the messages sent to queueName so far.
func (s *Sender) Messages(queueName string) []queue.Outgoing {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]queue.Outgoing(nil), s.Sent[queueName]...)
}
