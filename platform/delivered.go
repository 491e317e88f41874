package platform

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redrive/redrive/internal/jsonscan"
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

// call is one Ack or Retry; in the settlement [index, "ack"] or [index,
// "retry", delay seconds (0: the consumer's retry_delay)].
type call struct {
	index int
	what  string
	delay int
}

func (m *delivered) ID() string                        { return m.d.ID }
func (m *delivered) Attempts() int                     { return m.d.Attempts }
func (m *delivered) Timestamp() time.Time              { return time.UnixMilli(m.d.Timestamp) }
func (m *delivered) Body() (string, queue.ContentType) { return m.text, m.ct }
func (m *delivered) Ack()                              { m.b.calls = append(m.b.calls, call{index: m.index, what: "ack"}) }

// Retry asks for redelivery after d, in whole seconds and at least one;
// d <= 0 leaves the delay to the consumer's retry_delay.
func (m *delivered) Retry(d time.Duration) {
	secs := 0
	if d > 0 {
		secs = max(1, int(d.Seconds()))
	}
	m.b.calls = append(m.b.calls, call{index: m.index, what: "retry", delay: secs})
}

// decodeBatch reads worker.mjs's description of a batch; blob(i) returns
// the bytes of message i when its type is bytes (they are not in the JSON).
// It reads the JSON without reflection (jsonscan): member names are matched
// exactly, as JSON.stringify writes them.
func decodeBatch(desc string, blob func(i int) []byte) (*batch, error) {
	doc := bytes.TrimSpace([]byte(desc))
	if !json.Valid(doc) || doc[0] != '[' {
		return nil, errors.New("batch description: not a JSON array")
	}
	b := &batch{}
	var err error
	jsonscan.Elements(doc, func(v []byte) {
		if err != nil {
			return
		}
		i := len(b.msgs)
		d, derr := decodeDelivered(v)
		if derr != nil {
			err = fmt.Errorf("batch description: message %d: %w", i, derr)
			return
		}
		m := &delivered{index: i, d: d, ct: queue.ContentType(d.Type), b: b}
		switch {
		case m.ct == queue.Bytes:
			m.text = base64.StdEncoding.EncodeToString(blob(i))
		case d.Body == nil:
			err = fmt.Errorf("batch description: message %d (%s) has no body", i, d.Type)
			return
		default:
			m.text = *d.Body
		}
		b.msgs = append(b.msgs, m)
	})
	if err != nil {
		return nil, err
	}
	return b, nil
}

// decodeDelivered reads one message's description (a JSON value).
func decodeDelivered(v []byte) (deliveredJSON, error) {
	var d deliveredJSON
	if v[0] != '{' {
		return d, errors.New("not an object")
	}
	var err error
	jsonscan.Members(v, func(key, value []byte) {
		if err != nil || string(value) == "null" {
			return
		}
		var ok bool
		switch {
		case jsonscan.KeyIs(key, "id"):
			if d.ID, ok = jsonscan.Text(value); !ok {
				err = errors.New("id is not a string")
			}
		case jsonscan.KeyIs(key, "type"):
			if d.Type, ok = jsonscan.Text(value); !ok {
				err = errors.New("type is not a string")
			}
		case jsonscan.KeyIs(key, "body"):
			s, ok := jsonscan.Text(value)
			if !ok {
				err = errors.New("body is not a string")
			}
			d.Body = &s
		case jsonscan.KeyIs(key, "attempts"):
			var n int64
			n, err = strconv.ParseInt(string(value), 10, 0)
			d.Attempts = int(n)
		case jsonscan.KeyIs(key, "timestamp"):
			d.Timestamp, err = strconv.ParseInt(string(value), 10, 64)
		}
	})
	return d, err
}

// settlement is the JSON of the Ack and Retry calls made on the batch's
// messages, in the order they were made ("[]" when none).
func (b *batch) settlement() string {
	out := make([]byte, 0, 2+len(b.calls)*12)
	out = append(out, '[')
	for i, c := range b.calls {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(strconv.AppendInt(append(out, '['), int64(c.index), 10), ',', '"')
		out = append(append(out, c.what...), '"')
		if c.what == "retry" {
			out = strconv.AppendInt(append(out, ','), int64(c.delay), 10)
		}
		out = append(out, ']')
	}
	return string(append(out, ']'))
}

// allAcked reports whether every message of the batch was acked once and
// none retried: worker.mjs then acks them with one ackAll().
func (b *batch) allAcked() bool {
	if len(b.msgs) == 0 || len(b.calls) != len(b.msgs) {
		return false
	}
	seen := make([]bool, len(b.msgs))
	for _, c := range b.calls {
		if c.what != "ack" || seen[c.index] {
			return false
		}
		seen[c.index] = true
	}
	return true
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
