//go:build js && wasm

package platform

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"syscall/js"

	"github.com/syumai/workers/cloudflare"
)

// D1Meta is what D1 reports about one statement it ran (D1Result.meta):
// the rows it read and wrote — what D1 bills — and its duration.
type D1Meta struct {
	RowsRead    int64
	RowsWritten int64
	// DurationMS is D1's own time for the statement, in milliseconds.
	DurationMS float64
}

// OpenD1 opens the D1 binding as a *sql.DB, and as a batch runner for
// statements that must travel together. observe, when not nil, is called
// with the context and the meta of every statement either runs.
//
// The driver is redrive's own (syumai's drops the meta): queries run with
// all(), whose results are objects; their keys give the columns, so a
// statement must not return two columns of the same name, nor an
// integer-like column name beside others (JavaScript puts those keys first):
// both are reported as errors, never silently reordered.
func OpenD1(binding string, observe func(context.Context, D1Meta)) (*sql.DB, D1Batch, error) {
	db := cloudflare.GetBinding(binding)
	if db.IsUndefined() {
		return nil, D1Batch{}, fmt.Errorf("open D1 binding %s: not bound", binding)
	}
	c := &d1Connector{db: db, observe: observe}
	return sql.OpenDB(c), D1Batch{db: db, observe: observe}, nil
}

type d1Connector struct {
	db      js.Value
	observe func(context.Context, D1Meta)
}

func (c *d1Connector) Connect(context.Context) (driver.Conn, error) { return (*d1Conn)(c), nil }
func (c *d1Connector) Driver() driver.Driver                        { return d1Driver{} }

type d1Driver struct{}

func (d1Driver) Open(string) (driver.Conn, error) {
	return nil, errors.New("d1: open through platform.OpenD1")
}

// d1Conn is one "connection": D1 has none, so it is the connector itself.
type d1Conn d1Connector

func (c *d1Conn) Prepare(query string) (driver.Stmt, error) { return &d1Stmt{c: c, query: query}, nil }
func (c *d1Conn) Close() error                              { return nil }
func (c *d1Conn) Begin() (driver.Tx, error) {
	return nil, errors.New("d1: no transactions (use sqlbatch)")
}

type d1Stmt struct {
	c     *d1Conn
	query string
}

func (s *d1Stmt) Close() error  { return nil }
func (s *d1Stmt) NumInput() int { return -1 }
func (s *d1Stmt) Exec([]driver.Value) (driver.Result, error) {
	return nil, errors.New("d1: use ExecContext")
}
func (s *d1Stmt) Query([]driver.Value) (driver.Rows, error) {
	return nil, errors.New("d1: use QueryContext")
}

// run binds args, calls method ("run" or "all") and records the meta.
func (s *d1Stmt) run(ctx context.Context, method string, args []driver.NamedValue) (js.Value, error) {
	vals := make([]any, len(args))
	for i, a := range args {
		vals[i] = jsArg(a.Value)
	}
	res, err := await(ctx, s.c.db.Call("prepare", s.query).Call("bind", vals...).Call(method))
	if err != nil {
		return js.Value{}, err
	}
	observe(ctx, s.c.observe, res)
	return res, nil
}

func (s *d1Stmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	res, err := s.run(ctx, "run", args)
	if err != nil {
		return nil, err
	}
	meta := res.Get("meta")
	return d1Result{lastID: metaInt(meta, "last_row_id"), changes: metaInt(meta, "changes")}, nil
}

func (s *d1Stmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	res, err := s.run(ctx, "all", args)
	if err != nil {
		return nil, err
	}
	results := res.Get("results")
	r := &d1Rows{results: results, n: results.Length()}
	if r.n > 0 {
		keys := jsObject.Call("keys", results.Index(0))
		r.cols = make([]string, keys.Length())
		for i := range r.cols {
			r.cols[i] = keys.Index(i).String()
			if _, err := strconv.Atoi(r.cols[i]); err == nil && len(r.cols) > 1 {
				return nil, fmt.Errorf("d1: column %q: integer-like column names lose their order in D1 results", r.cols[i])
			}
		}
	}
	return r, nil
}

// jsArg converts a bound value: []byte as a Uint8Array, the rest as is.
func jsArg(v driver.Value) any {
	if b, ok := v.([]byte); ok {
		u := uint8Array.New(len(b))
		js.CopyBytesToJS(u, b)
		return u
	}
	return v
}

// observe reports a D1Result's meta.
func observe(ctx context.Context, f func(context.Context, D1Meta), res js.Value) {
	if f == nil {
		return
	}
	meta := res.Get("meta")
	if meta.IsUndefined() || meta.IsNull() {
		return
	}
	m := D1Meta{RowsRead: metaInt(meta, "rows_read"), RowsWritten: metaInt(meta, "rows_written")}
	if d := meta.Get("duration"); d.Type() == js.TypeNumber {
		m.DurationMS = d.Float()
	}
	f(ctx, m)
}

func metaInt(meta js.Value, key string) int64 {
	if meta.IsUndefined() || meta.IsNull() {
		return 0
	}
	if v := meta.Get(key); v.Type() == js.TypeNumber {
		return int64(v.Float())
	}
	return 0
}

type d1Result struct{ lastID, changes int64 }

func (r d1Result) LastInsertId() (int64, error) { return r.lastID, nil }
func (r d1Result) RowsAffected() (int64, error) { return r.changes, nil }

// d1Rows reads all()'s array of row objects.
type d1Rows struct {
	results js.Value
	cols    []string
	n, next int
}

func (r *d1Rows) Columns() []string { return r.cols }
func (r *d1Rows) Close() error      { return nil }

func (r *d1Rows) Next(dest []driver.Value) error {
	if r.next >= r.n {
		return io.EOF
	}
	row := r.results.Index(r.next)
	r.next++
	if len(dest) != len(r.cols) {
		return fmt.Errorf("d1: %d columns, %d destinations", len(r.cols), len(dest))
	}
	for i, c := range r.cols {
		v, err := goValue(row.Get(c))
		if err != nil {
			return fmt.Errorf("d1: column %s: %w", c, err)
		}
		dest[i] = v
	}
	return nil
}

// goValue converts a D1 value (null, number, string, ArrayBuffer or array
// of bytes) to a driver.Value; integral numbers become int64.
func goValue(v js.Value) (driver.Value, error) {
	switch v.Type() {
	case js.TypeNull, js.TypeUndefined:
		return nil, nil
	case js.TypeNumber:
		f := v.Float()
		if !math.IsNaN(f) && !math.IsInf(f, 0) && f == math.Trunc(f) && math.Abs(f) < 1<<63 {
			return int64(f), nil
		}
		return f, nil
	case js.TypeString:
		return v.String(), nil
	case js.TypeObject:
		u := uint8Array.New(v)
		b := make([]byte, u.Length())
		js.CopyBytesToGo(b, u)
		return b, nil
	}
	return nil, fmt.Errorf("unexpected value of type %s", v.Type())
}
