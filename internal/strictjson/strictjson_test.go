package strictjson

import (
	"errors"
	"reflect"
	"testing"
)

type rule struct {
	Email     string   `json:"email,omitempty"`
	Role      string   `json:"role"`
	Pipelines []string `json:"pipelines,omitempty"`
}

type inner struct{ N int64 }

type shape struct {
	Name  string         `json:"name"`
	Inner inner          `json:"inner"`
	Any   any            `json:"any"`
	Tags  map[string]int `json:"tags"`
}

func TestDescribe(t *testing.T) {
	for _, c := range []struct {
		v    any
		want string
	}{
		{true, "a boolean"}, {"", "a string"}, {1, "an integer"}, {1.5, "a number"}, {[]int64{}, "an array of integers"},
		{[][]string{}, "an array of arrays of strings"}, {shape{}, "an object"}, {[]byte{}, "a base64 string"},
		{map[string]int{}, "an object"}, {[]any{}, "an array"}, {&rule{}, "an object"},
	} {
		if got := describe(reflect.TypeOf(c.v)); got != c.want {
			t.Errorf("%T: %q, want %q", c.v, got, c.want)
		}
	}
}

// A slice is read from an array, each element as strictly as an object
// body, and every message names the root the caller gave.
func TestDecodeArraysUnderTheirRootsName(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`[{"email":"a@b.c","ROLE":"admin"}]`, `unknown field "[0].ROLE"`},
		{`[{"email":"a@b.c","role":"viewer","role":"admin"}]`, `duplicate field "[0].role"`},
		{`[{"role":"x"},{"emAil":"a@b.c","role":"admin"}]`, `unknown field "[1].emAil"`},
		{`[null]`, ``}, // null leaves the element zero, as encoding/json does
		{`["admin"]`, `[0] must be an object`},
		{`{"role":"admin"}`, `ACCESS_ROLES must be a JSON array`},
		{`[{"role":"admin"}] x`, `ACCESS_ROLES has data after the JSON array`},
		{`[{"role":`, `ACCESS_ROLES is not valid JSON (it ends too early)`},
		{"[\"\xff\"]", `ACCESS_ROLES is not valid UTF-8`},
		{`[{"role":"admin","pipelines":"beers"}]`, `[0].pipelines must be an array of strings`},
	} {
		var rs []rule
		err := Decode([]byte(c.in), &rs, "ACCESS_ROLES")
		var e *Error
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.in, err)
		case c.want != "" && (!errors.As(err, &e) || e.Msg != c.want):
			t.Errorf("%s: %v, want %q", c.in, err, c.want)
		}
	}
	var rs []rule
	if err := Decode([]byte(` [{"email":"a@b.c","role":"admin","pipelines":["beers"]}] `), &rs, "ACCESS_ROLES"); err != nil ||
		len(rs) != 1 || rs[0].Role != "admin" || rs[0].Pipelines[0] != "beers" {
		t.Errorf("a good array: %v %+v", err, rs)
	}
}

// An object's members are checked at every depth: exact names in structs,
// no repeats in maps or in values of any type.
func TestDecodeObjectsAtEveryDepth(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`{"name":"x","inner":{"n":1}}`, `unknown field "inner.n"`},
		{`{"name":"x","inner":{"N":"1"}}`, `inner.N must be an integer`},
		{`{"any":{"a":1,"a":2}}`, `duplicate field "any.a"`},
		{`{"tags":{"a":1,"a":2}}`, `duplicate field "tags.a"`},
		{`{"tags":{"a":1.5}}`, `tags.a must be an integer`},
		{`[]`, `PIPELINES entry must be a JSON object`},
	} {
		var v shape
		if err := Decode([]byte(c.in), &v, "PIPELINES entry"); err == nil || err.Error() != c.want {
			t.Errorf("%s: %v, want %q", c.in, err, c.want)
		}
	}
	var v shape
	if err := Decode([]byte(`{"name":"x","inner":{"N":3},"any":[1,{"b":2}],"tags":{"a":1}}`), &v, "x"); err != nil ||
		v.Inner.N != 3 || v.Tags["a"] != 1 {
		t.Errorf("a good object: %v %+v", err, v)
	}
}
