package jsonpointer

import (
	"bytes"
	"encoding/json"
	"testing"
)

// RFC 6901 section 5's examples, and the escapes ~0 and ~1.
func TestResolveRFCExamples(t *testing.T) {
	doc := []byte(`{"foo": ["bar", "baz"], "": 0, "a/b": 1, "c%d": 2, "e^f": 3, "g|h": 4, "i\\j": 5, "k\"l": 6, " ": 7, "m~n": 8}`)
	for ptr, want := range map[string]string{
		"/foo/0": `"bar"`, "/": `0`, "/a~1b": `1`, "/c%d": `2`, "/e^f": `3`, "/g|h": `4`,
		`/i\j`: `5`, `/k"l`: `6`, "/ ": `7`, "/m~0n": `8`, "/foo/1": `"baz"`,
	} {
		p, err := Parse(ptr)
		if err != nil {
			t.Fatalf("%q: %v", ptr, err)
		}
		got, ok := p.Resolve(doc)
		if !ok || string(got) != want {
			t.Errorf("%q resolved to %s (%v), want %s", ptr, got, ok, want)
		}
		if p.String() != ptr {
			t.Errorf("%q printed back as %q", ptr, p.String())
		}
	}
	whole, _ := Parse("")
	if got, ok := whole.Resolve([]byte(` 5 `)); !ok || string(got) != "5" {
		t.Errorf(`"" resolved to %s (%v), want the document`, got, ok)
	}
}

func TestResolveAbsent(t *testing.T) {
	doc := []byte(`{"order":{"id":"o1","lines":[{"sku":"a"}]},"n":null}`)
	for _, ptr := range []string{"/missing", "/order/id/x", "/order/lines/1", "/order/lines/01", "/order/lines/-", "/order/lines/x", "/n/x"} {
		p, err := Parse(ptr)
		if err != nil {
			t.Fatal(err)
		}
		if got, ok := p.Resolve(doc); ok {
			t.Errorf("%q resolved to %s, want absent", ptr, got)
		}
	}
	p, _ := Parse("/order/lines/0/sku")
	if got, ok := p.Resolve(doc); !ok || string(got) != `"a"` {
		t.Errorf("/order/lines/0/sku = %s %v", got, ok)
	}
	if _, ok := p.Resolve([]byte(`{"order":`)); ok {
		t.Error("resolved in invalid JSON")
	}
}

func TestParseRejects(t *testing.T) {
	for _, ptr := range []string{"foo", "/a~", "/a~2", "/~x", string(make([]byte, MaxLen+1))} {
		if _, err := Parse(ptr); err == nil {
			t.Errorf("Parse(%q) accepted", ptr)
		}
	}
}

// Whatever the pointer and document: no panic; a pointer that parses prints
// back to an equivalent pointer, and what it resolves to is valid JSON.
// Seeds are in testdata/fuzz/FuzzPointer.
func FuzzPointer(f *testing.F) {
	f.Add("/order/id", `{"order":{"id":"o1"}}`)
	f.Add("/a~1b/~0", `{"a/b":{"~":[1]}}`)
	f.Add("/0/1", `[[0,{"x":1}]]`)
	f.Add("", `"s"`)
	f.Add("/~", `{}`)
	f.Fuzz(func(t *testing.T, ptr, doc string) {
		p, err := Parse(ptr)
		if err != nil {
			return
		}
		again, err := Parse(p.String())
		if err != nil || len(again) != len(p) {
			t.Fatalf("%q printed as %q, which parses to %v (%v)", ptr, p.String(), again, err)
		}
		for i := range p {
			if again[i] != p[i] {
				t.Fatalf("%q round trip changed token %d: %q -> %q", ptr, i, p[i], again[i])
			}
		}
		if v, ok := p.Resolve([]byte(doc)); ok && !json.Valid(v) {
			t.Fatalf("%q in %q resolved to invalid JSON %q", ptr, doc, v)
		}
	})
}

// resolveByMap is Resolve as it was before the scanner (json.Unmarshal into
// a map or a slice at each step), the reference FuzzResolve compares with.
func resolveByMap(p Pointer, doc []byte) (json.RawMessage, bool) {
	cur := json.RawMessage(bytes.TrimSpace(doc))
	if !json.Valid(cur) {
		return nil, false
	}
	for _, tok := range p {
		switch bytes.TrimSpace(cur)[0] {
		case '{':
			var obj map[string]json.RawMessage
			if json.Unmarshal(cur, &obj) != nil {
				return nil, false
			}
			v, ok := obj[tok]
			if !ok {
				return nil, false
			}
			cur = v
		case '[':
			i, ok := index(tok)
			if !ok {
				return nil, false
			}
			var arr []json.RawMessage
			if json.Unmarshal(cur, &arr) != nil || i >= len(arr) {
				return nil, false
			}
			cur = arr[i]
		default:
			return nil, false
		}
	}
	return cur, true
}

// Resolve finds what the map decoding it replaced found, for any pointer
// and document. Seeds are in testdata/fuzz/FuzzResolve.
func FuzzResolve(f *testing.F) {
	f.Add("/order/id", `{"order":{"id":"o1","id":"o2"}}`)
	f.Add("/a\u005fb/1", `{"a\u005fb":[0,{"x":"]}"}]}`)
	f.Add("/\ufffd", "{\"\xff\":1}")
	f.Add("/2", `[1, [2], {"3":4}]`)
	f.Add("/x", ` {"x" : null } `)
	f.Fuzz(func(t *testing.T, ptr, doc string) {
		p, err := Parse(ptr)
		if err != nil {
			return
		}
		got, ok := p.Resolve([]byte(doc))
		want, wantOK := resolveByMap(p, []byte(doc))
		if ok != wantOK || !bytes.Equal(got, want) {
			t.Fatalf("%q in %q: %q %v, by map %q %v", ptr, doc, got, ok, want, wantOK)
		}
	})
}
