//go:build js && wasm

package platform

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"syscall/js"
	"time"

	"github.com/redrive/redrive/outbound"
)

// Fetch is the Worker's outbound.Doer: the runtime's global fetch called
// through syscall/js with AbortSignal.timeout, so a timeout really aborts the
// request in flight (syumai's fetch client ignores contexts). It avoids the
// net/http client, whose TLS code would double the script size.
type Fetch struct{}

var (
	// jsFetch is invoked unbound (as syumai's own binding does): called as a
	// method of js.Global() it fails in workerd with "Illegal invocation".
	jsFetch       = js.Global().Get("fetch")
	jsObject      = js.Global().Get("Object")
	jsHeaders     = js.Global().Get("Headers")
	jsAbortSignal = js.Global().Get("AbortSignal")
)

// Do implements outbound.Doer.
func (Fetch) Do(ctx context.Context, req outbound.Request) (outbound.Response, error) {
	timeout := req.Timeout
	if dl, ok := ctx.Deadline(); ok && (timeout <= 0 || time.Until(dl) < timeout) {
		timeout = max(time.Until(dl), time.Millisecond)
	}
	init := jsObject.New()
	init.Set("method", req.Method)
	// A 3xx is the response, never followed (outbound.Doer): workerd would
	// send the explicitly set headers, the bearer key among them, on.
	init.Set("redirect", "manual")
	h := jsHeaders.New()
	for k, v := range req.Header {
		h.Call("set", k, v)
	}
	init.Set("headers", h)
	if req.Body != nil {
		init.Set("body", string(req.Body))
	}
	if timeout > 0 {
		init.Set("signal", jsAbortSignal.Call("timeout", timeout.Milliseconds()))
	}

	resp, err := await(ctx, jsFetch.Invoke(req.URL, init))
	if err != nil {
		return outbound.Response{}, fetchError(err, timeout)
	}
	header := map[string]string{}
	each := js.FuncOf(func(_ js.Value, args []js.Value) any {
		// Headers.forEach(value, name): names are already lower-case.
		header[strings.ToLower(args[1].String())] = args[0].String()
		return nil
	})
	func() {
		defer each.Release() // forEach calls it synchronously; released even if it throws
		resp.Get("headers").Call("forEach", each)
	}()
	limit := outbound.MaxResponseBytes
	if req.DiscardBody {
		limit = 0
	}
	body, err := readBody(ctx, resp.Get("body"), limit)
	if err != nil {
		return outbound.Response{}, fetchError(err, timeout)
	}
	// (As Response.text() did: a leading UTF-8 byte order mark is not text.)
	body = bytes.TrimPrefix(body, []byte("\xef\xbb\xbf"))
	return outbound.Response{Status: resp.Get("status").Int(), Header: header, Body: body}, nil
}

// readBody reads a response's body stream (null for no body) chunk by
// chunk up to limit bytes and cancels the rest: what an endpoint streams
// past the limit is never buffered in the isolate (Response.text() would
// hold all of it before any cut).
func readBody(ctx context.Context, stream js.Value, limit int) ([]byte, error) {
	if stream.IsNull() || stream.IsUndefined() {
		return nil, nil
	}
	if limit <= 0 {
		_, err := await(ctx, stream.Call("cancel"))
		return nil, err
	}
	reader := stream.Call("getReader")
	var body []byte
	for len(body) < limit {
		chunk, err := await(ctx, reader.Call("read"))
		if err != nil {
			return nil, err
		}
		if chunk.Get("done").Bool() {
			return body, nil
		}
		v := chunk.Get("value") // a Uint8Array
		n := min(v.Get("byteLength").Int(), limit-len(body))
		buf := make([]byte, n)
		js.CopyBytesToGo(buf, v.Call("subarray", 0, n))
		body = append(body, buf...)
	}
	// The limit is reached: the rest is not read.
	if _, err := await(ctx, reader.Call("cancel")); err != nil {
		return nil, err
	}
	return body, nil
}

// jsError is a rejected promise's reason.
type jsError struct{ name, message string }

func (e *jsError) Error() string { return e.name + ": " + e.message }

// fetchError maps an aborted fetch to outbound.ErrTimeout.
func fetchError(err error, timeout time.Duration) error {
	var je *jsError
	if errors.As(err, &je) && (je.name == "TimeoutError" || je.name == "AbortError") {
		return fmt.Errorf("%w: no complete answer within %s", outbound.ErrTimeout, timeout)
	}
	return fmt.Errorf("fetch failed: %w", err)
}

// await blocks until the promise settles (the JS event loop runs meanwhile)
// or ctx ends.
//
// The two callbacks are released by whichever of them the promise calls
// (exactly one of them, exactly once), on every path: when the promise
// settles before ctx ends, and also when it settles after await returned
// for ctx (the buffered channel takes the unread result). Releasing them
// at ctx's end instead would leave the promise calling a released function
// (an error on the console). Every promise awaited here settles: fetch and
// its body carry an AbortSignal.timeout, and D1 and Queues calls resolve or
// reject.
func await(ctx context.Context, p js.Value) (js.Value, error) {
	type result struct {
		v   js.Value
		err error
	}
	ch := make(chan result, 1)
	var onOK, onErr js.Func
	release := func() {
		onOK.Release()
		onErr.Release()
	}
	onOK = js.FuncOf(func(_ js.Value, args []js.Value) any {
		defer release()
		ch <- result{v: args[0]}
		return nil
	})
	onErr = js.FuncOf(func(_ js.Value, args []js.Value) any {
		defer release()
		reason := args[0]
		e := &jsError{name: "Error", message: "promise rejected"}
		if reason.Type() == js.TypeObject {
			if n := reason.Get("name"); n.Type() == js.TypeString {
				e.name = n.String()
			}
			if m := reason.Get("message"); m.Type() == js.TypeString {
				e.message = m.String()
			}
		} else if reason.Type() == js.TypeString {
			e.message = reason.String()
		}
		ch <- result{err: e}
		return nil
	})
	p.Call("then", onOK, onErr)
	select {
	case r := <-ch:
		return r.v, r.err
	case <-ctx.Done():
		// The callbacks stay registered until the promise settles (the
		// abort signal ends it) and the one it calls releases both.
		return js.Value{}, ctx.Err()
	}
}
