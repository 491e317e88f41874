package handlers

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/alerts"
	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/dlq/inspect"
	"github.com/redrive/redrive/metrics"
	"github.com/redrive/redrive/queue"
)

func TestConsoleRoutes(t *testing.T) {
	api := newAPI(t)
	now := time.UnixMilli(1_750_000_000_000)
	api.Clock = func() time.Time { return now }
	h := api.Handler()
	var id int64
	if err := api.DB.QueryRow(`INSERT INTO dlq_messages(message_id, row_key, label_1, failed_at, failure_reason, raw_message, last_message_id)
		VALUES ('m1', 'b1', '<b>x</b>', ?, 'permanent: 400', '{"beer_id":"b1"}', 'm1') RETURNING id`, now.UnixMilli()-1000).Scan(&id); err != nil {
		t.Fatal(err)
	}
	if _, err := api.DB.Exec(`INSERT INTO alert_state(name, firing, since, detail, updated_at) VALUES ('dlq_pending_high', 1, 5, '3 rows', 5), ('job_failing', 0, NULL, NULL, 5)`); err != nil {
		t.Fatal(err)
	}
	if err := (metrics.JobRuns{DB: api.DB}).RecordRun(context.Background(), "dlq_rescue", now, time.Second, nil, map[string]any{"rescued": 2}); err != nil {
		t.Fatal(err)
	}

	rec, env := do(h, "GET", "/admin/dlq/1", "", adminHeaders)
	var d inspect.MessageDetail
	if js, _ := json.Marshal(env.Data); rec.Code != 200 || json.Unmarshal(js, &d) != nil || d.Message.ID != id || d.LastMessageID != "m1" ||
		string(d.Message.RawMessage) != `"{\"beer_id\":\"b1\"}"` || d.AuditWindow != inspect.AuditWindow {
		t.Errorf("detail: %d %s", rec.Code, rec.Body)
	}
	for _, p := range []string{"/admin/dlq/2", "/admin/dlq/x", "/admin/dlq/0", "/admin/dlq/-1", "/admin/dlq/1e3", "/admin/dlq/99999999999999999999"} {
		if rec, env := do(h, "GET", p, "", adminHeaders); rec.Code != 404 || env.Error == nil || env.Error.Code != "NOT_FOUND" {
			t.Errorf("%s: %d %s", p, rec.Code, rec.Body)
		}
	}

	// The POST-only routes beside it still answer GET with 405, as before it existed.
	for _, p := range []string{"/admin/dlq/replay", "/admin/dlq/acknowledge"} {
		if rec, env := do(h, "GET", p, "", adminHeaders); rec.Code != 405 || env.Error.Code != "METHOD_NOT_ALLOWED" || rec.Header().Get("Allow") != "POST" {
			t.Errorf("GET %s: %d %s (Allow %q)", p, rec.Code, rec.Body, rec.Header().Get("Allow"))
		}
	}

	rec, env = do(h, "GET", "/admin/dlq/timeseries", "", adminHeaders)
	var s inspect.Series
	if js, _ := json.Marshal(env.Data); rec.Code != 200 || json.Unmarshal(js, &s) != nil || s.Total != 1 || len(s.Hourly) != dlq.SeriesHours ||
		s.Hourly[dlq.SeriesHours-1].Failures != 1 {
		t.Errorf("timeseries: %d %.300s", rec.Code, rec.Body)
	}
	if rec, env := do(h, "GET", "/admin/dlq/timeseries?source_queue=nope", "", adminHeaders); rec.Code != 400 || env.Error.Code != "INVALID_REQUEST" {
		t.Errorf("timeseries with a parameter: %d %.300s", rec.Code, rec.Body)
	}

	rec, env = do(h, "GET", "/admin/alerts", "", adminHeaders)
	var al alerts.AlertList
	if js, _ := json.Marshal(env.Data); rec.Code != 200 || json.Unmarshal(js, &al) != nil || al.FiringCount != 1 || len(al.Alerts) != 2 ||
		al.Alerts[0].Name != "dlq_pending_high" || *al.Alerts[0].Detail != "3 rows" || al.Alerts[1].Since != nil {
		t.Errorf("alerts: %d %s", rec.Code, rec.Body)
	}
	rec, env = do(h, "GET", "/admin/jobs", "", adminHeaders)
	var jl metrics.JobList
	if js, _ := json.Marshal(env.Data); rec.Code != 200 || json.Unmarshal(js, &jl) != nil || len(jl.Jobs) != 1 || jl.Jobs[0].Job != "dlq_rescue" ||
		!jl.Jobs[0].LastOK || jl.Jobs[0].LastDurationMS != 1000 || string(jl.Jobs[0].LastSummary) != `{"rescued":2}` {
		t.Errorf("jobs: %d %s", rec.Code, rec.Body)
	}

	for _, p := range []string{"/admin/dlq/1", "/admin/dlq/timeseries", "/admin/alerts", "/admin/jobs"} {
		if rec, _ := do(h, "GET", p, "", nil); rec.Code != 401 {
			t.Errorf("%s without credentials: %d", p, rec.Code)
		}
		if rec, env := do(h, "GET", p+"?x=1", "", adminHeaders); rec.Code != 400 || env.Error.Code != "INVALID_REQUEST" {
			t.Errorf("%s with an unknown parameter: %d %s", p, rec.Code, rec.Body)
		}
	}
}

func TestDevCronRunsTheJobsAtTheGivenTime(t *testing.T) {
	api := newAPI(t)
	var gotCron string
	var gotAt time.Time
	api.DevCron = func(_ context.Context, cron string, at time.Time) error {
		gotCron, gotAt = cron, at
		return nil
	}
	h := api.Handler()
	rec, _ := do(h, "POST", "/__dev/cron", `{"cron":"17 3 * * *","time":1750000000000}`, adminHeaders)
	if rec.Code != 200 || gotCron != "17 3 * * *" || gotAt.UnixMilli() != 1750000000000 || !strings.Contains(rec.Body.String(), `"ok":true`) {
		t.Errorf("dev cron: %d %s (%q at %v)", rec.Code, rec.Body, gotCron, gotAt)
	}
	if rec, _ := do(h, "POST", "/__dev/cron", `{}`, adminHeaders); rec.Code != 400 {
		t.Errorf("no cron: %d", rec.Code)
	}
	if rec, _ := do(h, "POST", "/__dev/cron", `{"cron":"x"}`, nil); rec.Code != 401 {
		t.Errorf("no credentials: %d", rec.Code)
	}
	if rec, _ := do(newAPI(t).Handler(), "POST", "/__dev/cron", `{"cron":"x"}`, adminHeaders); rec.Code != 404 {
		t.Errorf("without DevCron: %d", rec.Code)
	}
}

// backlogs is a queue.BacklogReader with fixed answers (an error for a
// queue it does not know).
type backlogs map[string]queue.Backlog

func (b backlogs) Backlog(ctx context.Context, name string) (queue.Backlog, error) {
	if v, ok := b[name]; ok {
		return v, nil
	}
	if name == "stuck" { // answers never: only the wait's end ends the call
		<-ctx.Done()
		return queue.Backlog{}, ctx.Err()
	}
	return queue.Backlog{}, errors.New("no metrics()")
}

// GET /admin/queues: each producer-bound queue's backlog as the runtime
// reports it; null figures (available false) where it cannot say.
func TestQueuesRoute(t *testing.T) {
	api := newAPI(t)
	api.ReplayDestinations = []string{"beer-enrichment", "other", "idle"}
	api.Backlogs = backlogs{"beer-enrichment": {Count: 7, Bytes: 420, OldestAt: 1_750_000_000_000}, "idle": {}}
	h := api.Handler()
	// The answer in the code's field order (env.Data is a map).
	order := func(data any) string {
		var l QueueList
		js, _ := json.Marshal(data)
		json.Unmarshal(js, &l)
		out, _ := json.Marshal(l)
		return string(out)
	}
	rec, env := do(h, "GET", "/admin/queues", "", adminHeaders)
	got := order(env.Data)
	want := `{"queues":[{"queue":"beer-enrichment","available":true,"backlog_count":7,"backlog_bytes":420,"oldest_message_at":1750000000000},` +
		`{"queue":"other","available":false,"backlog_count":null,"backlog_bytes":null,"oldest_message_at":null},` +
		`{"queue":"idle","available":true,"backlog_count":0,"backlog_bytes":0,"oldest_message_at":null}]}`
	if rec.Code != 200 || got != want {
		t.Errorf("queues: %d %s\nwant %s", rec.Code, got, want)
	}
	// A queue that does not answer is unavailable once backlogWait is over.
	defer func(d time.Duration) { backlogWait = d }(backlogWait)
	backlogWait = 50 * time.Millisecond
	api.ReplayDestinations = []string{"stuck", "idle"}
	rec, env = do(api.Handler(), "GET", "/admin/queues", "", adminHeaders)
	if got := order(env.Data); rec.Code != 200 || !strings.HasPrefix(got, `{"queues":[{"queue":"stuck","available":false,"backlog_count":null`) ||
		!strings.Contains(got, `{"queue":"idle","available":true`) {
		t.Errorf("queues with one stuck: %d %s", rec.Code, got)
	}
	api.Backlogs = nil
	rec, env = do(api.Handler(), "GET", "/admin/queues", "", adminHeaders)
	if got := order(env.Data); rec.Code != 200 || !strings.Contains(got, `{"queue":"idle","available":false,"backlog_count":null`) {
		t.Errorf("queues without a reader: %d %s", rec.Code, got)
	}
	if rec, _ := do(h, "GET", "/admin/queues", "", nil); rec.Code != 401 {
		t.Errorf("without credentials: %d", rec.Code)
	}
	if rec, env := do(h, "GET", "/admin/queues?x=1", "", adminHeaders); rec.Code != 400 || env.Error.Code != "INVALID_REQUEST" {
		t.Errorf("with an unknown parameter: %d %s", rec.Code, rec.Body)
	}
}

// slowBacklog answers after its delay, or with the context's error when
// the wait ends first.
type slowBacklog time.Duration

func (d slowBacklog) Backlog(ctx context.Context, name string) (queue.Backlog, error) {
	select {
	case <-time.After(time.Duration(d)):
		return queue.Backlog{Count: 3}, nil
	case <-ctx.Done():
		return queue.Backlog{}, ctx.Err()
	}
}

// The default backlogWait leaves a queue that answers within a fraction of
// a second (the local broker answering after the batch it delivers) its
// figures.
func TestQueuesRouteWaitsForASlowQueue(t *testing.T) {
	api := newAPI(t)
	api.ReplayDestinations = []string{"slow"}
	api.Backlogs = slowBacklog(200 * time.Millisecond)
	rec, _ := do(api.Handler(), "GET", "/admin/queues", "", adminHeaders)
	if rec.Code != 200 || !strings.Contains(rec.Body.String(), `"available":true,"backlog_count":3`) {
		t.Fatalf("slow queue: %d %s", rec.Code, rec.Body)
	}
}
