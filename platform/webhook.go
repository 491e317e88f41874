//go:build js && wasm

package platform

import (
	"context"
	"errors"
	"fmt"
	"syscall/js"
	"time"

	"github.com/redrive/redrive/dlq"
)

// Webhook posts alert messages (dlq.WebhookPayload: Slack-compatible JSON)
// with the runtime's own fetch through syscall/js, bounded by
// AbortSignal.timeout. It implements dlq.Notifier. (net/http's client is not
// linked into the wasm: it would add TLS and more than a megabyte gzipped.)
type Webhook struct {
	// URL is ALERT_WEBHOOK_URL; it may embed a token and is never logged.
	URL string
	// Timeout aborts the call (ALERT_WEBHOOK_TIMEOUT_SECONDS).
	Timeout time.Duration
}

// Notify posts text and fails unless the response status is 2xx.
func (w Webhook) Notify(_ context.Context, text string) error {
	object := js.Global().Get("Object")
	headers := object.New()
	headers.Set("content-type", "application/json")
	init := object.New()
	init.Set("method", "POST")
	init.Set("headers", headers)
	init.Set("body", string(dlq.WebhookPayload(text)))
	if w.Timeout > 0 {
		init.Set("signal", js.Global().Get("AbortSignal").Call("timeout", w.Timeout.Milliseconds()))
	}
	// Invoke, not js.Global().Call: the Go global is a Proxy, and fetch
	// called with it as `this` throws "Illegal invocation".
	resp, err := await(js.Global().Get("fetch").Invoke(w.URL, init))
	if err != nil {
		return fmt.Errorf("webhook: %w", err)
	}
	status := resp.Get("status").Int()
	// Read the body so the runtime can release the connection.
	if _, err := await(resp.Call("text")); err != nil {
		return fmt.Errorf("webhook: read response: %w", err)
	}
	if status < 200 || status > 299 {
		return fmt.Errorf("webhook: status %d", status)
	}
	return nil
}

// await blocks until the promise settles.
func await(p js.Value) (js.Value, error) {
	type result struct {
		v   js.Value
		err error
	}
	ch := make(chan result, 1)
	onOK := js.FuncOf(func(_ js.Value, args []js.Value) any {
		ch <- result{v: args[0]}
		return nil
	})
	onErr := js.FuncOf(func(_ js.Value, args []js.Value) any {
		msg := "rejected"
		if len(args) > 0 {
			msg = js.Global().Get("String").Invoke(args[0]).String()
		}
		ch <- result{err: errors.New(msg)}
		return nil
	})
	defer onOK.Release()
	defer onErr.Release()
	p.Call("then", onOK, onErr)
	r := <-ch
	return r.v, r.err
}
