package handlers

import (
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"strings"
	"testing"
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
	if err != nil || f.Q != "x" || f.BeerID != "b" || *f.FailedAfter != 5 {
		t.Fatalf("%+v %v", f, err)
	}
}

func TestDescribe(t *testing.T) {
	for _, c := range []struct {
		v    any
		want string
	}{
		{true, "a boolean"}, {"", "a string"}, {1, "an integer"}, {1.5, "a number"}, {[]int64{}, "an array of integers"},
		{[][]string{}, "an array of arrays of strings"}, {enrichRequest{}, "an object"}, {[]byte{}, "a base64 string"},
		{map[string]int{}, "an object"}, {[]any{}, "an array"}, {&replayBody{}, "an object"},
	} {
		if got := describe(reflect.TypeOf(c.v)); got != c.want {
			t.Errorf("%T: %q, want %q", c.v, got, c.want)
		}
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
