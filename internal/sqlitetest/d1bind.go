package sqlitetest

import (
	"context"
	"database/sql"
	"database/sql/driver"

	"modernc.org/sqlite"
)

// driverName is SQLite that binds arguments as D1 does. In the worker a Go
// integer reaches D1 as a JavaScript number, which D1 binds as REAL: stored
// in an INTEGER column it becomes an integer again, but in an expression it
// stays REAL (`json_object('n', ?)` writes 100.0, `SELECT ?` returns
// 100.0). Native tests see the same.
const driverName = "sqlite-d1-binding"

func init() { sql.Register(driverName, d1Driver{}) }

type d1Driver struct{}

func (d1Driver) Open(name string) (driver.Conn, error) {
	c, err := (&sqlite.Driver{}).Open(name)
	if err != nil {
		return nil, err
	}
	return d1Conn{c}, nil
}

// d1Conn is a modernc.org/sqlite connection whose integer arguments are
// bound as REAL. It forwards the context-aware interfaces the driver has.
type d1Conn struct{ driver.Conn }

func (c d1Conn) CheckNamedValue(nv *driver.NamedValue) error {
	v, err := driver.DefaultParameterConverter.ConvertValue(nv.Value)
	if err != nil {
		return err
	}
	if i, ok := v.(int64); ok {
		v = float64(i)
	}
	nv.Value = v
	return nil
}

func (c d1Conn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	return c.Conn.(driver.QueryerContext).QueryContext(ctx, query, args)
}

func (c d1Conn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	return c.Conn.(driver.ExecerContext).ExecContext(ctx, query, args)
}

func (c d1Conn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	return c.Conn.(driver.ConnPrepareContext).PrepareContext(ctx, query)
}

func (c d1Conn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	return c.Conn.(driver.ConnBeginTx).BeginTx(ctx, opts)
}

func (c d1Conn) ResetSession(ctx context.Context) error {
	return c.Conn.(driver.SessionResetter).ResetSession(ctx)
}
