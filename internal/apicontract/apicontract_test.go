package apicontract_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/redrive/redrive/handlers"
	"github.com/redrive/redrive/internal/apicontract"
)

const reqID = "0b3c4a1e-6f0e-4a8e-9a51-2a1f0c9d7e11"

func TestCheck(t *testing.T) {
	v, err := apicontract.New(handlers.OpenAPIDocument())
	if err != nil {
		t.Fatal(err)
	}
	hdr := func(kv ...string) http.Header {
		h := http.Header{"Content-Type": {"application/json; charset=utf-8"}, "X-Request-Id": {reqID}}
		for i := 0; i+1 < len(kv); i += 2 {
			h.Set(kv[i], kv[i+1])
		}
		return h
	}
	admin := func(method, target string) *http.Request {
		r := httptest.NewRequest(method, target, nil)
		r.Header.Set("X-API-Key", "k")
		r.Header.Set("X-Admin-Secret", "s")
		return r
	}
	replayed := `{"success":true,"requestId":"` + reqID + `","data":{"requested_count":1,"claimed_count":1,"replayed_count":1,"failed_count":0,"queued_to":"q","delay_seconds":0,"replayed_ids":[1],"failed_ids":[],"skipped_count":0,"skipped":[]}}`
	badRequest := `{"success":false,"requestId":"` + reqID + `","error":{"message":"m","code":"INVALID_REQUEST"}}`
	for _, c := range []struct {
		name    string
		req     *http.Request
		body    string
		status  int
		header  http.Header
		resp    string
		problem string // "" when the exchange matches
	}{
		{"a replay's result (matches ReplayResult only, not Preview)", admin("POST", "/admin/dlq/replay"), `{"ids":[1]}`, 200, hdr(), replayed, ""},
		{"no X-Request-ID", admin("POST", "/admin/dlq/replay"), `{"ids":[1]}`, 200, http.Header{"Content-Type": {"application/json"}}, replayed, "X-Request-ID"},
		{"a field the document does not have", admin("POST", "/admin/dlq/replay"), `{"ids":[1]}`, 200, hdr(), strings.Replace(replayed, `"skipped":[]`, `"skipped":[],"extra":1`, 1), "extra"},
		{"a required field missing", admin("POST", "/admin/dlq/replay"), `{"ids":[1]}`, 200, hdr(), strings.Replace(replayed, `"queued_to":"q",`, ``, 1), "queued_to"},
		{"an accepted request the document rejects", admin("POST", "/admin/dlq/replay"), `{"ids":[1],"filter":{}}`, 200, hdr(), replayed, "request"},
		{"a rejected request is not checked, its answer is", admin("POST", "/admin/dlq/replay"), `{"ids":"x"}`, 400, hdr(), badRequest, ""},
		{"a code of another status", admin("POST", "/admin/dlq/replay"), `{}`, 400, hdr(), strings.Replace(badRequest, "INVALID_REQUEST", "NOT_FOUND", 1), "code"},
		{"an undocumented status", admin("POST", "/admin/dlq/replay"), `{}`, 418, hdr(), badRequest, "status"},
		{"no route: the 404 envelope", admin("GET", "/nope"), ``, 404, hdr(), strings.Replace(badRequest, "INVALID_REQUEST", "NOT_FOUND", 1), ""},
		{"no route: a 200", admin("GET", "/nope"), ``, 200, hdr(), replayed, "no operation"},
		{"HEAD as GET without a body", admin("HEAD", "/admin/alerts"), ``, 200, hdr(), ``, ""},
	} {
		err := v.Check(c.req, []byte(c.body), c.status, c.header, []byte(c.resp))
		switch {
		case c.problem == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.problem != "" && (err == nil || !strings.Contains(err.Error(), c.problem)):
			t.Errorf("%s: %v, want an error about %q", c.name, err, c.problem)
		}
	}
}
