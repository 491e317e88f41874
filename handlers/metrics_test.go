package handlers

import (
	"testing"

	"github.com/redrive/redrive/internal/promtext"
)

func TestAdminMetrics(t *testing.T) {
	api := newAPI(t)
	h := api.Handler()
	if rec, env := do(h, "GET", "/admin/metrics", "", nil); rec.Code != 401 || env.Error == nil || env.Error.Code != "UNAUTHORIZED" {
		t.Fatalf("without credentials: %d %s", rec.Code, rec.Body)
	}
	api.DB.Exec(`INSERT INTO dlq_messages(message_id, row_key, failed_at) VALUES ('m', 'b', 1)`)
	rec, _ := do(h, "GET", "/admin/metrics", "", map[string]string{"X-API-Key": "k", "X-Admin-Secret": "s"})
	if rec.Code != 200 || rec.Header().Get("Content-Type") != "text/plain; version=0.0.4; charset=utf-8" {
		t.Fatalf("%d %q", rec.Code, rec.Header().Get("Content-Type"))
	}
	page, err := promtext.Parse(rec.Body.String())
	if err != nil {
		t.Fatalf("%v\n%s", err, rec.Body)
	}
	if page.Samples[promtext.Key("redrive_dlq_messages", "pipeline", "beers", "source_queue", "beer-enrichment", "status", "pending")] != 1 {
		t.Fatalf("%s", rec.Body)
	}
	api.DB.Close()
	if rec, env := do(h, "GET", "/admin/metrics", "", map[string]string{"X-API-Key": "k", "X-Admin-Secret": "s"}); rec.Code != 500 || env.Error == nil || env.Error.Code != "INTERNAL_ERROR" {
		t.Fatalf("with D1 down: %d %s", rec.Code, rec.Body)
	}
}

// With a pipeline in its own database, /admin/metrics counts each
// database's rows once (the shared one's too) and the captures of both;
// a database that cannot be read is a 500 envelope, not a page without
// its rows.
func TestAdminMetricsAddsEachDatabaseOnce(t *testing.T) {
	api, orders, _ := databasesAPI(t)
	rec, _ := do(api.Handler(), "GET", "/admin/metrics", "", adminHeaders)
	page, err := promtext.Parse(rec.Body.String())
	if rec.Code != 200 || err != nil {
		t.Fatalf("%d %v\n%s", rec.Code, err, rec.Body)
	}
	for key, want := range map[string]float64{
		promtext.Key("redrive_dlq_messages", "pipeline", "beers", "source_queue", "beer-enrichment", "status", "pending"): 2,
		promtext.Key("redrive_dlq_messages", "pipeline", "orders", "source_queue", "e2e-orders", "status", "pending"):     2,
		promtext.Key("redrive_dlq_captured_total"): 4,
	} {
		if got, ok := page.Samples[key]; !ok || got != want {
			t.Errorf("%s = %v, want %v", key, got, want)
		}
	}
	orders.Close()
	if rec, env := do(api.Handler(), "GET", "/admin/metrics", "", adminHeaders); rec.Code != 500 || env.Error == nil || env.Error.Code != "INTERNAL_ERROR" {
		t.Fatalf("with ORDERS_DB down: %d %s", rec.Code, rec.Body)
	}
}
