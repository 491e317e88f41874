//go:build e2e

package e2e

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"
)

// The orders pipeline of env.e2e (PIPELINES), in workerd: messages on its
// DLQ are captured with the key and label its pointers read (a number key
// as its JSON text, a body without the key as poison), listed and exported
// by ?pipeline=, counted in the stats' by_pipeline, and described by GET
// /admin/pipelines; an unknown pipeline is 400 UNKNOWN_PIPELINE.
func TestPipelineOrdersCapturedListedAndExported(t *testing.T) {
	tok := unique("orders")
	bodies := []string{
		`{"order":{"id":"` + tok + `-1","customer":"` + tok + `-acme"},"lines":[{"sku":"a"}]}`,
		`{"order":{"id":` + "4242" + `,"customer":"` + tok + `-initech"},"token":"` + tok + `"}`,
		`{"order":{"customer":"` + tok + `-nokey"}}`,
	}
	shared.Send(t, "e2e-orders-dlq", bodies...)
	Eventually(t, 60*time.Second, "orders captured", func() bool {
		return shared.Int(t, `SELECT COUNT(*) FROM dlq_messages WHERE source_queue = 'e2e-orders' AND instr(raw_message, ?) > 0`, tok) == 3
	})
	type row struct {
		Key      string             `json:"key"`
		BeerID   string             `json:"beer_id"`
		Pipeline *string            `json:"pipeline"`
		Labels   map[string]*string `json:"labels"`
		Class    *string            `json:"failure_class"`
		Source   string             `json:"source_queue"`
	}
	r := shared.Admin(t, http.MethodGet, "/admin/dlq?pipeline=orders&limit=100&q="+tok, nil)
	var page struct {
		Messages []row `json:"messages"`
	}
	if err := json.Unmarshal(r.Data, &page); err != nil || r.Status != 200 || len(page.Messages) != 3 {
		t.Fatalf("list: %d %s", r.Status, r.Raw)
	}
	byLabel := map[string]row{}
	for _, m := range page.Messages {
		if m.Pipeline == nil || *m.Pipeline != "orders" || m.Source != "e2e-orders" || m.Key != m.BeerID || len(m.Labels) != 1 {
			t.Errorf("row %+v", m)
		}
		byLabel[*m.Labels["customer"]] = m
	}
	if m := byLabel[tok+"-acme"]; m.Key != tok+"-1" {
		t.Errorf("string key: %+v", m)
	}
	if m := byLabel[tok+"-initech"]; m.Key != "4242" {
		t.Errorf("number key: %+v", m)
	}
	if m := byLabel[tok+"-nokey"]; m.Key != "__unparseable__" || m.Class == nil || *m.Class != "poison" {
		t.Errorf("no key: %+v", m)
	}
	r = shared.Admin(t, http.MethodGet, "/admin/dlq?pipeline=nope", nil)
	if r.Status != 400 || r.Error == nil || r.Error.Code != "UNKNOWN_PIPELINE" {
		t.Errorf("unknown pipeline: %d %s", r.Status, r.Raw)
	}
	r = shared.Admin(t, http.MethodGet, "/admin/dlq/export?format=csv&pipeline=orders&q="+tok, nil)
	csv := string(r.Raw)
	if r.Status != 200 || strings.Count(csv, "\r\n") != 4 || !strings.Contains(csv, `,orders,`+tok+`-1,"{""customer"":""`+tok+`-acme""}"`) {
		t.Errorf("export: %d %q", r.Status, csv)
	}
	r = shared.Admin(t, http.MethodGet, "/admin/dlq/stats", nil)
	var st struct {
		ByPipeline []struct {
			Pipeline string `json:"pipeline"`
			Pending  int64  `json:"pending"`
		} `json:"by_pipeline"`
	}
	json.Unmarshal(r.Data, &st)
	var names []string
	for _, p := range st.ByPipeline {
		names = append(names, p.Pipeline)
		if p.Pipeline == "orders" && p.Pending < 3 {
			t.Errorf("orders pending %d, want at least 3", p.Pending)
		}
	}
	if strings.Join(names, ",") != "beers,js,orders,tickets" {
		t.Errorf("by_pipeline %s", r.Raw)
	}
	r = shared.Admin(t, http.MethodGet, "/admin/pipelines", nil)
	var l struct {
		Pipelines []struct {
			Name          string `json:"name"`
			Key           string `json:"key"`
			ProducerBound bool   `json:"producer_bound"`
			Consumer      string `json:"consumer"`
		} `json:"pipelines"`
	}
	json.Unmarshal(r.Data, &l)
	if r.Status != 200 || len(l.Pipelines) != 4 || l.Pipelines[2].Name != "orders" || l.Pipelines[2].Key != "/order/id" ||
		!l.Pipelines[2].ProducerBound || l.Pipelines[2].Consumer != "external" || l.Pipelines[0].Consumer != "redrive" {
		t.Errorf("pipelines: %d %s", r.Status, r.Raw)
	}
}
