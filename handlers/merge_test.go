package handlers

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/config"
	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/dlq/inspect"
	"github.com/redrive/redrive/internal/sqlitetest"
)

// mergeAPI is an API whose orders and tickets pipelines keep their
// rows in databases of their own: nothing in the shared one, 23 orders
// failures, 3 tickets failures (failed_at values shared between them).
func mergeAPI(t *testing.T) *API {
	t.Helper()
	ps, problems := config.ParsePipelines(`[
{"name":"beers","queue":"beer-enrichment","dlq":"beer-enrichment-dlq","producer":"ENRICHMENT_QUEUE","key":"/beer_id","labels":[],"consumer":"redrive"},
{"name":"orders","queue":"orders","dlq":"orders-dlq","producer":"ORDERS","key":"/id","labels":[],"consumer":"external","database":"ORDERS_DB"},
{"name":"tickets","queue":"tickets","dlq":"tickets-dlq","producer":"TICKETS","key":"/id","labels":[],"consumer":"external","database":"TICKETS_DB"}]`,
		100, 24*time.Hour, 30*24*time.Hour)
	if len(problems) != 0 {
		t.Fatal(problems)
	}
	api := newAPI(t)
	others := map[string]dlq.Store{}
	for _, name := range []string{"ORDERS_DB", "TICKETS_DB"} {
		db := sqlitetest.New(t)
		if _, err := db.Exec(dlq.SeedIDsSQL(name)); err != nil {
			t.Fatal(err)
		}
		others[name] = dlq.Store{DB: db}
	}
	api.DBs = dlq.NewDatabases(dlq.Store{DB: api.DB}, others, ps)
	t0 := time.Now().Add(-time.Hour).Truncate(time.Second)
	for q, n := range map[string]int{"orders": 23, "tickets": 3} {
		var fs []dlq.Failure
		for i := range n {
			id := fmt.Sprintf("%s-%d", q, i)
			fs = append(fs, dlq.Failure{MessageID: id, SourceQueue: q, Body: `{"id":"` + id + `"}`, Class: "permanent",
				Reason: "status 400: " + []string{"alpha", "bravo"}[i%2], FailedAt: t0.Add(time.Duration(i) * time.Second)})
		}
		if err := api.DBs.Of(q).Put(context.Background(), fs); err != nil {
			t.Fatal(err)
		}
	}
	return api
}

// getData GETs path and returns the envelope's data, failing unless 200.
func getData(t *testing.T, api *API, path string, v any) {
	t.Helper()
	rec, env := do(api.Handler(), "GET", path, "", adminHeaders)
	if rec.Code != 200 || !env.Success {
		t.Fatalf("GET %s: %d %.300s", path, rec.Code, rec.Body)
	}
	js, _ := json.Marshal(env.Data)
	if err := json.Unmarshal(js, v); err != nil {
		t.Fatal(err)
	}
}

// Over the HTTP API the list with no pipeline filter walks both other
// databases' rows once, newest first, its total the sum; a pipeline filter
// reads its own; stats, groups and the time series cover both; a tampered
// merged cursor is a 400 INVALID_CURSOR envelope.
func TestAPIMergesDatabases(t *testing.T) {
	api := mergeAPI(t)
	seen := map[float64]bool{}
	last, cursor := int64(1<<62), ""
	for pages := 0; ; pages++ {
		var page struct {
			Messages []struct {
				ID       float64 `json:"id"`
				FailedAt int64   `json:"failed_at"`
			} `json:"messages"`
			TotalCount int64   `json:"total_count"`
			NextCursor *string `json:"next_cursor"`
		}
		getData(t, api, "/admin/dlq?limit=4&cursor="+url.QueryEscape(cursor), &page)
		if page.TotalCount != 26 || pages > 10 {
			t.Fatalf("page %d: total %d", pages, page.TotalCount)
		}
		for _, m := range page.Messages {
			if seen[m.ID] || m.FailedAt > last {
				t.Fatalf("row %v listed twice or out of order", m.ID)
			}
			seen[m.ID], last = true, m.FailedAt
		}
		if page.NextCursor == nil {
			break
		}
		cursor = *page.NextCursor
		if pages == 1 {
			rec, env := do(api.Handler(), "GET", "/admin/dlq?limit=4&cursor="+url.QueryEscape(cursor[:len(cursor)-2]+"AA"), "", adminHeaders)
			if rec.Code != 400 || env.Error == nil || env.Error.Code != "INVALID_CURSOR" {
				t.Fatalf("tampered cursor: %d %s", rec.Code, rec.Body)
			}
		}
	}
	if len(seen) != 26 {
		t.Fatalf("listed %d rows, want 26", len(seen))
	}
	var tickets struct {
		Messages   []json.RawMessage `json:"messages"`
		TotalCount int64             `json:"total_count"`
	}
	getData(t, api, "/admin/dlq?pipeline=tickets", &tickets)
	if len(tickets.Messages) != 3 || tickets.TotalCount != 3 {
		t.Fatalf("tickets %+v", tickets)
	}
	var stats inspect.StatsReport
	getData(t, api, "/admin/dlq/stats", &stats)
	if stats.ByStatus.Pending != 26 || len(stats.ByPipeline) != 3 || stats.ByPipeline[1].Pending != 23 || stats.ByPipeline[2].Pending != 3 {
		t.Fatalf("stats %+v", stats)
	}
	var groups inspect.GroupsPage
	getData(t, api, "/admin/dlq/groups?limit=1", &groups)
	if len(groups.Groups) != 1 || groups.Groups[0].Counts.Pending != 12 || !groups.HasMore {
		t.Fatalf("groups %+v", groups)
	}
	var series inspect.Series
	getData(t, api, "/admin/dlq/timeseries", &series)
	if series.Total != 26 {
		t.Fatalf("series total %d", series.Total)
	}
	var audit dlq.AuditPage
	getData(t, api, "/admin/audit?limit=2", &audit)
	rec, _ := do(api.Handler(), "GET", "/admin/metrics", "", adminHeaders)
	for _, want := range []string{`redrive_dlq_messages{pipeline="orders",source_queue="orders",status="pending"} 23`,
		`redrive_dlq_messages{pipeline="tickets",source_queue="tickets",status="pending"} 3`, "redrive_dlq_captured_total 26"} {
		if rec.Code != 200 || !strings.Contains(rec.Body.String(), want+"\n") {
			t.Errorf("metrics: no %s in %d %.2000s", want, rec.Code, rec.Body)
		}
	}
	rec, env := do(api.Handler(), "GET", "/admin/dlq?pipeline=nope", "", adminHeaders)
	if rec.Code != 400 || env.Error == nil {
		t.Fatalf("unknown pipeline: %d %s", rec.Code, rec.Body)
	}
}

// A merged NDJSON export with include_raw gives every row, of any
// database, the fields a copy of it needs (its signature among them), once.
func TestMergedExportAddsMoveFieldsFromEachRowsDatabase(t *testing.T) {
	api := mergeAPI(t)
	// Two rows in the shared database too: the newest, and one among the
	// oldest page's orders and tickets rows (mergeAPI's start from t0), so
	// that the rows left for the later databases are not at the positions
	// they are in what is left.
	t0 := time.Now().Add(-time.Hour).Truncate(time.Second)
	var fs []dlq.Failure
	for i, at := range []time.Time{t0.Add(1500 * time.Millisecond), t0.Add(time.Minute)} {
		id := fmt.Sprint("b", i)
		fs = append(fs, dlq.Failure{MessageID: id, SourceQueue: "beer-enrichment", Body: `{"beer_id":"` + id + `"}`, Class: "permanent",
			Reason: "status 400: charlie", FailedAt: at})
	}
	if err := api.DBs.Of("beer-enrichment").Put(context.Background(), fs); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"", "&pipeline=tickets"} {
		rec, _ := do(api.Handler(), "GET", "/admin/dlq/export?format=ndjson&include_raw=true&limit=100"+q, "", adminHeaders)
		if rec.Code != 200 {
			t.Fatalf("export %q: %d %s", q, rec.Code, rec.Body)
		}
		lines := strings.Split(strings.TrimSpace(rec.Body.String()), "\n")
		want := map[string]int{"": 28, "&pipeline=tickets": 3}[q]
		if len(lines) != want {
			t.Fatalf("export %q: %d lines, want %d", q, len(lines), want)
		}
		ids := map[string]bool{}
		for _, l := range lines {
			var m map[string]json.RawMessage
			if err := json.Unmarshal([]byte(l), &m); err != nil {
				t.Fatalf("export %q: %v: %s", q, err, l)
			}
			if strings.Count(l, `"body_hash":`) != 1 || len(m["signature"]) < 3 {
				t.Fatalf("export %q: a line without its move fields, or with them twice: %s", q, l)
			}
			ids[string(m["id"])] = true
		}
		if len(ids) != want {
			t.Fatalf("export %q: %d distinct rows in %d lines", q, len(ids), want)
		}
	}
}

// An export of one pipeline, one source queue or one named database reads
// that database alone, its move fields too: with ORDERS_DB closed, the
// tickets rows still export whole (a merged read of every database would
// fail on it).
func TestExportOfOneDatabaseReadsNoOther(t *testing.T) {
	api := mergeAPI(t)
	if err := api.DBs.All[1].DB.Close(); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"pipeline=tickets", "source_queue=tickets", "database=TICKETS_DB"} {
		rec, _ := do(api.Handler(), "GET", "/admin/dlq/export?format=ndjson&include_raw=true&limit=100&"+q, "", adminHeaders)
		lines := strings.Split(strings.TrimSpace(rec.Body.String()), "\n")
		if rec.Code != 200 || len(lines) != 3 {
			t.Fatalf("export %s: %d %.500s", q, rec.Code, rec.Body)
		}
		for _, l := range lines {
			if !strings.Contains(l, `"source_queue":"tickets"`) || strings.Count(l, `"body_hash":`) != 1 || !strings.Contains(l, `"signature":{`) {
				t.Fatalf("export %s: a line without its move fields: %s", q, l)
			}
		}
	}
}

// With several databases bound, a single-database cursor is bound to its
// database: one made by the tickets pipeline's list (TICKETS_DB) is a 400
// INVALID_CURSOR for an export of DB or ORDERS_DB (whose ids it would
// skip), and is taken by an export of TICKETS_DB, which continues it.
func TestSingleDatabaseCursorIsBoundToItsDatabase(t *testing.T) {
	api := mergeAPI(t)
	var page struct {
		NextCursor *string `json:"next_cursor"`
	}
	getData(t, api, "/admin/dlq?pipeline=tickets&status=all&limit=1", &page)
	if page.NextCursor == nil {
		t.Fatal("no cursor")
	}
	c := url.QueryEscape(*page.NextCursor)
	for _, db := range []string{"DB", "ORDERS_DB"} {
		rec, env := do(api.Handler(), "GET", "/admin/dlq/export?format=ndjson&pipeline=tickets&status=all&database="+db+"&cursor="+c, "", adminHeaders)
		if rec.Code != 400 || env.Error == nil || env.Error.Code != "INVALID_CURSOR" {
			t.Fatalf("export of %s with a TICKETS_DB cursor: %d %.300s", db, rec.Code, rec.Body)
		}
	}
	rec, _ := do(api.Handler(), "GET", "/admin/dlq/export?format=ndjson&pipeline=tickets&status=all&database=TICKETS_DB&cursor="+c, "", adminHeaders)
	if rec.Code != 200 || strings.Count(rec.Body.String(), "\n") != 2 {
		t.Fatalf("export of TICKETS_DB with its cursor: %d %.300s", rec.Code, rec.Body)
	}
}
