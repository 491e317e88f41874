package sqlbatch

import (
	"context"
	"database/sql"
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/internal/sqlitetest"
)

func TestTxReturnsEachStatementsRows(t *testing.T) {
	db := sqlitetest.Open(t)
	if _, err := db.Exec(`CREATE TABLE t(id INTEGER PRIMARY KEY, name TEXT, score REAL)`); err != nil {
		t.Fatal(err)
	}
	got, err := Tx{DB: db}.Batch(context.Background(),
		Stmt{SQL: `INSERT INTO t(name, score) VALUES (?, ?), (?, ?)`, Args: []any{"a", 1.5, "b", nil}},
		Stmt{SQL: `UPDATE t SET name = upper(name) WHERE id = ? RETURNING id, name, score`, Args: []any{int64(1)}},
		Stmt{SQL: `SELECT COUNT(*) AS n FROM t`})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{`[]`, `[{"id":1,"name":"A","score":1.5}]`, `[{"n":2}]`}
	for i := range want {
		if string(got[i]) != want[i] {
			t.Errorf("statement %d: %s, want %s", i+1, got[i], want[i])
		}
	}
}

// A failing statement undoes the ones before it: the batch is all or nothing.
func TestTxIsAllOrNothing(t *testing.T) {
	db := sqlitetest.Open(t)
	if _, err := db.Exec(`CREATE TABLE t(id INTEGER PRIMARY KEY, name TEXT NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	_, err := Tx{DB: db}.Batch(context.Background(),
		Stmt{SQL: `INSERT INTO t(name) VALUES ('kept?')`},
		Stmt{SQL: `INSERT INTO t(name) VALUES (NULL)`})
	if err == nil || !strings.Contains(err.Error(), "batch statement 2") {
		t.Fatalf("err = %v, want statement 2's NOT NULL failure", err)
	}
	var n int
	if err := db.QueryRow(`SELECT COUNT(*) FROM t`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("%d rows after a failed batch (err %v), want 0", n, err)
	}
}

// A batch refuses an argument D1 could not bind, natively as in the worker.
func TestBatchRefusesWhatD1CannotBind(t *testing.T) {
	for _, a := range []any{sql.NullInt64{Int64: 1, Valid: true}, 1, true, time.Now()} {
		if err := CheckArgs([]any{int64(1), a}); err == nil || !strings.Contains(err.Error(), "argument 2") {
			t.Errorf("%T: %v", a, err)
		}
	}
	if err := CheckArgs([]any{int64(1), 1.5, "s", []byte("b"), nil}); err != nil {
		t.Fatal(err)
	}
}
