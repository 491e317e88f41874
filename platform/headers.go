package platform

import (
	"errors"
	"net/http"
	"net/textproto"
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
		key := canonicalName(name)
		h[key] = append(h[key], value)
		s = rest
	}
	return nil
}

// canonicalName is textproto.CanonicalMIMEHeaderKey(name). The runtime
// gives names in lower case, so that function allocates a new string for
// every header of every request; the names requests usually carry are
// constants here instead.
func canonicalName(name string) string {
	switch name {
	case "accept":
		return "Accept"
	case "accept-encoding":
		return "Accept-Encoding"
	case "accept-language":
		return "Accept-Language"
	case "authorization":
		return "Authorization"
	case "cache-control":
		return "Cache-Control"
	case "cf-connecting-ip":
		return "Cf-Connecting-Ip"
	case "cf-ipcountry":
		return "Cf-Ipcountry"
	case "cf-ray":
		return "Cf-Ray"
	case "cf-visitor":
		return "Cf-Visitor"
	case "connection":
		return "Connection"
	case "content-length":
		return "Content-Length"
	case "content-type":
		return "Content-Type"
	case "cookie":
		return "Cookie"
	case "host":
		return "Host"
	case "if-none-match":
		return "If-None-Match"
	case "origin":
		return "Origin"
	case "referer":
		return "Referer"
	case "user-agent":
		return "User-Agent"
	case "x-admin-secret":
		return "X-Admin-Secret"
	case "x-api-key":
		return "X-Api-Key"
	case "x-forwarded-proto":
		return "X-Forwarded-Proto"
	case "x-real-ip":
		return "X-Real-Ip"
	}
	return textproto.CanonicalMIMEHeaderKey(name)
}

// lowerName is strings.ToLower(name) for the names redrive's responses
// carry, without allocating.
func lowerName(name string) string {
	switch name {
	case "Content-Type":
		return "content-type"
	case "X-Request-Id":
		return "x-request-id"
	case "Content-Disposition":
		return "content-disposition"
	case "Cache-Control":
		return "cache-control"
	case "Allow":
		return "allow"
	}
	return strings.ToLower(name)
}

// newlineToSpace is what net/http's Header.Write does to a value's CR and LF.
var newlineToSpace = strings.NewReplacer("\n", " ", "\r", " ")

// noNewlines is s with each CR or LF as a space (s itself when it has none).
func noNewlines(s string) string {
	if strings.ContainsAny(s, "\r\n") {
		return newlineToSpace.Replace(s)
	}
	return s
}

// headerList returns h as a header list, names in lower case. A value's CR
// or LF becomes a space, as net/http's server writes it.
func headerList(h http.Header) string {
	var b strings.Builder
	for k, vs := range h {
		k = lowerName(noNewlines(k))
		for _, v := range vs {
			b.WriteString(k)
			b.WriteByte('\n')
			b.WriteString(noNewlines(v))
			b.WriteByte('\n')
		}
	}
	return b.String()
}
