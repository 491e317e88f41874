package sqlitetest

import (
	"database/sql"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
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

// columns lists each object with its column names (tables) or indexed
// columns and partial condition (indexes).
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
		if typ == "index" {
			// A partial index's condition: the text after its WHERE.
			if i := strings.LastIndex(strings.ToUpper(objs[key]), " WHERE "); i >= 0 {
				cols = append(cols, "WHERE "+strings.Join(strings.Fields(objs[key][i+7:]), " "))
			}
		}
		out[key] = cols
	}
	return out
}

// TestNoRedundantIndexes: every index costs each insert, update and delete
// of its table, so none may be a left prefix of another index on the same
// table (an index ends with the rowid, so (a, id) on an INTEGER PRIMARY KEY
// table equals (a)). UNIQUE indexes are constraints and always kept, and
// a partial index is not redundant with a full one (it holds, and a query
// through it reads, only the rows of its WHERE).
func TestNoRedundantIndexes(t *testing.T) {
	db := New(t)
	rows, err := db.Query(`SELECT m.tbl_name, i.name, i."unique", i.partial,
			(SELECT group_concat(CASE WHEN c.cid = -1 THEN 'rowid' ELSE c.name END, ',')
				FROM pragma_index_xinfo(i.name) AS c WHERE c.key = 1 OR c.cid = -1)
		FROM sqlite_master AS m, pragma_index_list(m.name) AS i WHERE m.type = 'table'`)
	if err != nil {
		t.Fatal(err)
	}
	type index struct {
		table, name, cols string
		unique, partial   bool
	}
	var idx []index
	for rows.Next() {
		var x index
		if err := rows.Scan(&x.table, &x.name, &x.unique, &x.partial, &x.cols); err != nil {
			t.Fatal(err)
		}
		idx = append(idx, x)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	pk := map[string]string{} // table -> its INTEGER PRIMARY KEY column (a rowid alias)
	for _, x := range idx {
		if _, ok := pk[x.table]; ok {
			continue
		}
		var col sql.NullString
		db.QueryRow(`SELECT name FROM pragma_table_info(?) WHERE pk = 1 AND type = 'INTEGER'
			AND (SELECT COUNT(*) FROM pragma_table_info(?) WHERE pk > 0) = 1`, x.table, x.table).Scan(&col)
		pk[x.table] = col.String
	}
	norm := func(x index) string {
		if p := pk[x.table]; p != "" {
			x.cols = strings.ReplaceAll(x.cols+",", ","+p+",rowid,", ",rowid,")
			x.cols = strings.TrimSuffix(x.cols, ",")
		}
		return x.cols + ","
	}
	if len(idx) < 10 {
		t.Fatalf("found only %d indexes", len(idx))
	}
	for _, a := range idx {
		for _, b := range idx {
			if a.name == b.name || a.table != b.table || a.unique || (a.partial && !b.partial) {
				continue
			}
			// a without its trailing rowid is a prefix of b.
			if strings.HasPrefix(norm(b), strings.TrimSuffix(norm(a), "rowid,")) {
				t.Errorf("index %s (%s) is redundant with %s (%s)", a.name, a.cols, b.name, b.cols)
			}
		}
	}
}
