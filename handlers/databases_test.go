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
	dlq.SetPipelines(ps)
	t.Cleanup(func() { dlq.SetPipelines([]config.Pipeline{config.BeerPipeline()}) })
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
		if err := r.db.QueryRow(`INSERT INTO dlq_messages(message_id, beer_id, failed_at, raw_message, source_queue, content_type)
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
	if rec, _ = do(h, "POST", "/admin/dlq/replay-tasks", `{"filter":{},"rate_per_minute":5}`, adminHeaders); rec.Code != 400 {
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
