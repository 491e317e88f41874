//go:build e2e

package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redrive/redrive/dlq"
)

// The hostile corpus: several hundred requests generated for
// every route and parameter, sent to the shared worker in workerd. Every
// answer must be a 4xx (or a 2xx for the valid ones) envelope with an
// error code, a request id, and a message free of Go's and D1's internals;
// nothing the corpus sends may change a row.

// hostile is one request of the corpus.
type hostile struct {
	method string
	// target is the raw request target (path and query), sent as it is:
	// it may not be a URL Go can parse (/%zz).
	target string
	body   []byte
	// hdr are the headers; admin credentials when nil.
	hdr map[string]string
	// want lists the statuses allowed (any 4xx when empty).
	want []int
	// code is the error.code expected ("" accepts any).
	code string
	// check, when set, looks further at the answer.
	check func(r *Response) error
}

func (h hostile) String() string {
	return fmt.Sprintf("%s %.120s %.120q", h.method, h.target, h.body)
}

// internals matches what no 4xx message may show (quoted request text
// removed first): Go type names and decoder wording, D1's errors, traces.
var internals = regexp.MustCompile(`(?i)go struct|go value|json: |unmarshal|\bstruct\b|reflect|\bint(8|16|32|64)?\b|uint|float(32|64)|map\[|\[\]|interface|rawmessage|handlers\.|dlq\.|enrichment\.|replayBody|acknowledgeBody|D1_|SQLITE|goroutine|panic|\.go:\d+|wasm|\.m?js:\d+|\n\s+at `)

var quotedText = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)

// noRedirects is the harness's client without following redirects: an
// answer of 3xx is an answer to check, not a step to the next request.
var noRedirects = &http.Client{Transport: client.Transport,
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// sendRaw sends target exactly as given (Go's client refuses to build a
// URL with an invalid percent-escape, so the target goes in URL.Opaque).
func (w *Worker) sendRaw(method, target string, body []byte, hdr map[string]string) (*Response, error) {
	u, err := url.Parse(w.URL)
	if err != nil {
		return nil, err
	}
	p, q, hasQuery := strings.Cut(target, "?")
	if strings.HasPrefix(p, "//") {
		u.Path = p // (an Opaque starting with // would be read as a host)
	} else {
		u.Opaque = p
	}
	u.RawQuery, u.ForceQuery = q, hasQuery && q == ""
	var rd io.Reader = http.NoBody
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, w.URL, rd)
	if err != nil {
		return nil, err
	}
	req.URL = u
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req, ex := withExchange(req)
	resp, err := noRedirects.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	out := &Response{Status: resp.StatusCode, Header: resp.Header, Raw: raw, Contract: ex.Mismatch}
	_ = json.Unmarshal(raw, out)
	return out, nil
}

// verify applies the checks every answer must pass, then h's own.
func (h hostile) verify(r *Response) error {
	if r.Contract != nil {
		return r.Contract
	}
	if r.Status >= 500 {
		return fmt.Errorf("status %d", r.Status)
	}
	if len(h.want) > 0 && !slices.Contains(h.want, r.Status) {
		return fmt.Errorf("status %d, want one of %v", r.Status, h.want)
	}
	if len(h.want) == 0 && (r.Status < 400 || r.Status >= 500) {
		return fmt.Errorf("status %d, want a 4xx", r.Status)
	}
	id := r.Header.Get("X-Request-ID")
	if id == "" {
		return fmt.Errorf("no X-Request-ID")
	}
	if h.method == http.MethodHead {
		return nil // no body
	}
	if r.Status == 200 && (strings.Contains(h.target, "/metrics") || strings.Contains(h.target, "/openapi.json")) {
		return nil // documents, not envelopes
	}
	var env struct {
		Success *bool `json:"success"`
	}
	if err := json.Unmarshal(r.Raw, &env); err != nil || env.Success == nil {
		return fmt.Errorf("not a JSON envelope")
	}
	if !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
		return fmt.Errorf("content type %q", r.Header.Get("Content-Type"))
	}
	if r.ReqID != id {
		return fmt.Errorf("requestId %q, header %q", r.ReqID, id)
	}
	if *env.Success != (r.Status < 400) {
		return fmt.Errorf("success %v with status %d", *env.Success, r.Status)
	}
	if r.Status >= 400 {
		if r.Error == nil || r.Error.Code == "" || r.Error.Message == "" {
			return fmt.Errorf("error without code or message")
		}
		if h.code != "" && r.Error.Code != h.code {
			return fmt.Errorf("code %s, want %s", r.Error.Code, h.code)
		}
		if m := internals.FindString(quotedText.ReplaceAllString(r.Error.Message, `""`)); m != "" {
			return fmt.Errorf("message shows %q", m)
		}
	}
	if h.check != nil {
		return h.check(r)
	}
	return nil
}

// totalCount checks a list page's total_count.
func totalCount(n int64) func(r *Response) error {
	return func(r *Response) error {
		var p struct {
			TotalCount int64 `json:"total_count"`
		}
		if err := json.Unmarshal(r.Data, &p); err != nil || p.TotalCount != n {
			return fmt.Errorf("total_count %d, want %d (%v)", p.TotalCount, n, err)
		}
		return nil
	}
}

// matched checks a dry run's matched_count.
func matched(n int64) func(r *Response) error {
	return func(r *Response) error {
		var p struct {
			Matched int64 `json:"matched_count"`
		}
		if err := json.Unmarshal(r.Data, &p); err != nil || p.Matched != n {
			return fmt.Errorf("matched_count %d, want %d (%v)", p.Matched, n, err)
		}
		return nil
	}
}

// field is a body field and the JSON type its value must have.
type field struct {
	name, kind string // kind: bool, string, int, array, object
	valid      string // a valid value (JSON text)
}

// wrongValues are JSON values of every kind but kind, plus numbers out of
// any range.
func wrongValues(kind string) []string {
	all := map[string][]string{
		"string": {`"s"`, `""`}, "bool": {`true`, `false`}, "int": {`1`, `-1`},
		"array": {`[]`, `[1,"a"]`}, "object": {`{}`},
	}
	out := []string{`1.5`, `1e400`, `-1e400`, `99999999999999999999`}
	for k, vs := range all {
		if k != kind {
			out = append(out, vs[0])
		}
	}
	return out
}

// objectText renders members (each "key":value text) as an object.
func objectText(members ...string) string { return "{" + strings.Join(members, ",") + "}" }

func member(k, v string) string { js, _ := json.Marshal(k); return string(js) + ":" + v }

// mutations are hostile variants of an object with fields: each key in
// other cases, each key twice, each value of the wrong type. wrap places
// the object in the body (the body itself, or inside filter/beers[0]).
func mutations(fields []field, wrap func(obj string) string) []string {
	var out []string
	for i, f := range fields {
		others := func(extra ...string) string {
			var ms []string
			for j, g := range fields {
				if j != i {
					ms = append(ms, member(g.name, g.valid))
				}
			}
			return objectText(append(ms, extra...)...)
		}
		title := strings.ToUpper(f.name[:1]) + f.name[1:]
		out = append(out,
			wrap(others(member(strings.ToUpper(f.name), f.valid))),
			wrap(others(member(title, f.valid))),
			wrap(others(member(f.name, f.valid), member(strings.ToUpper(f.name), f.valid))),
			wrap(others(member(f.name, f.valid), member(f.name, f.valid))),
		)
		for _, v := range wrongValues(f.kind) {
			out = append(out, wrap(others(member(f.name, v))))
		}
	}
	return out
}

// genericBodies are bodies wrong for any route.
func genericBodies() []string {
	return []string{"", "null", "[]", "1", `"x"`, "true", "{", "}", "{}{}", `{"a":1}x`, "\xef\xbb\xbf{}",
		"ids=1&dry_run=true", "{\"note\":\"\xff\xfe\"}", "{\"note\":\"a\x00b\"}", `{"x":1}`, `{"":1}`,
		`{"ids":` + strings.Repeat("[", 100) + strings.Repeat("]", 100) + `}`,
		strings.Repeat("[", 3000) + strings.Repeat("]", 3000),
		`{"ids":[1e999999]}`, `{"` + strings.Repeat("k", 3000) + `":1}`, `{"dry_run":true,"dry_run":true}`}
}

// hostileCorpus builds the corpus. a is a pending row of the test's own,
// nameA (ASCII with %, _ and \) and nameB (multi-byte) are beer names of
// exactly dlq.MaxFilterText bytes on two more of its rows.
func hostileCorpus(prefix string, a int64, nameA, nameB string) []hostile {
	var cs []hostile
	add := func(h hostile) { cs = append(cs, h) }
	type route struct{ method, path, body string }
	routes := []route{
		{"GET", "/health", ""}, {"GET", "/admin/dlq", ""}, {"GET", "/admin/dlq/stats", ""},
		{"POST", "/admin/dlq/replay", `{"ids":[0]}`}, {"POST", "/admin/dlq/acknowledge", `{"ids":[0]}`},
		{"GET", "/admin/audit", ""}, {"POST", "/admin/enrich", `{"beers":[]}`}, {"GET", "/admin/beers/" + prefix + "-none", ""},
		{"GET", "/admin/metrics", ""}, {"GET", "/admin/openapi.json", ""}, {"POST", "/__dev/send", `{"queue":"","messages":[]}`},
		{"GET", fmt.Sprintf("/admin/dlq/%d", a), ""}, {"GET", "/admin/dlq/timeseries", ""}, {"GET", "/admin/alerts", ""}, {"GET", "/admin/jobs", ""},
	}
	bodyOf := func(rt route) []byte {
		if rt.method == "POST" {
			return []byte(rt.body)
		}
		return nil
	}

	// Credentials, methods and paths on every route.
	for _, rt := range routes {
		if rt.path != "/health" {
			for _, c := range []struct {
				hdr  map[string]string
				want int
				code string
			}{
				{map[string]string{}, 401, "UNAUTHORIZED"},
				{map[string]string{"X-API-Key": "wrong", "X-Admin-Secret": TestAdminSecret}, 401, "UNAUTHORIZED"},
				{map[string]string{"X-API-Key": TestAPIKey}, 403, "FORBIDDEN"},
				{map[string]string{"X-API-Key": TestAPIKey, "X-Admin-Secret": "wrong"}, 403, "FORBIDDEN"},
				{map[string]string{"x-api-key": strings.ToUpper(TestAPIKey), "X-Admin-Secret": TestAdminSecret}, 401, "UNAUTHORIZED"},
			} {
				add(hostile{method: rt.method, target: rt.path, body: bodyOf(rt), hdr: c.hdr, want: []int{c.want}, code: c.code})
			}
		}
		for _, m := range []string{"GET", "POST", "PUT", "DELETE", "PATCH"} {
			if m != rt.method {
				add(hostile{method: m, target: rt.path, want: []int{405}, code: "METHOD_NOT_ALLOWED"})
			}
		}
		if rt.method == "GET" {
			add(hostile{method: "HEAD", target: rt.path, want: []int{200, 404}})
		}
		dir, last := rt.path[:strings.LastIndex(rt.path, "/")], rt.path[strings.LastIndex(rt.path, "/")+1:]
		for _, t := range []string{rt.path + "%zz", rt.path + "%", rt.path + "%2", dir + "/%ZZ" + last, rt.path + "/%g0",
			rt.path + "%zz?limit=1"} {
			add(hostile{method: rt.method, target: t, body: bodyOf(rt), want: []int{400}, code: "INVALID_REQUEST"})
		}
		for _, t := range []string{"/" + rt.path, rt.path + "/", dir + "//" + last, rt.path + "//"} {
			add(hostile{method: rt.method, target: t, body: bodyOf(rt), want: []int{404}, code: "NOT_FOUND"})
		}
		// Dot segments: the runtime may resolve them before the worker
		// sees the URL (WHATWG), then the clean route answers.
		dots := []string{dir + "/./" + last, dir + "/x/../" + last, dir + "/%2e/" + last, dir + "/%2E%2E/" + strings.TrimPrefix(rt.path, "/"),
			rt.path + "/."}
		if dir != "" {
			dots = append(dots, rt.path+"/..") // (/health/.. is /: the console's page, not the worker)
		}
		for _, t := range dots {
			add(hostile{method: rt.method, target: t, body: bodyOf(rt), want: []int{200, 400, 404}})
		}
	}
	for _, t := range []string{"/%zz", "/%", "/%%", "/%zz?x=%zz", "/admin/beers/%ZZ", "/admin/%zz/dlq"} {
		add(hostile{method: "GET", target: t, want: []int{400}, code: "INVALID_REQUEST"})
		add(hostile{method: "GET", target: t, hdr: map[string]string{}, want: []int{400}, code: "INVALID_REQUEST"})
	}
	for _, t := range []string{"/admin", "/admin/", "/admin/dlq/x", "/ADMIN/DLQ", "/admin/dlq/stats/extra",
		"/" + strings.Repeat("a", 4000), "/admin/beers/", "/admin/beers/a/b", "/admin/openapi.json/x", "/__e2e"} {
		add(hostile{method: "GET", target: t, want: []int{404}, code: "NOT_FOUND"})
	}

	// Beer ids.
	for _, id := range []string{"%00", "%2F", "..%2F..", "%E2%80%AE", "%C3%28", strings.Repeat("b", 128), "%F0%9F%8D%BA"} {
		add(hostile{method: "GET", target: "/admin/beers/" + id, want: []int{404}, code: "NOT_FOUND"})
	}
	add(hostile{method: "GET", target: "/admin/beers/" + strings.Repeat("b", 129), want: []int{400}, code: "INVALID_REQUEST"})

	// DLQ row ids: anything but a row's id is a 404.
	for _, id := range []string{"0", "-1", "1.5", "1e3", "0x10", "99999999999999999999", "%00", "%20" + fmt.Sprint(a), "abc", "9007199254740993"} {
		add(hostile{method: "GET", target: "/admin/dlq/" + id, want: []int{404}, code: "NOT_FOUND"})
	}
	for _, v := range []string{strings.Repeat("q", 201), "%FF"} {
		add(hostile{method: "GET", target: "/admin/dlq/timeseries?source_queue=" + v, want: []int{400}})
	}

	// Query parameters: every one of the list and the audit log, every kind of bad value.
	values := []string{"%zz", "%", "%FF", "%00", "%C3%28", strings.Repeat("x", 201), "abc", "-5", "0", "101", "1.5", "1e3",
		"99999999999999999999", "0x10", "true", "ALL", "%E2%80%AE", "+", "%20", "a%26b%3Dc", "\\", "_", "%25"}
	for path, params := range map[string][]string{
		"/admin/dlq":   {"status", "beer_id", "limit", "cursor", "include_raw", "source_queue", "failed_after", "failed_before", "q"},
		"/admin/audit": {"action", "limit", "cursor"},
	} {
		for _, p := range params {
			for _, v := range values {
				h := hostile{method: "GET", target: path + "?" + p + "=" + v, want: []int{200, 400}}
				if v == "%zz" || v == "%" || v == "%FF" || v == "%C3%28" {
					h.want, h.code = []int{400}, "INVALID_REQUEST"
				}
				add(h)
			}
			add(hostile{method: "GET", target: path + "?" + p + "=1&" + p + "=1", want: []int{400}, code: "INVALID_REQUEST"})
			add(hostile{method: "GET", target: path + "?" + strings.ToUpper(p) + "=1", want: []int{400}, code: "INVALID_REQUEST"})
		}
		for _, v := range []string{"-5", "0", "101", "1.5", "1e3", "99999999999999999999", "0x10", "abc", "%20"} {
			add(hostile{method: "GET", target: path + "?limit=" + v, want: []int{400}, code: "INVALID_LIMIT"})
		}
		for _, v := range []string{"garbage", "..", "%00", strings.Repeat("A", 3000), "eyJpZCI6MX0", "eyJpZCI6MX0.AAAA", "%2F%2F"} {
			add(hostile{method: "GET", target: path + "?cursor=" + v, want: []int{400}, code: "INVALID_CURSOR"})
		}
		for _, raw := range []string{"a;b", "&&&", "=", "=1", "&=&", "%zz=1", "%FF=1"} {
			add(hostile{method: "GET", target: path + "?" + raw, want: []int{200, 400}})
		}
	}
	add(hostile{method: "GET", target: "/admin/dlq/stats?x=1", want: []int{400}, code: "INVALID_REQUEST"})
	add(hostile{method: "GET", target: "/admin/dlq?status=lost", want: []int{400}, code: "INVALID_STATUS"})

	// q of every length around D1's 50-byte LIKE limit and up to the
	// maximum, in the list and in the bulk actions' filter.
	qs := func(q string) string { return url.QueryEscape(q) }
	for _, n := range []int{49, 50, 51, 100, 199, dlq.MaxFilterText} {
		add(hostile{method: "GET", target: "/admin/dlq?q=" + qs(nameA[:n]), want: []int{200}, check: totalCount(1)})
		add(hostile{method: "GET", target: "/admin/dlq?status=all&q=" + qs(nameA[:n]), want: []int{200}, check: totalCount(1)})
	}
	add(hostile{method: "GET", target: "/admin/dlq?q=" + qs(nameB), want: []int{200}, check: totalCount(1)})
	for _, q := range []string{nameA + "y", nameB + "é", strings.Repeat("é", 101), strings.Repeat("%", dlq.MaxFilterText+1)} {
		add(hostile{method: "GET", target: "/admin/dlq?q=" + qs(q), want: []int{400}, code: "INVALID_FILTER"})
	}
	for _, q := range []string{prefix + "%", prefix + "_", prefix + `\`, strings.Repeat("%", 60), strings.Repeat("_", 60),
		strings.Repeat(`\`, 60), strings.Repeat("é", 100)} {
		add(hostile{method: "GET", target: "/admin/dlq?q=" + qs(q), want: []int{200}})
	}
	for _, rt := range []string{"/admin/dlq/replay", "/admin/dlq/acknowledge"} {
		for _, n := range []int{49, 50, 51, dlq.MaxFilterText} {
			q, _ := json.Marshal(nameA[:n])
			add(hostile{method: "POST", target: rt, body: []byte(`{"filter":{"q":` + string(q) + `},"dry_run":true}`),
				want: []int{200}, check: matched(1)})
		}
		q, _ := json.Marshal(nameB)
		add(hostile{method: "POST", target: rt, body: []byte(`{"filter":{"q":` + string(q) + `},"dry_run":true}`), want: []int{200}, check: matched(1)})
		q, _ = json.Marshal(nameA + "y")
		add(hostile{method: "POST", target: rt, body: []byte(`{"filter":{"q":` + string(q) + `},"dry_run":true}`), want: []int{400}, code: "INVALID_FILTER"})
	}

	// Bodies: wrong for any route, then each field of each route's body in
	// other cases, twice, and with values of the wrong type (nested too).
	for _, rt := range []string{"/admin/dlq/replay", "/admin/dlq/acknowledge", "/admin/enrich", "/__dev/send"} {
		for _, b := range genericBodies() {
			add(hostile{method: "POST", target: rt, body: []byte(b)})
		}
	}
	ids := fmt.Sprintf("[%d]", a)
	filterFields := []field{{"status", "string", `"pending"`}, {"beer_id", "string", `"` + prefix + `-b-0"`},
		{"source_queue", "string", `"beer-enrichment"`}, {"failed_after", "int", `1`}, {"failed_before", "int", `9007199254740991`},
		{"q", "string", `"` + prefix + `"`}}
	for _, c := range []struct {
		route  string
		fields []field
	}{
		{"/admin/dlq/replay", []field{{"ids", "array", ids}, {"delay_seconds", "int", `0`}, {"dry_run", "bool", `true`}}},
		{"/admin/dlq/replay", []field{{"filter", "object", `{"q":"` + prefix + `"}`}, {"dry_run", "bool", `true`},
			{"cursor", "string", `"x"`}, {"limit", "int", `1`}}},
		{"/admin/dlq/acknowledge", []field{{"ids", "array", ids}, {"dry_run", "bool", `true`}, {"note", "string", `"n"`}}},
		{"/admin/dlq/acknowledge", []field{{"filter", "object", `{"q":"` + prefix + `"}`}, {"dry_run", "bool", `true`}}},
		{"/admin/enrich", []field{{"beers", "array", `[{"beer_id":"` + prefix + `-e","beer_name":"n"}]`}}},
		{"/__dev/send", []field{{"queue", "string", `"beer-enrichment-dlq"`}, {"messages", "array", `[{"body":1}]`}}},
	} {
		for _, b := range mutations(c.fields, func(obj string) string { return obj }) {
			add(hostile{method: "POST", target: c.route, body: []byte(b)})
		}
	}
	for _, rt := range []string{"/admin/dlq/replay", "/admin/dlq/acknowledge"} {
		for _, b := range mutations(filterFields, func(obj string) string { return `{"filter":` + obj + `,"dry_run":true}` }) {
			add(hostile{method: "POST", target: rt, body: []byte(b)})
		}
	}
	for _, b := range mutations([]field{{"beer_id", "string", `"` + prefix + `-e"`}, {"beer_name", "string", `"n"`}, {"brewer", "string", `"b"`}},
		func(obj string) string { return `{"beers":[` + obj + `,{"beer_id":1}]}` }) {
		add(hostile{method: "POST", target: "/admin/enrich", body: []byte(b)})
	}
	for _, b := range mutations([]field{{"body", "string", `"x"`}, {"delay_seconds", "int", `0`}},
		func(obj string) string { return `{"queue":"","messages":[` + obj + `]}` }) {
		add(hostile{method: "POST", target: "/__dev/send", body: []byte(b)})
	}
	return cs
}

func TestHostileRequests(t *testing.T) {
	prefix := newPrefix("hostile")
	now := time.Now().UnixMilli()
	nameA := prefix + "-" + strings.Repeat(`%_\x`, dlq.MaxFilterText)
	nameA = nameA[:dlq.MaxFilterText]
	nameB := prefix + "-"
	if len(nameB)%2 == 1 {
		nameB += "x"
	}
	nameB += strings.Repeat("é", (dlq.MaxFilterText-len(nameB))/2)
	if len(nameA) != dlq.MaxFilterText || len(nameB) != dlq.MaxFilterText {
		t.Fatalf("names of %d and %d bytes", len(nameA), len(nameB))
	}
	row := func(id, name string) string {
		return fmt.Sprintf(`INSERT INTO dlq_messages(message_id, row_key, label_1, label_2, failed_at, failure_count,
			failure_reason, failure_class, source_queue, raw_message, first_failed_at, updated_at)
			VALUES (%[1]s, %[1]s, %[2]s, 'hostile brewer', %[3]d, 1, 'hostile reason', 'transient', 'beer-enrichment',
			'{"beer_id":"x"}', %[3]d, %[3]d)`, sqlQuote(prefix+"-"+id), sqlQuote(name), now)
	}
	shared.Exec(t, seedSQL(prefix, 2, 1, now, "beer-enrichment")+";"+row("long-a", nameA)+";"+row("long-b", nameB))
	a := ownIDs(t, shared, prefix)[0]
	before := ownState(t, shared, prefix)
	lastAudit := shared.Int(t, `SELECT COALESCE(MAX(id), 0) FROM admin_audit`)

	corpus := hostileCorpus(prefix, a, nameA, nameB)
	if len(corpus) < 500 {
		t.Fatalf("the corpus has only %d requests", len(corpus))
	}
	start := time.Now()
	var failures atomic.Int64
	var wg sync.WaitGroup
	work := make(chan hostile)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for h := range work {
				hdr := h.hdr
				if hdr == nil {
					hdr = AdminHeaders()
				}
				r, err := shared.sendRaw(h.method, h.target, h.body, hdr)
				if err == nil {
					err = h.verify(r)
				}
				if err != nil && failures.Add(1) <= 40 {
					raw := ""
					if r != nil {
						raw = string(r.Raw)
					}
					t.Errorf("%s: %v\n  %.400s", h, err, raw)
				}
			}
		}()
	}
	for _, h := range corpus {
		work <- h
	}
	close(work)
	wg.Wait()
	t.Logf("%d hostile requests in %s, %d failed", len(corpus), time.Since(start).Round(time.Millisecond), failures.Load())

	// A mixed-case key that encoding/json matched to dry_run would have
	// made these real actions: they are 400s and change nothing.
	for _, c := range []struct{ route, body string }{
		{"/admin/dlq/replay", fmt.Sprintf(`{"ids":[%d],"dry_run":true,"DRY_RUN":false}`, a)},
		{"/admin/dlq/replay", fmt.Sprintf(`{"ids":[%d],"dry_run":true,"dry_run":false}`, a)},
		{"/admin/dlq/acknowledge", fmt.Sprintf(`{"ids":[%d],"dry_run":true,"DRY_RUN":false}`, a)},
		{"/admin/dlq/replay", fmt.Sprintf(`{"filter":{"beer_id":"%s-b-0","BEER_ID":"other"},"dry_run":true}`, prefix)},
	} {
		r := shared.Admin(t, http.MethodPost, c.route, c.body)
		if r.Status != 400 || r.Error == nil || r.Error.Code == "" {
			t.Errorf("%s %s: %d %s", c.route, c.body, r.Status, r.Raw)
		}
	}
	var status string
	if err := shared.DB(t).QueryRow(`SELECT status FROM dlq_messages WHERE id = ?`, a).Scan(&status); err != nil || status != "pending" {
		t.Fatalf("row %d is %q (%v), want pending", a, status, err)
	}
	if after := ownState(t, shared, prefix); after != before {
		t.Fatalf("the corpus changed rows:\n%s\n%s", before, after)
	}
	if n := shared.Int(t, `SELECT COUNT(*) FROM admin_audit WHERE id > ? AND (dry_run = 0 OR outcome <> 'ok')`, lastAudit); n != 0 {
		t.Fatalf("the corpus ran %d actions that were not successful dry runs", n)
	}
	if n := shared.Int(t, `SELECT COUNT(*) FROM beers WHERE beer_id LIKE ?`, prefix+"%"); n != 0 {
		t.Fatalf("the corpus registered %d beers", n)
	}
}

// An action that D1 refuses is a 500 whose audit entry holds the response's
// code and a pointer to the log, never D1's text; the worker's log line has
// the details with the request id.
func TestAdminAuditErrorIsACodeNotD1Text(t *testing.T) {
	prefix := newPrefix("auditerr")
	trigger := "refuse_" + prefix
	shared.Exec(t, seedSQL(prefix, 1, 1, time.Now().UnixMilli(), "beer-enrichment")+`;
		CREATE TRIGGER `+trigger+` BEFORE UPDATE OF status ON dlq_messages WHEN OLD.row_key = '`+prefix+`-b-0'
		BEGIN SELECT RAISE(ABORT, 'refused by the test trigger `+prefix+`'); END`)
	t.Cleanup(func() { shared.Exec(t, `DROP TRIGGER IF EXISTS `+trigger) })
	id := ownIDs(t, shared, prefix)[0]

	r := shared.Admin(t, http.MethodPost, "/admin/dlq/replay", fmt.Sprintf(`{"ids":[%d]}`, id))
	if r.Status != 500 || r.Error == nil || r.Error.Code != "INTERNAL_ERROR" || strings.Contains(string(r.Raw), "refused") {
		t.Fatalf("replay D1 refuses: %d %s", r.Status, r.Raw)
	}
	a := shared.Admin(t, http.MethodGet, "/admin/audit?action=replay&limit=20", nil)
	type entry struct {
		RequestID string          `json:"request_id"`
		Outcome   string          `json:"outcome"`
		Error     json.RawMessage `json:"error"`
	}
	var page struct {
		Entries []entry `json:"entries"`
	}
	a.Decode(t, &page)
	i := slices.IndexFunc(page.Entries, func(e entry) bool { return e.RequestID == r.ReqID })
	if i < 0 {
		t.Fatalf("no audit entry for request %s: %s", r.ReqID, a.Raw)
	}
	e := page.Entries[i]
	want := `{"code":"INTERNAL_ERROR","message":"internal error; see the worker log for request ` + r.ReqID + `"}`
	if e.Outcome != "error" || string(e.Error) != want {
		t.Fatalf("audit entry: outcome %s error %s, want %s", e.Outcome, e.Error, want)
	}
	Eventually(t, 10*time.Second, "the worker log has the error with the request id", func() bool {
		for _, line := range strings.Split(shared.Log(), "\n") {
			if strings.Contains(line, r.ReqID) && strings.Contains(line, "refused by the test trigger "+prefix) {
				return true
			}
		}
		return false
	})
}
