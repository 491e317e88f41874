//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/redrive/redrive/alerts"
	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/dlq/inspect"
	"github.com/redrive/redrive/metrics"
)

// The console's routes in workerd: a message captured by the real DLQ
// consumer counts in its hour (the capture triggers of migration 0012), its row
// reads back with its audit entries, and alerts and jobs answer.
func TestConsoleRoutesInWorkerd(t *testing.T) {
	w := shared
	prefix := newPrefix("capi")
	series := func() inspect.Series {
		r := w.Admin(t, http.MethodGet, "/admin/dlq/timeseries", nil)
		if r.Status != http.StatusOK {
			t.Fatalf("timeseries: %d %s", r.Status, r.Raw)
		}
		var s inspect.Series
		r.Decode(t, &s)
		return s
	}
	before := series()
	if len(before.Hourly) != dlq.SeriesHours || before.To-before.From != dlq.SeriesHours*time.Hour.Milliseconds() {
		t.Fatalf("window %d buckets %d..%d", len(before.Hourly), before.From, before.To)
	}
	bodies := make([]string, 3)
	for i := range bodies {
		b, _ := json.Marshal(map[string]string{"beer_id": fmt.Sprintf("%s-%d", prefix, i), "beer_name": prefix})
		bodies[i] = string(b)
	}
	w.Send(t, "beer-enrichment-dlq", bodies...)
	Eventually(t, 30*time.Second, "3 rows captured", func() bool {
		return w.Int(t, `SELECT COUNT(*) FROM dlq_messages WHERE label_1 = ?`, prefix) == 3
	})
	after := series()
	if got := after.Total - before.Total; got < 3 {
		t.Errorf("the window counts %d more failures, want at least 3", got)
	}
	if b := after.Hourly[len(after.Hourly)-1]; b.Start != after.To-time.Hour.Milliseconds() || b.Failures < 3 {
		t.Errorf("current hour %+v, want at least 3 failures", b)
	}

	id := w.Int(t, `SELECT MIN(id) FROM dlq_messages WHERE label_1 = ?`, prefix)
	if r := w.Admin(t, http.MethodPost, "/admin/dlq/acknowledge", map[string]any{"ids": []int64{id}, "note": prefix}); r.Status != http.StatusOK {
		t.Fatalf("acknowledge: %d %s", r.Status, r.Raw)
	}
	r := w.Admin(t, http.MethodGet, fmt.Sprintf("/admin/dlq/%d", id), nil)
	var d inspect.MessageDetail
	if r.Status != http.StatusOK {
		t.Fatalf("detail: %d %s", r.Status, r.Raw)
	}
	r.Decode(t, &d)
	var raw string
	json.Unmarshal(d.Message.RawMessage, &raw)
	if d.Message.ID != id || d.Message.Status != dlq.StatusAcknowledged || d.Message.ContentType != "text" || raw == "" ||
		len(d.Audit) != 1 || d.Audit[0].MatchedBy != "ids" || d.Audit[0].Note == nil || *d.Audit[0].Note != prefix || d.AuditWindow != inspect.AuditWindow {
		t.Errorf("detail: %s", r.Raw)
	}
	if r := w.Admin(t, http.MethodGet, "/admin/dlq/999999999", nil); r.Status != http.StatusNotFound || r.Error == nil || r.Error.Code != "NOT_FOUND" {
		t.Errorf("unknown id: %d %s", r.Status, r.Raw)
	}

	w.FireScheduled(t, cronFrequent)
	Eventually(t, 30*time.Second, "jobs listed", func() bool {
		r := w.Admin(t, http.MethodGet, "/admin/jobs", nil)
		var l metrics.JobList
		r.Decode(t, &l)
		for _, j := range l.Jobs {
			if j.Job == "alerts" && j.Runs > 0 {
				return true
			}
		}
		return false
	})
	r = w.Admin(t, http.MethodGet, "/admin/alerts", nil)
	var al alerts.AlertList
	r.Decode(t, &al)
	firing := 0
	for _, a := range al.Alerts {
		if a.Firing {
			firing++
		}
	}
	// (alert_state has a row per alert that has ever fired: none, on a quiet worker.)
	if want := w.Int(t, `SELECT COUNT(*) FROM alert_state`); r.Status != http.StatusOK || int64(len(al.Alerts)) != want || al.FiringCount != firing {
		t.Errorf("alerts: %d %s, want %d", r.Status, r.Raw, want)
	}
}
