// Package jsonscan reads and writes the JSON of the capture path without
// reflection: dlq reads dead-lettered bodies and encodes their rows with
// it, platform reads a delivered batch's description. A batch of 100
// bodies read through json.Unmarshal into a map, and its rows encoded by
// json.Marshal, cost about 10 ms in wasm (docs/benchmarks.md "A capture
// batch of 100, delivered to settled"), and reflection is TinyGo's slowest
// path. What Members and Elements walk must
// have passed json.Valid (or come from JSON.stringify): the walk does no
// validation of its own.
package jsonscan

import (
	"encoding/json"
	"unicode/utf8"
)

// Members calls f with the key (still escaped, without its quotes) and
// the value (raw JSON text, no surrounding space) of each member of the
// JSON object doc, in order. doc must be valid JSON starting with '{'.
func Members(doc []byte, f func(key, value []byte)) {
	i := skipSpace(doc, 1)
	for i < len(doc) && doc[i] == '"' {
		end := jsonStringEnd(doc, i)
		key := doc[i+1 : end-1]
		i = skipSpace(doc, end) + 1 // past ':'
		i = skipSpace(doc, i)
		vend := jsonValueEnd(doc, i)
		f(key, doc[i:vend])
		i = skipSpace(doc, vend)
		if i >= len(doc) || doc[i] != ',' {
			return
		}
		i = skipSpace(doc, i+1)
	}
}

// Elements calls f with each element (raw JSON text) of the JSON array
// doc; doc must be valid JSON starting with '['.
func Elements(doc []byte, f func(value []byte)) {
	i := skipSpace(doc, 1)
	for i < len(doc) && doc[i] != ']' {
		end := jsonValueEnd(doc, i)
		f(doc[i:end])
		i = skipSpace(doc, end)
		if i >= len(doc) || doc[i] != ',' {
			return
		}
		i = skipSpace(doc, i+1)
	}
}

func skipSpace(doc []byte, i int) int {
	for i < len(doc) {
		switch doc[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// jsonStringEnd is the index just past the string starting at doc[i] ('"').
func jsonStringEnd(doc []byte, i int) int {
	for j := i + 1; j < len(doc); j++ {
		switch doc[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return len(doc)
}

// jsonValueEnd is the index just past the value starting at doc[i].
func jsonValueEnd(doc []byte, i int) int {
	if i >= len(doc) {
		return i
	}
	switch doc[i] {
	case '"':
		return jsonStringEnd(doc, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(doc); j++ {
			switch doc[j] {
			case '"':
				j = jsonStringEnd(doc, j) - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return j + 1
				}
			}
		}
		return len(doc)
	}
	j := i
	for j < len(doc) {
		switch doc[j] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			return j
		}
		j++
	}
	return j
}

// KeyIs reports whether key (as Members gives it) is name once
// unescaped, as json.Unmarshal into a map would key it (invalid UTF-8
// becomes U+FFFD).
func KeyIs(key []byte, name string) bool {
	if !hasByte(key, '\\') && utf8.Valid(key) {
		return string(key) == name
	}
	var s string
	q := make([]byte, 0, len(key)+2)
	q = append(append(append(q, '"'), key...), '"')
	return json.Unmarshal(q, &s) == nil && s == name
}

// Text is the string a JSON string value decodes to, as json.Unmarshal
// into a string gives it (invalid UTF-8 becomes U+FFFD); ok is false when
// raw is not a JSON string.
func Text(raw []byte) (s string, ok bool) {
	if len(raw) < 2 || raw[0] != '"' {
		return "", false
	}
	in := raw[1 : len(raw)-1]
	if !hasByte(in, '\\') && utf8.Valid(in) {
		return string(in), true
	}
	if json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}

func hasByte(b []byte, c byte) bool {
	for _, x := range b {
		if x == c {
			return true
		}
	}
	return false
}

const hexDigits = "0123456789abcdef"

// AppendString appends s as a JSON string, byte for byte as json.Marshal
// writes it (HTML escaping included): <, > and & as \u003c, \u003e and
// \u0026, U+2028 and U+2029 escaped, invalid UTF-8 as \ufffd, control
// characters as \b, \f, \n, \r, \t or \u00XX.
func AppendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
