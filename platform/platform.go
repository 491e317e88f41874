//go:build js && wasm

// Package platform adapts the Cloudflare runtime (syumai/workers, syscall/js)
// to redrive's small interfaces: queue messages, queue senders, D1 and env.
// It is built only for js/wasm; everything else tests natively.
package platform

import (
	"context"
	"database/sql"
	"encoding/base64"
	"fmt"
	"syscall/js"
	"time"

	"github.com/syumai/workers/cloudflare"
	"github.com/syumai/workers/cloudflare/d1"
	"github.com/syumai/workers/cloudflare/queues"

	"github.com/redrive/redrive/queue"
)

// Getenv reads a var or secret of the current call's env ("" when unset).
func Getenv(name string) string { return cloudflare.Getenv(name) }

// HasBinding reports whether env has a binding (or var) of that name.
func HasBinding(name string) bool { return !cloudflare.GetBinding(name).IsUndefined() }

// OpenD1 opens the D1 binding as a *sql.DB, and as a batch runner for
// statements that must travel together.
func OpenD1(binding string) (*sql.DB, D1Batch, error) {
	c, err := d1.OpenConnector(binding)
	if err != nil {
		return nil, D1Batch{}, fmt.Errorf("open D1 binding %s: %w", binding, err)
	}
	return sql.OpenDB(c), D1Batch{db: cloudflare.GetBinding(binding)}, nil
}

// message adapts *queues.Message to queue.Message.
type message struct{ m *queues.Message }

func (m message) ID() string           { return m.m.ID }
func (m message) Attempts() int        { return m.m.Attempts }
func (m message) Timestamp() time.Time { return m.m.Timestamp }
func (m message) Ack()                 { m.m.Ack() }

func (m message) Retry(d time.Duration) {
	if d <= 0 {
		m.m.Retry()
		return
	}
	if d < time.Second {
		d = time.Second
	}
	m.m.Retry(queues.WithRetryDelay(d))
}

var (
	uint8Array = js.Global().Get("Uint8Array")
	arrayBuf   = js.Global().Get("ArrayBuffer")
	jsonObj    = js.Global().Get("JSON")
)

func (m message) Body() (string, bool) {
	b := m.m.Body
	switch {
	case b.Type() == js.TypeString:
		return b.String(), false
	case b.InstanceOf(arrayBuf):
		b = uint8Array.New(b)
		fallthrough
	case b.InstanceOf(uint8Array):
		buf := make([]byte, b.Get("byteLength").Int())
		js.CopyBytesToGo(buf, b)
		return base64.StdEncoding.EncodeToString(buf), true
	case b.IsUndefined():
		return "", false
	default:
		// JSON or structured-clone bodies: their JSON text.
		s := jsonObj.Call("stringify", b)
		if s.Type() != js.TypeString {
			return "", false
		}
		return s.String(), false
	}
}

// Messages adapts a delivered batch.
func Messages(b *queues.MessageBatch) []queue.Message {
	out := make([]queue.Message, len(b.Messages))
	for i, m := range b.Messages {
		out[i] = message{m}
	}
	return out
}

// Sender sends to queues by name through the producer bindings it maps them to.
type Sender struct {
	// Bindings maps a queue name to its producer binding name.
	Bindings map[string]string
}

// SendBatch implements queue.Sender with one sendBatch call of text bodies.
//
// It builds the runtime's MessageSendRequest objects itself: syumai/workers
// v0.33.0 nests contentType and delaySeconds under an "options" key that the
// runtime ignores, so per-message delays were silently dropped.
func (s Sender) SendBatch(ctx context.Context, queueName string, msgs []queue.Outgoing) error {
	binding, ok := s.Bindings[queueName]
	if !ok {
		return fmt.Errorf("no producer binding for queue %q", queueName)
	}
	q := cloudflare.GetBinding(binding)
	if q.IsUndefined() {
		return fmt.Errorf("producer binding %s for %s is not bound", binding, queueName)
	}
	reqs := js.Global().Get("Array").New(len(msgs))
	for i, m := range msgs {
		r := jsObject.New()
		r.Set("body", m.Body)
		r.Set("contentType", "text")
		if secs := int(m.Delay / time.Second); secs > 0 {
			r.Set("delaySeconds", secs)
		}
		reqs.SetIndex(i, r)
	}
	if _, err := await(ctx, q.Call("sendBatch", reqs)); err != nil {
		return fmt.Errorf("send %d messages to %s: %w", len(msgs), queueName, err)
	}
	return nil
}
