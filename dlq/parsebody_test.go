package dlq

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/redrive/redrive/config"
	"github.com/redrive/redrive/internal/text"
)

// parseBodyByMap is parseBody as it was before the scanner (json.Unmarshal
// into a map), kept as the reference FuzzParseBody compares it with.
func parseBodyByMap(src string) body {
	trimmed := bytes.TrimSpace([]byte(src))
	if len(trimmed) == 0 {
		return body{Problem: "empty body"}
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(trimmed, &obj); err != nil {
		switch trimmed[0] {
		case '[', '"', 't', 'f', 'n', '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
			if json.Valid(trimmed) {
				return body{Problem: "body is JSON but not an object"}
			}
		}
		return body{Problem: "body is not JSON: " + text.Clip(err.Error(), 120)}
	}
	if obj == nil {
		return body{Problem: "body is JSON but not an object"}
	}
	field := func(raw json.RawMessage) *string {
		if len(raw) == 0 || string(raw) == "null" {
			return nil
		}
		var s string
		if json.Unmarshal(raw, &s) != nil {
			s = string(raw)
		}
		return &s
	}
	b := body{Label1: field(obj["beer_name"]), Label2: field(obj["brewer"])}
	raw, ok := obj["beer_id"]
	switch {
	case !ok:
		b.Problem = "no beer_id"
	case string(raw) == "null":
		b.Problem = "beer_id is null"
	case json.Unmarshal(raw, &b.Key) != nil:
		b.Problem = "beer_id is not a string"
	case b.Key == "":
		b.Problem = "empty beer_id"
	}
	return b
}

func TestParseBodyScannerCases(t *testing.T) {
	beer := config.BeerPipeline()
	for _, src := range []string{
		`{"beer_id":"b1","beer_name":"N","brewer":"B"}`,
		` {"beer_id" : "b1" , "beer_name":null,"brewer":{"x":[1,"]}"]}} `,
		`{"beer_id":"a","beer_id":"b"}`,
		`{"beer\u005fid":"esc","brewer":"\u00e9\"q"}`,
		`{"beer_id":"\ud800","beer_name":"` + "\xff" + `"}`,
		`{"beer_id":1}`, `{"beer_id":null}`, `{"beer_id":""}`, `{}`, `null`, `[1]`, `"s"`, `1`,
		`{"beer_id":"x"`, `{"beer_id":"x"}}`, "\xff", `{"a":[{"b":"}"}],"beer_id":"after"}`,
		`{"brewer":true,"beer_name":-1.5e3,"beer_id":"z"}`,
	} {
		got, want := parseBody(src, false, beer), parseBodyByMap(src)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("parseBody(%q) = %s, by map %s", src, show(got), show(want))
		}
	}
}

func show(b body) string {
	js, _ := json.Marshal(b)
	return string(js)
}

// The scanner reads the beer pipeline's fields exactly as json.Unmarshal
// into a map did: same key, labels and problem for any body. Seeds are in
// testdata/fuzz/FuzzParseBody.
func FuzzParseBody(f *testing.F) {
	for _, s := range []string{`{"beer_id":"1","beer_name":"n","brewer":"b"}`, `{"beer_id":1}`, `{"beer\u005fid":"x","beer_id":"y"}`,
		`{"a":{"b":["}",{"c":"]"}]},"brewer":"\u0000"}`, `null`, `[`, "\xff{", `{"beer_id":"\ud83d"}`} {
		f.Add(s)
	}
	beer := config.BeerPipeline()
	f.Fuzz(func(t *testing.T, src string) {
		got, want := parseBody(src, false, beer), parseBodyByMap(src)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("parseBody(%q) = %s, by map %s", src, show(got), show(want))
		}
	})
}
