// Package queue holds the small interfaces through which the consumers see
// Cloudflare Queues, so that the domain packages compile and test natively.
// The js/wasm implementations live in package platform.
package queue

import (
	"context"
	"time"
)

// Queue names used by redrive.
const (
	// Enrichment is the main queue: one message per beer to enrich.
	Enrichment = "beer-enrichment"
	// EnrichmentDLQ receives messages that exhausted their retries on Enrichment.
	EnrichmentDLQ = "beer-enrichment-dlq"
)

// ContentType is how a message body travels on Cloudflare Queues (the
// `contentType` of send/sendBatch). A consumer is not told the type a
// message was sent with; the platform layer infers it from the delivered
// value (see Message.Body).
type ContentType string

// The content types of Cloudflare Queues.
const (
	// JSON: a JSON value; the consumer receives the parsed value. The
	// Cloudflare default for `send(obj)`, and Outgoing's zero value.
	JSON ContentType = "json"
	// Text: a string; the consumer receives the same string.
	Text ContentType = "text"
	// Bytes: binary; the consumer receives an ArrayBuffer.
	Bytes ContentType = "bytes"
	// V8: a structured-clone value that JSON cannot represent (a Date, a Map,
	// a typed array, undefined, ...). redrive stores it but cannot send it.
	V8 ContentType = "v8"
)

// Valid reports whether t is one of the four content types.
func (t ContentType) Valid() bool {
	switch t {
	case JSON, Text, Bytes, V8:
		return true
	}
	return false
}

// Message is one delivered queue message.
type Message interface {
	// ID is the queue's message id (kept when a message moves to a DLQ).
	ID() string
	// Attempts is the delivery attempt number, starting at 1.
	Attempts() int
	// Timestamp is when the message was first sent.
	Timestamp() time.Time
	// Body returns the body in its text form and the content type it was
	// most likely sent with: Text bodies as they are, JSON bodies as their
	// JSON text, Bytes (an ArrayBuffer) base64-encoded, and V8 values that
	// JSON cannot carry as their lossy JSON (or String) text.
	Body() (text string, ct ContentType)
	// Ack marks the message done; it will not be delivered again.
	Ack()
	// Retry asks for redelivery after delay (0: the consumer's retry_delay).
	Retry(delay time.Duration)
}

// Outgoing is one message to send.
type Outgoing struct {
	// Body is the text form of the body, as Message.Body returns it: JSON
	// text for JSON (sent as the parsed value), base64 for Bytes.
	Body string
	// ContentType is how the body is sent; the zero value means JSON.
	ContentType ContentType
	// Delay postpones delivery; whole seconds, at most 12 h.
	Delay time.Duration
}

// Sender sends messages to a queue by its name.
type Sender interface {
	// SendBatch sends up to 100 messages (256 KB) to the named queue in one call.
	SendBatch(ctx context.Context, queueName string, msgs []Outgoing) error
}

// Backlog is a queue's backlog as Cloudflare Queues reports it to a
// producer binding (metrics()): the messages waiting to be delivered.
type Backlog struct {
	Count int64
	Bytes int64
	// OldestAt is when the oldest waiting message was sent (Unix ms); 0
	// when none waits.
	OldestAt int64
}

// BacklogReader reads a queue's backlog by the queue's name.
type BacklogReader interface {
	Backlog(ctx context.Context, queueName string) (Backlog, error)
}

// Limits of one SendBatch call on Cloudflare Queues: 100 messages and 256 KB.
const (
	MaxBatchMessages = 100
	// MaxBatchBytes is what Batches allows per call: the bodies plus
	// batchOverhead bytes per message, kept under 256 KB with a margin.
	MaxBatchBytes = 250_000
	batchOverhead = 100
)

// Batches splits msgs, in order, into groups that each fit one SendBatch
// call (at most MaxBatchMessages messages and MaxBatchBytes bytes). A single
// message larger than MaxBatchBytes gets a group of its own (and the queue
// refuses it).
func Batches(msgs []Outgoing) [][]Outgoing {
	var out [][]Outgoing
	start, size := 0, 0
	for i, m := range msgs {
		n := len(m.Body) + batchOverhead
		if i > start && (i-start == MaxBatchMessages || size+n > MaxBatchBytes) {
			out = append(out, msgs[start:i:i])
			start, size = i, 0
		}
		size += n
	}
	if start < len(msgs) {
		out = append(out, msgs[start:len(msgs):len(msgs)])
	}
	return out
}
