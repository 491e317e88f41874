package handlers

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"net/url"
	"reflect"
	"strings"
	"testing"

	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/dlq/inspect"
	"github.com/redrive/redrive/dlq/resolve"
	"github.com/redrive/redrive/enrichment"
	"github.com/redrive/redrive/internal/sqlitetest"
	"github.com/redrive/redrive/queue/queuetest"
)

// Fuzz targets for every parser of untrusted input: the strict JSON
// decoder, the filter, the query string, and a whole request through the
// router. Each has a seed corpus of hostile inputs in testdata/fuzz/<name>/
// (run as ordinary tests by `go test`). The property everywhere: no panic,
// no 5xx, and a rejected input is a 400 whose message is in the API's terms.
//
//	go test -run '^$' -fuzz '^FuzzDecodeStrict$' -fuzztime 30s ./handlers

// FuzzDecodeStrict: decodeStrict never panics, rejects with a 400 in API
// terms, and whatever it accepts encoding/json (with unknown fields
// disallowed) accepts too, with the same result.
func FuzzDecodeStrict(f *testing.F) {
	f.Add([]byte(`{"ids":[1,2],"delay_seconds":60,"dry_run":true}`))
	f.Add([]byte(`{"dry_run":true,"DRY_RUN":false}`))
	targets := []func() any{
		func() any { return new(replayBody) },
		func() any { return new(acknowledgeBody) },
		func() any { return new(enrichRequest) },
		func() any { return new(devSendRequest) },
		func() any { return new(dlq.Filter) },
		func() any { return new(taskBody) },
		func() any { return new(editedReplayBody) },
		func() any { return new(attemptsBody) },
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, newV := range targets {
			v := newV()
			err := decodeStrict(data, v)
			if err != nil {
				checkInputError(t, string(data), err)
				continue
			}
			std := newV()
			dec := json.NewDecoder(bytes.NewReader(data))
			dec.DisallowUnknownFields()
			if err := dec.Decode(std); err != nil {
				t.Fatalf("%q: accepted into %T, but encoding/json says %v", data, v, err)
			}
			if !reflect.DeepEqual(v, std) {
				t.Fatalf("%q: decoded %+v, encoding/json %+v", data, v, std)
			}
		}
	})
}

// FuzzFilter: a filter object either is rejected with a 400, or lists,
// dry-runs and bulk-acknowledges on a database with D1's limits without an
// internal error.
func FuzzFilter(f *testing.F) {
	f.Add([]byte(`{"q":"` + strings.Repeat("%", dlq.MaxFilterText) + `"}`))
	f.Add([]byte(`{"beer_id":"b1","failed_after":0,"failed_before":9007199254740991}`))
	f.Add([]byte(`{"signature":"0123456789abcdef","version":"v1","version_not":"v2"}`))
	db := sqlitetest.New(f)
	if _, err := db.Exec(`INSERT INTO dlq_messages(message_id, row_key, label_1, label_2, failed_at, failure_reason, raw_message)
		VALUES ('m1', 'b1', 'Hop 100%_off \ Ünï', 'Brewer', 5, 'transient: status 500', '{"beer_id":"b1"}')`); err != nil {
		f.Fatal(err)
	}
	list := inspect.List{DBs: dlq.Single(dlq.Store{DB: db}), Cursors: dlq.NewCursors("s")}
	replay := resolve.Replay{DB: db, Sender: &queuetest.Sender{}, Log: discard, Cursors: dlq.NewCursors("s"), BulkMax: 10}
	ack := resolve.Acknowledge{DB: db, Batch: nil, BulkMax: 10}
	f.Fuzz(func(t *testing.T, raw []byte) {
		filter, err := jsonFilter(raw)
		if err != nil {
			checkInputError(t, string(raw), err)
			return
		}
		if filter == nil {
			return
		}
		internal := func(what string, err error) {
			var inputErr *dlq.InputError
			if err == nil {
				return
			}
			if !errors.As(err, &inputErr) {
				t.Fatalf("%q: %s: internal error %v", raw, what, err)
			}
			checkMessage(t, string(raw), inputErr.Message)
		}
		_, err = list.Page(t.Context(), inspect.ListParams{Filter: *filter})
		internal("list", err)
		_, err = replay.DryRun(t.Context(), resolve.ReplayRequest{Selection: dlq.Selection{Filter: filter}})
		internal("replay dry run", err)
		_, err = ack.DryRun(t.Context(), resolve.AcknowledgeRequest{Selection: dlq.Selection{Filter: filter}})
		internal("acknowledge dry run", err)
	})
}

// fuzzAPI is an API with every route enabled, on a database with D1's limits.
func fuzzAPI(tb testing.TB) *API {
	db := sqlitetest.New(tb)
	s := &queuetest.Sender{}
	return &API{DB: db, Log: discard, Auth: Auth{APIKey: "k", AdminSecret: "s"}, Version: "fuzz", Sender: s,
		DevSender: s, BulkReplayMax: 10, BulkAcknowledgeMax: 10, Beers: &enrichment.Registry{DB: db, Sender: s}}
}

// checkResponse fails unless rec is an answer the API may give to any
// request: below 500, with a request id, and (but for the two documents
// that are not envelopes) an envelope whose error has a code and a
// message in the API's terms.
func checkResponse(t *testing.T, input string, rec *httptest.ResponseRecorder) {
	t.Helper()
	if rec.Code >= 500 || (rec.Code >= 300 && rec.Code < 400) {
		t.Fatalf("%.300q: status %d %s", input, rec.Code, rec.Body)
	}
	if rec.Header().Get("X-Request-ID") == "" {
		t.Fatalf("%.300q: no X-Request-ID", input)
	}
	if rec.Code == 200 && !strings.HasPrefix(rec.Header().Get("Content-Type"), "application/json") {
		return // /admin/metrics (Prometheus text)
	}
	var env struct {
		Success   *bool            `json:"success"`
		RequestID string           `json:"requestId"`
		Error     *errorBody       `json:"error"`
		OpenAPI   *json.RawMessage `json:"openapi"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &env); err != nil {
		t.Fatalf("%.300q: body is not JSON: %s", input, rec.Body)
	}
	if env.OpenAPI != nil && rec.Code == 200 {
		return // /admin/openapi.json
	}
	if env.Success == nil || env.RequestID != rec.Header().Get("X-Request-ID") || *env.Success != (rec.Code < 400) {
		t.Fatalf("%.300q: not an envelope: %d %s", input, rec.Code, rec.Body)
	}
	if rec.Code >= 400 {
		if env.Error == nil || env.Error.Code == "" {
			t.Fatalf("%.300q: error without a code: %s", input, rec.Body)
		}
		checkMessage(t, input, env.Error.Message)
	}
}

// FuzzQuery: any query string on the routes that read one.
func FuzzQuery(f *testing.F) {
	f.Add("status=all&q=" + strings.Repeat("x", 51) + "&limit=100")
	f.Add("q=%zz")
	f.Add("signature=0123456789abcdef&version_not=6f1c2a&class=permanent&version=v1")
	api := fuzzAPI(f)
	h := api.Handler()
	f.Fuzz(func(t *testing.T, rawQuery string) {
		for _, p := range []string{"/admin/dlq", "/admin/audit", "/admin/dlq/stats", "/admin/dlq/groups", "/admin/dlq/export"} {
			rec, _ := serveTarget(h, "GET", p+"?"+rawQuery, adminHeaders)
			checkResponse(t, p+"?"+rawQuery, rec)
		}
		if _, err := query(&url.URL{RawQuery: rawQuery}, declaredQuery("GET /admin/dlq/export")); err != nil {
			checkInputError(t, rawQuery, err)
		}
		if _, err := query(&url.URL{RawQuery: rawQuery}, declaredQuery("GET /admin/dlq")); err != nil {
			checkInputError(t, rawQuery, err)
		}
	})
}

var fuzzMethods = []string{"GET", "POST", "PUT", "DELETE", "HEAD", "OPTIONS", "PATCH", "CONNECT", "TRACE", "get", "X"}

// FuzzRequest: any method, target and body through the whole router, with
// admin credentials.
func FuzzRequest(f *testing.F) {
	f.Add(uint8(1), "/admin/dlq/replay", []byte(`{"filter":{},"dry_run":true}`))
	f.Add(uint8(0), "//admin/dlq", []byte(nil))
	api := fuzzAPI(f)
	h := api.Handler()
	f.Fuzz(func(t *testing.T, method uint8, target string, body []byte) {
		m := fuzzMethods[int(method)%len(fuzzMethods)]
		req := httptest.NewRequest("GET", "/", bytes.NewReader(body))
		req.Method = m
		if u, err := url.ParseRequestURI(target); err == nil {
			req.URL = u
		} else {
			req.URL = &url.URL{Scheme: "http", Host: "example.com"}
		}
		req.RequestURI = target
		for k, v := range adminHeaders {
			req.Header.Set(k, v)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		checkResponse(t, m+" "+target+" "+string(body), rec)
	})
}
