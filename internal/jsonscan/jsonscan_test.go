package jsonscan

import (
	"encoding/json"
	"reflect"
	"testing"
)

// AppendString writes what json.Marshal's string decodes to.
func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "plain", "q\"b\\s\n\r\t\x00\x1f", "\xff\xfeé\u2028<>&", "\ud7ff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		js := AppendString(nil, s)
		var got, want string
		if err := json.Unmarshal(js, &got); err != nil {
			t.Fatalf("%q encoded as %s: %v", s, js, err)
		}
		ref, _ := json.Marshal(s)
		json.Unmarshal(ref, &want)
		if got != want {
			t.Fatalf("%q encoded as %s decodes to %q, json.Marshal's to %q", s, js, got, want)
		}
	})
}

// Elements and Members walk nested values whole.
func TestJSONWalk(t *testing.T) {
	var got []string
	Elements([]byte(` [ {"a":"]","b":[1,{}]} , "x\"]" ,null,-1e2, [] ] `[1:]), func(v []byte) { got = append(got, string(v)) })
	want := []string{`{"a":"]","b":[1,{}]}`, `"x\"]"`, `null`, `-1e2`, `[]`}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("elements %q, want %q", got, want)
	}
	got = nil
	Members([]byte(`{ "k\"" : {"}":"{"} ,"n":0}`), func(k, v []byte) { got = append(got, string(k)+"="+string(v)) })
	if want := []string{`k\"={"}":"{"}`, `n=0`}; !reflect.DeepEqual(got, want) {
		t.Fatalf("members %q, want %q", got, want)
	}
	Members([]byte(`{}`), func(k, v []byte) { t.Fatalf("member %s in {}", k) })
	Elements([]byte(`[]`), func(v []byte) { t.Fatalf("element %s in []", v) })
}
