//go:build js && wasm

package platform

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"syscall/js"
)

// Serve makes h the worker's fetch handler. platform/worker/worker.mjs calls
// binding.serveHTTP(id, request, body), where request is the method, the
// URL and the header list (headers.go), each followed by "\n" (neither a
// method nor a URL the runtime gives can hold one), and body a Uint8Array or
// null. The answer goes to binding.respond(id, status, headers, body), a
// header list and a Uint8Array or null, or to binding.reject(id, message);
// both are set by worker.mjs before the Go program starts. Every string or
// object that crosses is a reference Go tracks with a finalizer: one
// request string and a call id (a number) instead of three strings and a
// resolve and reject function per call is four fewer.
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
	respond, reject := binding.Get("respond"), binding.Get("reject")
	binding.Set("serveHTTP", js.FuncOf(func(_ js.Value, args []js.Value) any {
		id, request := args[0].Int(), args[1].String()
		var body []byte
		if b := args[2]; !b.IsNull() && !b.IsUndefined() {
			body = make([]byte, b.Get("byteLength").Int())
			js.CopyBytesToGo(body, b)
		}
		calls.run(func() {
			w, err := serveRequest(h, request, body)
			if err != nil {
				reject.Invoke(id, err.Error())
				return
			}
			respond.Invoke(id, w.status, headerList(w.header), w.jsBody())
		})
		return nil
	}))
	if g, ok := h.(Gate); ok {
		binding.Set("gate", js.FuncOf(func(_ js.Value, args []js.Value) any {
			w := gateRequest(g, args[0].String())
			if w == nil {
				return js.Null()
			}
			return js.ValueOf([]any{w.status, headerList(w.header), w.jsBody()})
		}))
	}
}

// Gate is a handler that can answer a request before its body is read.
// worker.mjs calls binding.gate(request) (the request string serveHTTP
// takes) before it reads a request's body, and answers with what it
// returns, [status, header list, body], without reading the body; null
// lets the request through to serveHTTP. It runs synchronously, in the
// call from JavaScript: Gate must not wait for I/O.
type Gate interface {
	// Gate answers r in w and returns true, or returns false (w unused).
	// r's body is not there and must not be read.
	Gate(w http.ResponseWriter, r *http.Request) bool
}

// gateRequest runs a request string (method, URL and header list) through
// g, with no body: its answer, or nil to serve it (also when the string
// does not parse, or Gate panics: serveHTTP answers those).
func gateRequest(g Gate, request string) (w *bufferedResponse) {
	req, err := parseRequest(request, nil)
	if err != nil {
		return nil
	}
	req.Body, req.ContentLength = http.NoBody, 0
	defer func() {
		if recover() != nil {
			w = nil
		}
	}()
	w = &bufferedResponse{header: http.Header{}}
	if !g.Gate(w, req) {
		return nil
	}
	w.WriteHeader(http.StatusOK)
	return w
}

// calls runs the fetch and queue calls: up to 64 goroutines wait for the
// next one.
var calls = newGoPool(64)

// serveRequest runs one request (method "\n" URL "\n" header list) through
// h and returns its response.
func serveRequest(h http.Handler, request string, body []byte) (*bufferedResponse, error) {
	req, err := parseRequest(request, body)
	if err != nil {
		return nil, err
	}
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

// parseRequest builds the request of a request string (method "\n" URL
// "\n" header list) and body.
func parseRequest(request string, body []byte) (*http.Request, error) {
	method, rest, ok1 := strings.Cut(request, "\n")
	url, headers, ok2 := strings.Cut(rest, "\n")
	if !ok1 || !ok2 {
		return nil, errors.New("serveHTTP: want method, URL and headers, each followed by a newline")
	}
	req, err := newRequest(method, url, body)
	if err != nil {
		return nil, fmt.Errorf("serveHTTP: %w", err)
	}
	if err := parseHeaderList(headers, req.Header); err != nil {
		return nil, fmt.Errorf("serveHTTP: %w", err)
	}
	req.Host = req.URL.Host
	req.RemoteAddr = req.Header.Get("Cf-Connecting-Ip")
	return req, nil
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
