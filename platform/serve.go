//go:build js && wasm

package platform

import (
	"bytes"
	"fmt"
	"net/http"
	"syscall/js"
)

// Serve makes h the worker's fetch handler. platform/worker/worker.mjs calls
// binding.serveHTTP(method, url, headers, body, resolve, reject) and builds
// the Response from what resolve(status, headers, body) receives: headers
// cross both ways as a header list (headers.go), the body as a Uint8Array or
// null.
//
// It replaces syumai's handler bridge, which streams every response through
// an io.Pipe and a ReadableStream pulled chunk by chunk (a round trip between
// Go and JavaScript per chunk). redrive's responses are small JSON documents,
// so the handler writes into a buffer and the body crosses once. The request
// body arrives as one Uint8Array, read by worker.mjs up to maxBody+1 bytes
// (more than maxBody is refused by the handlers' own limit either way).
//
// A panic that escapes h rejects the call (the runtime answers 500) and the
// Go instance keeps serving; handlers.API recovers its own panics first.
func Serve(h http.Handler, maxBody int) {
	binding := js.Global().Get("context").Get("binding")
	binding.Set("maxRequestBody", maxBody)
	binding.Set("serveHTTP", js.FuncOf(func(_ js.Value, args []js.Value) any {
		method, url, headers := args[0].String(), args[1].String(), args[2].String()
		var body []byte
		if b := args[3]; !b.IsNull() && !b.IsUndefined() {
			body = make([]byte, b.Get("byteLength").Int())
			js.CopyBytesToGo(body, b)
		}
		resolve, reject := args[4], args[5]
		calls.run(func() {
			w, err := serve(h, method, url, headers, body)
			if err != nil {
				reject.Invoke(js.Global().Get("Error").New(err.Error()))
				return
			}
			resolve.Invoke(w.status, headerList(w.header), w.jsBody())
		})
		return nil
	}))
}

// calls runs the fetch and queue calls: up to 64 goroutines wait for the
// next one.
var calls = newGoPool(64)

// serve runs one request through h and returns its response.
func serve(h http.Handler, method, url, headers string, body []byte) (*bufferedResponse, error) {
	req, err := newRequest(method, url, body)
	if err != nil {
		return nil, fmt.Errorf("serveHTTP: %w", err)
	}
	if err := parseHeaderList(headers, req.Header); err != nil {
		return nil, fmt.Errorf("serveHTTP: %w", err)
	}
	req.Host = req.URL.Host
	req.RemoteAddr = req.Header.Get("Cf-Connecting-Ip")
	if body == nil {
		req.Body, req.ContentLength = http.NoBody, 0
	}

	w := &bufferedResponse{header: http.Header{}}
	if err := run(h, w, req); err != nil {
		return nil, err
	}
	w.WriteHeader(http.StatusOK)
	return w, nil
}

// run calls h, turning a panic into an error.
func run(h http.Handler, w http.ResponseWriter, req *http.Request) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("serveHTTP: %s %s: panic: %v", req.Method, req.URL.Path, p)
		}
	}()
	h.ServeHTTP(w, req)
	return nil
}

// bufferedResponse is an http.ResponseWriter that keeps the whole response.
type bufferedResponse struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (w *bufferedResponse) Header() http.Header { return w.header }

func (w *bufferedResponse) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
}

func (w *bufferedResponse) Write(p []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return w.body.Write(p)
}

var uint8ArrayClass = js.Global().Get("Uint8Array")

// jsBody is the response body for the Response constructor: null for the
// statuses that have none (it refuses one), else a Uint8Array.
func (w *bufferedResponse) jsBody() js.Value {
	switch w.status {
	case http.StatusSwitchingProtocols, http.StatusNoContent, http.StatusResetContent, http.StatusNotModified:
		return js.Null()
	}
	body := uint8ArrayClass.New(w.body.Len())
	js.CopyBytesToJS(body, w.body.Bytes())
	return body
}
