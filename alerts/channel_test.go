package alerts

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/redrive/redrive/outbound"
)

// sampleEvent is a group.opened event of pipeline beers.
func sampleEvent() Event {
	return Event{
		ID:        "evt_0123456789abcdef01234567",
		Type:      GroupOpened,
		Timestamp: "2026-03-01T10:00:00.000Z",
		Severity:  "error",
		Pipeline:  "beers",
		DedupKey:  "redrive:group:abc",
		Summary:   "New failure group in beers: <timeout> & more",
		Data:      map[string]any{"signature": "abc", "count": 3},
	}
}

func TestChannelRoutes(t *testing.T) {
	ev := func(typ, pipeline, severity string) Event {
		return Event{Type: typ, Pipeline: pipeline, Severity: severity}
	}
	cases := []struct {
		name string
		c    Channel
		ev   Event
		want bool
	}{
		{"no routing: everything", Channel{}, ev(TaskFinished, "beers", "info"), true},
		{"exact type", Channel{Events: []string{GroupOpened}}, ev(GroupOpened, "", "error"), true},
		{"another type", Channel{Events: []string{GroupOpened}}, ev(GroupReopened, "", "error"), false},
		{"one of several types", Channel{Events: []string{AlertFiring, GroupResolved}}, ev(GroupResolved, "", "info"), true},
		{"prefix", Channel{Events: []string{"group.*"}}, ev(GroupAcknowledged, "", "info"), true},
		{"prefix of another family", Channel{Events: []string{"group.*"}}, ev(AlertFiring, "", "critical"), false},
		{"prefix matches at a dot only", Channel{Events: []string{"grou.*"}}, ev(GroupOpened, "", "error"), false},
		{"prefix is not a type", Channel{Events: []string{"group.*"}}, ev("group", "", "error"), false},
		{"type without the wildcard is exact", Channel{Events: []string{"group"}}, ev(GroupOpened, "", "error"), false},
		{"pipeline listed", Channel{Pipelines: []string{"beers", "wines"}}, ev(GroupOpened, "wines", "error"), true},
		{"pipeline not listed", Channel{Pipelines: []string{"beers"}}, ev(GroupOpened, "wines", "error"), false},
		{"no pipeline always passes", Channel{Pipelines: []string{"beers"}}, ev(BreakerOpened, "", "critical"), true},
		{"as severe as the minimum", Channel{MinSeverity: "warning"}, ev(BacklogHigh, "", "warning"), true},
		{"more severe", Channel{MinSeverity: "warning"}, ev(BacklogHigh, "", "critical"), true},
		{"less severe", Channel{MinSeverity: "warning"}, ev(GroupResolved, "", "info"), false},
		{"critical only", Channel{MinSeverity: "critical"}, ev(GroupOpened, "", "error"), false},
		{"unknown severity passes", Channel{MinSeverity: "critical"}, ev(GroupOpened, "", "bogus"), true},
		{"all must pass: type fails", Channel{Events: []string{"alert.*"}, Pipelines: []string{"beers"}, MinSeverity: "info"}, ev(GroupOpened, "beers", "error"), false},
		{"all must pass: pipeline fails", Channel{Events: []string{"group.*"}, Pipelines: []string{"beers"}, MinSeverity: "info"}, ev(GroupOpened, "wines", "error"), false},
		{"all must pass: severity fails", Channel{Events: []string{"group.*"}, Pipelines: []string{"beers"}, MinSeverity: "critical"}, ev(GroupOpened, "beers", "error"), false},
		{"all pass", Channel{Events: []string{"group.*"}, Pipelines: []string{"beers"}, MinSeverity: "error"}, ev(GroupOpened, "beers", "error"), true},
	}
	for _, c := range cases {
		if got := c.c.Routes(c.ev); got != c.want {
			t.Errorf("%s: Routes = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestSlackRequest(t *testing.T) {
	c := Channel{Name: "ops", Type: ChannelSlack, URL: "https://hooks.slack.test/T/B/token", Timeout: 7 * time.Second}
	req, ok, err := c.Request(sampleEvent(), []byte(`{"ignored":true}`), time.Unix(1700000000, 0))
	if err != nil || !ok {
		t.Fatalf("ok %v, err %v", ok, err)
	}
	want := `{"text":"[redrive] New failure group in beers: \u0026lt;timeout\u0026gt; \u0026amp; more"}`
	if string(req.Body) != want {
		t.Fatalf("body\n%s\nwant\n%s", req.Body, want)
	}
	var p map[string]string
	if err := json.Unmarshal(req.Body, &p); err != nil || p["text"] != "[redrive] New failure group in beers: &lt;timeout&gt; &amp; more" {
		t.Fatalf("text %q (%v)", p["text"], err)
	}
	checkPost(t, req, c.URL, 7*time.Second, map[string]string{"content-type": "application/json"})
}

// checkPost checks the request's method, URL, timeout and its exact headers.
func checkPost(t *testing.T, req outbound.Request, url string, timeout time.Duration, header map[string]string) {
	t.Helper()
	if req.Method != http.MethodPost || req.URL != url || req.Timeout != timeout {
		t.Fatalf("request %s %s timeout %s, want POST %s %s", req.Method, req.URL, req.Timeout, url, timeout)
	}
	if len(req.Header) != len(header) {
		t.Fatalf("headers %v, want %v", req.Header, header)
	}
	for k, v := range header {
		if req.Header[k] != v {
			t.Fatalf("header %s: %q, want %q", k, req.Header[k], v)
		}
	}
}

func TestWebhookRequestIsAStandardWebhook(t *testing.T) {
	ev := sampleEvent()
	body, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	c := Channel{Name: "hook", Type: ChannelWebhook, URL: "https://receiver.test/hook", Secret: vectorSecret, Timeout: time.Second}
	now := time.Unix(1700000123, 999_000_000)
	req, ok, err := c.Request(ev, body, now)
	if err != nil || !ok {
		t.Fatalf("ok %v, err %v", ok, err)
	}
	if string(req.Body) != string(body) {
		t.Fatalf("body %s, want the event's JSON %s", req.Body, body)
	}
	sig := req.Header["webhook-signature"]
	checkPost(t, req, c.URL, time.Second, map[string]string{
		"content-type": "application/json", "webhook-id": ev.ID, "webhook-timestamp": "1700000123", "webhook-signature": sig,
	})
	if err := VerifyStandardWebhook(vectorSecret, ev.ID, "1700000123", sig, body, now, time.Minute); err != nil {
		t.Fatalf("the signature does not verify: %v", err)
	}
	if err := VerifyStandardWebhook(newWebhookSecret(t, 32), ev.ID, "1700000123", sig, body, now, time.Minute); err == nil {
		t.Fatal("the signature verifies under another secret")
	}
	// A later attempt of the same event: same id and body, new timestamp and signature.
	again, _, err := c.Request(ev, body, now.Add(time.Hour))
	if err != nil || again.Header["webhook-id"] != ev.ID || again.Header["webhook-timestamp"] != "1700003723" || again.Header["webhook-signature"] == sig {
		t.Fatalf("a later attempt: %v %v", again.Header, err)
	}
}

func TestWebhookRequestRefusesABadSecret(t *testing.T) {
	c := Channel{Name: "hook", Type: ChannelWebhook, URL: "https://receiver.test/hook", Secret: "whsec_short"}
	_, ok, err := c.Request(sampleEvent(), []byte(`{}`), time.Unix(1, 0))
	if err == nil || ok || !strings.Contains(err.Error(), "hook") || strings.Contains(err.Error(), "short") {
		t.Fatalf("ok %v, err %v", ok, err)
	}
}

func TestPagerDutyTrigger(t *testing.T) {
	c := Channel{Name: "pd", Type: ChannelPagerDuty, Secret: "R0UTINGKEY", Timeout: 3 * time.Second}
	req, ok, err := c.Request(sampleEvent(), nil, time.Unix(1700000000, 0))
	if err != nil || !ok {
		t.Fatalf("ok %v, err %v", ok, err)
	}
	want := `{"routing_key":"R0UTINGKEY","event_action":"trigger","dedup_key":"redrive:group:abc",` +
		`"payload":{"summary":"New failure group in beers: \u003ctimeout\u003e \u0026 more","source":"redrive",` +
		`"severity":"error","timestamp":"2026-03-01T10:00:00.000Z","component":"beers","group":"beers",` +
		`"class":"group.opened","custom_details":{"count":3,"event_id":"evt_0123456789abcdef01234567","signature":"abc"}}}`
	if string(req.Body) != want {
		t.Fatalf("body\n%s\nwant\n%s", req.Body, want)
	}
	checkPost(t, req, PagerDutyEventsURL, 3*time.Second, map[string]string{"content-type": "application/json"})
	if req.DiscardBody {
		t.Fatal("a pagerduty request discards PagerDuty's answer, which says why an event was refused")
	}
}

func TestPagerDutyTriggerWithoutPipeline(t *testing.T) {
	ev := sampleEvent()
	ev.Type, ev.Pipeline, ev.Severity, ev.Data = BreakerOpened, "", "critical", nil
	ev.Summary = "Breaker open"
	c := Channel{Name: "pd", Type: ChannelPagerDuty, URL: "http://127.0.0.1:1/v2/enqueue", Secret: "k"}
	req, _, err := c.Request(ev, nil, time.Unix(1, 0))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"routing_key":"k","event_action":"trigger","dedup_key":"redrive:group:abc",` +
		`"payload":{"summary":"Breaker open","source":"redrive","severity":"critical",` +
		`"timestamp":"2026-03-01T10:00:00.000Z","class":"enrichment.breaker_opened",` +
		`"custom_details":{"event_id":"evt_0123456789abcdef01234567"}}}`
	if string(req.Body) != want || req.URL != c.URL {
		t.Fatalf("%s\n%s\nwant\n%s", req.URL, req.Body, want)
	}
}

func TestPagerDutyAcknowledgeAndResolveHaveNoPayload(t *testing.T) {
	c := Channel{Name: "pd", Type: ChannelPagerDuty, Secret: "k"}
	for typ, action := range map[string]string{GroupAcknowledged: "acknowledge", GroupResolved: "resolve", AlertResolved: "resolve"} {
		ev := sampleEvent()
		ev.Type, ev.Severity = typ, "info"
		req, ok, err := c.Request(ev, nil, time.Unix(1, 0))
		if err != nil || !ok {
			t.Fatalf("%s: ok %v, err %v", typ, ok, err)
		}
		want := `{"routing_key":"k","event_action":"` + action + `","dedup_key":"redrive:group:abc"}`
		if string(req.Body) != want {
			t.Errorf("%s: %s, want %s", typ, req.Body, want)
		}
	}
}

// An event that does nothing to an incident sends nothing to PagerDuty;
// the other channels tell it.
func TestPagerDutyHasNothingToSendForAnEventWithoutAction(t *testing.T) {
	ev := sampleEvent()
	ev.Type, ev.Severity = "note.unknown", "info" // every listed type has an action: a type of a newer version
	req, ok, err := Channel{Name: "pd", Type: ChannelPagerDuty, Secret: "k"}.Request(ev, nil, time.Unix(1, 0))
	if err != nil || ok || req.URL != "" || req.Body != nil {
		t.Fatalf("ok %v, err %v, request %+v", ok, err, req)
	}
	for _, c := range []Channel{{Type: ChannelSlack, URL: "u"}, {Type: ChannelWebhook, URL: "u", Secret: vectorSecret}} {
		if _, ok, err := c.Request(ev, []byte(`{}`), time.Unix(1, 0)); !ok || err != nil {
			t.Errorf("%s: ok %v, err %v", c.Type, ok, err)
		}
	}
}

func TestPagerDutyRefusesAnUnknownSeverity(t *testing.T) {
	ev := sampleEvent()
	ev.Severity = "bogus"
	if _, ok, err := (Channel{Name: "pd", Type: ChannelPagerDuty, Secret: "k"}).Request(ev, nil, time.Unix(1, 0)); err == nil || ok {
		t.Fatalf("ok %v, err %v", ok, err)
	}
}

// The summary is clipped to PagerDuty's 1024 bytes, never inside a UTF-8
// sequence; the custom details' event_id is the event's, whatever its data says.
func TestPagerDutySummaryIsClipped(t *testing.T) {
	ev := sampleEvent()
	ev.Summary = "x" + strings.Repeat("é", 1000) // 2001 bytes: byte 1023 is inside an é
	ev.Data = map[string]any{"event_id": "forged"}
	b, err := PagerDutyEvent("k", ev)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Payload struct {
			Summary       string         `json:"summary"`
			CustomDetails map[string]any `json:"custom_details"`
		} `json:"payload"`
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	s := got.Payload.Summary
	if len(s) > 1024 || len(s) < 1020 || !utf8.ValidString(s) || !strings.HasSuffix(s, "…") || !strings.HasPrefix(ev.Summary, strings.TrimSuffix(s, "…")) {
		t.Fatalf("summary of %d bytes: %q", len(s), s)
	}
	if got.Payload.CustomDetails["event_id"] != ev.ID {
		t.Fatalf("custom_details %v", got.Payload.CustomDetails)
	}
	ev.Summary = strings.Repeat("y", 1024)
	if b, _ := PagerDutyEvent("k", ev); !strings.Contains(string(b), `"summary":"`+ev.Summary+`"`) {
		t.Fatal("a summary of exactly 1024 bytes was changed")
	}
}

func TestUnknownChannelTypeIsAnError(t *testing.T) {
	if _, ok, err := (Channel{Name: "x", Type: "email"}).Request(sampleEvent(), nil, time.Unix(1, 0)); err == nil || ok {
		t.Fatalf("ok %v, err %v", ok, err)
	}
}

func TestOutcomeOf(t *testing.T) {
	want := map[Outcome][]int{
		Delivered: {200, 201, 202, 204, 299},
		Gone:      {410},
		Retry:     {0, 100, 199, 300, 301, 302, 304, 307, 308, 400, 401, 403, 404, 408, 409, 413, 429, 500, 502, 503, 504, 600},
	}
	for o, statuses := range want {
		for _, s := range statuses {
			if got := OutcomeOf(s); got != o {
				t.Errorf("OutcomeOf(%d) = %s, want %s", s, got, o)
			}
		}
	}
	if Delivered.String() != "delivered" || Gone.String() != "gone" || Retry.String() != "retry" {
		t.Fatalf("names %s %s %s", Delivered, Gone, Retry)
	}
}

func TestChannelCheck(t *testing.T) {
	good := []Channel{
		{Name: "ops", Type: ChannelSlack, URL: "https://hooks.slack.test/x"},
		{Name: "on-call_1", Type: ChannelWebhook, URL: "https://r.test", Secret: vectorSecret, Events: []string{"group.*", AlertFiring}, MinSeverity: "warning"},
		{Name: "pd", Type: ChannelPagerDuty, Secret: "key", Pipelines: []string{"beers"}, Events: []string{"enrichment.*"}},
	}
	for _, c := range good {
		if err := c.Check(); err != nil {
			t.Errorf("%s: %v", c.Name, err)
		}
	}
	bad := map[string]Channel{
		"name":        {Name: "Ops", Type: ChannelSlack, URL: "u"},
		"empty name":  {Type: ChannelSlack, URL: "u"},
		"long name":   {Name: strings.Repeat("a", 33), Type: ChannelSlack, URL: "u"},
		"type":        {Name: "a", Type: "email", URL: "u"},
		"slack url":   {Name: "a", Type: ChannelSlack},
		"webhook url": {Name: "a", Type: ChannelWebhook, Secret: vectorSecret},
		"secret":      {Name: "a", Type: ChannelWebhook, URL: "u", Secret: "whsec_c2VjcmV0LXZhbHVl"},
		"routing key": {Name: "a", Type: ChannelPagerDuty},
		"event":       {Name: "a", Type: ChannelSlack, URL: "u", Events: []string{"group.opend"}},
		"prefix":      {Name: "a", Type: ChannelSlack, URL: "u", Events: []string{"grou.*"}},
		"bare star":   {Name: "a", Type: ChannelSlack, URL: "u", Events: []string{"*"}},
		"severity":    {Name: "a", Type: ChannelSlack, URL: "u", MinSeverity: "high"},
		"timeout":     {Name: "a", Type: ChannelSlack, URL: "u", Timeout: -time.Second},
	}
	for what, c := range bad {
		err := c.Check()
		if err == nil {
			t.Errorf("%s: no error", what)
			continue
		}
		if strings.Contains(err.Error(), "c2VjcmV0LXZhbHVl") {
			t.Errorf("%s: the error quotes the secret: %v", what, err)
		}
	}
	if ValidChannelName(strings.Repeat("a", 32)) != true || ValidChannelName("a b") {
		t.Fatal("ValidChannelName")
	}
}

// Channel names are 1 to 32 of a-z, 0-9, _ and -: every byte at the edges
// of those ranges.
func TestValidChannelNameEdges(t *testing.T) {
	for _, ok := range []string{"a", "z", "0", "9", "_", "-", "a-z_09", strings.Repeat("x", 32)} {
		if !ValidChannelName(ok) {
			t.Errorf("%q refused", ok)
		}
	}
	for _, bad := range []string{"", "`", "{", "/", ":", "A", "Z", "a b", "é", strings.Repeat("x", 33)} {
		if ValidChannelName(bad) {
			t.Errorf("%q accepted", bad)
		}
	}
}
