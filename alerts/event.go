package alerts

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// Event is what redrive tells on-call: one documented JSON shape
// (docs/admin-api.md "Events", handlers/openapi.json AlertEvent), sent to
// every channel its routing names. Its ID is stable: derived from what
// happened (the subject, the kind and the occurrence), so the same
// occurrence written twice is one event, and a receiver can drop a
// redelivery by its id.
type Event struct {
	// ID is "evt_" and 24 hex digits (EventID).
	ID string `json:"id"`
	// Type is one of the EventTypes.
	Type string `json:"type"`
	// Timestamp is when it happened, RFC 3339 UTC with milliseconds.
	Timestamp string `json:"timestamp"`
	// Severity is critical, error, warning or info.
	Severity string `json:"severity"`
	// Pipeline is the pipeline it concerns, "" when none (omitted).
	Pipeline string `json:"pipeline,omitempty"`
	// DedupKey is the same for every event of one incident: a failure
	// group's, an alert's, a task's (PagerDuty's dedup_key). Its trigger
	// and its resolve share it.
	DedupKey string `json:"dedup_key"`
	// Summary is one line for humans (no secrets, no payloads).
	Summary string `json:"summary"`
	// Data holds the type's own fields (docs/admin-api.md "Events").
	Data map[string]any `json:"data"`
}

// Event types. Each is opening (it starts or continues an incident:
// PagerDuty trigger), closing (it ends one: PagerDuty resolve) or neither.
const (
	GroupOpened          = "group.opened"
	GroupReopened        = "group.reopened"
	GroupAcknowledged    = "group.acknowledged"
	GroupResolved        = "group.resolved"
	GroupIgnored         = "group.ignored"
	BacklogHigh          = "pipeline.backlog_high"
	BacklogRecovered     = "pipeline.backlog_recovered"
	TaskPaused           = "task.paused"
	TaskFinished         = "task.finished"
	BreakerOpened        = "enrichment.breaker_opened"
	BreakerClosed        = "enrichment.breaker_closed"
	AlertFiring          = "alert.firing"
	AlertReminder        = "alert.reminder"
	AlertResolved        = "alert.resolved"
	ChannelDisabled      = "channel.disabled"
	DeliveryExhausted    = "delivery.failed"
	severityCritical     = "critical"
	severityError        = "error"
	severityWarning      = "warning"
	severityInfo         = "info"
	eventIDPrefix        = "evt_"
	eventIDHexDigits     = 24
	dedupKeyPrefix       = "redrive:"
	eventTypeGroupPrefix = "group."
)

// EventTypes lists every type, in the order docs/admin-api.md lists them.
var EventTypes = []string{GroupOpened, GroupReopened, GroupAcknowledged, GroupResolved, GroupIgnored,
	BacklogHigh, BacklogRecovered, TaskPaused, TaskFinished, BreakerOpened, BreakerClosed,
	AlertFiring, AlertReminder, AlertResolved, ChannelDisabled, DeliveryExhausted}

// Action is what an event does to its incident: "trigger", "acknowledge",
// "resolve", or "" (it tells, and leaves the incident as it is).
func Action(eventType string) string {
	switch eventType {
	case GroupOpened, GroupReopened, BacklogHigh, TaskPaused, BreakerOpened, AlertFiring, AlertReminder,
		ChannelDisabled, DeliveryExhausted:
		return "trigger"
	case GroupAcknowledged:
		return "acknowledge"
	case GroupResolved, GroupIgnored, BacklogRecovered, BreakerClosed, AlertResolved, TaskFinished:
		return "resolve"
	}
	return ""
}

// Severities, most severe first.
var Severities = []string{severityCritical, severityError, severityWarning, severityInfo}

// SeverityRank is 0 for critical up to 3 for info, and -1 for an unknown one.
func SeverityRank(s string) int {
	for i, v := range Severities {
		if v == s {
			return i
		}
	}
	return -1
}

// EventID is the stable id of an occurrence: "evt_" and the first 24 hex
// digits of SHA-256 over its parts joined by newlines.
func EventID(parts ...string) string {
	sum := sha256.Sum256([]byte(strings.Join(parts, "\n")))
	return eventIDPrefix + hex.EncodeToString(sum[:])[:eventIDHexDigits]
}

// DedupKey is "redrive:" and the incident's subject (e.g. "group:<sig>",
// "alert:<name>", "task:<db>:<id>").
func DedupKey(subject string) string { return dedupKeyPrefix + subject }
