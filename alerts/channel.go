package alerts

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/redrive/redrive/internal/text"
	"github.com/redrive/redrive/outbound"
)

// Channel types: how a Channel's deliveries are shaped.
const (
	// ChannelSlack posts {"text": "[redrive] <summary>"} (WebhookPayload).
	ChannelSlack = "slack"
	// ChannelWebhook posts the event's JSON signed as the Standard
	// Webhooks specification says (SignStandardWebhook).
	ChannelWebhook = "webhook"
	// ChannelPagerDuty sends PagerDuty Events API v2 events.
	ChannelPagerDuty = "pagerduty"
)

// PagerDutyEventsURL is where a pagerduty Channel without a URL sends.
const PagerDutyEventsURL = "https://events.pagerduty.com/v2/enqueue"

const (
	// pagerDutySummaryBytes is the longest summary PagerDuty takes.
	pagerDutySummaryBytes = 1024
	// pagerDutySource is the payload's source: the system the event is about.
	pagerDutySource    = "redrive"
	slackPrefix        = "[redrive] "
	eventTypeWildcard  = ".*"
	contentTypeJSON    = "application/json"
	headerContentType  = "content-type"
	maxChannelNameSize = 32
)

// Channel is one configured alert receiver (config ALERT_CHANNELS).
type Channel struct {
	// Name is unique among the channels, [a-z0-9_-]{1,32} (ValidChannelName).
	Name string
	// Type is ChannelSlack, ChannelWebhook or ChannelPagerDuty.
	Type string
	// URL is where to POST; it may embed a token: never log it. A
	// pagerduty channel without one sends to PagerDutyEventsURL.
	URL string
	// Secret is, for a webhook, the Standard Webhooks signing secret
	// ("whsec_" and the key in base64); for pagerduty, the routing key
	// (the integration key); unused for slack. Never logged.
	Secret string
	// Events routes by event type: each entry is a type (GroupOpened) or a
	// prefix ending in ".*" ("group.*" is every type starting "group.").
	// Empty: every type.
	Events []string
	// Pipelines routes by pipeline name. Empty: every pipeline; an event
	// without a pipeline always passes.
	Pipelines []string
	// MinSeverity routes by severity: "" is every severity, else events
	// at least this severe (SeverityRank at most this one's).
	MinSeverity string
	// Timeout aborts one delivery's request.
	Timeout time.Duration
}

// Routes reports whether ev goes to this channel: its type, pipeline and
// severity each pass the channel's routing. An event whose severity is
// not one of Severities passes any MinSeverity: a malformed event still
// reaches on-call rather than being dropped unseen.
func (c Channel) Routes(ev Event) bool {
	return c.routesType(ev.Type) && c.routesPipeline(ev.Pipeline) && c.routesSeverity(ev.Severity)
}

func (c Channel) routesType(t string) bool {
	if len(c.Events) == 0 {
		return true
	}
	for _, e := range c.Events {
		if e == t {
			return true
		}
		if prefix, ok := strings.CutSuffix(e, eventTypeWildcard); ok && strings.HasPrefix(t, prefix+".") {
			return true
		}
	}
	return false
}

func (c Channel) routesPipeline(p string) bool {
	if len(c.Pipelines) == 0 || p == "" {
		return true
	}
	for _, q := range c.Pipelines {
		if q == p {
			return true
		}
	}
	return false
}

func (c Channel) routesSeverity(s string) bool {
	if c.MinSeverity == "" {
		return true
	}
	r := SeverityRank(s)
	return r < 0 || r <= SeverityRank(c.MinSeverity)
}

// Request builds the HTTP request delivering ev at now; body is ev's JSON
// as stored (json.Marshal(ev)), which a webhook sends as it is. ok=false
// means this channel has nothing to send for ev (a pagerduty channel and
// an event whose Action is ""): the delivery is done without a request.
// An error means ev cannot be delivered here (a bad secret, an unknown
// type or severity): retrying will not help.
func (c Channel) Request(ev Event, body []byte, now time.Time) (req outbound.Request, ok bool, err error) {
	req = outbound.Request{
		Method:  http.MethodPost,
		URL:     c.URL,
		Header:  map[string]string{headerContentType: contentTypeJSON},
		Timeout: c.Timeout,
		// Only the status tells (Outcome): the body is cancelled unread.
		DiscardBody: true,
	}
	switch c.Type {
	case ChannelSlack:
		req.Body = WebhookPayload(slackPrefix + ev.Summary)
	case ChannelWebhook:
		ts := now.Unix()
		sig, err := SignStandardWebhook(c.Secret, ev.ID, ts, body)
		if err != nil {
			return outbound.Request{}, false, fmt.Errorf("channel %s: %w", c.Name, err)
		}
		req.Header[HeaderWebhookID] = ev.ID
		req.Header[HeaderWebhookTimestamp] = fmt.Sprint(ts)
		req.Header[HeaderWebhookSignature] = sig
		req.Body = body
	case ChannelPagerDuty:
		if Action(ev.Type) == "" {
			return outbound.Request{}, false, nil
		}
		if req.URL == "" {
			req.URL = PagerDutyEventsURL
		}
		if req.Body, err = PagerDutyEvent(c.Secret, ev); err != nil {
			return outbound.Request{}, false, fmt.Errorf("channel %s: %w", c.Name, err)
		}
		// PagerDuty's answer to a refused event says why (no secrets in it).
		req.DiscardBody = false
	default:
		return outbound.Request{}, false, fmt.Errorf("channel %s: unknown type %q", c.Name, c.Type)
	}
	return req, true, nil
}

// pagerDutyEvent is a PagerDuty Events API v2 event.
type pagerDutyEvent struct {
	RoutingKey  string            `json:"routing_key"`
	EventAction string            `json:"event_action"`
	DedupKey    string            `json:"dedup_key"`
	Payload     *pagerDutyPayload `json:"payload,omitempty"`
}

// pagerDutyPayload is a trigger's payload.
type pagerDutyPayload struct {
	Summary       string         `json:"summary"`
	Source        string         `json:"source"`
	Severity      string         `json:"severity"`
	Timestamp     string         `json:"timestamp"`
	Component     string         `json:"component,omitempty"`
	Group         string         `json:"group,omitempty"`
	Class         string         `json:"class"`
	CustomDetails map[string]any `json:"custom_details"`
}

// PagerDutyEvent is the PagerDuty Events API v2 body for ev, sent with
// routingKey: its event_action is Action(ev.Type) and its dedup_key
// ev.DedupKey, so an incident's trigger and its resolve meet. Only a
// trigger has a payload: the summary clipped to 1024 bytes, source
// "redrive", ev's severity and timestamp, its pipeline as component and
// group, its type as class, and as custom_details ev.Data with "event_id"
// (ev.ID, which wins over a data field of that name). An event whose
// Action is "" or whose severity PagerDuty does not know is an error.
func PagerDutyEvent(routingKey string, ev Event) ([]byte, error) {
	action := Action(ev.Type)
	if action == "" {
		return nil, fmt.Errorf("pagerduty: event type %q has no action", ev.Type)
	}
	out := pagerDutyEvent{RoutingKey: routingKey, EventAction: action, DedupKey: ev.DedupKey}
	if action == "trigger" {
		if SeverityRank(ev.Severity) < 0 {
			return nil, fmt.Errorf("pagerduty: unknown severity %q", ev.Severity)
		}
		details := make(map[string]any, len(ev.Data)+1)
		for k, v := range ev.Data {
			details[k] = v
		}
		details["event_id"] = ev.ID
		out.Payload = &pagerDutyPayload{
			Summary:       clipSummary(ev.Summary),
			Source:        pagerDutySource,
			Severity:      ev.Severity,
			Timestamp:     ev.Timestamp,
			Component:     ev.Pipeline,
			Group:         ev.Pipeline,
			Class:         ev.Type,
			CustomDetails: details,
		}
	}
	b, err := json.Marshal(out)
	if err != nil {
		return nil, fmt.Errorf("pagerduty: %w", err)
	}
	return b, nil
}

// clipSummary cuts s to PagerDuty's 1024 bytes (text.Clip: at a UTF-8
// boundary, with "…" counted in).
func clipSummary(s string) string {
	if len(s) <= pagerDutySummaryBytes {
		return s
	}
	return text.Clip(s, pagerDutySummaryBytes-len("…"))
}

// Outcome is what a delivery's response status means for it.
type Outcome int

const (
	// Retry: the delivery failed and is tried again later (any status but
	// 2xx and 410, 3xx and 429 included: a redirect is not followed).
	Retry Outcome = iota
	// Delivered: a 2xx; the receiver has the event.
	Delivered
	// Gone: 410; the receiver asks to be sent nothing more (the channel
	// is disabled, as the Standard Webhooks specification advises).
	Gone
	// Refused: the receiver refused this event for good (PagerDuty's 400,
	// "invalid event"); it fails at once instead of being sent again.
	Refused
)

// OutcomeOf classifies a response status.
func OutcomeOf(status int) Outcome {
	switch {
	case status >= 200 && status <= 299:
		return Delivered
	case status == http.StatusGone:
		return Gone
	}
	return Retry
}

// Outcome classifies a response status of c's receiver: OutcomeOf's, and
// a PagerDuty 400 is Refused (the Events API's answer to an event it will
// never take; it asks that such events not be retried).
func (c Channel) Outcome(status int) Outcome {
	if c.Type == ChannelPagerDuty && status == http.StatusBadRequest {
		return Refused
	}
	return OutcomeOf(status)
}

// String names the outcome for logs: "delivered", "gone", "refused" or "retry".
func (o Outcome) String() string {
	switch o {
	case Delivered:
		return "delivered"
	case Gone:
		return "gone"
	case Refused:
		return "refused"
	}
	return "retry"
}

// ValidChannelName reports whether name is 1 to 32 of [a-z0-9_-].
func ValidChannelName(name string) bool {
	if name == "" || len(name) > maxChannelNameSize {
		return false
	}
	for _, r := range name {
		if (r < 'a' || r > 'z') && (r < '0' || r > '9') && r != '_' && r != '-' {
			return false
		}
	}
	return true
}

// Check reports what is wrong with c as configured, nil when nothing: its
// name, type, URL, secret (a webhook's must parse, a pagerduty channel
// needs a routing key), its routing's event types (known types, or a
// prefix of one followed by ".*") and its MinSeverity. It never quotes the
// URL or the secret.
func (c Channel) Check() error {
	var errs []error
	if !ValidChannelName(c.Name) {
		errs = append(errs, fmt.Errorf("name %q: want 1 to 32 of a-z, 0-9, _ and -", c.Name))
	}
	switch c.Type {
	case ChannelSlack, ChannelWebhook:
		if c.URL == "" {
			errs = append(errs, errors.New("url: required"))
		}
	case ChannelPagerDuty:
		if c.Secret == "" {
			errs = append(errs, errors.New("secret: the routing key is required"))
		}
	default:
		errs = append(errs, fmt.Errorf("type %q: want slack, webhook or pagerduty", c.Type))
	}
	if c.Type == ChannelWebhook {
		if _, err := webhookKey(c.Secret); err != nil {
			errs = append(errs, fmt.Errorf("secret: %w", err))
		}
	}
	for _, e := range c.Events {
		if !knownEventRoute(e) {
			errs = append(errs, fmt.Errorf("events: %q is neither an event type nor a prefix of one ending in .*", e))
		}
	}
	if c.MinSeverity != "" && SeverityRank(c.MinSeverity) < 0 {
		errs = append(errs, fmt.Errorf("min_severity %q: want one of %s", c.MinSeverity, strings.Join(Severities, ", ")))
	}
	if c.Timeout < 0 {
		errs = append(errs, errors.New("timeout: negative"))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("channel %q: %w", c.Name, err)
	}
	return nil
}

// knownEventRoute reports whether e is one of EventTypes, or a prefix
// ending in ".*" that routes at least one of them.
func knownEventRoute(e string) bool {
	for _, t := range EventTypes {
		if (Channel{Events: []string{e}}).routesType(t) {
			return true
		}
	}
	return false
}
