//go:build js && wasm

// Package platform adapts the Cloudflare runtime (syumai/workers, syscall/js)
// to redrive's small interfaces: queue messages, queue senders, D1 and env.
// It is built only for js/wasm; everything else tests natively.
package platform

import (
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"syscall/js"
	"time"

	"github.com/syumai/workers/cloudflare"

	"github.com/redrive/redrive/queue"
)

// Getenv reads a var or secret of the current call's env ("" when unset or
// null). A var written in wrangler.jsonc as JSON other than a string (an
// array, an object, a number) reaches env parsed: Getenv returns its JSON
// text (JSON.stringify), which config reads as it reads a string holding
// that JSON (cloudflare.Getenv would return "<object>" for it).
func Getenv(name string) string {
	v := cloudflare.GetBinding(name)
	switch v.Type() {
	case js.TypeUndefined, js.TypeNull:
		return ""
	case js.TypeString:
		return v.String()
	}
	// A JSON var's value always stringifies (stringify gives undefined only
	// for what JSON cannot hold, such as a function).
	if text := jsonObj.Call("stringify", v); text.Type() == js.TypeString {
		return text.String()
	}
	return ""
}

// HasBinding reports whether env has a binding (or var) of that name.
func HasBinding(name string) bool { return !cloudflare.GetBinding(name).IsUndefined() }

var (
	uint8Array = js.Global().Get("Uint8Array")
	jsonObj    = js.Global().Get("JSON")
)

// Sender sends to queues by name through the producer bindings it maps them to.
type Sender struct {
	// Bindings maps a queue name to its producer binding name.
	Bindings map[string]string
}

// Sends reports whether queueName has a producer binding in s.
func (s Sender) Sends(queueName string) bool {
	binding, ok := s.Bindings[queueName]
	return ok && HasBinding(binding)
}

// SendBatch implements queue.Sender with one sendBatch call. Each body is
// sent with its content type: JSON as the parsed value, Text as a string,
// Bytes as a Uint8Array; V8 cannot be sent (an error, nothing sent).
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
		body, ct, err := jsBody(m)
		if err != nil {
			return fmt.Errorf("send %d messages to %s: message %d: %w", len(msgs), queueName, i, err)
		}
		r := jsObject.New()
		r.Set("body", body)
		r.Set("contentType", string(ct))
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

// Backlog implements queue.BacklogReader with the producer binding's
// metrics() (backlogCount, backlogBytes, oldestMessageTimestamp); an error
// when the binding is missing or the runtime has no metrics().
func (s Sender) Backlog(ctx context.Context, queueName string) (queue.Backlog, error) {
	binding, ok := s.Bindings[queueName]
	if !ok {
		return queue.Backlog{}, fmt.Errorf("no producer binding for queue %q", queueName)
	}
	q := cloudflare.GetBinding(binding)
	if q.IsUndefined() || q.Get("metrics").Type() != js.TypeFunction {
		return queue.Backlog{}, fmt.Errorf("producer binding %s for %s has no metrics()", binding, queueName)
	}
	m, err := await(ctx, q.Call("metrics"))
	if err != nil {
		return queue.Backlog{}, fmt.Errorf("metrics of %s: %w", queueName, err)
	}
	num := func(k string) int64 {
		if v := m.Get(k); v.Type() == js.TypeNumber {
			return int64(v.Float())
		}
		return 0
	}
	b := queue.Backlog{Count: num("backlogCount"), Bytes: num("backlogBytes")}
	// A Date in the runtime (a number of ms locally): Date's constructor takes either.
	if t := m.Get("oldestMessageTimestamp"); t.Truthy() {
		if ms := js.Global().Get("Date").New(t).Call("getTime").Float(); ms > 0 {
			b.OldestAt = int64(ms)
		}
	}
	return b, nil
}

// jsBody turns an outgoing body's text form into the value to send.
func jsBody(m queue.Outgoing) (js.Value, queue.ContentType, error) {
	switch ct := cmp.Or(m.ContentType, queue.JSON); ct {
	case queue.JSON:
		// JSON.parse would throw (a Go panic here) on invalid text.
		if !json.Valid([]byte(m.Body)) {
			return js.Value{}, ct, fmt.Errorf("body is not valid JSON")
		}
		return jsonObj.Call("parse", m.Body), ct, nil
	case queue.Text:
		return js.ValueOf(m.Body), ct, nil
	case queue.Bytes:
		b, err := base64.StdEncoding.DecodeString(m.Body)
		if err != nil {
			return js.Value{}, ct, fmt.Errorf("bytes body is not base64: %w", err)
		}
		v := uint8Array.New(len(b))
		js.CopyBytesToJS(v, b)
		return v, ct, nil
	default:
		return js.Value{}, ct, fmt.Errorf("content type %q cannot be sent", ct)
	}
}

// VersionMetadata reads Cloudflare's version metadata binding (id, tag,
// timestamp); empty strings when the binding is absent.
func VersionMetadata(binding string) (id, tag, timestamp string) {
	v := cloudflare.GetBinding(binding)
	if v.IsUndefined() || v.IsNull() {
		return "", "", ""
	}
	str := func(k string) string {
		if x := v.Get(k); x.Type() == js.TypeString {
			return x.String()
		}
		return ""
	}
	return str("id"), str("tag"), str("timestamp")
}
