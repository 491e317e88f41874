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

// Message is one delivered queue message.
type Message interface {
	// ID is the queue's message id (kept when a message moves to a DLQ).
	ID() string
	// Attempts is the delivery attempt number, starting at 1.
	Attempts() int
	// Timestamp is when the message was first sent.
	Timestamp() time.Time
	// Body returns the body as text: text bodies as they are, JSON bodies
	// serialised, binary bodies base64-encoded with binary set to true.
	Body() (text string, binary bool)
	// Ack marks the message done; it will not be delivered again.
	Ack()
	// Retry asks for redelivery after delay (0: the consumer's retry_delay).
	Retry(delay time.Duration)
}

// Outgoing is one message to send.
type Outgoing struct {
	// Body is sent as a text message (JSON text by convention).
	Body string
	// Delay postpones delivery; whole seconds, at most 12 h.
	Delay time.Duration
}

// Sender sends messages to a queue by its name.
type Sender interface {
	// SendBatch sends up to 100 messages (256 KB) to the named queue in one call.
	SendBatch(ctx context.Context, queueName string, msgs []Outgoing) error
}
