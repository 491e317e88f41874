package handlers

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/redrive/redrive/internal/text"
)

// goInternals matches text that must never reach a 4xx message: Go type
// names and decoder wording, D1's raw errors, stack traces.
var goInternals = regexp.MustCompile(`(?i)go struct|go value|json: |unmarshal|\bstruct\b|reflect|\bint(8|16|32|64)?\b|uint|float(32|64)|map\[|\[\]|interface|rawmessage|handlers\.|dlq\.|enrichment\.|replayBody|acknowledgeBody|D1_ERROR|SQLITE|goroutine|panic|\.go:\d+|wasm|at .*\.(js|mjs):\d+`)

// quoted matches the quoted request text a message echoes (a field name,
// a path), which is the client's, not ours.
var quoted = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)

// checkMessage fails if a 4xx message shows Go's or D1's internals.
func checkMessage(t testing.TB, input, msg string) {
	t.Helper()
	if msg == "" {
		t.Fatalf("%.200q: empty message", input)
	}
	if m := goInternals.FindString(quoted.ReplaceAllString(msg, `""`)); m != "" {
		t.Fatalf("%.200q: message %q shows %q", input, msg, m)
	}
}

// checkInputError fails unless err is a 400 *APIError whose message is in
// the API's terms.
func checkInputError(t testing.TB, input string, err error) *APIError {
	t.Helper()
	var apiErr *APIError
	if !errors.As(err, &apiErr) || apiErr.Status != 400 || apiErr.Code == "" {
		t.Fatalf("%.200q: error %#v is not a 400 APIError", input, err)
	}
	checkMessage(t, input, apiErr.Message)
	return apiErr
}

func TestDecodeStrictMessages(t *testing.T) {
	for _, c := range []struct {
		body string
		v    any
		msg  string // "" means accepted
	}{
		{`{"dry_run":true}`, &replayBody{}, ""},
		{` {"ids":[1],"dry_run":null,"cursor":"c","limit":5,"delay_seconds":null,"filter":{"q":"x"}} `, &replayBody{}, ""},
		{`{"DRY_RUN":true}`, &replayBody{}, `unknown field "DRY_RUN"`},
		{`{"Dry_Run":true}`, &replayBody{}, `unknown field "Dry_Run"`},
		{`{"dry_run":true,"DRY_RUN":false}`, &replayBody{}, `unknown field "DRY_RUN"`},
		{`{"dry_run":true,"dry_run":false}`, &replayBody{}, `duplicate field "dry_run"`},
		{`{"dry_run":true,"dry\u005frun":false}`, &replayBody{}, `duplicate field "dry_run"`},
		{`{"filter":{"q":"a","q":"b"}}`, &replayBody{}, `duplicate field "filter.q"`},
		{`{"filter":{"q":{"a":1,"a":2}}}`, &replayBody{}, `duplicate field "filter.q.a"`},
		{`{"ids":[{"x":1,"x":1}]}`, &replayBody{}, `duplicate field "ids[0].x"`},
		{`{"x":1}`, &replayBody{}, `unknown field "x"`},
		{`{"dry_run":"yes"}`, &replayBody{}, `dry_run must be a boolean`},
		{`{"dry_run":1}`, &replayBody{}, `dry_run must be a boolean`},
		{`{"cursor":5}`, &replayBody{}, `cursor must be a string`},
		{`{"note":["a"]}`, &acknowledgeBody{}, `note must be a string`},
		{`{"beers":{}}`, &enrichRequest{}, `beers must be an array of objects`},
		{`{"beers":[1]}`, &enrichRequest{}, `beers[0] must be an object`},
		{`{"beers":[{"beer_id":"a","BEER_NAME":"b"}]}`, &enrichRequest{}, `unknown field "beers[0].BEER_NAME"`},
		{`{"beers":[{"beer_id":7}]}`, &enrichRequest{}, `beers[0].beer_id must be a string`},
		{`{"queue":"q","messages":[{"body":"x","delay_seconds":1.5}]}`, &devSendRequest{}, `messages[0].delay_seconds must be an integer`},
		{`{"queue":"q","messages":[{"body":"x","delay_seconds":1e999}]}`, &devSendRequest{}, `messages[0].delay_seconds must be an integer`},
		{`{"queue":"q","messages":[{"body":"x","delay_seconds":99999999999999999999}]}`, &devSendRequest{},
			`messages[0].delay_seconds must be an integer in -9223372036854775808..9223372036854775807`},
		{``, &replayBody{}, `body is not valid JSON (it ends too early)`},
		{`{`, &replayBody{}, `body is not valid JSON (it ends too early)`},
		{`{"a"`, &replayBody{}, `body is not valid JSON (it ends too early)`},
		{`{nope}`, &replayBody{}, `body is not valid JSON (at byte 2)`},
		{`{"dry_run":tru}`, &replayBody{}, `body is not valid JSON (at byte 15)`},
		{"{\"note\":\"a\x00b\"}", &acknowledgeBody{}, `body is not valid JSON (at byte 11)`},
		{"{\"note\":\"\xff\"}", &acknowledgeBody{}, `body is not valid UTF-8`},
		{`{} {}`, &replayBody{}, `body has data after the JSON object`},
		{`{}]`, &replayBody{}, `body has data after the JSON object`},
		{`null`, &replayBody{}, `body must be a JSON object`},
		{`[1]`, &replayBody{}, `body must be a JSON object`},
		{`"x"`, &replayBody{}, `body must be a JSON object`},
		{`{"ids":` + strings.Repeat("[", 70) + strings.Repeat("]", 70) + `}`, &replayBody{}, `is nested more than 64 levels deep`},
		{`{"` + strings.Repeat("k", 200) + `":1}`, &replayBody{}, `unknown field "` + strings.Repeat("k", 64) + `…"`},
		// A path of 64 bytes is shown whole; a longer one is cut before the
		// character that straddles byte 64, never inside it.
		{`{"` + strings.Repeat("k", 64) + `":1}`, &replayBody{}, `unknown field "` + strings.Repeat("k", 64) + `"`},
		{`{"` + strings.Repeat("k", 63) + `éz":1}`, &replayBody{}, `unknown field "` + strings.Repeat("k", 63) + `…"`},
		// Array elements are numbered from 0 in the path.
		{`{"beers":[{"beer_id":"a","beer_name":"b"},{"beer_id":"c","beer_name":"d"},{"beer_id":7}]}`, &enrichRequest{},
			`beers[2].beer_id must be a string`},
		{`{"queue":"q","messages":"x"}`, &devSendRequest{}, `messages must be an array of objects`},
		{`{"ids":` + strings.Repeat("[", 64) + strings.Repeat("]", 64) + `}`, &replayBody{}, ""},
		{`{"ids":` + strings.Repeat("[", 65) + strings.Repeat("]", 65) + `}`, &replayBody{}, `is nested more than 64 levels deep`},
		{`{"ids":` + strings.Repeat(`{"a":`, 70) + `1` + strings.Repeat("}", 70) + `}`, &replayBody{}, `is nested more than 64 levels deep`},
	} {
		err := decodeStrict([]byte(c.body), c.v)
		if c.msg == "" {
			if err != nil {
				t.Errorf("%s: %v", c.body, err)
			}
			continue
		}
		if err == nil {
			t.Errorf("%.80s: accepted, want %q", c.body, c.msg)
			continue
		}
		apiErr := checkInputError(t, c.body, err)
		if apiErr.Code != "INVALID_REQUEST" || !strings.Contains(apiErr.Message, c.msg) {
			t.Errorf("%.80s: %s %q, want %q", c.body, apiErr.Code, apiErr.Message, c.msg)
		}
	}
}

// The filter object is decoded with the same rules; its own errors are INVALID_FILTER.
func TestFilterIsStrict(t *testing.T) {
	for body, msg := range map[string]string{
		`"x"`:                    `filter must be a JSON object`,
		`[]`:                     `filter must be a JSON object`,
		`{"Q":"x"}`:              `unknown field "filter.Q"`,
		`{"failed_after":"yes"}`: `filter.failed_after must be an integer`,
		`{"failed_after":1.5}`:   `filter.failed_after must be an integer`,
		`{"status":true}`:        `filter.status must be a string`,
	} {
		_, err := jsonFilter([]byte(body))
		apiErr := checkInputError(t, body, err)
		if apiErr.Code != "INVALID_FILTER" || apiErr.Message != msg {
			t.Errorf("%s: %s %q, want %q", body, apiErr.Code, apiErr.Message, msg)
		}
	}
	f, err := jsonFilter([]byte(`{"q":"x","beer_id":"b","failed_after":5}`))
	if err != nil || f.Q != "x" || f.Key != "b" || *f.FailedAfter != 5 {
		t.Fatalf("%+v %v", f, err)
	}
}

// The mixed-case key that encoding/json would have matched to dry_run is
// rejected: the request is a 400 and replays nothing.
func TestMixedCaseDryRunReplaysNothing(t *testing.T) {
	api, s := newDLQAPI(t)
	ids := seedRows(t, api.DB, 2)
	h := api.Handler()
	before := tableState(t, api.DB)
	for _, body := range []string{
		`{"filter":{},"dry_run":true,"DRY_RUN":false}`,
		`{"filter":{},"dry_run":true,"dry_run":false}`,
		fmt.Sprintf(`{"IDS":[%d],"ids":[%d],"dry_run":true}`, ids[0], ids[1]),
		`{"filter":{"q":"Beer","Q":""},"dry_run":true}`,
	} {
		rec, env := do(h, "POST", "/admin/dlq/replay", body, adminHeaders)
		if rec.Code != 400 || env.Error == nil || env.Error.Code == "" || env.Success {
			t.Errorf("%s: %d %s", body, rec.Code, rec.Body)
		}
	}
	if tableState(t, api.DB) != before || s.Calls != 0 {
		t.Fatal("a rejected replay changed rows or sent messages")
	}
}

// Fields decode as encoding/json names them: an untagged embedded struct's
// fields are promoted, an embedded struct with a tag name or a plain struct
// field is one object, an embedded non-struct type is a field of its
// type's name.
type strictLabel string

type strictInner struct {
	X int `json:"x"`
}

type StrictNamed struct {
	Y int `json:"y"`
}

type strictEmbedding struct {
	strictInner
	StrictNamed `json:"named"`
	Plain       StrictNamed
	strictLabel
	Skipped int `json:"-"`
	hidden  int
}

func TestDecodeStrictEmbeddedFields(t *testing.T) {
	var v strictEmbedding
	err := decodeStrict([]byte(`{"x":1,"named":{"y":2},"Plain":{"y":3}}`), &v)
	if err != nil || v.X != 1 || v.StrictNamed.Y != 2 || v.Plain.Y != 3 {
		t.Fatalf("%+v %v", v, err)
	}
	for body, msg := range map[string]string{
		`{"strictInner":{"x":1}}`: `unknown field "strictInner"`,
		`{"y":2}`:                 `unknown field "y"`,
		`{"named":{"x":1}}`:       `unknown field "named.x"`,
		`{"Plain":{"x":1}}`:       `unknown field "Plain.x"`,
		`{"Plain":1}`:             `Plain must be an object`,
		`{"Skipped":1}`:           `unknown field "Skipped"`,
		`{"hidden":1}`:            `unknown field "hidden"`,
		`{"strictLabel":1}`:       `unknown field "strictLabel"`,
	} {
		err := decodeStrict([]byte(body), &strictEmbedding{})
		if apiErr := checkInputError(t, body, err); apiErr.Message != msg {
			t.Errorf("%s: %q, want %q", body, apiErr.Message, msg)
		}
	}
}

// Integer fields narrower than 64 bits, and unsigned ones, are checked
// against their own range; a string is a base64 []byte.
func TestDecodeStrictNumberRanges(t *testing.T) {
	type narrow struct {
		I8  int8    `json:"i8"`
		I32 int32   `json:"i32"`
		U8  uint8   `json:"u8"`
		U64 uint64  `json:"u64"`
		F32 float32 `json:"f32"`
		B   []byte  `json:"b"`
	}
	var v narrow
	err := decodeStrict([]byte(`{"i8":-128,"i32":2147483647,"u8":255,"u64":18446744073709551615,"f32":1.5,"b":"aGk="}`), &v)
	if err != nil || v.I8 != -128 || v.I32 != 2147483647 || v.U8 != 255 || v.U64 != 18446744073709551615 || v.F32 != 1.5 || string(v.B) != "hi" {
		t.Fatalf("%+v %v", v, err)
	}
	for body, msg := range map[string]string{
		`{"i8":128}`:                   `i8 must be an integer in -128..127`,
		`{"i8":-129}`:                  `i8 must be an integer in -128..127`,
		`{"i32":2147483648}`:           `i32 must be an integer in -2147483648..2147483647`,
		`{"u8":256}`:                   `u8 must be an integer in 0..255`,
		`{"u8":-1}`:                    `u8 must be an integer`,
		`{"u64":18446744073709551616}`: `u64 must be an integer in 0..18446744073709551615`,
		`{"u8":1.5}`:                   `u8 must be an integer`,
		`{"f32":1e39}`:                 `f32 is out of range`,
		`{"f32":"1"}`:                  `f32 must be a number`,
		`{"b":true}`:                   `b must be a base64 string`,
	} {
		err := decodeStrict([]byte(body), &narrow{})
		if apiErr := checkInputError(t, body, err); apiErr.Message != msg {
			t.Errorf("%s: %q, want %q", body, apiErr.Message, msg)
		}
	}
}

// decodeStrict is for pointers to structs; anything else is a bug in the
// caller, and it panics instead of decoding nothing.
func TestDecodeStrictNeedsANonNilPointer(t *testing.T) {
	for name, v := range map[string]any{"nil pointer": (*replayBody)(nil), "struct value": replayBody{}} {
		func() {
			defer func() {
				if p := recover(); p != "strictjson: v must be a non-nil pointer" {
					t.Errorf("%s: recovered %v", name, p)
				}
			}()
			decodeStrict([]byte(`{}`), v)
		}()
	}
}

// clip cuts at a character boundary and never panics, whatever the bytes.
func TestClip(t *testing.T) {
	for in, want := range map[string]string{
		"":                             "",
		strings.Repeat("a", 64):        strings.Repeat("a", 64),
		strings.Repeat("a", 65):        strings.Repeat("a", 64) + "…",
		strings.Repeat("a", 63) + "éé": strings.Repeat("a", 63) + "…",
		strings.Repeat("\x80", 70):     "…",
	} {
		if got := text.Clip(in, maxEcho); got != want {
			t.Errorf("clip(%q) = %q, want %q", in, got, want)
		}
	}
}
