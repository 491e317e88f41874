package platform

import (
	"errors"
	"net/http"
	"strings"
)

// (Not js/wasm only: plain Go, tested natively.)

// Headers cross between platform/worker/worker.mjs and Go as one string, a
// header list: each name and each value followed by "\n" (headers.mjs). A
// Fetch header name or value never holds "\n" (the Headers class refuses
// one), so no escaping is needed. It replaces a JSON array of pairs, whose
// decoding and encoding by reflection cost more than the rest of the bridge.

// errHeaderList is a header list with a name but no value after it.
var errHeaderList = errors.New("header list: a name without a value")

// parseHeaderList adds the headers of the list s to h.
func parseHeaderList(s string, h http.Header) error {
	for s != "" {
		name, rest, ok := strings.Cut(s, "\n")
		if !ok {
			return errHeaderList
		}
		value, rest, ok := strings.Cut(rest, "\n")
		if !ok {
			return errHeaderList
		}
		h.Add(name, value)
		s = rest
	}
	return nil
}

// newlineToSpace is what net/http's Header.Write does to a value's CR and LF.
var newlineToSpace = strings.NewReplacer("\n", " ", "\r", " ")

// headerList returns h as a header list, names in lower case. A value's CR
// or LF becomes a space, as net/http's server writes it.
func headerList(h http.Header) string {
	var b strings.Builder
	for k, vs := range h {
		k = strings.ToLower(newlineToSpace.Replace(k))
		for _, v := range vs {
			b.WriteString(k)
			b.WriteByte('\n')
			b.WriteString(newlineToSpace.Replace(v))
			b.WriteByte('\n')
		}
	}
	return b.String()
}
