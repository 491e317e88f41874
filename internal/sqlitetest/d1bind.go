package sqlitetest

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"strconv"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
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
	holder, err := withD1Limits(c)
	if err != nil {
		c.Close()
		return nil, err
	}
	return d1Conn{Conn: c, holder: holder}, nil
}

// D1Limits are the limits D1 sets that native SQLite does not (checked in
// workerd): a statement that passes natively but exceeds one of these fails
// in the worker, so every test connection has them too.
var D1Limits = map[int]int{
	sqlite3.SQLITE_LIMIT_LIKE_PATTERN_LENGTH: 50,  // "LIKE or GLOB pattern too complex"
	sqlite3.SQLITE_LIMIT_COMPOUND_SELECT:     5,   // "too many terms in compound SELECT"
	sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER:     100, // "too many SQL variables"
	// D1's maximum string, BLOB or row size (a JSON page of 3 MB is
	// SQLITE_TOOBIG in workerd, 1.2 MB is not): "string or blob too big"
	sqlite3.SQLITE_LIMIT_LENGTH: 2_000_000,
}

// withD1Limits sets D1Limits on c. modernc.org/sqlite sets limits only
// through sqlite.Limit on a *sql.Conn whose driver connection is its own, so
// c is put in a pool of its own (holder) for the call. holder then owns c:
// closing holder closes c.
func withD1Limits(c driver.Conn) (*sql.DB, error) {
	holder := sql.OpenDB(&oneConn{c: c})
	holder.SetMaxIdleConns(1)
	conn, err := holder.Conn(context.Background())
	if err != nil {
		holder.Close()
		return nil, err
	}
	defer conn.Close() // back to holder's idle pool, not closed
	for id, v := range D1Limits {
		if _, err := sqlite.Limit(conn, id, v); err != nil {
			holder.Close()
			return nil, fmt.Errorf("sqlite limit %d: %w", id, err)
		}
	}
	return holder, nil
}

// oneConn is a connector that hands out one existing connection, once.
type oneConn struct {
	c    driver.Conn
	used bool
}

func (o *oneConn) Connect(context.Context) (driver.Conn, error) {
	if o.used {
		return nil, errors.New("sqlitetest: connection already handed out")
	}
	o.used = true
	return o.c, nil
}

func (o *oneConn) Driver() driver.Driver { return d1Driver{} }

// d1Conn is a modernc.org/sqlite connection whose integer arguments are
// bound as REAL and that has D1's limits. It forwards the context-aware
// interfaces the driver has.
type d1Conn struct {
	driver.Conn
	holder *sql.DB // owns Conn (see withD1Limits)
}

// Close closes the connection through the pool that owns it.
func (c d1Conn) Close() error { return c.holder.Close() }

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

// QueryContext runs query and refuses a result whose columns the worker's
// D1 driver could not read back (platform/d1.go: rows arrive as JavaScript
// objects keyed by column name): two columns of the same name, or an
// integer-like name beside other columns.
func (c d1Conn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	if err := c.checkBindings(ctx, query, len(args)); err != nil {
		return nil, err
	}
	rows, err := c.Conn.(driver.QueryerContext).QueryContext(ctx, query, args)
	if err != nil {
		return nil, err
	}
	if err := checkColumns(rows.Columns()); err != nil {
		rows.Close()
		return nil, fmt.Errorf("%w in %q", err, query)
	}
	return rows, nil
}

// checkBindings is D1's rule that a statement gets exactly as many
// arguments as it has parameters (the largest ?NNN): "Wrong number of
// parameter bindings for SQL query" in workerd, where SQLite would bind
// the first ones and ignore the rest.
func (c d1Conn) checkBindings(_ context.Context, query string, n int) error {
	if want := parameters(query); n > 0 && want != n {
		return fmt.Errorf("sqlitetest: %d arguments for %d parameters (D1: Wrong number of parameter bindings) in %q", n, want, query)
	}
	return nil
}

// parameters is SQLite's parameter count of query (its largest ?NNN, a
// bare ? numbered one past the largest before it), outside string
// literals, quoted names and comments. (modernc.org/sqlite's NumInput
// says -1.)
func parameters(query string) int {
	n := 0
	for i := 0; i < len(query); i++ {
		switch ch := query[i]; {
		case ch == '\'' || ch == '"' || ch == '`':
			for i++; i < len(query) && query[i] != ch; i++ {
			}
		case ch == '-' && i+1 < len(query) && query[i+1] == '-':
			for i < len(query) && query[i] != '\n' {
				i++
			}
		case ch == '?':
			j := i + 1
			for j < len(query) && query[j] >= '0' && query[j] <= '9' {
				j++
			}
			if j == i+1 {
				n++
			} else if v, err := strconv.Atoi(query[i+1 : j]); err == nil {
				n = max(n, v)
			}
			i = j - 1
		}
	}
	return n
}

// checkColumns is D1-as-objects' rule for result column names.
func checkColumns(cols []string) error {
	seen := make(map[string]bool, len(cols))
	for _, c := range cols {
		if seen[c] {
			return fmt.Errorf("sqlitetest: two result columns named %q (D1 returns rows as objects: name them apart)", c)
		}
		seen[c] = true
		if _, err := strconv.Atoi(c); err == nil && len(cols) > 1 {
			return fmt.Errorf("sqlitetest: result column named %q beside others (JavaScript orders integer keys first: alias it)", c)
		}
	}
	return nil
}

func (c d1Conn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	if err := c.checkBindings(ctx, query, len(args)); err != nil {
		return nil, err
	}
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
