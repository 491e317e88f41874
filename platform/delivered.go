package platform

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"time"

	"github.com/redrive/redrive/queue"
)

// (Not js/wasm only: plain Go, tested natively.)

// deliveredJSON is one message of a batch as worker.mjs describes it.
type deliveredJSON struct {
	ID       string `json:"id"`
	Attempts int    `json:"attempts"`
	// Timestamp is when the message was sent, in Unix milliseconds.
	Timestamp int64 `json:"timestamp"`
	// Type is the content type worker.mjs's queueBody found (queuebody.mjs).
	Type string `json:"type"`
	// Body is the text form; null for bytes, which travel beside the JSON.
	Body *string `json:"body"`
}

// batch is a delivered batch: its messages and the Ack and Retry calls
// made on them, in order, for worker.mjs to make on the runtime's messages
// (settlement).
type batch struct {
	msgs  []*delivered
	calls []call
}

// delivered is one message of a batch: a queue.Message whose Ack and Retry
// calls are recorded in its batch.
type delivered struct {
	index int
	d     deliveredJSON
	text  string
	ct    queue.ContentType
	b     *batch
}

// call is one Ack or Retry: [index, "ack"] or [index, "retry", delay
// seconds (0: the consumer's retry_delay)].
type call []any

func (m *delivered) ID() string                        { return m.d.ID }
func (m *delivered) Attempts() int                     { return m.d.Attempts }
func (m *delivered) Timestamp() time.Time              { return time.UnixMilli(m.d.Timestamp) }
func (m *delivered) Body() (string, queue.ContentType) { return m.text, m.ct }
func (m *delivered) Ack()                              { m.b.calls = append(m.b.calls, call{m.index, "ack"}) }

// Retry asks for redelivery after d, in whole seconds and at least one;
// d <= 0 leaves the delay to the consumer's retry_delay.
func (m *delivered) Retry(d time.Duration) {
	secs := 0
	if d > 0 {
		secs = max(1, int(d.Seconds()))
	}
	m.b.calls = append(m.b.calls, call{m.index, "retry", secs})
}

// decodeBatch reads worker.mjs's description of a batch; blob(i) returns
// the bytes of message i when its type is bytes (they are not in the JSON).
func decodeBatch(desc string, blob func(i int) []byte) (*batch, error) {
	var ds []deliveredJSON
	if err := json.Unmarshal([]byte(desc), &ds); err != nil {
		return nil, fmt.Errorf("batch description: %w", err)
	}
	b := &batch{msgs: make([]*delivered, len(ds))}
	for i, d := range ds {
		m := &delivered{index: i, d: d, ct: queue.ContentType(d.Type), b: b}
		switch {
		case m.ct == queue.Bytes:
			m.text = base64.StdEncoding.EncodeToString(blob(i))
		case d.Body == nil:
			return nil, fmt.Errorf("batch description: message %d (%s) has no body", i, d.Type)
		default:
			m.text = *d.Body
		}
		b.msgs[i] = m
	}
	return b, nil
}

// settlement is the JSON of the Ack and Retry calls made on the batch's
// messages, in the order they were made ("[]" when none).
func (b *batch) settlement() string {
	calls := b.calls
	if calls == nil {
		calls = []call{}
	}
	js, _ := json.Marshal(calls) // ints and strings: cannot fail
	return string(js)
}

// run runs consume on the batch's messages and returns their settlement,
// the decisions made before a panic included (the panic becomes the error).
func (b *batch) run(consume func(context.Context, string, []queue.Message) error, queueName string) (settle string, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("queue %s: panic: %v", queueName, p)
		}
		settle = b.settlement()
	}()
	qm := make([]queue.Message, len(b.msgs))
	for i, m := range b.msgs {
		qm[i] = m
	}
	return "", consume(context.Background(), queueName, qm)
}
