package config

import (
	"strings"
	"testing"
)

var channelEnv = map[string]string{"PD_KEY": "pd-routing-key-secret", "HOOK": "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
	"SLACK_URL": "https://hooks.slack.example/T000/B000/secret-token-in-url"}

func getChannelEnv(k string) string { return channelEnv[k] }

// ALERT_CHANNELS: each good entry is a channel with its secrets read; each
// bad one is a problem that names the entry and what is wrong, never a
// secret or a URL; unset, ALERT_WEBHOOK_URL is the one slack channel.
func TestParseAlertChannels(t *testing.T) {
	cs, problems := ParseAlertChannels(`[
		{"name":"pd","type":"pagerduty","secret":"PD_KEY","events":["group.*"],"min_severity":"error"},
		{"name":"ops","type":"webhook","url":"https://ops.example/hook","secret":"HOOK","pipelines":["orders"]},
		{"name":"slack","type":"slack","url_secret":"SLACK_URL"}]`, "", getChannelEnv)
	if len(problems) != 0 || len(cs) != 3 {
		t.Fatalf("channels %+v, problems %v", cs, problems)
	}
	if cs[0].URL != "https://events.pagerduty.com/v2/enqueue" || cs[0].Secret != "pd-routing-key-secret" ||
		cs[1].Secret != channelEnv["HOOK"] || cs[2].URL != channelEnv["SLACK_URL"] {
		t.Fatalf("channels %+v", cs)
	}
	if cs, _ := ParseAlertChannels("", "https://hooks.example/x", getChannelEnv); len(cs) != 1 || cs[0].Name != "webhook" || cs[0].Type != "slack" {
		t.Fatalf("legacy: %+v", cs)
	}
	if cs, p := ParseAlertChannels("", "", getChannelEnv); cs != nil || p != nil {
		t.Fatalf("unset: %+v %v", cs, p)
	}
	for _, c := range []struct{ raw, want string }{
		{`{"name":"x"}`, "not a JSON array"},
		{`[{"name":"Bad Name","type":"slack","url":"https://x.example"}]`, "name"},
		{`[{"name":"a","type":"email","url":"https://x.example"}]`, "type"},
		{`[{"name":"a","type":"slack"}]`, "url or url_secret is required"},
		{`[{"name":"a","type":"slack","url":"http://x.example/secret-token-in-url"}]`, "url:"},
		{`[{"name":"a","type":"slack","url":"https://x.example","url_secret":"SLACK_URL"}]`, "give one"},
		{`[{"name":"a","type":"webhook","url":"https://x.example","secret":"MISSING"}]`, "MISSING is not set"},
		{`[{"name":"a","type":"webhook","url":"https://x.example","secret":"PD_KEY"}]`, "secret"},
		{`[{"name":"a","type":"pagerduty","secret":"PD_KEY","events":["nope"]}]`, "events"},
		{`[{"name":"a","type":"pagerduty","secret":"PD_KEY","min_severity":"loud"}]`, "min_severity"},
		{`[{"name":"a","type":"pagerduty","secret":"PD_KEY","pipelines":["Not A Name"]}]`, "pipelines"},
		{`[{"name":"a","type":"slack","url":"https://x.example","secret":"HOOK"}]`, "slack channel has none"},
		{`[{"name":"a","type":"slack","url":"https://x.example","URL":"https://y.example"}]`, "unknown field"},
		{`[{"name":"a","type":"slack","url":"https://x.example"},{"name":"a","type":"slack","url":"https://y.example"}]`, "used by an earlier entry"},
	} {
		cs, problems := ParseAlertChannels(c.raw, "", getChannelEnv)
		all := strings.Join(strings.Fields(strings.TrimSpace(strings.ReplaceAll(strings.ReplaceAll(fmtErrs(problems), "\n", " "), "\t", " "))), " ")
		if len(problems) == 0 || !strings.Contains(all, c.want) {
			t.Errorf("%s: channels %+v, problems %q, want one containing %q", c.raw, cs, all, c.want)
		}
		for _, secret := range channelEnv {
			if strings.Contains(all, secret) || strings.Contains(all, "secret-token-in-url") {
				t.Errorf("%s: a problem quotes a secret or a URL: %q", c.raw, all)
			}
		}
	}
}

func fmtErrs(errs []error) string {
	var b strings.Builder
	for _, e := range errs {
		b.WriteString(e.Error() + "\n")
	}
	return b.String()
}

// FuzzParseAlertChannels: ALERT_CHANNELS never panics, and every channel it
// keeps passes its own check and has a unique name.
func FuzzParseAlertChannels(f *testing.F) {
	for _, s := range []string{"", "[]", "{}", "null", `[{"name":"pd","type":"pagerduty","secret":"PD_KEY"}]`,
		`[{"name":"ops","type":"webhook","url":"https://ops.example/hook","secret":"HOOK","events":["group.*","alert.firing"],"pipelines":["orders"],"min_severity":"warning"}]`,
		`[{"name":"s","type":"slack","url_secret":"SLACK_URL"},{"name":"s","type":"slack","url":"https://x.example"}]`,
		`[{"name":"a","type":"slack","url":"https://x.example","Name":"b"}]`, `[1, "x", null, [], {"name": 5}]`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		cs, _ := ParseAlertChannels(raw, "", getChannelEnv)
		names := map[string]bool{}
		for _, c := range cs {
			if err := c.Check(); err != nil || names[c.Name] {
				t.Fatalf("kept %+v: %v (name seen %v)", c, err, names[c.Name])
			}
			names[c.Name] = true
		}
	})
}
