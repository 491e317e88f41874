package metrics

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/internal/promtext"
	"github.com/redrive/redrive/internal/sqlitetest"
)

// Gauges the way a domain package declares them (enrichment's are tested in
// enrichment): one always there, one scaled from a job's last summary, one
// NULL (left off the page).
func init() {
	Declare("test_rescued_total", "Rows the rescue test adds.")
	DeclareGauge(Gauge{Name: "test_jobs_known", Help: "Jobs with a run record.", SQL: `SELECT COUNT(*) FROM job_runs`})
	DeclareGauge(Gauge{Name: "test_last_lateness_seconds", Help: "Lateness of the test job's last run.", Scale: 0.001,
		SQL: `SELECT CAST(last_summary ->> '$.lateness_ms' AS INTEGER) FROM job_runs WHERE job = 'test_job'`})
	DeclareGauge(Gauge{Name: "test_never", Help: "Never reported.", SQL: `SELECT NULL`})
}

func TestPrometheusPageMatchesTheDatabase(t *testing.T) {
	db := sqlitetest.New(t)
	ctx := context.Background()
	now := time.Date(2030, 6, 1, 10, 0, 0, 0, time.UTC)
	weird := "odd\"queue\\with\nnewline"
	for i, r := range []struct {
		status, source string
		failedAt       time.Time
	}{
		{"pending", "beer-enrichment", now.Add(-90 * time.Minute)},
		{"pending", "beer-enrichment", now.Add(-10 * time.Minute)},
		{"acknowledged", "beer-enrichment", now.Add(-48 * time.Hour)},
		{"replaying", weird, now.Add(-time.Minute)},
	} {
		if _, err := db.Exec(`INSERT INTO dlq_messages(message_id, row_key, status, source_queue, failed_at) VALUES (?, 'b', ?, ?, ?)`,
			i, r.status, r.source, r.failedAt.UnixMilli()); err != nil {
			t.Fatal(err)
		}
	}
	c := Counters{DB: db}
	c.Add(ctx, map[string]int64{"dlq_rescued_total": 3, "enrichment.outcome-ok": 7})
	c.Add(ctx, map[string]int64{"dlq_rescued_total": 2})
	db.Exec(`INSERT INTO alert_state(name, firing, since) VALUES ('dlq_pending_high', 1, 1), ('job_failing', 0, NULL)`)
	runs := JobRuns{DB: db}
	runs.RecordRun(ctx, "dlq_rescue", now, 1500*time.Millisecond, nil, nil)
	runs.RecordRun(ctx, "dlq_retention", now.Add(-time.Hour), 250*time.Millisecond, nil, nil)
	runs.RecordRun(ctx, "dlq_retention", now, 20*time.Millisecond, errors.New("x"), nil)
	runs.RecordRun(ctx, "test_job", now, time.Second, nil, map[string]any{"lateness_ms": int64(1500)})
	c.Add(ctx, map[string]int64{"test_rescued_total": 4})

	snap, err := ReadSnapshot(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	// A pipeline's queue: its samples carry a pipeline label; the others none.
	snap.Pipelines = map[string]string{"beer-enrichment": "beers"}
	var buf bytes.Buffer
	if err := WritePrometheus(&buf, snap, now); err != nil {
		t.Fatal(err)
	}
	page, err := promtext.Parse(buf.String())
	if err != nil {
		t.Fatalf("%v\n%s", err, buf.String())
	}
	want := map[string]float64{
		promtext.Key("redrive_dlq_messages", "pipeline", "beers", "source_queue", "beer-enrichment", "status", "pending"):      2,
		promtext.Key("redrive_dlq_messages", "pipeline", "beers", "source_queue", "beer-enrichment", "status", "acknowledged"): 1,
		promtext.Key("redrive_dlq_messages", "pipeline", "beers", "source_queue", "beer-enrichment", "status", "replaying"):    0,
		promtext.Key("redrive_dlq_messages", "pipeline", "beers", "source_queue", "beer-enrichment", "status", "replayed"):     0,
		promtext.Key("redrive_dlq_messages", "source_queue", weird, "status", "replaying"):                                     1,
		promtext.Key("redrive_dlq_messages", "source_queue", weird, "status", "pending"):                                       0,
		"redrive_dlq_oldest_pending_age_seconds":                                    5400,
		"redrive_dlq_rescued_total":                                                 5,
		"redrive_dlq_captured_total":                                                4, // dlq_messages' insert trigger
		"redrive_enrichment_outcome_ok":                                             7,
		promtext.Key("redrive_alert_firing", "alert", "dlq_pending_high"):           1,
		promtext.Key("redrive_alert_firing", "alert", "job_failing"):                0,
		promtext.Key("redrive_job_last_run_timestamp_seconds", "job", "dlq_rescue"): float64(now.Unix()),
		promtext.Key("redrive_job_last_duration_seconds", "job", "dlq_rescue"):      1.5,
		promtext.Key("redrive_job_last_success", "job", "dlq_rescue"):               1,
		promtext.Key("redrive_job_last_success", "job", "dlq_retention"):            0,
		promtext.Key("redrive_job_runs_total", "job", "dlq_retention"):              2,
		promtext.Key("redrive_job_failures_total", "job", "dlq_retention"):          1,
		promtext.Key("redrive_job_last_more", "job", "dlq_retention"):               0,
		"redrive_test_jobs_known":                                                   3,
		"redrive_test_last_lateness_seconds":                                        1.5,
		"redrive_test_rescued_total":                                                4,
	}
	for k, v := range want {
		got, ok := page.Samples[k]
		if !ok || got != v {
			t.Errorf("%s = %v (present %v), want %v", k, got, ok, v)
		}
	}
	if len(page.Samples) != 8+1+3+2+6*3+1+2 {
		t.Errorf("%d series:\n%s", len(page.Samples), buf.String())
	}
	if _, ok := page.Samples["redrive_test_never"]; ok {
		t.Error("a gauge whose SQL gave NULL is on the page")
	}
	if page.Types["redrive_test_rescued_total"] != "counter" || page.Types["redrive_dlq_messages"] != "gauge" ||
		page.Types["redrive_test_last_lateness_seconds"] != "gauge" || page.Help["redrive_test_last_lateness_seconds"] != "Lateness of the test job's last run." ||
		page.Help["redrive_test_rescued_total"] != "Rows the rescue test adds." || !strings.Contains(page.Help["redrive_dlq_rescued_total"], "counters table") {
		t.Errorf("types %v help %v", page.Types, page.Help)
	}
}

func TestPrometheusPageOfAnEmptyDatabase(t *testing.T) {
	snap, err := ReadSnapshot(context.Background(), sqlitetest.New(t))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	WritePrometheus(&buf, snap, time.Now())
	page, err := promtext.Parse(buf.String())
	if err != nil {
		t.Fatalf("%v\n%s", err, buf.String())
	}
	if len(page.Samples) != 2 || page.Samples["redrive_dlq_oldest_pending_age_seconds"] != 0 || page.Samples["redrive_test_jobs_known"] != 0 {
		t.Fatalf("%v", page.Samples)
	}
	assertNoEmptyFamilies(t, buf.String())
}

// assertNoEmptyFamilies fails when the page declares an alert, D1 usage or
// job family although the snapshot has none of them: no header without a
// sample (pins the len(...) > 0 guards of writeAlerts, writeD1, writeJobs).
func assertNoEmptyFamilies(t *testing.T, page string) {
	t.Helper()
	for _, family := range []string{"redrive_alert_", "redrive_d1_", "redrive_job_"} {
		if strings.Contains(page, family) {
			t.Errorf("%s families on a page without any:\n%s", family, page)
		}
	}
}

// A retention job's last summary gives its expired_left gauge (jobs that do
// not report one have none) and every job's "more" its last_more gauge.
func TestRetentionBacklogGauges(t *testing.T) {
	db := sqlitetest.New(t)
	ctx := context.Background()
	now := time.Date(2030, 6, 1, 10, 0, 0, 0, time.UTC)
	runs := JobRuns{DB: db}
	runs.RecordRun(ctx, "dlq_retention", now, time.Second, nil, map[string]any{"more": true, "expired_left": int64(ExpiredLeftCountMax), "behind_since": now.UnixMilli()})
	runs.RecordRun(ctx, "audit_retention", now, time.Second, nil, map[string]any{"more": false, "expired_left": int64(0), "behind_since": nil})
	runs.RecordRun(ctx, "dlq_rescue", now, time.Second, nil, map[string]any{"rescued": 1, "more": false})
	snap, err := ReadSnapshot(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := WritePrometheus(&buf, snap, now); err != nil {
		t.Fatal(err)
	}
	page, err := promtext.Parse(buf.String())
	if err != nil {
		t.Fatalf("%v\n%s", err, buf.String())
	}
	want := map[string]float64{
		promtext.Key("redrive_retention_expired_left", "job", "dlq_retention"):   ExpiredLeftCountMax,
		promtext.Key("redrive_retention_expired_left", "job", "audit_retention"): 0,
		promtext.Key("redrive_job_last_more", "job", "dlq_retention"):            1,
		promtext.Key("redrive_job_last_more", "job", "audit_retention"):          0,
		promtext.Key("redrive_job_last_more", "job", "dlq_rescue"):               0,
	}
	for k, v := range want {
		if got, ok := page.Samples[k]; !ok || got != v {
			t.Errorf("%s = %v (present %v), want %v", k, got, ok, v)
		}
	}
	if _, err := db.Exec(`INSERT INTO job_runs(job, last_run_at, last_duration_ms, last_ok, last_summary) VALUES ('odd', 1, 1, 1, 'not json')`); err != nil {
		t.Fatal(err)
	}
	if snap, err := ReadSnapshot(ctx, db); err != nil || len(snap.Jobs) != 4 {
		t.Fatalf("a summary that is not JSON breaks the page: %v %+v", err, snap.Jobs)
	}
	if more, err := runs.LastMore(ctx, "odd"); more || err != nil {
		t.Fatalf("LastMore of a summary that is not JSON: %v %v", more, err)
	}
	if _, ok := page.Samples[promtext.Key("redrive_retention_expired_left", "job", "dlq_rescue")]; ok {
		t.Error("a job without expired_left has the gauge")
	}
	if page.Types["redrive_retention_expired_left"] != "gauge" || !strings.Contains(page.Help["redrive_retention_expired_left"], "100000") {
		t.Errorf("type %q help %q", page.Types["redrive_retention_expired_left"], page.Help["redrive_retention_expired_left"])
	}
}

// LastMore and LastSummary read one job_runs row; a job that never ran, or
// whose last summary is null (a panicked run), has nothing left to do.
func TestLastRunReaders(t *testing.T) {
	db := sqlitetest.New(t)
	ctx := context.Background()
	runs := JobRuns{DB: db}
	var v struct{ More bool }
	if more, err := runs.LastMore(ctx, "j"); more || err != nil {
		t.Fatalf("never ran: %v %v", more, err)
	}
	if ok, err := runs.LastSummary(ctx, "j", &v); ok || err != nil {
		t.Fatalf("never ran: %v %v", ok, err)
	}
	for _, c := range []struct {
		summary map[string]any
		more    bool
	}{{map[string]any{"more": true}, true}, {map[string]any{"more": false}, false}, {map[string]any{"x": 1}, false}, {nil, false}} {
		runs.RecordRun(ctx, "j", time.Now(), time.Second, nil, c.summary)
		more, err := runs.LastMore(ctx, "j")
		if err != nil || more != c.more {
			t.Errorf("%v: LastMore %v %v", c.summary, more, err)
		}
		v.More = false
		ok, err := runs.LastSummary(ctx, "j", &v)
		if err != nil || ok != (c.summary != nil) || v.More != c.more {
			t.Errorf("%v: LastSummary %v %+v %v", c.summary, ok, v, err)
		}
	}
	plan := strings.Join(sqlitetest.Plan(t, db, lastMoreSQL, "j"), "\n")
	if !strings.Contains(plan, "USING INDEX sqlite_autoindex_job_runs_1 (job=?)") {
		t.Errorf("LastMore does not look the job up by its key:\n%s", plan)
	}
}
