// Package incidents makes failure groups incidents: each group (a failure
// signature, dlq_signatures) is open, acknowledged, resolved, ignored or
// snoozed until a time, with an owner and a note. The alerts job opens new
// groups, reopens resolved ones that failed again, resolves quiet ones and
// ends snoozes (Lifecycle, an alerts.Source); operators change a group's
// status through the API, the CLI and the console (Set). Every change that
// on-call should hear of is an event (alerts.Event) recorded with the
// change: group.opened, group.reopened, group.acknowledged,
// group.resolved, group.ignored.
package incidents

import (
	"fmt"
	"strings"

	"github.com/redrive/redrive/alerts"
	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/internal/text"
)

// Statuses of a group.
const (
	Open         = "open"
	Acknowledged = "acknowledged"
	Resolved     = "resolved"
	Ignored      = "ignored"
	Snoozed      = "snoozed"
)

// Statuses lists them.
var Statuses = []string{Open, Acknowledged, Resolved, Ignored, Snoozed}

// ValidStatus reports whether s is a status.
func ValidStatus(s string) bool {
	for _, v := range Statuses {
		if v == s {
			return true
		}
	}
	return false
}

// group is a dlq_signatures row as events tell it.
type group struct {
	Signature, Class, Text, Queue, Incident string
	Seq, Pending, Total                     int64
	Samples                                 string
	Owner, Note                             string
}

// groupColumns are read into a group by scanGroup's callers, in this order.
const groupColumns = `signature, class, text, source_queue, incident, incident_seq, pending,
	pending + replaying + replayed + acknowledged, sample_ids, COALESCE(owner, ''), COALESCE(note, '')`

// event is the event of type typ about g at the time stamp ts, for the
// incident's occurrence seq (a reopen is a new occurrence).
func event(g group, typ string, seq int64, ts string, ps dlq.Pipelines, summary string) alerts.Keyed {
	pipeline := ""
	where := "queue " + g.Queue
	if p, ok := ps.OfQueue(g.Queue); ok {
		pipeline, where = p.Name, "pipeline "+p.Name
	}
	sample := sampleID(g.Samples)
	data := map[string]any{"signature": g.Signature, "class": g.Class, "text": text.Clip(g.Text, 200), "source_queue": g.Queue,
		"occurrence": seq, "pending": g.Pending, "total": g.Total, "replay_will_fail": dlq.ReplayWillFail(g.Class)}
	if sample > 0 {
		data["sample_row_id"] = sample
	}
	if g.Owner != "" {
		data["owner"] = g.Owner
	}
	if g.Note != "" {
		data["note"] = g.Note
	}
	sev := "error"
	if typ == alerts.GroupResolved || typ == alerts.GroupIgnored || typ == alerts.GroupAcknowledged {
		sev = "info"
	}
	if summary == "" {
		summary = fmt.Sprintf("%s failure group %s (%s) in %s: %q", strings.ToUpper(strings.TrimPrefix(typ, "group.")), g.Signature,
			g.Class, where, text.Clip(g.Text, 200))
	}
	return alerts.Keyed{Key: g.Signature, Event: alerts.Event{
		ID:        alerts.EventID("group", g.Signature, typ, fmt.Sprint(seq)),
		Type:      typ,
		Timestamp: ts,
		Severity:  sev,
		Pipeline:  pipeline,
		DedupKey:  alerts.DedupKey("group:" + g.Signature),
		Summary:   summary,
		Data:      data,
	}}
}

// openedSummary keeps the words of the announcement of before (a Slack
// channel's text is "[redrive] " and the summary).
func openedSummary(g group, ps dlq.Pipelines, database string) string {
	where := "queue " + g.Queue
	if p, ok := ps.OfQueue(g.Queue); ok {
		where = "pipeline " + p.Name
	}
	sample := "no row yet"
	if id := sampleID(g.Samples); id > 0 {
		sample = fmt.Sprintf("e.g. row %d", id)
	}
	d := fmt.Sprintf("NEW %s: new failure signature %s (%s) in %s: %q, %s (%d rows so far)", dlq.JobName("dlq_new_failure_signature", database),
		g.Signature, g.Class, where, text.Clip(g.Text, 200), sample, g.Total)
	if dlq.ReplayWillFail(g.Class) {
		d += "; replaying it unchanged fails again"
	}
	return d
}

// sampleID is the first of a sample_ids JSON array (D1 may give REAL).
func sampleID(samples string) int64 {
	var ids []float64
	if err := jsonUnmarshal(samples, &ids); err != nil || len(ids) == 0 {
		return 0
	}
	return int64(ids[0])
}
