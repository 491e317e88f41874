package receiver

import (
	"crypto/subtle"
	"fmt"
	"net/http"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/redrive/redrive/alerts"
)

// Incident states, as PagerDuty names them.
const (
	StateTriggered    = "triggered"
	StateAcknowledged = "acknowledged"
	StateResolved     = "resolved"
)

// PagerDuty's limits on an event.
const (
	maxDedupKeyChars = 255
	maxSummaryChars  = 1024
)

// PagerDutyEvent is one event POST /v2/enqueue accepted (its routing key aside).
type PagerDutyEvent struct {
	EventAction string `json:"event_action"`
	// DedupKey is the event's, or the one made up for a trigger without one.
	DedupKey string            `json:"dedup_key"`
	Payload  *PagerDutyPayload `json:"payload,omitempty"`
}

// PagerDutyPayload is a trigger's payload.
type PagerDutyPayload struct {
	Summary       string         `json:"summary"`
	Source        string         `json:"source"`
	Severity      string         `json:"severity"`
	Timestamp     string         `json:"timestamp,omitempty"`
	Component     string         `json:"component,omitempty"`
	Group         string         `json:"group,omitempty"`
	Class         string         `json:"class,omitempty"`
	CustomDetails map[string]any `json:"custom_details,omitempty"`
}

// Incident is the PagerDuty incident of one dedup_key.
type Incident struct {
	DedupKey string `json:"dedup_key"`
	// State is StateTriggered, StateAcknowledged or StateResolved.
	State string `json:"state"`
	// Summary is the last trigger's.
	Summary string `json:"summary"`
	// Opened counts the incidents opened under this key: the first
	// trigger, and each trigger after a resolve.
	Opened int `json:"opened"`
	// Deduplicated counts the triggers folded into an open incident.
	Deduplicated int `json:"deduplicated"`
}

// enqueueRequest is an Events API v2 event as PagerDuty takes it.
type enqueueRequest struct {
	RoutingKey  string            `json:"routing_key"`
	EventAction string            `json:"event_action"`
	DedupKey    string            `json:"dedup_key"`
	Payload     *PagerDutyPayload `json:"payload"`
	Client      string            `json:"client"`
	ClientURL   string            `json:"client_url"`
	Links       []any             `json:"links"`
	Images      []any             `json:"images"`
}

// enqueue is the PagerDuty Events API v2 stand-in: an invalid event is
// answered 400 as PagerDuty answers it; a valid one 202, and it moves its
// incident (a trigger opens or is deduplicated, acknowledge and resolve
// change an open incident's state; an unknown key changes nothing).
func (r *Receiver) enqueue(w http.ResponseWriter, req *http.Request) {
	body, ok := r.readBody(w, req)
	if !ok {
		return
	}
	var in enqueueRequest
	if err := decodeStrict(body, &in); err != nil {
		r.refusePagerDuty(w, []string{"Malformed or unknown fields in the JSON body: " + err.Error()})
		return
	}
	if errs := r.checkEvent(in); len(errs) > 0 {
		r.refusePagerDuty(w, errs)
		return
	}
	ev := PagerDutyEvent{EventAction: in.EventAction, DedupKey: in.DedupKey, Payload: in.Payload}
	inc := r.keepPagerDuty(&ev)
	attrs := []any{"action", ev.EventAction, "dedup_key", ev.DedupKey, "incident", inc.State}
	if ev.Payload != nil {
		attrs = append(attrs, "severity", ev.Payload.Severity, "class", ev.Payload.Class, "summary", ev.Payload.Summary)
	}
	r.cfg.Log.Info("receiver: pagerduty", attrs...)
	writeJSON(w, http.StatusAccepted, map[string]string{"status": "success", "message": "Event processed", "dedup_key": ev.DedupKey})
}

// checkEvent lists what is wrong with an event, in PagerDuty's words.
func (r *Receiver) checkEvent(in enqueueRequest) []string {
	var errs []string
	if in.RoutingKey == "" {
		errs = append(errs, "'routing_key' is missing or blank")
	} else if subtle.ConstantTimeCompare([]byte(in.RoutingKey), []byte(r.cfg.RoutingKey)) != 1 {
		errs = append(errs, "'routing_key' is invalid")
	}
	switch in.EventAction {
	case "trigger":
		errs = append(errs, checkPayload(in.Payload)...)
	case "acknowledge", "resolve":
		if in.DedupKey == "" {
			errs = append(errs, "'dedup_key' is missing or blank")
		}
	case "":
		errs = append(errs, "'event_action' is missing or blank")
	default:
		errs = append(errs, "'event_action' is invalid (must be one of: trigger, acknowledge, resolve)")
	}
	if utf8.RuneCountInString(in.DedupKey) > maxDedupKeyChars {
		errs = append(errs, fmt.Sprintf("'dedup_key' is too long (maximum is %d characters)", maxDedupKeyChars))
	}
	return errs
}

// checkPayload lists what is wrong with a trigger's payload.
func checkPayload(p *PagerDutyPayload) []string {
	if p == nil {
		return []string{"'payload' is missing or blank"}
	}
	var errs []string
	switch {
	case p.Summary == "":
		errs = append(errs, "'payload.summary' is missing or blank")
	case utf8.RuneCountInString(p.Summary) > maxSummaryChars:
		errs = append(errs, fmt.Sprintf("'payload.summary' is too long (maximum is %d characters)", maxSummaryChars))
	}
	if p.Source == "" {
		errs = append(errs, "'payload.source' is missing or blank")
	}
	if !slices.Contains(alerts.Severities, p.Severity) {
		errs = append(errs, "'payload.severity' is invalid (must be one of: critical, error, warning, info)")
	}
	if p.Timestamp != "" {
		if _, err := time.Parse(time.RFC3339Nano, p.Timestamp); err != nil {
			errs = append(errs, "'payload.timestamp' is invalid (want ISO 8601)")
		}
	}
	return errs
}

// refusePagerDuty answers 400 with PagerDuty's envelope of an invalid event.
func (r *Receiver) refusePagerDuty(w http.ResponseWriter, errs []string) {
	r.countRefused()
	r.cfg.Log.Warn("receiver: pagerduty event refused", "errors", errs)
	writeJSON(w, http.StatusBadRequest, map[string]any{"status": "invalid event", "message": "Event object is invalid", "errors": errs})
}

// keepPagerDuty records ev (giving a trigger without a dedup key one) and
// moves its incident; it returns the incident as it now is (zero for an
// acknowledge or resolve of an unknown key).
func (r *Receiver) keepPagerDuty(ev *PagerDutyEvent) Incident {
	r.mu.Lock()
	defer r.mu.Unlock()
	defer r.changedLocked()
	if ev.DedupKey == "" {
		r.generated++
		ev.DedupKey = fmt.Sprintf("receiver-%d", r.generated)
	}
	r.pdEvents = append(r.pdEvents, *ev)
	i, known := r.byDedup[ev.DedupKey]
	if !known {
		if ev.EventAction != "trigger" {
			return Incident{}
		}
		i = len(r.incidents)
		r.byDedup[ev.DedupKey] = i
		r.incidents = append(r.incidents, Incident{DedupKey: ev.DedupKey, State: StateResolved})
	}
	inc := &r.incidents[i]
	switch ev.EventAction {
	case "trigger":
		inc.Summary = ev.Payload.Summary
		if inc.State == StateResolved {
			inc.State = StateTriggered
			inc.Opened++
		} else {
			inc.Deduplicated++
		}
	case "acknowledge":
		if inc.State == StateTriggered {
			inc.State = StateAcknowledged
		}
	case "resolve":
		inc.State = StateResolved
	}
	return *inc
}
