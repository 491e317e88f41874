//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// The pipeline filter in workerd, with rows of three pipelines at once
// (orders through its JavaScript consumer, tickets added by configuration
// alone, beers): ?pipeline=<name> on the list and export and {"pipeline"}
// in a bulk replay's filter select exactly that pipeline's rows, each row
// names its pipeline, key and labels, the stats count each pipeline, and an
// unknown name is a 400 UNKNOWN_PIPELINE.
func TestPipelineFilterAcrossThreePipelines(t *testing.T) {
	w := startJSWorker(t)
	base := int(time.Now().UnixNano() % 1_000_000_000)
	orders := []string{orderBody(base+1, "acme", "card declined", ""), orderBody(base+2, "globex", "card declined", "")}
	tickets := []string{fmt.Sprintf(`{"ticket":"T-%d","team":"infra","fail":true}`, base)}
	w.sendOrders(t, orders...)
	w.sendJSON(t, ticketsQueue, tickets...)
	w.Send(t, "beer-enrichment-dlq", fmt.Sprintf(`{"beer_id":"b-%d","beer_name":"Pils","brewer":"Brewer"}`, base))
	Eventually(t, 120*time.Second, "rows of the three pipelines", func() bool {
		return w.Int(t, `SELECT COUNT(*) FROM dlq_messages WHERE source_queue = 'e2e-orders'`) == 2 &&
			w.Int(t, `SELECT COUNT(*) FROM dlq_messages WHERE source_queue = 'e2e-tickets'`) == 1 &&
			w.Int(t, `SELECT COUNT(*) FROM dlq_messages WHERE source_queue = 'beer-enrichment'`) == 1
	})

	type listed struct {
		Messages []struct {
			Pipeline    *string           `json:"pipeline"`
			Key         string            `json:"key"`
			Labels      map[string]string `json:"labels"`
			SourceQueue string            `json:"source_queue"`
			BeerID      string            `json:"beer_id"`
		} `json:"messages"`
	}
	for _, c := range []struct {
		pipeline, queue string
		keys            []string
		label           string
	}{
		{"orders", "e2e-orders", []string{fmt.Sprint(base + 2), fmt.Sprint(base + 1)}, "customer"},
		{"tickets", "e2e-tickets", []string{fmt.Sprintf("T-%d", base)}, "team"},
		{"beers", "beer-enrichment", []string{fmt.Sprintf("b-%d", base)}, "brewer"},
	} {
		r := w.Admin(t, http.MethodGet, "/admin/dlq?status=all&pipeline="+c.pipeline, nil)
		var l listed
		r.Decode(t, &l)
		if r.Status != http.StatusOK || len(l.Messages) != len(c.keys) {
			t.Fatalf("list %s: %d %.600s", c.pipeline, r.Status, r.Raw)
		}
		for _, m := range l.Messages {
			if m.Pipeline == nil || *m.Pipeline != c.pipeline || m.SourceQueue != c.queue || m.Key != m.BeerID || m.Labels[c.label] == "" {
				t.Fatalf("list %s: row %+v", c.pipeline, m)
			}
		}

		// A real bulk replay of the pipeline's filter replays its rows only,
		// to its own queue (tickets: the queue of the pipeline added by
		// configuration alone).
		if c.pipeline == "tickets" {
			res := replay(t, w, map[string]any{"filter": map[string]any{"pipeline": "tickets"}})
			if res.ReplayedCount != 1 || res.QueuedTo != "e2e-tickets" {
				t.Fatalf("replay of pipeline tickets: %+v", res)
			}
		}

		r = w.Admin(t, http.MethodGet, "/admin/dlq/export?format=ndjson&status=all&pipeline="+c.pipeline, nil)
		lines := strings.Split(strings.TrimSpace(string(r.Raw)), "\n")
		if r.Status != http.StatusOK || len(lines) != len(c.keys) {
			t.Fatalf("export %s: %d %.600s", c.pipeline, r.Status, r.Raw)
		}
		for _, line := range lines {
			var m struct {
				Pipeline string `json:"pipeline"`
				Key      string `json:"key"`
			}
			if err := json.Unmarshal([]byte(line), &m); err != nil || m.Pipeline != c.pipeline {
				t.Fatalf("export %s: line %s (%v)", c.pipeline, line, err)
			}
		}
	}
	// The stats count each pipeline (by_pipeline; groups and timeseries take
	// no pipeline filter: docs/pipelines.md "Not yet").
	var s struct {
		ByPipeline []struct {
			Pipeline string `json:"pipeline"`
			Pending  int64  `json:"pending"`
			Total    int64  `json:"total"`
		} `json:"by_pipeline"`
	}
	r := w.Admin(t, http.MethodGet, "/admin/dlq/stats", nil)
	r.Decode(t, &s)
	got := map[string][2]int64{}
	for _, p := range s.ByPipeline {
		got[p.Pipeline] = [2]int64{p.Pending, p.Total}
	}
	// tickets' row was replayed (it fails again later: pending or replayed, total 1).
	if got["orders"] != [2]int64{2, 2} || got["beers"] != [2]int64{1, 1} || got["tickets"][1] != 1 {
		t.Fatalf("by_pipeline %v: %.600s", got, r.Raw)
	}
	// ?pipeline=orders narrows the kept counts and the failure reasons to
	// orders' queue and names the parts that still cover every pipeline.
	var os struct {
		ByStatus      struct{ Pending, Replaying, Replayed, Acknowledged int64 } `json:"by_status"`
		BySourceQueue []struct {
			SourceQueue string `json:"source_queue"`
			Total       int64  `json:"total"`
		} `json:"by_source_queue"`
		ByPipeline []struct {
			Pipeline string `json:"pipeline"`
			Total    int64  `json:"total"`
		} `json:"by_pipeline"`
		Sample      int64    `json:"top_failure_reasons_sample"`
		Pipeline    string   `json:"pipeline"`
		NotFiltered []string `json:"not_filtered"`
		Last24h     struct {
			NewFailures int64 `json:"new_failures_24h"`
		} `json:"last_24h"`
	}
	r = w.Admin(t, http.MethodGet, "/admin/dlq/stats?pipeline=orders", nil)
	r.Decode(t, &os)
	if r.Status != http.StatusOK || os.ByStatus.Pending != 2 || os.ByStatus.Replayed+os.ByStatus.Replaying+os.ByStatus.Acknowledged != 0 ||
		len(os.BySourceQueue) != 1 || os.BySourceQueue[0].SourceQueue != "e2e-orders" || os.BySourceQueue[0].Total != 2 ||
		len(os.ByPipeline) != 1 || os.ByPipeline[0].Pipeline != "orders" || os.ByPipeline[0].Total != 2 ||
		os.Sample != 2 || os.Pipeline != "orders" || strings.Join(os.NotFiltered, ",") != "oldest_pending_age_hours,repeat_failures" || os.Last24h.NewFailures != 2 ||
		!strings.Contains(string(r.Raw), `"top_failure_reasons":[{"failure_reason":`) || strings.Contains(string(r.Raw), "Brewer") {
		t.Fatalf("stats?pipeline=orders: %d %.1500s", r.Status, r.Raw)
	}
	for _, path := range []string{"/admin/dlq", "/admin/dlq/export", "/admin/dlq/stats"} {
		r := w.Admin(t, http.MethodGet, path+"?pipeline=nope", nil)
		if r.Status != http.StatusBadRequest || r.Error == nil || r.Error.Code != "UNKNOWN_PIPELINE" {
			t.Fatalf("%s?pipeline=nope: %d %s", path, r.Status, r.Raw)
		}
	}
	// The configured pipelines, for a selector.
	r = w.Admin(t, http.MethodGet, "/admin/pipelines", nil)
	for _, name := range []string{`"beers"`, `"js"`, `"orders"`, `"tickets"`} {
		if r.Status != http.StatusOK || !strings.Contains(string(r.Raw), name) {
			t.Fatalf("GET /admin/pipelines lacks %s: %d %.600s", name, r.Status, r.Raw)
		}
	}
}
