package receiver

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redrive/redrive/alerts"
)

const (
	testSecret     = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	testRoutingKey = "test-routing-key-0123456789abcdef"
)

// fixedNow is the receiver's clock in these tests.
var fixedNow = time.Date(2026, 3, 1, 10, 0, 30, 0, time.UTC)

// syncBuffer is a log destination safe for the server's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// start serves a Receiver on 127.0.0.1 and returns it, its URL and its log.
func start(t *testing.T) (*Receiver, string, *syncBuffer) {
	t.Helper()
	logs := &syncBuffer{}
	r, err := New(Config{Secret: testSecret, RoutingKey: testRoutingKey, Log: slog.New(slog.NewJSONHandler(logs, nil)),
		Clock: func() time.Time { return fixedNow }})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(r)
	t.Cleanup(srv.Close)
	return r, srv.URL, logs
}

func event(id, typ, severity, summary string) alerts.Event {
	return alerts.Event{ID: id, Type: typ, Timestamp: "2026-03-01T10:00:00.000Z", Severity: severity, Pipeline: "beers",
		DedupKey: "redrive:group:abc", Summary: summary, Data: map[string]any{"signature": "abc"}}
}

// deliver sends ev as ch formats it (at now) to the receiver's path and
// returns the status and body of the answer; sent is false when ch had
// nothing to send.
func deliver(t *testing.T, base, path string, ch alerts.Channel, ev alerts.Event, now time.Time) (status int, answer []byte, sent bool) {
	t.Helper()
	body, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	ch.URL = base + path
	out, ok, err := ch.Request(ev, body, now)
	if err != nil {
		t.Fatal(err)
	}
	if !ok {
		return 0, nil, false
	}
	hdr := http.Header{}
	for k, v := range out.Header {
		hdr.Set(k, v)
	}
	status, answer = send(t, out.Method, out.URL, hdr, out.Body)
	return status, answer, true
}

func send(t *testing.T, method, url string, hdr http.Header, body []byte) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if hdr != nil {
		req.Header = hdr
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}

func post(t *testing.T, url, body string) (int, []byte) {
	t.Helper()
	return send(t, http.MethodPost, url, http.Header{"Content-Type": {"application/json"}}, []byte(body))
}

var (
	webhookChannel   = alerts.Channel{Name: "hook", Type: alerts.ChannelWebhook, Secret: testSecret}
	pagerDutyChannel = alerts.Channel{Name: "pd", Type: alerts.ChannelPagerDuty, Secret: testRoutingKey}
	slackChannel     = alerts.Channel{Name: "ops", Type: alerts.ChannelSlack}
)

// errorCode decodes the {"error": {"code"}} envelope.
func errorCode(t *testing.T, b []byte) string {
	t.Helper()
	var env struct {
		Error struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(b, &env); err != nil || env.Error.Code == "" || env.Error.Message == "" {
		t.Fatalf("not an error envelope: %s (%v)", b, err)
	}
	return env.Error.Code
}

// A webhook is kept once per id, with its body as sent and in the order
// received; a redelivery (new timestamp, new signature) is answered 200
// and counted.
func TestWebhookKeptOncePerIDInOrder(t *testing.T) {
	r, url, _ := start(t)
	first := event("evt_000000000000000000000001", alerts.GroupOpened, "error", "New group")
	second := event("evt_000000000000000000000002", alerts.GroupResolved, "info", "Group resolved")
	for i, d := range []struct {
		ev  alerts.Event
		at  time.Time
		dup bool
	}{{first, fixedNow, false}, {second, fixedNow, false}, {first, fixedNow.Add(time.Minute), true}, {first, fixedNow.Add(-time.Minute), true}} {
		status, answer, _ := deliver(t, url, WebhookPath, webhookChannel, d.ev, d.at)
		var got struct {
			ID        string `json:"id"`
			Duplicate bool   `json:"duplicate"`
		}
		if status != http.StatusOK || json.Unmarshal(answer, &got) != nil || got.ID != d.ev.ID || got.Duplicate != d.dup {
			t.Fatalf("delivery %d: %d %s", i, status, answer)
		}
	}
	got := r.Received()
	if len(got.Webhooks) != 2 || got.Webhooks[0].ID != first.ID || got.Webhooks[1].ID != second.ID {
		t.Fatalf("webhooks %+v", got.Webhooks)
	}
	if got.WebhookDuplicates != 2 || got.Webhooks[0].Duplicates != 2 || got.Webhooks[1].Duplicates != 0 || got.Refused != 0 {
		t.Fatalf("duplicates %d, %d, %d; refused %d", got.WebhookDuplicates, got.Webhooks[0].Duplicates, got.Webhooks[1].Duplicates, got.Refused)
	}
	if got.Webhooks[0].Timestamp != fixedNow.Unix() {
		t.Fatalf("timestamp %d, want the first delivery's %d", got.Webhooks[0].Timestamp, fixedNow.Unix())
	}
	want, _ := json.Marshal(first)
	if !bytes.Equal(got.Webhooks[0].Body, want) {
		t.Fatalf("body %s, want %s", got.Webhooks[0].Body, want)
	}
	ev, err := got.Webhooks[0].Event()
	if err != nil || !reflect.DeepEqual(ev, first) {
		t.Fatalf("event %+v (%v), want %+v", ev, err, first)
	}
	if ws := r.Webhooks(); len(ws) != 2 || ws[1].ID != second.ID {
		t.Fatalf("Webhooks() %+v", ws)
	}
}

func TestWebhookRefused(t *testing.T) {
	r, url, logs := start(t)
	ev := event("evt_000000000000000000000001", alerts.GroupOpened, "error", "New group")
	body, _ := json.Marshal(ev)
	sign := func(secret, id string, ts int64, b []byte) http.Header {
		sig, err := alerts.SignStandardWebhook(secret, id, ts, b)
		if err != nil {
			t.Fatal(err)
		}
		return http.Header{"Webhook-Id": {id}, "Webhook-Timestamp": {strconv.FormatInt(ts, 10)}, "Webhook-Signature": {sig}}
	}
	other := "whsec_" + strings.Repeat("QUJD", 8)
	cases := []struct {
		name   string
		hdr    http.Header
		body   []byte
		status int
		code   string
	}{
		{"no headers", http.Header{}, body, 401, "invalid_signature"},
		{"another secret", sign(other, ev.ID, fixedNow.Unix(), body), body, 401, "invalid_signature"},
		{"tampered body", sign(testSecret, ev.ID, fixedNow.Unix(), body), append([]byte(" "), body...), 401, "invalid_signature"},
		{"too old", sign(testSecret, ev.ID, fixedNow.Add(-6*time.Minute).Unix(), body), body, 401, "invalid_signature"},
		{"id differs from the event's", sign(testSecret, "evt_other", fixedNow.Unix(), body), body, 400, "invalid_body"},
		{"not JSON", sign(testSecret, ev.ID, fixedNow.Unix(), []byte("hello")), []byte("hello"), 400, "invalid_body"},
	}
	for _, c := range cases {
		status, answer := send(t, http.MethodPost, url+WebhookPath, c.hdr, c.body)
		if status != c.status || errorCode(t, answer) != c.code {
			t.Errorf("%s: %d %s, want %d %s", c.name, status, answer, c.status, c.code)
		}
	}
	got := r.Received()
	if len(got.Webhooks) != 0 || got.Refused != len(cases) {
		t.Fatalf("webhooks %+v, refused %d of %d", got.Webhooks, got.Refused, len(cases))
	}
	if l := logs.String(); strings.Contains(l, "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw") || strings.Contains(l, "v1,") {
		t.Fatalf("the log shows the secret or a signature:\n%s", l)
	}
}

// The PagerDuty stand-in keeps an incident per dedup key through redrive's
// own events: a trigger opens it, a trigger while open is deduplicated,
// acknowledge and resolve move it, a trigger after the resolve opens a
// new one; an event without an action is never sent.
func TestPagerDutyIncidentLifecycle(t *testing.T) {
	r, url, _ := start(t)
	steps := []struct {
		typ, severity string
		state         string
		opened, dedup int
	}{
		{alerts.GroupOpened, "error", StateTriggered, 1, 0},
		{alerts.GroupReopened, "error", StateTriggered, 1, 1},
		{alerts.GroupAcknowledged, "info", StateAcknowledged, 1, 1},
		{alerts.GroupOpened, "error", StateAcknowledged, 1, 2},
		{alerts.GroupResolved, "info", StateResolved, 1, 2},
		{alerts.GroupAcknowledged, "info", StateResolved, 1, 2},
		{alerts.GroupReopened, "critical", StateTriggered, 2, 2},
	}
	for i, s := range steps {
		ev := event(alerts.EventID("step", strconv.Itoa(i)), s.typ, s.severity, "summary "+strconv.Itoa(i))
		status, answer, sent := deliver(t, url, PagerDutyPath, pagerDutyChannel, ev, fixedNow)
		want := `{"dedup_key":"redrive:group:abc","message":"Event processed","status":"success"}` + "\n"
		if !sent || status != http.StatusAccepted || string(answer) != want {
			t.Fatalf("step %d (%s): %d %s", i, s.typ, status, answer)
		}
		inc := r.Incidents()
		if len(inc) != 1 || inc[0].State != s.state || inc[0].Opened != s.opened || inc[0].Deduplicated != s.dedup {
			t.Fatalf("step %d (%s): incidents %+v, want %s opened %d deduplicated %d", i, s.typ, inc, s.state, s.opened, s.dedup)
		}
	}
	if _, _, sent := deliver(t, url, PagerDutyPath, pagerDutyChannel, event("evt_x", "note.unknown", "info", "done"), fixedNow); sent {
		t.Fatal("an event without a PagerDuty action was sent to PagerDuty")
	}
	events := r.PagerDutyEvents()
	if len(events) != len(steps) {
		t.Fatalf("%d events, want %d", len(events), len(steps))
	}
	actions := []string{}
	for _, e := range events {
		actions = append(actions, e.EventAction)
	}
	if strings.Join(actions, ",") != "trigger,trigger,acknowledge,trigger,resolve,acknowledge,trigger" {
		t.Fatalf("actions %v", actions)
	}
	p := events[0].Payload
	if p == nil || p.Summary != "summary 0" || p.Source != "redrive" || p.Severity != "error" || p.Class != alerts.GroupOpened ||
		p.Component != "beers" || p.CustomDetails["event_id"] != alerts.EventID("step", "0") || events[2].Payload != nil {
		t.Fatalf("events %+v", events)
	}
	if inc := r.Incidents()[0]; inc.Summary != "summary 6" {
		t.Fatalf("incident summary %q, want the last trigger's", inc.Summary)
	}
}

func TestPagerDutyKeysIncidentsApartAndMakesUpAMissingKey(t *testing.T) {
	r, url, _ := start(t)
	trigger := `{"routing_key":"` + testRoutingKey + `","event_action":"trigger","dedup_key":"%s","payload":{"summary":"s","source":"x","severity":"warning"}}`
	for _, k := range []string{"a", "b", "a"} {
		if status, answer := post(t, url+PagerDutyPath, strings.Replace(trigger, "%s", k, 1)); status != http.StatusAccepted {
			t.Fatalf("%s: %d %s", k, status, answer)
		}
	}
	status, answer := post(t, url+PagerDutyPath, strings.Replace(trigger, `"dedup_key":"%s",`, "", 1))
	var got map[string]string
	if status != http.StatusAccepted || json.Unmarshal(answer, &got) != nil || got["dedup_key"] == "" {
		t.Fatalf("trigger without a key: %d %s", status, answer)
	}
	resolveUnknown := `{"routing_key":"` + testRoutingKey + `","event_action":"resolve","dedup_key":"never-triggered"}`
	if status, answer := post(t, url+PagerDutyPath, resolveUnknown); status != http.StatusAccepted {
		t.Fatalf("resolve of an unknown key: %d %s", status, answer)
	}
	inc := r.Incidents()
	if len(inc) != 3 || inc[0].DedupKey != "a" || inc[0].Deduplicated != 1 || inc[1].DedupKey != "b" || inc[2].DedupKey != got["dedup_key"] {
		t.Fatalf("incidents %+v", inc)
	}
	if ev := r.PagerDutyEvents(); len(ev) != 5 || ev[3].DedupKey != got["dedup_key"] {
		t.Fatalf("events %+v", ev)
	}
}

func TestPagerDutyRefusesAnInvalidEvent(t *testing.T) {
	r, url, logs := start(t)
	key := `"routing_key":"` + testRoutingKey + `"`
	payload := `"payload":{"summary":"s","source":"redrive","severity":"error"}`
	cases := map[string]struct{ body, err string }{
		"wrong routing key":   {`{"routing_key":"nope","event_action":"trigger","dedup_key":"k",` + payload + `}`, "'routing_key' is invalid"},
		"no routing key":      {`{"event_action":"trigger",` + payload + `}`, "'routing_key' is missing"},
		"unknown action":      {`{` + key + `,"event_action":"open","dedup_key":"k"}`, "'event_action' is invalid"},
		"no action":           {`{` + key + `,"dedup_key":"k"}`, "'event_action' is missing"},
		"resolve without key": {`{` + key + `,"event_action":"resolve"}`, "'dedup_key' is missing"},
		"key too long":        {`{` + key + `,"event_action":"resolve","dedup_key":"` + strings.Repeat("k", 256) + `"}`, "'dedup_key' is too long"},
		"no payload":          {`{` + key + `,"event_action":"trigger","dedup_key":"k"}`, "'payload' is missing"},
		"no summary":          {`{` + key + `,"event_action":"trigger","payload":{"source":"x","severity":"info"}}`, "'payload.summary' is missing"},
		"summary too long":    {`{` + key + `,"event_action":"trigger","payload":{"summary":"` + strings.Repeat("é", 1025) + `","source":"x","severity":"info"}}`, "'payload.summary' is too long"},
		"no source":           {`{` + key + `,"event_action":"trigger","payload":{"summary":"s","severity":"info"}}`, "'payload.source' is missing"},
		"unknown severity":    {`{` + key + `,"event_action":"trigger","payload":{"summary":"s","source":"x","severity":"high"}}`, "'payload.severity' is invalid"},
		"bad timestamp":       {`{` + key + `,"event_action":"trigger","payload":{"summary":"s","source":"x","severity":"info","timestamp":"yesterday"}}`, "'payload.timestamp' is invalid"},
		"unknown field":       {`{` + key + `,"event_action":"trigger","dedupkey":"k",` + payload + `}`, "Malformed"},
		"unknown payload key": {`{` + key + `,"event_action":"trigger","payload":{"summary":"s","source":"x","severity":"info","sumary":"t"}}`, "Malformed"},
		"not JSON":            {`{` + key, "Malformed"},
		"two values":          {`{` + key + `,"event_action":"resolve","dedup_key":"k"} {}`, "Malformed"},
	}
	for name, c := range cases {
		status, answer := post(t, url+PagerDutyPath, c.body)
		var got struct {
			Status  string   `json:"status"`
			Message string   `json:"message"`
			Errors  []string `json:"errors"`
		}
		if status != http.StatusBadRequest || json.Unmarshal(answer, &got) != nil || got.Status != "invalid event" ||
			got.Message != "Event object is invalid" || len(got.Errors) == 0 || !strings.Contains(strings.Join(got.Errors, "|"), c.err) {
			t.Errorf("%s: %d %s, want 400 with %q", name, status, answer, c.err)
		}
	}
	if got := r.Received(); len(got.PagerDutyEvents) != 0 || len(got.Incidents) != 0 || got.Refused != len(cases) {
		t.Fatalf("recorded %+v", got)
	}
	if strings.Contains(logs.String(), testRoutingKey) {
		t.Fatal("the log shows the routing key")
	}
}

func TestSlackTexts(t *testing.T) {
	r, url, _ := start(t)
	for _, s := range []string{"one <b>", "two & three"} {
		status, answer, _ := deliver(t, url, SlackPath, slackChannel, event("evt_1", alerts.AlertFiring, "critical", s), fixedNow)
		if status != http.StatusOK || string(answer) != "ok" {
			t.Fatalf("%d %s", status, answer)
		}
	}
	if got := r.SlackTexts(); strings.Join(got, "|") != "[redrive] one &lt;b&gt;|[redrive] two &amp; three" {
		t.Fatalf("texts %q", got)
	}
	for _, bad := range []string{`{}`, `{"text":""}`, `{"text":3}`, `text`} {
		if status, answer := post(t, url+SlackPath, bad); status != http.StatusBadRequest || errorCode(t, answer) != "invalid_payload" {
			t.Errorf("%s: %d %s", bad, status, answer)
		}
	}
	if got := r.Received(); len(got.SlackTexts) != 2 || got.Refused != 4 {
		t.Fatalf("recorded %+v", got)
	}
}

// While a fault is set every receiving route answers its status and
// records nothing; the channels' outcome follows (410: Gone); cleared,
// deliveries are kept again.
func TestFaultDrill(t *testing.T) {
	r, url, _ := start(t)
	if status, answer := post(t, url+FaultPath, `{"status":503}`); status != http.StatusOK || string(answer) != `{"fault":503}`+"\n" {
		t.Fatalf("POST /__fault: %d %s", status, answer)
	}
	ev := event("evt_000000000000000000000001", alerts.GroupOpened, "error", "New group")
	for _, d := range []struct {
		path string
		ch   alerts.Channel
	}{{WebhookPath, webhookChannel}, {PagerDutyPath, pagerDutyChannel}, {SlackPath, slackChannel}} {
		status, answer, _ := deliver(t, url, d.path, d.ch, ev, fixedNow)
		if status != http.StatusServiceUnavailable || errorCode(t, answer) != "fault" || alerts.OutcomeOf(status) != alerts.Retry {
			t.Fatalf("%s: %d %s", d.path, status, answer)
		}
	}
	if err := r.SetFault(http.StatusGone); err != nil {
		t.Fatal(err)
	}
	if status, _, _ := deliver(t, url, WebhookPath, webhookChannel, ev, fixedNow); alerts.OutcomeOf(status) != alerts.Gone {
		t.Fatalf("with fault 410: %d", status)
	}
	got := r.Received()
	if len(got.Webhooks)+len(got.PagerDutyEvents)+len(got.SlackTexts) != 0 || got.Faulted != 4 || got.Fault != 410 || got.Refused != 0 {
		t.Fatalf("recorded during the fault: %+v", got)
	}
	if status, answer := post(t, url+FaultPath, `{"status":0}`); status != http.StatusOK || string(answer) != `{"fault":0}`+"\n" {
		t.Fatalf("clearing: %d %s", status, answer)
	}
	if status, _, _ := deliver(t, url, WebhookPath, webhookChannel, ev, fixedNow); alerts.OutcomeOf(status) != alerts.Delivered {
		t.Fatalf("after clearing: %d", status)
	}
	if err := r.SetFault(503); err != nil || r.SetFault(200) != nil || r.Received().Fault != 0 {
		t.Fatalf("SetFault(200) does not clear: %v", r.Received().Fault)
	}
	for _, bad := range []string{`{"status":99}`, `{"status":204}`, `{"status":600}`, `{}`, `{"status":"503"}`, `{"status":503,"for":2}`} {
		if status, answer := post(t, url+FaultPath, bad); status != http.StatusBadRequest || errorCode(t, answer) == "" {
			t.Errorf("%s: %d %s", bad, status, answer)
		}
	}
	if r.Received().Fault != 0 || r.SetFault(99) == nil {
		t.Fatal("an invalid status was set")
	}
}

func TestBadRequestsGetAJSONEnvelope(t *testing.T) {
	r, url, _ := start(t)
	big := `{"text":"` + strings.Repeat("x", MaxBodyBytes) + `"}`
	cases := []struct {
		method, path, body string
		status             int
		code               string
	}{
		{http.MethodPost, SlackPath, big, 413, "body_too_large"},
		{http.MethodPost, WebhookPath, big, 413, "body_too_large"},
		{http.MethodGet, "/nowhere", "", 404, "not_found"},
		{http.MethodGet, WebhookPath, "", 405, "method_not_allowed"},
		{http.MethodPost, ReceivedPath, "", 405, "method_not_allowed"},
	}
	for _, c := range cases {
		status, answer := send(t, c.method, url+c.path, nil, []byte(c.body))
		if status != c.status || errorCode(t, answer) != c.code {
			t.Errorf("%s %s: %d %.200s, want %d %s", c.method, c.path, status, answer, c.status, c.code)
		}
	}
	if got := r.Received(); got.Refused != len(cases) || len(got.SlackTexts) != 0 {
		t.Fatalf("recorded %+v", got)
	}
}

// GET /__received is Received as JSON, with every list present.
func TestReceivedAsJSON(t *testing.T) {
	r, url, _ := start(t)
	if status, answer := send(t, http.MethodGet, url+ReceivedPath, nil, nil); status != 200 ||
		string(answer) != `{"webhooks":[],"webhook_duplicates":0,"pagerduty_events":[],"incidents":[],"slack_texts":[],"refused":0,"faulted":0,"fault":0}`+"\n" {
		t.Fatalf("empty: %d %s", status, answer)
	}
	ev := event("evt_000000000000000000000001", alerts.GroupOpened, "error", "New group")
	deliver(t, url, WebhookPath, webhookChannel, ev, fixedNow)
	deliver(t, url, PagerDutyPath, pagerDutyChannel, ev, fixedNow)
	deliver(t, url, SlackPath, slackChannel, ev, fixedNow)
	post(t, url+SlackPath, `{}`)
	_, answer := send(t, http.MethodGet, url+ReceivedPath, nil, nil)
	var got Received
	if err := json.Unmarshal(answer, &got); err != nil {
		t.Fatal(err)
	}
	if want := r.Received(); !reflect.DeepEqual(got, want) || len(got.Webhooks) != 1 || len(got.Incidents) != 1 || got.Refused != 1 {
		t.Fatalf("GET %s\n%+v\nReceived()\n%+v", ReceivedPath, got, want)
	}
}

func TestWaitReturnsOnceTheConditionHolds(t *testing.T) {
	r, url, _ := start(t)
	posted := make(chan error, 1)
	go func() {
		resp, err := http.Post(url+SlackPath, "application/json", strings.NewReader(`{"text":"hello"}`))
		if err == nil {
			resp.Body.Close()
		}
		posted <- err
	}()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	got, err := r.Wait(ctx, func(rc Received) bool { return len(rc.SlackTexts) == 1 })
	if err != nil || got.SlackTexts[0] != "hello" {
		t.Fatalf("%+v %v", got, err)
	}
	if err := <-posted; err != nil {
		t.Fatal(err)
	}
	short, cancel2 := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel2()
	if _, err := r.Wait(short, func(rc Received) bool { return len(rc.SlackTexts) == 2 }); err != context.DeadlineExceeded {
		t.Fatalf("a condition that never holds: %v", err)
	}
}

func TestNewRefusesABadConfig(t *testing.T) {
	for _, cfg := range []Config{
		{Secret: "whsec_short", RoutingKey: "k"},
		{Secret: "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", RoutingKey: "k"},
		{Secret: testSecret},
	} {
		if _, err := New(cfg); err == nil {
			t.Errorf("%+v: no error", cfg)
		}
	}
}

// One log line per received event, JSON, without the secret or the routing key.
func TestLogsOneLinePerEvent(t *testing.T) {
	_, url, logs := start(t)
	ev := event("evt_000000000000000000000001", alerts.GroupOpened, "error", "New group")
	deliver(t, url, WebhookPath, webhookChannel, ev, fixedNow)
	deliver(t, url, PagerDutyPath, pagerDutyChannel, ev, fixedNow)
	deliver(t, url, SlackPath, slackChannel, ev, fixedNow)
	lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
	if len(lines) != 3 {
		t.Fatalf("%d lines:\n%s", len(lines), logs)
	}
	for i, msg := range []string{"receiver: webhook", "receiver: pagerduty", "receiver: slack"} {
		var l map[string]any
		if err := json.Unmarshal([]byte(lines[i]), &l); err != nil || l["msg"] != msg {
			t.Fatalf("line %d: %s (%v)", i, lines[i], err)
		}
	}
	if l := logs.String(); strings.Contains(l, testRoutingKey) || strings.Contains(l, "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw") {
		t.Fatalf("the log shows a secret:\n%s", l)
	}
}
