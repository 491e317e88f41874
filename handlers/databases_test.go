package handlers

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/config"
	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/internal/sqlitetest"
)

// ordersOwnDB is pipelinesVar with orders in its own database.
var ordersOwnDB = strings.Replace(pipelinesVar, `"consumer":"external"`, `"consumer":"external","database":"ORDERS_DB"`, 1)

// databasesAPI is an API over beers (in DB) and orders (in ORDERS_DB, its
// ids from dlq.IDBase): two rows of each, ids by queue.
func databasesAPI(t *testing.T) (*API, *sql.DB, map[string][]int64) {
	t.Helper()
	ps, problems := config.ParsePipelines(ordersOwnDB, 100, 24*time.Hour, 30*24*time.Hour)
	if len(problems) != 0 {
		t.Fatal(problems)
	}
	api, _ := newDLQAPI(t)
	orders := sqlitetest.New(t)
	if _, err := orders.Exec(dlq.SeedIDsSQL("ORDERS_DB")); err != nil {
		t.Fatal(err)
	}
	api.DBs = dlq.NewDatabases(dlq.Store{DB: api.DB}, map[string]dlq.Store{"ORDERS_DB": {DB: orders}}, ps)
	ids := map[string][]int64{}
	for i, r := range []struct {
		db          *sql.DB
		queue, body string
	}{
		{api.DB, "beer-enrichment", `{"beer_id":"b1"}`},
		{api.DB, "beer-enrichment", `{"beer_id":"b2"}`},
		{orders, "e2e-orders", `{"order":{"id":"o1"}}`},
		{orders, "e2e-orders", `{"order":{"id":"o2"}}`},
	} {
		var id int64
		if err := r.db.QueryRow(`INSERT INTO dlq_messages(message_id, row_key, failed_at, raw_message, source_queue, content_type)
			VALUES (?, ?, ?, ?, ?, 'json') RETURNING id`, fmt.Sprint("m", i), fmt.Sprint("k", i), int64(1000+i), r.body, r.queue).Scan(&id); err != nil {
			t.Fatal(err)
		}
		ids[r.queue] = append(ids[r.queue], id)
	}
	return api, orders, ids
}

// Row and task actions find the database of their rows: by id (the
// database holding it) or by the filter's pipeline; a filter naming no
// pipeline, or ids of two databases, are refused and change nothing.
func TestActionsRunInTheDatabaseOfTheirRows(t *testing.T) {
	api, orders, ids := databasesAPI(t)
	h := api.Handler()
	o1, o2, b1 := ids["e2e-orders"][0], ids["e2e-orders"][1], ids["beer-enrichment"][0]
	if o1 < dlq.IDBase("ORDERS_DB") {
		t.Fatalf("orders id %d below its base", o1)
	}
	rec, env := do(h, "GET", fmt.Sprint("/admin/dlq/", o1), "", adminHeaders)
	if rec.Code != 200 || !strings.Contains(rec.Body.String(), `"raw_message":"{\"order\":{\"id\":\"o1\"}}"`) {
		t.Fatalf("detail of an orders row: %d %s", rec.Code, rec.Body)
	}
	if rec, _ = do(h, "GET", fmt.Sprint("/admin/dlq/", b1), "", adminHeaders); rec.Code != 200 {
		t.Fatalf("detail of a beer row: %d %s", rec.Code, rec.Body)
	}
	rec, _ = do(h, "GET", "/admin/pipelines", "", adminHeaders)
	if rec.Code != 200 || !strings.Contains(rec.Body.String(), `"database":"ORDERS_DB"`) {
		t.Errorf("pipelines: %d %s", rec.Code, rec.Body)
	}
	if rec, _ = do(h, "GET", "/admin/dlq/999", "", adminHeaders); rec.Code != 404 {
		t.Fatalf("detail of no row: %d %s", rec.Code, rec.Body)
	}
	before, beforeOrders := tableState(t, api.DB), tableState(t, orders)
	for _, c := range []struct{ body, code string }{
		{fmt.Sprintf(`{"ids":[%d,%d]}`, o1, b1), "IDS_IN_SEVERAL_DATABASES"},
		{`{"filter":{"status":"pending"}}`, "PIPELINE_REQUIRED"},
	} {
		for _, route := range []string{"/admin/dlq/acknowledge", "/admin/dlq/replay"} {
			rec, env = do(h, "POST", route, c.body, adminHeaders)
			if rec.Code != 400 || env.Error == nil || env.Error.Code != c.code {
				t.Errorf("%s %s: %d %s", route, c.body, rec.Code, rec.Body)
			}
		}
	}
	if tableState(t, api.DB) != before || tableState(t, orders) != beforeOrders {
		t.Fatal("a refused action changed rows")
	}
	rec, _ = do(h, "POST", "/admin/dlq/acknowledge", fmt.Sprintf(`{"ids":[%d],"note":"n"}`, o1), adminHeaders)
	if rec.Code != 200 || count(t, orders, `SELECT COUNT(*) FROM dlq_messages WHERE status = 'acknowledged'`) != 1 ||
		count(t, orders, `SELECT COUNT(*) FROM admin_audit WHERE action = 'acknowledge'`) != 1 ||
		count(t, api.DB, `SELECT COUNT(*) FROM admin_audit`) != 0 {
		t.Fatalf("acknowledge an orders row: %d %s", rec.Code, rec.Body)
	}
	rec, _ = do(h, "POST", "/admin/dlq/replay", `{"filter":{"pipeline":"orders"}}`, adminHeaders)
	if rec.Code != 200 || count(t, orders, fmt.Sprintf(`SELECT COUNT(*) FROM dlq_messages WHERE status = 'replayed' AND id = %d`, o2)) != 1 ||
		count(t, api.DB, `SELECT COUNT(*) FROM dlq_messages WHERE status = 'pending'`) != 2 {
		t.Fatalf("replay the orders pipeline: %d %s", rec.Code, rec.Body)
	}
	if count(t, orders, `SELECT COUNT(*) FROM admin_audit WHERE action = 'replay' AND outcome = 'ok'`) != 1 {
		t.Error("the replay's audit entry is not in the orders database")
	}
	// The audit log merges the databases' entries: both are the orders
	// database's, newest first.
	var audit dlq.AuditPage
	getData(t, api, "/admin/audit", &audit)
	if len(audit.Entries) != 2 || audit.Entries[0].Action != "replay" || audit.Entries[1].Action != "acknowledge" {
		t.Errorf("audit log: %+v", audit.Entries)
	}
	// A task of a pipeline lives in its database; its id is found there.
	rec, env = do(h, "POST", "/admin/dlq/replay-tasks", `{"filter":{"pipeline":"beers"},"rate_per_minute":5}`, adminHeaders)
	if rec.Code != 202 {
		t.Fatalf("beers task: %d %s", rec.Code, rec.Body)
	}
	rec, env = do(h, "POST", "/admin/dlq/replay-tasks", `{"filter":{"pipeline":"orders","status":"pending"},"rate_per_minute":5}`, adminHeaders)
	var task struct {
		ID int64 `json:"id"`
	}
	json.Unmarshal(mustJSON(env.Data), &task)
	if rec.Code != 202 || task.ID < dlq.IDBase("ORDERS_DB") || count(t, orders, `SELECT COUNT(*) FROM replay_tasks`) != 1 {
		t.Fatalf("orders task: %d %s", rec.Code, rec.Body)
	}
	rec, env = do(h, "POST", "/admin/dlq/replay-tasks", `{"filter":{},"rate_per_minute":5}`, adminHeaders)
	if rec.Code != 400 || env.Error == nil || env.Error.Code != "PIPELINE_REQUIRED" ||
		count(t, orders, `SELECT COUNT(*) FROM replay_tasks`) != 1 || count(t, api.DB, `SELECT COUNT(*) FROM replay_tasks`) != 1 {
		t.Errorf("a task of every pipeline: %d %s", rec.Code, rec.Body)
	}
	if rec, _ = do(h, "GET", fmt.Sprint("/admin/dlq/replay-tasks/", task.ID), "", adminHeaders); rec.Code != 200 {
		t.Errorf("get the orders task: %d %s", rec.Code, rec.Body)
	}
	rec, _ = do(h, "POST", fmt.Sprint("/admin/dlq/replay-tasks/", task.ID, "/pause"), "", adminHeaders)
	if rec.Code != 200 || count(t, orders, `SELECT COUNT(*) FROM replay_tasks WHERE state = 'paused'`) != 1 {
		t.Errorf("pause the orders task: %d %s", rec.Code, rec.Body)
	}
	rec, env = do(h, "GET", "/admin/dlq/replay-tasks", "", adminHeaders)
	var list struct {
		Tasks []struct {
			ID int64 `json:"id"`
		} `json:"tasks"`
	}
	json.Unmarshal(mustJSON(env.Data), &list)
	if rec.Code != 200 || len(list.Tasks) != 2 {
		t.Errorf("tasks of every database: %d %s", rec.Code, rec.Body)
	}
	rec, env = do(h, "GET", "/admin/dlq/replay-tasks?pipeline=orders", "", adminHeaders)
	json.Unmarshal(mustJSON(env.Data), &list)
	if rec.Code != 200 || len(list.Tasks) != 1 || list.Tasks[0].ID != task.ID {
		t.Errorf("tasks of orders: %d %s", rec.Code, rec.Body)
	}
}

func count(t *testing.T, db *sql.DB, q string) int64 {
	t.Helper()
	var n int64
	if err := db.QueryRow(q).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// taskIDs lists GET /admin/dlq/replay-tasks?query's task ids in order.
func taskIDs(t *testing.T, api *API, query string) []int64 {
	t.Helper()
	var list struct {
		Tasks []struct {
			ID int64 `json:"id"`
		} `json:"tasks"`
	}
	getData(t, api, "/admin/dlq/replay-tasks"+query, &list)
	var ids []int64
	for _, x := range list.Tasks {
		ids = append(ids, x.ID)
	}
	return ids
}

// The task list of every pipeline merges the databases' tasks newest
// first (a tie on created_at: the larger id first), cut to limit; a
// pipeline's list reads its database.
func TestTaskListMergesDatabasesNewestFirst(t *testing.T) {
	api, _, _ := databasesAPI(t)
	now := time.UnixMilli(1_000_000)
	api.Clock = func() time.Time { return now }
	create := func(pipeline string, at int64) int64 {
		t.Helper()
		now = time.UnixMilli(at)
		rec, env := do(api.Handler(), "POST", "/admin/dlq/replay-tasks", `{"filter":{"pipeline":"`+pipeline+`"},"rate_per_minute":5}`, adminHeaders)
		var task struct {
			ID int64 `json:"id"`
		}
		json.Unmarshal(mustJSON(env.Data), &task)
		if rec.Code != 202 || task.ID == 0 {
			t.Fatalf("create a %s task: %d %s", pipeline, rec.Code, rec.Body)
		}
		return task.ID
	}
	b1 := create("beers", 1_000_000)
	o1 := create("orders", 2_000_000)
	b2 := create("beers", 3_000_000)
	o2 := create("orders", 3_000_000)
	if o2 < b2 {
		t.Fatalf("orders id %d below beers id %d", o2, b2)
	}
	for query, want := range map[string][]int64{
		"":                         {o2, b2, o1, b1},
		"?limit=3":                 {o2, b2, o1},
		"?limit=1":                 {o2},
		"?pipeline=beers":          {b2, b1},
		"?pipeline=orders&limit=1": {o2},
	} {
		if got := taskIDs(t, api, query); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("tasks%s: %v, want %v", query, got, want)
		}
	}
}

// Attempt reports land in the database of their queue: one report of two
// queues writes each database its own, and a report of one queue writes
// the other database nothing.
func TestAttemptsAreRecordedInTheirQueuesDatabase(t *testing.T) {
	api, orders, _ := databasesAPI(t)
	api.Auth.ReportToken = "s3cr3t"
	api.ReportQueues = func(q string) bool { return q == "e2e-orders" || q == "beer-enrichment" }
	h := api.Handler()
	rec, _ := do(h, "POST", "/admin/attempts", `{"attempts":[{"queue":"e2e-orders","message_id":"o","attempt":1,"error":"x"}]}`, bearer("s3cr3t"))
	if rec.Code != 202 || count(t, orders, `SELECT COUNT(*) FROM message_attempts WHERE message_id = 'o'`) != 1 ||
		count(t, api.DB, `SELECT COUNT(*) FROM message_attempts`) != 0 {
		t.Fatalf("orders report: %d %s", rec.Code, rec.Body)
	}
	rec, _ = do(h, "POST", "/admin/attempts", `{"attempts":[{"queue":"beer-enrichment","message_id":"b","attempt":1,"error":"x"},
		{"queue":"e2e-orders","message_id":"o2","attempt":1,"error":"y"}]}`, bearer("s3cr3t"))
	if rec.Code != 202 || count(t, orders, `SELECT COUNT(*) FROM message_attempts`) != 2 ||
		count(t, api.DB, `SELECT COUNT(*) FROM message_attempts WHERE message_id = 'b'`) != 1 ||
		count(t, api.DB, `SELECT COUNT(*) FROM message_attempts`) != 1 {
		t.Fatalf("report of two queues: %d %s", rec.Code, rec.Body)
	}
}

// An edited replay of a row in a pipeline's own database replays it there
// (its audit entry too); an id no database holds is a 404.
func TestEditedReplayRunsInTheDatabaseOfItsRow(t *testing.T) {
	api, orders, ids := databasesAPI(t)
	h := api.Handler()
	o1 := ids["e2e-orders"][0]
	rec, _ := do(h, "POST", fmt.Sprint("/admin/dlq/", o1, "/replay"), `{"body":{"order":{"id":"o1","fixed":true}},"note":"fixed"}`, adminHeaders)
	if rec.Code != 200 || count(t, orders, fmt.Sprintf(`SELECT COUNT(*) FROM dlq_messages WHERE id = %d AND status = 'replayed'`, o1)) != 1 ||
		count(t, orders, `SELECT COUNT(*) FROM admin_audit`) != 1 || count(t, api.DB, `SELECT COUNT(*) FROM admin_audit`) != 0 {
		t.Fatalf("edited replay of an orders row: %d %s", rec.Code, rec.Body)
	}
	if rec, _ = do(h, "POST", fmt.Sprint("/admin/dlq/", o1+1000, "/replay"), `{"body":{},"note":"n"}`, adminHeaders); rec.Code != 404 {
		t.Fatalf("edited replay of no row: %d %s", rec.Code, rec.Body)
	}
}

// GET /admin/metrics counts the actions on a pipeline's own database: an
// acknowledge of an orders row (counted in ORDERS_DB's counters) and one
// of a beer row (in DB's) make redrive_dlq_acknowledged_total 2.
func TestMetricsCountEveryDatabasesActions(t *testing.T) {
	api, orders, ids := databasesAPI(t)
	h := api.Handler()
	for _, id := range []int64{ids["e2e-orders"][0], ids["beer-enrichment"][0]} {
		if rec, _ := do(h, "POST", "/admin/dlq/acknowledge", fmt.Sprintf(`{"ids":[%d]}`, id), adminHeaders); rec.Code != 200 {
			t.Fatalf("acknowledge %d: %d %s", id, rec.Code, rec.Body)
		}
	}
	if count(t, orders, `SELECT value FROM counters WHERE name = 'dlq_acknowledged_total'`) != 1 {
		t.Fatal("the orders acknowledge is not counted in ORDERS_DB")
	}
	rec, _ := do(h, "GET", "/admin/metrics", "", adminHeaders)
	if rec.Code != 200 || !strings.Contains(rec.Body.String(), "\nredrive_dlq_acknowledged_total 2\n") {
		t.Fatalf("metrics: %d\n%s", rec.Code, rec.Body)
	}
}
