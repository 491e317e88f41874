package handlers

import (
	"bytes"
	"errors"
	"io"
	"net/http"
)

// MaxBodyBytes is the largest request body the API reads.
const MaxBodyBytes = 1 << 20

// decodeJSON reads one JSON object from the request body into v, strictly
// (decodeStrict: exact keys, no duplicates, JSON types as v's fields). Every
// failure is a 4xx *APIError: too large (413), empty, not UTF-8, not JSON,
// not an object (`null`, arrays, scalars), unknown or duplicate fields,
// wrong types or trailing data (400).
func decodeJSON(w http.ResponseWriter, r *http.Request, v any) error {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return &APIError{Status: http.StatusRequestEntityTooLarge, Code: "PAYLOAD_TOO_LARGE", Message: "request body is larger than 1 MB"}
		}
		return badRequest("INVALID_REQUEST", "could not read request body")
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return badRequest("INVALID_REQUEST", "request body is empty; expected a JSON object")
	}
	return decodeStrict(body, v)
}

// decodeEmptyBody accepts what a route without parameters takes as its
// body: none, or an empty JSON object (anything else is decodeJSON's 4xx).
func decodeEmptyBody(w http.ResponseWriter, r *http.Request) error {
	if r.ContentLength <= 0 {
		return nil
	}
	var body struct{}
	return decodeJSON(w, r, &body)
}
