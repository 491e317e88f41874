package jsonscan

import (
	"encoding/json"
	"reflect"
	"testing"
)

var stringSamples = []string{"", "plain", "q\"b\\s\n\r\t\x00\x1f", "\xff\xfeé\u2028<>&", "\ud7ff",
	"<b>&amp;</b>", "a\nb\rc\td\be\ff\x00\x1f\x7f", "é ü 漢字 🍺", "bad \xff utf-8 \xc3", "\u2028\u2029",
	"no route for GET \"/admin/nope\""}

// AppendString writes the bytes json.Marshal writes.
func TestAppendStringIsJSONMarshals(t *testing.T) {
	for _, s := range stringSamples {
		want, _ := json.Marshal(s)
		if got := AppendString(nil, s); string(got) != string(want) {
			t.Errorf("AppendString(%q) = %s, json.Marshal writes %s", s, got, want)
		}
	}
}

func FuzzAppendString(f *testing.F) {
	for _, s := range stringSamples {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, _ := json.Marshal(s)
		if got := AppendString([]byte("x"), s); string(got) != "x"+string(want) {
			t.Fatalf("AppendString(%q) = %s, json.Marshal writes %s", s, got[1:], want)
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
