package handlers

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
)

// MaxBodyBytes is the largest request body the API reads.
const MaxBodyBytes = 1 << 20

// decodeJSON reads one JSON object from the request body into v. Every
// failure is a 4xx *APIError: too large (413), empty, not JSON, not an
// object (`null`, arrays, scalars), unknown fields or trailing data (400).
func decodeJSON(w http.ResponseWriter, r *http.Request, v any) error {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return &APIError{Status: http.StatusRequestEntityTooLarge, Code: "PAYLOAD_TOO_LARGE", Message: "request body is larger than 1 MB"}
		}
		return badRequest("INVALID_REQUEST", "could not read request body")
	}
	body = bytes.TrimSpace(body)
	if len(body) == 0 {
		return badRequest("INVALID_REQUEST", "request body is empty; expected a JSON object")
	}
	if body[0] != '{' {
		return badRequest("INVALID_REQUEST", "request body must be a JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return badRequest("INVALID_REQUEST", "invalid JSON body: "+err.Error())
	}
	if dec.More() {
		return badRequest("INVALID_REQUEST", "request body has data after the JSON object")
	}
	return nil
}
