// Package jsonpointer parses RFC 6901 JSON pointers and resolves them in a
// JSON document. config validates the pointers a pipeline declares with
// Parse; dlq reads a dead-lettered body's key and labels with Resolve.
package jsonpointer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/redrive/redrive/internal/jsonscan"
)

// MaxLen bounds a pointer's length (bytes): a pointer is configuration,
// never data, so anything longer is a mistake.
const MaxLen = 256

// Pointer is a parsed JSON pointer: its reference tokens, unescaped.
type Pointer []string

// Parse reads an RFC 6901 pointer: "" (the whole document) or a sequence of
// "/token", where "~0" stands for "~" and "~1" for "/" and no other "~"
// escape is allowed.
func Parse(s string) (Pointer, error) {
	if len(s) > MaxLen {
		return nil, fmt.Errorf("JSON pointer longer than %d bytes", MaxLen)
	}
	if s == "" {
		return Pointer{}, nil
	}
	if s[0] != '/' {
		return nil, errors.New("JSON pointer must be empty or start with /")
	}
	parts := strings.Split(s[1:], "/")
	p := make(Pointer, len(parts))
	for i, part := range parts {
		var b strings.Builder
		for j := 0; j < len(part); j++ {
			c := part[j]
			if c != '~' {
				b.WriteByte(c)
				continue
			}
			if j+1 >= len(part) || (part[j+1] != '0' && part[j+1] != '1') {
				return nil, fmt.Errorf("JSON pointer %q: ~ must be followed by 0 or 1", s)
			}
			if part[j+1] == '0' {
				b.WriteByte('~')
			} else {
				b.WriteByte('/')
			}
			j++
		}
		p[i] = b.String()
	}
	return p, nil
}

// String is the pointer in its RFC 6901 text form (escaped).
func (p Pointer) String() string {
	var b strings.Builder
	for _, t := range p {
		b.WriteByte('/')
		b.WriteString(strings.NewReplacer("~", "~0", "/", "~1").Replace(t))
	}
	return b.String()
}

// Resolve returns the JSON value p refers to in doc (raw JSON text), and
// false when doc is not JSON or the value is absent. An array index is a
// decimal without leading zeros ("0", "12"); "-" refers to nothing. Of an
// object's duplicate members the last one counts, as in json.Unmarshal
// into a map. doc is validated once and then walked without reflection
// (internal/jsonscan): captures read every body through it.
func (p Pointer) Resolve(doc []byte) (json.RawMessage, bool) {
	cur := json.RawMessage(bytes.TrimSpace(doc))
	if !json.Valid(cur) {
		return nil, false
	}
	for _, tok := range p {
		var next []byte
		switch cur[0] {
		case '{':
			jsonscan.Members(cur, func(key, value []byte) {
				if jsonscan.KeyIs(key, tok) {
					next = value
				}
			})
		case '[':
			i, ok := index(tok)
			if !ok {
				return nil, false
			}
			n := 0
			jsonscan.Elements(cur, func(value []byte) {
				if n == i {
					next = value
				}
				n++
			})
		}
		if next == nil {
			return nil, false
		}
		cur = next
	}
	return cur, true
}

// index reads an RFC 6901 array index: 0 or a decimal without a leading zero.
func index(tok string) (int, bool) {
	if tok == "" || (len(tok) > 1 && tok[0] == '0') {
		return 0, false
	}
	for _, c := range tok {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	n, err := strconv.Atoi(tok)
	return n, err == nil
}
