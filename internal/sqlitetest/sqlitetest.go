// Package sqlitetest opens a fresh SQLite database with redrive's schema.sql
// applied, for native tests of the SQL that D1 runs in production.
package sqlitetest

import (
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"testing"

	_ "modernc.org/sqlite" // pure-Go SQLite driver "sqlite"
)

// Root returns the module root (the directory holding go.mod).
func Root() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("go.mod not found above the working directory")
		}
		dir = parent
	}
}

// Open returns an empty file-backed database in t.TempDir (closed at cleanup).
func Open(t testing.TB) *sql.DB {
	t.Helper()
	path := filepath.Join(t.TempDir(), "test.sqlite")
	db, err := sql.Open(driverName, "file:"+path+"?_pragma=journal_mode(WAL)&_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatalf("open sqlite: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// New returns a database with schema.sql applied.
func New(t testing.TB) *sql.DB {
	t.Helper()
	db := Open(t)
	root, err := Root()
	if err != nil {
		t.Fatal(err)
	}
	schema, err := os.ReadFile(filepath.Join(root, "schema.sql"))
	if err != nil {
		t.Fatalf("read schema.sql: %v", err)
	}
	if _, err := db.Exec(string(schema)); err != nil {
		t.Fatalf("apply schema.sql: %v", err)
	}
	return db
}

// Plan returns SQLite's query plan for query: one detail line per step
// ("SEARCH dlq_messages USING INTEGER PRIMARY KEY (rowid=?)", ...).
func Plan(t testing.TB, db *sql.DB, query string, args ...any) []string {
	t.Helper()
	rows, err := db.Query("EXPLAIN QUERY PLAN "+query, args...)
	if err != nil {
		t.Fatalf("explain %q: %v", query, err)
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatalf("explain scan: %v", err)
		}
		plan = append(plan, detail)
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("explain rows: %v", err)
	}
	return plan
}

// Migrated returns a database with the migrations before the file named
// before applied (e.g. "0030" for the schema as it was before 0030), and
// Migrate applies the rest: how a test builds a database at an earlier
// schema and checks what a migration does to its rows.
func Migrated(t testing.TB, before string) *sql.DB {
	t.Helper()
	db := Open(t)
	applyMigrations(t, db, func(name string) bool { return name < before })
	return db
}

// Migrate applies the migrations from the file named from on.
func Migrate(t testing.TB, db *sql.DB, from string) {
	t.Helper()
	applyMigrations(t, db, func(name string) bool { return name >= from })
}

func applyMigrations(t testing.TB, db *sql.DB, which func(string) bool) {
	t.Helper()
	root, err := Root()
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(root, "migrations", "*.sql"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no migrations: %v", err)
	}
	sort.Strings(files)
	for _, f := range files {
		if !which(filepath.Base(f)) {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.Exec(string(b)); err != nil {
			t.Fatalf("%s: %v", filepath.Base(f), err)
		}
	}
}
