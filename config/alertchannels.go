package config

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/redrive/redrive/alerts"
	"github.com/redrive/redrive/internal/strictjson"
	"github.com/redrive/redrive/outbound"
)

// MaxAlertChannels bounds ALERT_CHANNELS.
const MaxAlertChannels = 10

type alertChannelEntry struct {
	Name        string   `json:"name"`
	Type        string   `json:"type"`
	URL         string   `json:"url"`
	URLSecret   string   `json:"url_secret"`
	Secret      string   `json:"secret"`
	Events      []string `json:"events"`
	Pipelines   []string `json:"pipelines"`
	MinSeverity string   `json:"min_severity"`
}

// ParseAlertChannels reads ALERT_CHANNELS (raw), reading the secrets its
// entries name through getenv. Unset, a set legacy (ALERT_WEBHOOK_URL's
// value, already checked) is the one channel "webhook", of type slack,
// for every event. Each bad entry is a problem and is left out; the
// problems never echo a secret or a URL. It never panics
// (FuzzParseAlertChannels).
func ParseAlertChannels(raw, legacy string, getenv func(string) string) ([]alerts.Channel, []error) {
	if strings.TrimSpace(raw) == "" {
		if legacy == "" {
			return nil, nil
		}
		return []alerts.Channel{{Name: "webhook", Type: alerts.ChannelSlack, URL: legacy}}, nil
	}
	var entries []json.RawMessage
	if err := json.Unmarshal([]byte(raw), &entries); err != nil || entries == nil {
		return nil, []error{fmt.Errorf("ALERT_CHANNELS: not a JSON array of channels; alerts are only recorded")}
	}
	var out []alerts.Channel
	var problems []error
	if len(entries) > MaxAlertChannels {
		problems = append(problems, fmt.Errorf("ALERT_CHANNELS: %d entries, at most %d; the rest are off", len(entries), MaxAlertChannels))
		entries = entries[:MaxAlertChannels]
	}
	for i, e := range entries {
		c, err := parseAlertChannel(e, getenv)
		if err == nil && slices.ContainsFunc(out, func(o alerts.Channel) bool { return o.Name == c.Name }) {
			err = fmt.Errorf("name %q is used by an earlier entry", c.Name)
		}
		if err != nil {
			problems = append(problems, fmt.Errorf("ALERT_CHANNELS[%d]: %w; this channel is off", i, err))
			continue
		}
		out = append(out, c)
	}
	return out, problems
}

// incidents reads ALERT_CHANNELS (or ALERT_WEBHOOK_URL), each channel
// with ALERT_WEBHOOK_TIMEOUT_SECONDS, ALERT_DELIVERY_ATTEMPTS and
// GROUP_AUTO_RESOLVE_MINUTES into c.
func (l *loader) incidents(c *Config) {
	cs, problems := ParseAlertChannels(l.str("ALERT_CHANNELS", ""), c.AlertWebhookURL, l.getenv)
	l.problems = append(l.problems, problems...)
	for i := range cs {
		cs[i].Timeout = c.AlertWebhookTimeout
	}
	c.AlertChannels = cs
	c.AlertDeliveryAttempts = int(l.int("ALERT_DELIVERY_ATTEMPTS", 12, 1, 30))
	c.GroupAutoResolve = l.minutes("GROUP_AUTO_RESOLVE_MINUTES", 60, 5, 43200)
}

func parseAlertChannel(raw json.RawMessage, getenv func(string) string) (alerts.Channel, error) {
	var e alertChannelEntry
	if err := strictjson.Decode(raw, &e, "the channel"); err != nil {
		return alerts.Channel{}, err
	}
	if !alerts.ValidChannelName(e.Name) {
		return alerts.Channel{}, fmt.Errorf("name: want 1 to 32 of a-z, 0-9, _ and -")
	}
	c := alerts.Channel{Name: e.Name, Type: e.Type, Events: e.Events, Pipelines: e.Pipelines, MinSeverity: e.MinSeverity}
	switch e.Type {
	case alerts.ChannelSlack, alerts.ChannelWebhook, alerts.ChannelPagerDuty:
	default:
		return c, fmt.Errorf("type: want slack, webhook or pagerduty")
	}
	url, err := e.url(getenv)
	if err != nil {
		return c, err
	}
	c.URL = url
	if e.Type != alerts.ChannelSlack {
		if !validSecretName(e.Secret) {
			return c, fmt.Errorf("secret: want the name of the secret holding the %s", map[string]string{
				alerts.ChannelWebhook: "signing secret (whsec_...)", alerts.ChannelPagerDuty: "routing key"}[e.Type])
		}
		c.Secret = getenv(e.Secret)
		if c.Secret == "" {
			return c, fmt.Errorf("secret: %s is not set", e.Secret)
		}
	} else if e.Secret != "" {
		return c, fmt.Errorf("secret: a slack channel has none (its url may embed a token: url_secret)")
	}
	for _, p := range e.Pipelines {
		if !validPipelineName(p) {
			return c, fmt.Errorf("pipelines: %q is not a pipeline name", p)
		}
	}
	if err := c.Check(); err != nil {
		// Check never quotes the URL or the secret.
		return c, err
	}
	return c, nil
}

func validSecretName(s string) bool {
	if len(s) < 1 || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// url is the entry's URL: url, the secret url_secret names, or PagerDuty's
// endpoint; checked by outbound.CheckURL (never quoted).
func (e alertChannelEntry) url(getenv func(string) string) (string, error) {
	u := e.URL
	switch {
	case e.URL != "" && e.URLSecret != "":
		return "", fmt.Errorf("url and url_secret: give one")
	case e.URLSecret != "":
		if !validSecretName(e.URLSecret) {
			return "", fmt.Errorf("url_secret: want the name of a secret ([A-Z0-9_])")
		}
		if u = getenv(e.URLSecret); u == "" {
			return "", fmt.Errorf("url_secret: secret %s is not set", e.URLSecret)
		}
	case e.URL != "":
	case e.Type == alerts.ChannelPagerDuty:
		u = alerts.PagerDutyEventsURL
	default:
		return "", fmt.Errorf("url or url_secret is required")
	}
	if err := outbound.CheckURL(u); err != nil {
		return "", fmt.Errorf("url: %v", err)
	}
	return u, nil
}
