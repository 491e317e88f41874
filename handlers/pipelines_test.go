package handlers

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/config"
	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/dlq/inspect"
	"github.com/redrive/redrive/queue/queuetest"
)

const pipelinesVar = `[
{"name":"beers","queue":"beer-enrichment","dlq":"beer-enrichment-dlq","producer":"ENRICHMENT_QUEUE","key":"/beer_id","labels":[{"name":"beer_name","pointer":"/beer_name"},{"name":"brewer","pointer":"/brewer"}],"consumer":"redrive"},
{"name":"orders","queue":"e2e-orders","dlq":"e2e-orders-dlq","producer":"E2E_ORDERS_QUEUE","key":"/order/id","labels":[{"name":"customer","pointer":"/order/customer"}],"consumer":"external","alert_pending_threshold":50,"alert_oldest_hours":12,"retention_days":14}]`

// pipelinesAPI is an API over beers and orders, with rows of each and of
// an unconfigured queue.
func pipelinesAPI(t *testing.T) (*API, map[string][]int64) {
	t.Helper()
	ps, problems := config.ParsePipelines(pipelinesVar, 100, 24*time.Hour, 30*24*time.Hour)
	if len(problems) != 0 {
		t.Fatal(problems)
	}
	api, _ := newDLQAPI(t)
	api.DBs = dlq.NewDatabases(dlq.Store{DB: api.DB, Batch: api.Batch}, nil, ps)
	ids := map[string][]int64{}
	for i, r := range []struct{ queue, key, l1, l2, body string }{
		{"beer-enrichment", "b1", "Beer 1", "Brewer", `{"beer_id":"b1"}`},
		{"e2e-orders", "o1", "ACME", "", `{"order":{"id":"o1","customer":"ACME"}}`},
		{"e2e-orders", "o2", "Initech", "", `{"order":{"id":"o2","customer":"Initech"}}`},
		{"other", "x1", "", "", `{"beer_id":"x1"}`},
	} {
		var id int64
		if err := api.DB.QueryRow(`INSERT INTO dlq_messages(message_id, row_key, label_1, label_2, failed_at, raw_message, source_queue, content_type)
			VALUES (?, ?, NULLIF(?, ''), NULLIF(?, ''), ?, ?, ?, 'json') RETURNING id`, fmt.Sprint("m", i), r.key, r.l1, r.l2, int64(1000+i), r.body, r.queue).Scan(&id); err != nil {
			t.Fatal(err)
		}
		ids[r.queue] = append(ids[r.queue], id)
	}
	return api, ids
}

// Every row object carries pipeline, key and labels (the pipeline's label
// names), beer_id/beer_name/brewer unchanged; ?pipeline= keeps a
// pipeline's rows; an unknown one is 400 UNKNOWN_PIPELINE.
func TestListByPipeline(t *testing.T) {
	api, ids := pipelinesAPI(t)
	h := api.Handler()
	type row struct {
		ID       int64              `json:"id"`
		BeerID   string             `json:"beer_id"`
		BeerName *string            `json:"beer_name"`
		Pipeline *string            `json:"pipeline"`
		Key      string             `json:"key"`
		Labels   map[string]*string `json:"labels"`
	}
	list := func(q string) (int, []row, envelope) {
		rec, env := do(h, "GET", "/admin/dlq?"+q, "", adminHeaders)
		var p struct {
			Messages   []row `json:"messages"`
			TotalCount int   `json:"total_count"`
		}
		json.Unmarshal(mustJSON(env.Data), &p)
		if rec.Code == 200 && p.TotalCount != len(p.Messages) {
			t.Errorf("%s: total_count %d for %d rows", q, p.TotalCount, len(p.Messages))
		}
		return rec.Code, p.Messages, env
	}
	code, rows, _ := list("pipeline=orders")
	if code != 200 || len(rows) != 2 || rows[0].ID != ids["e2e-orders"][1] || rows[1].ID != ids["e2e-orders"][0] {
		t.Fatalf("orders: %d %+v", code, rows)
	}
	o := rows[1]
	if *o.Pipeline != "orders" || o.Key != "o1" || o.BeerID != "o1" || len(o.Labels) != 1 || *o.Labels["customer"] != "ACME" || *o.BeerName != "ACME" {
		t.Errorf("orders row %+v", o)
	}
	_, rows, _ = list("pipeline=beers")
	if len(rows) != 1 || *rows[0].Pipeline != "beers" || *rows[0].Labels["beer_name"] != "Beer 1" || *rows[0].Labels["brewer"] != "Brewer" {
		t.Errorf("beers: %+v", rows)
	}
	_, rows, _ = list("source_queue=other")
	if len(rows) != 1 || rows[0].Pipeline != nil || len(rows[0].Labels) != 0 || rows[0].Key != "x1" {
		t.Errorf("unconfigured queue: %+v", rows)
	}
	if _, rows, _ = list("pipeline=orders&source_queue=e2e-orders&status=all"); len(rows) != 2 {
		t.Errorf("pipeline with its own source_queue: %+v", rows)
	}
	for q, code := range map[string]string{"pipeline=nope": "UNKNOWN_PIPELINE", "pipeline=orders&source_queue=other": "INVALID_FILTER"} {
		if c, _, env := list(q); c != 400 || env.Error == nil || env.Error.Code != code {
			t.Errorf("%s: %d %+v", q, c, env.Error)
		}
	}
	rec, _ := do(h, "GET", "/admin/dlq/export?format=csv&pipeline=orders", "", adminHeaders)
	lines := strings.Split(strings.TrimSpace(rec.Body.String()), "\r\n")
	if rec.Code != 200 || len(lines) != 3 || !strings.HasSuffix(lines[0], ",pipeline,key,labels") || !strings.HasSuffix(lines[2], `,orders,o1,"{""customer"":""ACME""}"`) {
		t.Errorf("export: %d %q", rec.Code, lines)
	}
	rec, _ = do(h, "GET", "/admin/dlq/export?format=ndjson&pipeline=nope", "", adminHeaders)
	if rec.Code != 400 || !strings.Contains(rec.Body.String(), "UNKNOWN_PIPELINE") {
		t.Errorf("export unknown pipeline: %d %s", rec.Code, rec.Body)
	}
	rec, env := do(h, "GET", fmt.Sprintf("/admin/dlq/%d", ids["e2e-orders"][0]), "", adminHeaders)
	if !strings.Contains(string(mustJSON(env.Data)), `"labels":{"customer":"ACME"}`) || rec.Code != 200 {
		t.Errorf("detail: %d %s", rec.Code, rec.Body)
	}
}

// The bulk forms and replay tasks take the pipeline filter: only its rows
// move; an unknown pipeline is a 400 that changes nothing.
func TestBulkActionsByPipeline(t *testing.T) {
	api, ids := pipelinesAPI(t)
	h := api.Handler()
	before := tableState(t, api.DB)
	for _, path := range []string{"/admin/dlq/replay", "/admin/dlq/acknowledge", "/admin/dlq/replay-tasks"} {
		body := `{"filter":{"pipeline":"nope"}}`
		if strings.HasSuffix(path, "tasks") {
			body = `{"filter":{"pipeline":"nope"},"rate_per_minute":10}`
		}
		rec, env := do(h, "POST", path, body, adminHeaders)
		if rec.Code != 400 || env.Error == nil || env.Error.Code != "UNKNOWN_PIPELINE" || !strings.Contains(env.Error.Message, "beers, orders") {
			t.Errorf("%s: %d %s", path, rec.Code, rec.Body)
		}
	}
	if tableState(t, api.DB) != before {
		t.Fatal("a rejected request changed the table")
	}
	rec, _ := do(h, "POST", "/admin/dlq/acknowledge", `{"filter":{"pipeline":"orders"},"note":"orders only"}`, adminHeaders)
	if rec.Code != 200 {
		t.Fatalf("acknowledge: %d %s", rec.Code, rec.Body)
	}
	var n int
	api.DB.QueryRow(`SELECT COUNT(*) FROM dlq_messages WHERE status = 'acknowledged'`).Scan(&n)
	var other int
	api.DB.QueryRow(`SELECT COUNT(*) FROM dlq_messages WHERE status = 'acknowledged' AND source_queue <> 'e2e-orders'`).Scan(&other)
	if n != len(ids["e2e-orders"]) || other != 0 {
		t.Errorf("acknowledged %d rows, %d outside orders", n, other)
	}
	rec, _ = do(h, "POST", "/admin/dlq/replay-tasks", `{"filter":{"pipeline":"beers"},"rate_per_minute":10}`, adminHeaders)
	if rec.Code != 201 && rec.Code != 200 && rec.Code != 202 {
		t.Errorf("task over beers: %d %s", rec.Code, rec.Body)
	}
}

// A pipeline whose producer binding is missing is capture-only: a replay
// to it (filter or destination) is a 400 naming the binding.
func TestReplayToACaptureOnlyPipelineNamesTheBinding(t *testing.T) {
	api, _ := pipelinesAPI(t)
	api.MissingProducers = map[string]string{"e2e-orders": "E2E_ORDERS_QUEUE"}
	api.ReplayDestinations = []string{"beer-enrichment"}
	h := api.Handler()
	before := tableState(t, api.DB)
	for path, body := range map[string]string{
		"/admin/dlq/replay":       `{"filter":{"pipeline":"orders"}}`,
		"/admin/dlq/replay-tasks": `{"filter":{"source_queue":"e2e-orders"},"rate_per_minute":10}`,
	} {
		rec, env := do(h, "POST", path, body, adminHeaders)
		if rec.Code != 400 || env.Error == nil || env.Error.Code != "PRODUCER_MISSING" || !strings.Contains(env.Error.Message, "E2E_ORDERS_QUEUE") {
			t.Errorf("%s: %d %s", path, rec.Code, rec.Body)
		}
	}
	rec, env := do(h, "POST", "/admin/dlq/replay", `{"filter":{"pipeline":"beers"},"destination":"e2e-orders"}`, adminHeaders)
	if rec.Code != 400 || env.Error == nil || env.Error.Code != "PRODUCER_MISSING" {
		t.Errorf("destination: %d %s", rec.Code, rec.Body)
	}
	if tableState(t, api.DB) != before {
		t.Fatal("a refused replay changed the table")
	}
	rec, env = do(h, "GET", "/admin/pipelines", "", adminHeaders)
	var l struct {
		Pipelines []pipelineView `json:"pipelines"`
	}
	json.Unmarshal(mustJSON(env.Data), &l)
	if rec.Code != 200 || len(l.Pipelines) != 2 || l.Pipelines[0].Name != "beers" || !l.Pipelines[0].ProducerBound ||
		l.Pipelines[1].ProducerBound || l.Pipelines[1].Key != "/order/id" || l.Pipelines[1].AlertOldestHours != 12 ||
		l.Pipelines[1].RetentionDays != 14 || l.Pipelines[1].AlertPendingThreshold != 50 || l.Pipelines[1].Labels[0].Pointer != "/order/customer" ||
		l.Pipelines[1].Database != "DB" {
		t.Errorf("pipelines: %d %s", rec.Code, rec.Body)
	}
}

// Stats count each pipeline (by_pipeline, every configured one) and their
// repeat failures carry pipeline, key and labels.
func TestStatsByPipeline(t *testing.T) {
	api, ids := pipelinesAPI(t)
	api.DB.Exec(`UPDATE dlq_messages SET replay_count = 2 WHERE id = ?`, ids["e2e-orders"][0])
	rec, env := do(api.Handler(), "GET", "/admin/dlq/stats", "", adminHeaders)
	var st struct {
		ByPipeline     []inspect.PipelineCount `json:"by_pipeline"`
		RepeatFailures []inspect.RepeatFailure `json:"repeat_failures"`
	}
	json.Unmarshal(mustJSON(env.Data), &st)
	want := []inspect.PipelineCount{{Pipeline: "beers", Queue: "beer-enrichment", Pending: 1, Total: 1}, {Pipeline: "orders", Queue: "e2e-orders", Pending: 2, Total: 2}}
	if rec.Code != 200 || fmt.Sprint(st.ByPipeline) != fmt.Sprint(want) {
		t.Errorf("by_pipeline %+v, want %+v (%d)", st.ByPipeline, want, rec.Code)
	}
	if len(st.RepeatFailures) != 1 || *st.RepeatFailures[0].Pipeline != "orders" || st.RepeatFailures[0].Key != "o1" ||
		*st.RepeatFailures[0].Labels["customer"] != "ACME" {
		t.Errorf("repeat failures %+v", st.RepeatFailures)
	}
}

// GET /admin/dlq/stats?pipeline= counts that pipeline's rows, says what it
// leaves covering every pipeline, and an unknown name is 400 UNKNOWN_PIPELINE.
func TestStatsPipelineParameter(t *testing.T) {
	api, _ := pipelinesAPI(t)
	rec, env := do(api.Handler(), "GET", "/admin/dlq/stats?pipeline=orders", "", adminHeaders)
	var st struct {
		ByStatus    inspect.ByStatus        `json:"by_status"`
		ByPipeline  []inspect.PipelineCount `json:"by_pipeline"`
		Pipeline    string                  `json:"pipeline"`
		NotFiltered []string                `json:"not_filtered"`
	}
	json.Unmarshal(mustJSON(env.Data), &st)
	if rec.Code != 200 || st.ByStatus.Pending != 2 || len(st.ByPipeline) != 1 || st.ByPipeline[0].Pipeline != "orders" ||
		st.Pipeline != "orders" || len(st.NotFiltered) != 2 {
		t.Errorf("stats?pipeline=orders: %d %s", rec.Code, rec.Body)
	}
	rec, env = do(api.Handler(), "GET", "/admin/dlq/stats?pipeline=nope", "", adminHeaders)
	if rec.Code != 400 || env.Error == nil || env.Error.Code != "UNKNOWN_PIPELINE" {
		t.Errorf("stats?pipeline=nope: %d %s", rec.Code, rec.Body)
	}
}

var _ = http.MethodGet

// GET /admin/dlq/replay-tasks?pipeline= lists the tasks that can replay the
// pipeline's rows: of its queue, and of every queue; not another queue's.
func TestReplayTaskListByPipeline(t *testing.T) {
	api, _ := pipelinesAPI(t)
	api.Sender = &queuetest.Sender{}
	h := api.Handler()
	for _, f := range []string{`{"pipeline":"orders"}`, `{"source_queue":"beer-enrichment"}`, `{"beer_id":"x1"}`} {
		if rec, _ := do(h, "POST", "/admin/dlq/replay-tasks", `{"filter":`+f+`,"rate_per_minute":60}`, adminHeaders); rec.Code != 202 {
			t.Fatalf("create %s: %d %s", f, rec.Code, rec.Body)
		}
	}
	ids := func(q string) string {
		rec, _ := do(h, "GET", "/admin/dlq/replay-tasks"+q, "", adminHeaders)
		var out struct {
			Data struct {
				Tasks []struct {
					ID int64 `json:"id"`
				} `json:"tasks"`
			} `json:"data"`
		}
		if rec.Code != 200 || json.Unmarshal(rec.Body.Bytes(), &out) != nil {
			t.Fatalf("list%s: %d %s", q, rec.Code, rec.Body)
		}
		var s []string
		for _, t := range out.Data.Tasks {
			s = append(s, fmt.Sprint(t.ID))
		}
		return strings.Join(s, ",")
	}
	for q, want := range map[string]string{"": "3,2,1", "?pipeline=orders": "3,1", "?pipeline=beers": "3,2", "?pipeline=orders&limit=1": "3"} {
		if got := ids(q); got != want {
			t.Errorf("tasks%s: %s, want %s", q, got, want)
		}
	}
	rec, _ := do(h, "GET", "/admin/dlq/replay-tasks?pipeline=nope", "", adminHeaders)
	if rec.Code != 400 || !strings.Contains(rec.Body.String(), "UNKNOWN_PIPELINE") {
		t.Errorf("unknown pipeline: %d %s", rec.Code, rec.Body)
	}
}
