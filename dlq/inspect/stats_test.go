package inspect

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/internal/sqlitetest"
)

func TestStatsReport(t *testing.T) {
	db := sqlitetest.New(t)
	now := fixedClock().UnixMilli()
	hour := time.Hour.Milliseconds()
	ids := insert(t, db,
		adminRow{Key: "1", Label1: "Old", Label2: "Acme", Reason: "transient: 500", FailedAt: now - 50*hour},
		adminRow{Key: "2", Label2: "Acme", Reason: "transient: 500", FailedAt: now - 2*hour, ReplayCount: 3},
		adminRow{Key: "3", Label1: "Again", Label2: "Bold", Reason: "permanent: 404", FailedAt: now - 1*hour, ReplayCount: 1},
		adminRow{Key: "4", FailedAt: now - hour, Source: "other"},
		adminRow{Key: "5", Label2: "Zed", FailedAt: now - 30*hour, Status: dlq.StatusReplayed},
		adminRow{Key: "6", Label2: "Zed", FailedAt: now - 30*hour, Status: dlq.StatusAcknowledged},
		adminRow{Key: "7", FailedAt: now - 30*hour, Status: dlq.StatusAcknowledged},
		adminRow{Key: "8", FailedAt: now - 30*hour, Status: dlq.StatusReplaying},
	)
	db.Exec(`UPDATE dlq_messages SET replayed_at = ? WHERE id = ?`, now-hour, ids[4])
	db.Exec(`UPDATE dlq_messages SET acknowledged_at = ? WHERE id = ?`, now-hour, ids[5])
	db.Exec(`UPDATE dlq_messages SET acknowledged_at = ? WHERE id = ?`, now-25*hour, ids[6])
	r, err := Stats{DBs: dlq.Single(dlq.Store{DB: db}), Clock: fixedClock}.Report(ctx)
	if err != nil {
		t.Fatal(err)
	}
	js, _ := json.Marshal(r)
	want := `{"by_status":{"pending":4,"replaying":1,"replayed":1,"acknowledged":2},"oldest_pending_age_hours":50,` +
		`"top_failing_brewers":[{"brewer":"Acme","count":2},{"brewer":"Bold","count":1}],` +
		`"repeat_failures":[{"beer_id":"2","beer_name":null,"replay_count":3,"id":` + itoa(ids[1]) + `,"pipeline":"beers","key":"2","labels":{"beer_name":null,"brewer":"Acme"}},` +
		`{"beer_id":"3","beer_name":"Again","replay_count":1,"id":` + itoa(ids[2]) + `,"pipeline":"beers","key":"3","labels":{"beer_name":"Again","brewer":"Bold"}}],` +
		`"last_24h":{"replayed_24h":1,"acknowledged_24h":1,"new_failures_24h":3},` +
		`"by_source_queue":[{"source_queue":"beer-enrichment","pending":3,"total":7},{"source_queue":"other","pending":1,"total":1}],` +
		`"by_pipeline":[{"pipeline":"beers","queue":"beer-enrichment","pending":3,"total":7}],` +
		`"top_failure_reasons":[{"failure_reason":"transient: 500","count":2},{"failure_reason":null,"count":1},{"failure_reason":"permanent: 404","count":1}],` +
		`"top_failure_reasons_sample":4}`
	if string(js) != want {
		t.Fatalf("stats\n got %s\nwant %s", js, want)
	}
	empty, err := Stats{DBs: dlq.Single(dlq.Store{DB: sqlitetest.New(t)}), Clock: fixedClock}.Report(ctx)
	js, _ = json.Marshal(empty)
	if err != nil || !strings.Contains(string(js), `"top_failing_brewers":[]`) || empty.OldestPendingAgeHours != 0 {
		t.Fatalf("empty: %s %v", js, err)
	}
}

func itoa(n int64) string { b, _ := json.Marshal(n); return string(b) }

// What the stats read does not grow with the backlog: the counts come from
// dlq_tally and dlq_activity, and every dlq_messages step is a bounded
// range of an index (the oldest pending row, the replayed pending rows, the
// rows of the hour 24 h ago, the StatsReasonSample newest pending rows):
// none visits every row of a status or sorts one. Rows read are measured in
// workerd by TestD1RowsBudget (e2e/d1rows_test.go).
func TestStatsReadsBoundedRanges(t *testing.T) {
	db := sqlitetest.New(t)
	plan := sqlitetest.Plan(t, db, statsSQL, 10, 0, 0, 1000, "orders")
	want := []string{
		"SEARCH dlq_messages USING COVERING INDEX idx_dlq_status_failed (status=?)", // MIN(failed_at): one entry
		"SEARCH dlq_messages USING INDEX idx_dlq_pending_replay_count (replay_count>?)",
		// The edge hour of last_24h: covering without a pipeline filter, each
		// row visited with one (source_queue).
		"SEARCH dlq_messages USING COVERING INDEX idx_dlq_status_replayed_at (status=? AND replayed_at>? AND replayed_at<?)",
		"SEARCH dlq_messages USING INDEX idx_dlq_status_replayed_at (status=? AND replayed_at>? AND replayed_at<?)",
		"SEARCH dlq_messages USING COVERING INDEX idx_dlq_status_acknowledged_at (status=? AND acknowledged_at>? AND acknowledged_at<?)",
		"SEARCH dlq_messages USING INDEX idx_dlq_status_acknowledged_at (status=? AND acknowledged_at>? AND acknowledged_at<?)",
		"SEARCH dlq_messages USING COVERING INDEX idx_dlq_status_failed (status=? AND failed_at>? AND failed_at<?)",
		"SEARCH dlq_messages USING INDEX idx_dlq_status_failed (status=? AND failed_at>? AND failed_at<?)",
		"SEARCH dlq_messages USING INDEX idx_dlq_status_failed (status=?)", // the newest pending rows, in index order
		"SEARCH dlq_messages USING INDEX idx_dlq_status_failed (status=?)", // sampled: the same rows, only with a pipeline filter
	}
	var got []string
	for i, d := range plan {
		if strings.Contains(d, "dlq_messages") {
			got = append(got, d)
			if i+1 < len(plan) && strings.Contains(plan[i+1], "TEMP B-TREE") {
				t.Errorf("%s is sorted: %s", d, plan[i+1])
			}
		}
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("stats reads dlq_messages through\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// last_24h counts dlq_activity's hourly counts of the hours after the one
// 24 h ago, whether or not their rows are still there (retention deletes
// rows, the counts stay); the hour 24 h ago itself is counted row by row.
func TestStatsLast24hComesFromTheHourlyCounts(t *testing.T) {
	db := sqlitetest.New(t)
	hour := fixedClock().Add(-24*time.Hour).UnixMilli() / time.Hour.Milliseconds()
	mustExec(t, db, `INSERT INTO dlq_activity(kind, hour, n) VALUES ('failed', ?1, 100), ('failed', ?1 + 1, 5), ('failed', ?1 + 24, 2),
		('replayed', ?1 + 3, 4), ('acknowledged', ?1 + 12, 3), ('replayed', ?1, 100), ('acknowledged', ?1 - 1, 100)`, hour)
	r, err := Stats{DBs: dlq.Single(dlq.Store{DB: db}), Clock: fixedClock}.Report(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := r.Last24h; got.NewFailures24h != 7 || got.Replayed24h != 4 || got.Acknowledged24h != 3 {
		t.Fatalf("last_24h %+v, want 7 failures, 4 replayed, 3 acknowledged", got)
	}
}

// A pipeline filter narrows the kept counts (by_status, by_source_queue,
// by_pipeline, top_failing_brewers, last_24h) and top_failure_reasons to the
// pipeline's queue, names the parts it leaves covering every pipeline, and
// an unknown name is UNKNOWN_PIPELINE.
func TestStatsPipelineFilter(t *testing.T) {
	t.Parallel()
	ps := withPipelines(t)
	db := sqlitetest.New(t)
	dbs := dlq.NewDatabases(dlq.Store{DB: db}, nil, ps)
	now := fixedClock().UnixMilli()
	hour := time.Hour.Milliseconds()
	insert(t, db,
		adminRow{Key: "1", Label2: "Acme", Reason: "transient: 500", FailedAt: now - 3*hour},
		adminRow{Key: "2", Label2: "Acme", Reason: "transient: 500", FailedAt: now - 2*hour},
		adminRow{Key: "3", Label2: "Bold", Reason: "orders: 409", FailedAt: now - hour, Source: "orders"},
		adminRow{Key: "4", Label2: "Bold", Reason: "orders: 409", FailedAt: now - hour, Source: "orders", Status: dlq.StatusAcknowledged},
		adminRow{Key: "5", Label2: "Cold", Reason: "odd: 1", FailedAt: now - hour, Source: "odd"},
	)
	r, err := Stats{DBs: dbs, Clock: fixedClock, Pipeline: "orders"}.Report(ctx)
	if err != nil {
		t.Fatal(err)
	}
	js, _ := json.Marshal(struct {
		ByStatus      ByStatus           `json:"by_status"`
		Brewers       []BrewerCount      `json:"top_failing_brewers"`
		BySourceQueue []SourceQueueCount `json:"by_source_queue"`
		ByPipeline    []PipelineCount    `json:"by_pipeline"`
		Reasons       []dlq.ReasonCount  `json:"top_failure_reasons"`
		Sample        int64              `json:"top_failure_reasons_sample"`
		Pipeline      *string            `json:"pipeline"`
		NotFiltered   []string           `json:"not_filtered"`
	}{r.ByStatus, r.TopFailingBrewers, r.BySourceQueue, r.ByPipeline, r.TopFailureReasons, r.TopFailureReasonsSample, r.Pipeline, r.NotFiltered})
	want := `{"by_status":{"pending":1,"replaying":0,"replayed":0,"acknowledged":1},` +
		`"top_failing_brewers":[{"brewer":"Bold","count":1}],` +
		`"by_source_queue":[{"source_queue":"orders","pending":1,"total":2}],` +
		`"by_pipeline":[{"pipeline":"orders","queue":"orders","pending":1,"total":2}],` +
		`"top_failure_reasons":[{"failure_reason":"orders: 409","count":1}],"top_failure_reasons_sample":1,` +
		`"pipeline":"orders","not_filtered":["oldest_pending_age_hours","repeat_failures"]}`
	if string(js) != want {
		t.Fatalf("orders stats\n got %s\nwant %s", js, want)
	}
	all, err := Stats{DBs: dbs, Clock: fixedClock}.Report(ctx)
	if err != nil || all.ByStatus.Pending != 4 || len(all.ByPipeline) != 3 || all.Pipeline != nil || all.NotFiltered != nil || all.TopFailureReasonsSample != 4 {
		t.Fatalf("unfiltered: %+v %v", all, err)
	}
	// last_24h: dlq_activity's hours per queue, and the edge hour's rows.
	if r.Last24h.NewFailures24h != 2 || all.Last24h.NewFailures24h != 5 {
		t.Fatalf("last_24h failures: orders %d (want 2), all %d (want 5)", r.Last24h.NewFailures24h, all.Last24h.NewFailures24h)
	}
	_, err = Stats{DBs: dbs, Clock: fixedClock, Pipeline: "nope"}.Report(ctx)
	if !strings.Contains(fmt.Sprint(err), "UNKNOWN_PIPELINE") {
		t.Fatalf("unknown pipeline: %v", err)
	}
}
