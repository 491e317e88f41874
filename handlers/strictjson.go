package handlers

import "github.com/redrive/redrive/internal/strictjson"

// decodeStrict decodes a request body, one JSON object, into v (a pointer
// to a struct) through strictjson: keys exactly as the fields name them,
// none repeated, every value of its field's JSON type. Every error is a
// 400 INVALID_REQUEST whose message speaks the API's terms.
func decodeStrict(data []byte, v any) error {
	return decodeStrictAt(data, v, "")
}

// decodeStrictAt is decodeStrict for a value found at path in the request
// (such as "filter"), which error messages name.
func decodeStrictAt(data []byte, v any, path string) error {
	if err := strictjson.DecodeAt(data, v, "body", path); err != nil {
		return badRequest("INVALID_REQUEST", err.Error())
	}
	return nil
}

// maxEcho bounds the request text a message quotes (field paths, methods).
const maxEcho = strictjson.MaxEcho

// quote quotes request text (a field path, a parameter) for a message, cut
// to a readable length.
func quote(s string) string { return strictjson.Quote(s) }
