// Package sqlbatch sends several SQL statements to the database in one round
// trip, all or nothing: D1's batch() in the worker (platform.D1Batch), one
// database/sql transaction natively (Tx). D1 has no interactive
// transactions, so a batch cannot branch on its own results: statements
// that depend on each other compute what they need in SQL.
package sqlbatch

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
)

// Stmt is one SQL statement and its arguments (int64, float64, string, nil).
type Stmt struct {
	SQL  string
	Args []any
}

// Runner runs statements in order, in one round trip, all or nothing: when
// one fails, none of them has any effect. It returns each statement's rows
// as a JSON array of objects keyed by column name ([] when it has none).
type Runner interface {
	Batch(ctx context.Context, stmts ...Stmt) ([]json.RawMessage, error)
}

// CheckArgs fails on an argument D1's batch cannot bind: the worker hands
// each to JavaScript as it is (platform.D1Batch), and anything but int64,
// float64, string, []byte and nil panics there ("ValueOf: invalid value"),
// though database/sql would convert it natively (sql.NullInt64, int, bool).
func CheckArgs(args []any) error {
	for i, a := range args {
		switch a.(type) {
		case int64, float64, string, []byte, nil:
		default:
			return fmt.Errorf("argument %d is a %T: a batch takes int64, float64, string, []byte or nil", i+1, a)
		}
	}
	return nil
}

// Tx is the Runner over database/sql: one transaction. It serves the
// native tests (SQLite); D1's driver has no transactions.
type Tx struct{ DB *sql.DB }

// Batch runs stmts in one transaction and rolls it back on the first error.
func (t Tx) Batch(ctx context.Context, stmts ...Stmt) ([]json.RawMessage, error) {
	tx, err := t.DB.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("batch begin: %w", err)
	}
	defer tx.Rollback() // a no-op after Commit
	out := make([]json.RawMessage, len(stmts))
	for i, s := range stmts {
		if err := CheckArgs(s.Args); err != nil {
			return nil, fmt.Errorf("batch statement %d: %w", i+1, err)
		}
		if out[i], err = query(ctx, tx, s); err != nil {
			return nil, fmt.Errorf("batch statement %d: %w", i+1, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("batch commit: %w", err)
	}
	return out, nil
}

func query(ctx context.Context, tx *sql.Tx, s Stmt) (json.RawMessage, error) {
	rows, err := tx.QueryContext(ctx, s.SQL, s.Args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	out := []map[string]any{}
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		row := make(map[string]any, len(cols))
		for i, c := range cols {
			if b, ok := vals[i].([]byte); ok {
				vals[i] = string(b) // TEXT, as D1 returns it
			}
			row[c] = vals[i]
		}
		out = append(out, row)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return json.Marshal(out)
}
