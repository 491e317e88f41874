package handlers

import (
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
)

// The request schemas of the bulk actions say exactly what the server
// accepts: each body the server answers 2xx is checked against the
// document by do() (the contract); each body it rejects with a 400 must be
// one the document rejects too (checked as if the server had accepted it
// with a valid answer), so a client generated from the document cannot
// build it. client/ts/readme_calls.ts checks the same of openapi-typescript.
func TestRequestSchemasAgreeWithTheServer(t *testing.T) {
	api, _ := newDLQAPI(t)
	ids := seedRows(t, api.DB, 6)
	h := api.Handler()
	for _, c := range []struct {
		path     string
		accepted []string
		rejected []string
	}{
		{"/admin/dlq/replay",
			[]string{`{"filter":{},"dry_run":true}`, `{"ids":[%d],"delay_seconds":0,"filter":null,"cursor":"","limit":null}`,
				`{"ids":null,"filter":{"q":"x"},"dry_run":true}`, `{"filter":{"q":"x","status":null},"limit":5,"dry_run":null}`,
				`{"ids":[%d],"dry_run":true}`},
			[]string{`{"ids":["not-a-number"]}`, `{"ids":[1],"filter":{"q":"x"}}`, `{}`, `{"dry_run":true}`,
				`{"ids":null,"filter":null}`, `{"ids":[1],"cursor":"abc"}`, `{"ids":[1],"limit":5}`, `{"filter":{"queue":"x"}}`,
				`{"ids":[1.5]}`, `{"ids":[]}`, `{"filter":[]}`}},
		{"/admin/dlq/acknowledge",
			[]string{`{"filter":{"q":"x"},"dry_run":true}`, `{"ids":[%d],"note":"dup"}`, `{"filter":{"beer_id":"x"},"note":"poison","ids":null}`},
			[]string{`{"ids":["not-a-number"]}`, `{"ids":[1],"filter":{}}`, `{"note":"x"}`, `{"filter":null}`}},
	} {
		var valid *httptest.ResponseRecorder
		for i, body := range c.accepted {
			if strings.Contains(body, "%d") {
				body = fmt.Sprintf(body, ids[i])
			}
			rec, _ := do(h, "POST", c.path, body, adminHeaders)
			if rec.Code != 200 {
				t.Fatalf("%s %s: %d %s", c.path, body, rec.Code, rec.Body)
			}
			valid = rec
		}
		for _, body := range c.rejected {
			if rec, _ := do(h, "POST", c.path, body, adminHeaders); rec.Code != 400 {
				t.Fatalf("%s %s: the server answered %d", c.path, body, rec.Code)
			}
			req := httptest.NewRequest("POST", c.path, strings.NewReader(body))
			for k, v := range adminHeaders {
				req.Header.Set(k, v)
			}
			req.Header.Set("Content-Type", "application/json")
			if err := contract.v.Check(req, []byte(body), valid.Code, valid.Header(), valid.Body.Bytes()); err == nil {
				t.Errorf("%s %s: the server rejects it, the document accepts it", c.path, body)
			}
		}
	}
}
