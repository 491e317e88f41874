//go:build e2e

package e2e

import (
	"fmt"
	"net/http"
	"os"
	"sort"
	"testing"
	"time"
)

// TestAdminLatencyAt100kRows measures (it asserts nothing about speed) the
// admin routes in workerd with 100,000 rows seeded in SQL. It runs only with
// REDRIVE_MEASURE=1, on a worker of its own:
//
//	REDRIVE_MEASURE=1 go test -count=1 -tags e2e -run TestAdminLatencyAt100kRows -v ./e2e
func TestAdminLatencyAt100kRows(t *testing.T) {
	if os.Getenv("REDRIVE_MEASURE") != "1" {
		t.Skip("set REDRIVE_MEASURE=1 to measure")
	}
	w, err := StartWorker(Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	const n = 100_000
	now := time.Now().UnixMilli()
	start := time.Now()
	// 100k rows over 30 days: 70% pending, 15% replayed, 10% acknowledged,
	// 5% on another source queue; 50 brewers, 12 reasons, some repeat failures.
	w.Exec(t, fmt.Sprintf(`INSERT INTO dlq_messages(message_id, beer_id, beer_name, brewer, failed_at, failure_count,
		failure_reason, failure_class, source_queue, status, replay_count, replayed_at, acknowledged_at, raw_message, first_failed_at, updated_at)
	WITH RECURSIVE seq(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM seq WHERE i + 1 < %[1]d)
	SELECT 'm-' || i, 'beer-' || i, 'Beer ' || i, 'Brewer ' || (i %% 50), %[2]d - (i * 26), 4,
		'transient: provider status ' || (500 + i %% 12), 'transient',
		CASE WHEN i %% 20 = 0 THEN 'other-queue' ELSE 'beer-enrichment' END,
		CASE WHEN i %% 20 < 14 THEN 'pending' WHEN i %% 20 < 17 THEN 'replayed' ELSE 'acknowledged' END,
		CASE WHEN i %% 97 = 0 THEN 1 + i %% 4 ELSE 0 END,
		CASE WHEN i %% 20 BETWEEN 14 AND 16 THEN %[2]d - (i * 13) END,
		CASE WHEN i %% 20 >= 17 THEN %[2]d - (i * 13) END,
		json_object('beer_id', 'beer-' || i, 'beer_name', 'Beer ' || i, 'brewer', 'Brewer ' || (i %% 50)),
		%[2]d - (i * 26), %[2]d
	FROM seq`, n, now))
	t.Logf("seeded %d rows in %s", w.Int(t, `SELECT COUNT(*) FROM dlq_messages`), time.Since(start).Round(time.Millisecond))

	measure := func(name string, reps int, req func(i int) (string, string, any)) {
		var ds []time.Duration
		for i := 0; i < reps+3; i++ { // the first three calls warm up
			method, path, body := req(i)
			t0 := time.Now()
			r := w.Admin(t, method, path, body)
			d := time.Since(t0)
			if r.Status != http.StatusOK {
				t.Fatalf("%s: %d %s", name, r.Status, r.Raw)
			}
			if i >= 3 {
				ds = append(ds, d)
			}
		}
		sort.Slice(ds, func(a, b int) bool { return ds[a] < ds[b] })
		p := func(q float64) float64 { return float64(ds[int(q*float64(len(ds)-1))].Microseconds()) / 1000 }
		t.Logf("%-40s p50 %7.1f ms   p90 %7.1f ms   (n=%d)", name, p(0.5), p(0.9), len(ds))
	}
	get := func(path string) func(int) (string, string, any) {
		return func(int) (string, string, any) { return http.MethodGet, path, nil }
	}
	measure("GET /health (per-call overhead)", 30, func(int) (string, string, any) { return http.MethodGet, "/health", nil })
	measure("GET /admin/dlq (first page, 50)", 30, get("/admin/dlq"))
	measure("GET /admin/dlq?status=all&limit=100", 30, get("/admin/dlq?status=all&limit=100"))
	measure("GET /admin/dlq?q=Brewer%2017 (scan)", 10, get("/admin/dlq?q=Brewer%2017"))
	measure("GET /admin/dlq/stats", 30, get("/admin/dlq/stats"))
	// Pending rows of the main queue have i % 20 in 1..13; row id = i + 1.
	// Every call replays 50 fresh rows; delay_seconds keeps the consumer
	// idle meanwhile.
	pending := func(k int) int64 {
		i := (k/13)*20 + 1 + k%13
		return int64(i + 1)
	}
	measure("POST /admin/dlq/replay (50 ids)", 20, func(c int) (string, string, any) {
		ids := make([]int64, 50)
		for j := range ids {
			ids[j] = pending(c*50 + j)
		}
		return http.MethodPost, "/admin/dlq/replay", map[string]any{"ids": ids, "delay_seconds": 43200}
	})
	measure("POST /admin/dlq/acknowledge (100 ids)", 20, func(c int) (string, string, any) {
		ids := make([]int64, 100)
		for j := range ids {
			ids[j] = pending(10_000 + c*100 + j)
		}
		return http.MethodPost, "/admin/dlq/acknowledge", map[string]any{"ids": ids}
	})
	measure("POST /admin/dlq/replay dry run (all)", 10, func(int) (string, string, any) {
		return http.MethodPost, "/admin/dlq/replay", map[string]any{"filter": map[string]any{}, "dry_run": true}
	})
	measure("GET /admin/audit", 30, get("/admin/audit"))
	if got := w.Int(t, `SELECT COUNT(*) FROM dlq_messages WHERE status = 'replayed' AND replay_count >= 1 AND replayed_at > ?`, now); got != 23*50 {
		t.Errorf("replayed rows: %d, want %d", got, 23*50)
	}
}
