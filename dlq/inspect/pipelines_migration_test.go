package inspect

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/internal/sqlitetest"
)

// Rows written before pipelines are in the beer pipeline with no data
// migration: a database built by migrations/ in order, with rows inserted
// at the first schema (as the first release stored them) and at today's
// (every migration applied), lists every row as pipeline beers, key =
// beer_id, labels beer_name and brewer, and ?pipeline=beers finds them all.
func TestRowsOfTodaysSchemaAreInTheBeerPipeline(t *testing.T) {
	t.Parallel()
	ps := withPipelines(t)
	root, err := sqlitetest.Root()
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(root, "migrations", "*.sql"))
	if err != nil || len(files) < 2 {
		t.Fatalf("migrations: %v %v", files, err)
	}
	sort.Strings(files)
	db := sqlitetest.Open(t)
	for i, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.Exec(string(b)); err != nil {
			t.Fatalf("%s: %v", filepath.Base(f), err)
		}
		if i == 0 {
			// The first release's capture: no source_queue given (its default).
			mustExec(t, db, `INSERT INTO dlq_messages(message_id, beer_id, beer_name, brewer, failed_at, raw_message)
				VALUES ('old-1', 'b-old', 'Old Ale', 'Old Brewer', 1000, '{"beer_id":"b-old"}')`)
		}
	}
	// Today's schema, every migration applied: a row as today's capture writes it.
	mustExec(t, db, `INSERT INTO dlq_messages(message_id, row_key, label_1, failed_at, raw_message, source_queue, last_message_id)
		VALUES ('new-1', 'b-new', 'New IPA', 2000, '{"beer_id":"b-new"}', 'beer-enrichment', 'new-1')`)
	dbs := dlq.NewDatabases(dlq.Store{DB: db}, nil, ps)
	for _, q := range []string{"", "beers"} {
		page, err := List{DBs: dbs}.Page(ctx, ListParams{Limit: 10, Filter: dlq.Filter{Status: dlq.StatusAll, Pipeline: q}})
		if err != nil {
			t.Fatal(err)
		}
		var rows []dlq.Message
		if err := json.Unmarshal(page.Messages, &rows); err != nil || len(rows) != 2 {
			t.Fatalf("pipeline %q: %s %v", q, page.Messages, err)
		}
		for _, m := range rows {
			if m.Pipeline == nil || *m.Pipeline != "beers" || m.Key != m.BeerID || len(m.Labels) != 2 || *m.Labels["beer_name"] != *m.BeerName {
				t.Errorf("row %s: pipeline %v key %q labels %v", m.MessageID, m.Pipeline, m.Key, m.Labels)
			}
		}
		if rows[1].MessageID != "old-1" || *rows[1].Labels["brewer"] != "Old Brewer" || rows[0].Labels["brewer"] != nil {
			t.Errorf("rows %+v", rows)
		}
	}
	page, err := List{DBs: dbs}.Page(ctx, ListParams{Limit: 10, Filter: dlq.Filter{Status: dlq.StatusAll, Pipeline: "orders"}})
	if err != nil || string(page.Messages) != "[]" {
		t.Errorf("orders: %s %v", page.Messages, err)
	}
}
