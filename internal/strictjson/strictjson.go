// Package strictjson decodes JSON into Go values strictly: every request
// body of the admin API and the JSON settings (PIPELINES, ALERT_CHANNELS,
// ACCESS_ROLES) go through it.
//
// encoding/json matches object keys to struct fields case-insensitively
// ({"DRY_RUN":true} sets dry_run, and {"dry_run":true,"DRY_RUN":false}
// runs a real replay), lets the last of duplicate keys win, and words its
// errors in Go terms ("Go struct field replayBody.dry_run of type bool").
// Decode first walks the tokens of the text against the target's type, so
// that keys must match a field's JSON name exactly, no object at any depth
// repeats a key, and every value has the field's JSON type; only then does
// encoding/json decode it. Each error speaks the caller's terms:
// `dry_run must be a boolean`, `unknown field "x"`, `duplicate field
// "filter.q"`, `body is not valid JSON (at byte 12)`.
package strictjson

import (
	"bytes"
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/redrive/redrive/internal/text"
)

// maxJSONDepth bounds how deeply a request body nests (no request needs
// more than a few levels; the walk recurses once per level).
const maxJSONDepth = 64

// Error is what Decode refuses, worded for the person who wrote the JSON.
type Error struct{ Msg string }

func (e *Error) Error() string { return e.Msg }

func fail(format string, args ...any) error { return &Error{Msg: fmt.Sprintf(format, args...)} }

// Decode decodes data, one JSON value (an object for a struct or a map, an
// array for a slice), into v, a non-nil pointer. Its errors are *Error;
// they call the whole value root ("body", "ACCESS_ROLES") and a member by
// its path ("filter.q", "[2].role").
func Decode(data []byte, v any, root string) error { return DecodeAt(data, v, root, "") }

// DecodeAt is Decode for a value found at path inside root (such as a
// request's "filter"), which error messages name.
func DecodeAt(data []byte, v any, root, path string) error {
	if !utf8.Valid(data) {
		return fail("%s is not valid UTF-8", root)
	}
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		panic("strictjson: v must be a non-nil pointer")
	}
	w := walker{root: root}
	// Syntax first (one value, nothing after it), so that a broken text is
	// reported as such wherever the walk would have stopped.
	syn := json.NewDecoder(bytes.NewReader(data))
	if err := syn.Decode(new(json.RawMessage)); err != nil {
		return w.syntaxError(err)
	}
	if len(bytes.TrimLeft(data[syn.InputOffset():], " \t\r\n")) > 0 {
		return fail("%s has data after the JSON %s", root, kind[topDelim(jsonType(rv.Type().Elem()))])
	}
	w.dec = json.NewDecoder(bytes.NewReader(data))
	w.dec.UseNumber()
	if err := w.value(rv.Type().Elem(), path, 0, true); err != nil {
		return err
	}
	if err := json.Unmarshal(data, v); err != nil {
		// Not reached for the types walked: the walk checked what
		// encoding/json checks. Its text is Go's, so it is not shown.
		return fail("%s does not have the expected shape", root)
	}
	return nil
}

// walker reads one JSON text token by token; root names the whole text.
type walker struct {
	dec  *json.Decoder
	root string
}

// value reads the next value and checks it against t. A nil t accepts any
// JSON value (json.RawMessage, interfaces, types that decode themselves),
// still without duplicate keys. top requires an object (the body itself).
func (w walker) value(t reflect.Type, path string, depth int, top bool) error {
	if depth > maxJSONDepth {
		return fail("%s is nested more than %d levels deep", w.root, maxJSONDepth)
	}
	tok, err := w.dec.Token()
	if err != nil {
		return w.syntaxError(err)
	}
	t = jsonType(t)
	if top {
		if want := topDelim(t); tok != want {
			return fail("%s must be a JSON %s", w.name(path), kind[want])
		}
	}
	if tok == nil { // null: encoding/json leaves the field as it is
		return nil
	}
	if t == nil {
		switch tok {
		case json.Delim('{'):
			return w.object(nil, path, depth)
		case json.Delim('['):
			return w.array(nil, path, depth)
		}
		return nil
	}
	mismatch := func() error {
		return fail("%s must be %s", w.name(path), describe(t))
	}
	switch tok := tok.(type) {
	case json.Delim:
		switch {
		case tok == '{' && (t.Kind() == reflect.Struct || t.Kind() == reflect.Map):
			return w.object(t, path, depth)
		case tok == '[' && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array):
			return w.array(t.Elem(), path, depth)
		}
		return mismatch()
	case bool:
		if t.Kind() != reflect.Bool {
			return mismatch()
		}
	case string:
		if t.Kind() != reflect.String && !(t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Uint8) {
			return mismatch()
		}
	case json.Number:
		return number(tok, t, w.name(path), mismatch)
	}
	return nil
}

// object reads the members of an object (after its '{') as fields of the
// struct t, values of the map t, or anything (nil t).
func (w walker) object(t reflect.Type, path string, depth int) error {
	var fields map[string]reflect.Type
	if t != nil && t.Kind() == reflect.Struct {
		fields = jsonFields(t)
	}
	seen := map[string]bool{}
	for w.dec.More() {
		tok, err := w.dec.Token()
		if err != nil {
			return w.syntaxError(err)
		}
		key, _ := tok.(string)
		at := join(path, key)
		if seen[key] {
			return fail("duplicate field %s", Quote(at))
		}
		seen[key] = true
		var ft reflect.Type
		switch {
		case fields != nil:
			var ok bool
			if ft, ok = fields[key]; !ok {
				return fail("unknown field %s", Quote(at))
			}
		case t != nil: // a map
			if t.Key().Kind() != reflect.String {
				return fail("%s must be %s", w.name(path), describe(t))
			}
			ft = t.Elem()
		}
		if err := w.value(ft, at, depth+1, false); err != nil {
			return err
		}
	}
	_, err := w.dec.Token() // '}'
	return w.syntaxError(err)
}

// array reads the elements of an array (after its '[') as values of elem
// (anything when nil).
func (w walker) array(elem reflect.Type, path string, depth int) error {
	for i := 0; w.dec.More(); i++ {
		if err := w.value(elem, fmt.Sprintf("%s[%d]", path, i), depth+1, false); err != nil {
			return err
		}
	}
	_, err := w.dec.Token() // ']'
	return w.syntaxError(err)
}

// number checks a JSON number, the value called name, against a numeric
// t, with encoding/json's rules: integers without fraction or exponent,
// within the type's range.
func number(n json.Number, t reflect.Type, name string, mismatch func() error) error {
	s := n.String()
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if _, err := strconv.ParseInt(s, 10, t.Bits()); err != nil {
			return rangeError(err, name, mismatch, fmt.Sprintf("%d..%d", int64(-1)<<(t.Bits()-1), int64(1)<<(t.Bits()-1)-1))
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if _, err := strconv.ParseUint(s, 10, t.Bits()); err != nil {
			return rangeError(err, name, mismatch, fmt.Sprintf("0..%d", uint64(math.MaxUint64)>>(64-t.Bits())))
		}
	case reflect.Float32, reflect.Float64:
		if _, err := strconv.ParseFloat(s, t.Bits()); err != nil {
			return fail("%s is out of range", name)
		}
	default:
		return mismatch()
	}
	return nil
}

// rangeError words a failed integer parse: out of range, or not an integer.
func rangeError(err error, name string, mismatch func() error, bounds string) error {
	if errors.Is(err, strconv.ErrRange) {
		return fail("%s must be an integer in %s", name, bounds)
	}
	return mismatch()
}

// syntaxError words a tokenizer error (nil stays nil).
func (w walker) syntaxError(err error) error {
	var se *json.SyntaxError
	switch {
	case err == nil:
		return nil
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return fail("%s is not valid JSON (it ends too early)", w.root)
	case errors.As(err, &se):
		return fail("%s is not valid JSON (at byte %d)", w.root, se.Offset)
	}
	return fail("%s is not valid JSON", w.root)
}

// kind names what a delimiter opens.
var kind = map[json.Delim]string{'{': "object", '[': "array"}

// topDelim is the delimiter the whole value must start with for t: '['
// for a slice or an array, else '{'.
func topDelim(t reflect.Type) json.Delim {
	if t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
		return '['
	}
	return '{'
}

var (
	rawMessageType  = reflect.TypeFor[json.RawMessage]()
	unmarshalerType = reflect.TypeFor[json.Unmarshaler]()
	textType        = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// jsonType is t without pointers, or nil for types that accept any JSON
// value as far as the walk is concerned (they check it themselves).
func jsonType(t reflect.Type) reflect.Type {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || t == rawMessageType || t.Kind() == reflect.Interface ||
		reflect.PointerTo(t).Implements(unmarshalerType) || reflect.PointerTo(t).Implements(textType) {
		return nil
	}
	return t
}

var fieldCache sync.Map // reflect.Type -> map[string]reflect.Type

// jsonFields maps the JSON names of struct t's fields (as encoding/json
// names them: the tag's name, else the Go name; untagged embedded structs
// flattened) to their types.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	if f, ok := fieldCache.Load(t); ok {
		return f.(map[string]reflect.Type)
	}
	out := map[string]reflect.Type{}
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		ft := f.Type
		for ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if f.Anonymous && name == "" && ft.Kind() == reflect.Struct {
			for k, v := range jsonFields(ft) {
				out[k] = v
			}
			continue
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out[name] = f.Type
	}
	fieldCache.Store(t, out)
	return out
}

// describe names the JSON type t expects, in the API's terms ("an integer").
func describe(t reflect.Type) string {
	switch noun := noun(t); {
	case noun == "array of bytes":
		return "a base64 string"
	case noun == "":
		return "a JSON value"
	case strings.ContainsRune("aeiou", rune(noun[0])):
		return "an " + noun
	default:
		return "a " + noun
	}
}

// noun is the singular noun for what t expects ("" for any JSON value).
func noun(t reflect.Type) string {
	if t = jsonType(t); t == nil {
		return ""
	}
	switch t.Kind() {
	case reflect.Bool:
		return "boolean"
	case reflect.String:
		return "string"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "integer"
	case reflect.Float32, reflect.Float64:
		return "number"
	case reflect.Slice, reflect.Array:
		elem := noun(t.Elem())
		if t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Uint8 {
			return "array of bytes"
		}
		if elem == "" {
			return "array"
		}
		if rest, ok := strings.CutPrefix(elem, "array"); ok {
			return "array of arrays" + rest
		}
		return "array of " + elem + "s"
	case reflect.Struct, reflect.Map:
		return "object"
	}
	return ""
}

// MaxEcho bounds the text of the JSON a message quotes (field paths).
const MaxEcho = 64

// name is how a message refers to the value at path.
func (w walker) name(path string) string {
	if path == "" {
		return w.root
	}
	return text.Clip(path, MaxEcho)
}

// join is the path of member key of the object at path.
func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// Quote quotes a field path (or other text of the JSON) for a message, cut
// to MaxEcho bytes.
func Quote(path string) string { return strconv.Quote(text.Clip(path, MaxEcho)) }
