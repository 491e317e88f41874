package sqlitetest

import (
	"database/sql"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"testing"
)

func objects(t *testing.T, db *sql.DB) map[string]string {
	t.Helper()
	rows, err := db.Query(`SELECT type || ' ' || name, sql FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' AND name <> 'd1_migrations'`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var name string
		var ddl sql.NullString
		if err := rows.Scan(&name, &ddl); err != nil {
			t.Fatal(err)
		}
		out[name] = ddl.String
	}
	return out
}

// TestMigrationsMatchSchema applies migrations/ in order to one database and
// schema.sql to another: both must define the same tables and indexes with
// the same columns, so `wrangler d1 migrations apply` builds what tests test.
func TestMigrationsMatchSchema(t *testing.T) {
	root, err := Root()
	if err != nil {
		t.Fatal(err)
	}
	want := objects(t, New(t))
	if len(want) < 4 {
		t.Fatalf("schema.sql defines only %d objects", len(want))
	}

	files, err := filepath.Glob(filepath.Join(root, "migrations", "*.sql"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no migrations: %v", err)
	}
	sort.Strings(files)
	db := Open(t)
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.Exec(string(b)); err != nil {
			t.Fatalf("%s: %v", filepath.Base(f), err)
		}
	}
	got := objects(t, db)
	if !reflect.DeepEqual(columns(t, db, got), columns(t, New(t), want)) {
		t.Errorf("migrations and schema.sql differ:\nmigrations: %v\nschema.sql: %v", columns(t, db, got), columns(t, New(t), want))
	}
}

// columns lists each object with its column names (tables) or indexed columns (indexes).
func columns(t *testing.T, db *sql.DB, objs map[string]string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for key := range objs {
		var typ, name string
		for i := range key {
			if key[i] == ' ' {
				typ, name = key[:i], key[i+1:]
				break
			}
		}
		if typ == "trigger" {
			out[key] = []string{objs[key]}
			continue
		}
		pragma := "table_info"
		if typ == "index" {
			pragma = "index_info"
		}
		rows, err := db.Query(`SELECT name FROM pragma_`+pragma+`(?)`, name)
		if err != nil {
			t.Fatal(err)
		}
		var cols []string
		for rows.Next() {
			var c sql.NullString
			if err := rows.Scan(&c); err != nil {
				t.Fatal(err)
			}
			cols = append(cols, c.String)
		}
		rows.Close()
		out[key] = cols
	}
	return out
}
