// Package handlers is redrive's HTTP API: routing, auth, envelopes, request
// ids, strict JSON decoding and the OpenAPI document. Queue batches are
// routed by consume.Router, crons by jobs.CronRouter.
package handlers

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strconv"

	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/internal/jsonscan"
)

// APIError is an error with an HTTP status and a stable code, rendered as the
// error envelope. Anything else reaching the envelope is an internal error.
type APIError struct {
	Status  int
	Code    string
	Message string
}

func (e *APIError) Error() string { return e.Code + ": " + e.Message }

// AuditError is what an action's audit entry records when it ends with e:
// the envelope's code and message.
func (e *APIError) AuditError() *dlq.AuditError {
	return &dlq.AuditError{Code: e.Code, Message: e.Message}
}

// Errorf-style constructors for the common cases.
func badRequest(code, msg string) *APIError {
	return &APIError{Status: http.StatusBadRequest, Code: code, Message: msg}
}

type requestIDKey struct{}

// RequestID returns the request id stored by the middleware ("" outside a request).
func RequestID(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey{}).(string)
	return id
}

type errorBody struct {
	Message string `json:"message"`
	Code    string `json:"code"`
}

// writeEnvelope writes the envelope with status. It is built by appending,
// not by encoding/json's reflection over an envelope struct (6.7% of a
// D1-free call's CPU in a V8 profile of the wasm). data is left out when
// nil; a jsonAppender writes itself, anything else is json.Marshal's. The
// bytes are those json.NewEncoder(w).Encode wrote for the envelope struct
// it replaces (envelope_bytes_test.go compares them).
func writeEnvelope(w http.ResponseWriter, status int, success bool, requestID string, data any, e *errorBody) {
	b := make([]byte, 0, 256)
	b = append(b, `{"success":`...)
	b = strconv.AppendBool(b, success)
	b = append(b, `,"requestId":`...)
	b = jsonscan.AppendString(b, requestID)
	if data != nil {
		b = append(b, `,"data":`...)
		if a, ok := data.(jsonAppender); ok {
			b = a.AppendJSON(b)
		} else {
			j, err := json.Marshal(data)
			if err != nil {
				// Not JSON (a NaN, a channel): a bug, answered as one.
				writeEnvelope(w, http.StatusInternalServerError, false, requestID, nil,
					&errorBody{Code: "INTERNAL_ERROR", Message: "internal error; see logs for request id"})
				return
			}
			b = append(b, j...)
		}
	}
	if e != nil {
		b = append(b, `,"error":{"message":`...)
		b = jsonscan.AppendString(b, e.Message)
		b = append(b, `,"code":`...)
		b = jsonscan.AppendString(b, e.Code)
		b = append(b, '}')
	}
	b = append(b, "}\n"...)
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// jsonAppender is data that writes its own JSON (inspect.Page: its messages are
// JSON built by SQLite, which encoding/json would scan again).
type jsonAppender interface {
	AppendJSON(b []byte) []byte
}

// respond writes the success envelope around data.
func respond(w http.ResponseWriter, r *http.Request, status int, data any) {
	writeEnvelope(w, status, true, RequestID(r.Context()), data, nil)
}

// fail writes the error envelope. An *APIError keeps its status and code; a
// *dlq.InputError (rejected input) is a 400 (or its Status) with its code; any other error
// is logged with the request id and answered with a 500.
func fail(w http.ResponseWriter, r *http.Request, log *slog.Logger, err error) {
	apiErr, direct := err.(*APIError) // the usual case, without errors.As's reflection
	var inputErr *dlq.InputError
	switch {
	case direct && apiErr != nil:
	case errors.As(err, &apiErr):
	case errors.As(err, &inputErr) && inputErr.Status != 0:
		apiErr = &APIError{Status: inputErr.Status, Code: inputErr.Code, Message: inputErr.Message}
	case errors.As(err, &inputErr):
		apiErr = badRequest(inputErr.Code, inputErr.Message)
	default:
		log.ErrorContext(r.Context(), "request failed", "request_id", RequestID(r.Context()),
			"method", r.Method, "path", r.URL.Path, "error", err.Error())
		apiErr = &APIError{Status: http.StatusInternalServerError, Code: "INTERNAL_ERROR", Message: "internal error; see logs for request id"}
	}
	writeEnvelope(w, apiErr.Status, false, RequestID(r.Context()), nil, &errorBody{Message: apiErr.Message, Code: apiErr.Code})
}
