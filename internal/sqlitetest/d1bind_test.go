package sqlitetest

import (
	"context"
	"strings"
	"testing"
)

// Every test connection has D1's limits, so a statement that D1 refuses
// fails natively too. Two connections are held at once: the pool's second
// connection has the limits as well.
func TestConnectionsHaveD1Limits(t *testing.T) {
	db := New(t)
	ctx := context.Background()
	for i := range 2 {
		conn, err := db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()

		var n int
		pattern := "%" + strings.Repeat("x", 48) + "%" // 50 bytes: allowed
		if err := conn.QueryRowContext(ctx, `SELECT 'x' LIKE ?`, pattern).Scan(&n); err != nil {
			t.Fatalf("conn %d: a 50-byte LIKE pattern: %v", i, err)
		}
		err = conn.QueryRowContext(ctx, `SELECT 'x' LIKE ?`, pattern+"x").Scan(&n)
		if err == nil || !strings.Contains(err.Error(), "LIKE or GLOB pattern too complex") {
			t.Fatalf("conn %d: a 51-byte LIKE pattern: %v, want D1's error", i, err)
		}

		five := strings.Repeat("SELECT 1 UNION ALL ", 4) + "SELECT 1"
		if _, err := conn.ExecContext(ctx, five); err != nil {
			t.Fatalf("conn %d: 5 compound terms: %v", i, err)
		}
		_, err = conn.ExecContext(ctx, "SELECT 1 UNION ALL "+five)
		if err == nil || !strings.Contains(err.Error(), "too many terms in compound SELECT") {
			t.Fatalf("conn %d: 6 compound terms: %v, want D1's error", i, err)
		}

		args := make([]any, 101)
		for j := range args {
			args[j] = j
		}
		marks := strings.TrimSuffix(strings.Repeat("?,", 100), ",")
		if _, err := conn.ExecContext(ctx, "SELECT "+marks, args[:100]...); err != nil {
			t.Fatalf("conn %d: 100 parameters: %v", i, err)
		}
		_, err = conn.ExecContext(ctx, "SELECT "+marks+",?", args...)
		if err == nil || !strings.Contains(err.Error(), "too many SQL variables") {
			t.Fatalf("conn %d: 101 parameters: %v, want D1's error", i, err)
		}
	}
}

// Results the worker's D1 driver could not read back are refused natively.
func TestResultColumnsMustSurviveD1Objects(t *testing.T) {
	db := Open(t)
	for _, q := range []string{`SELECT 1, 2`, `SELECT 'a' AS x, 'b' AS x`, `SELECT 0 AS n, 'x' AS "0"`} {
		if rows, err := db.Query(q); err == nil {
			rows.Close()
			t.Errorf("%s: accepted", q)
		}
	}
	for _, q := range []string{`SELECT 1`, `SELECT 1 AS a, 2 AS b`, `SELECT COUNT(*) FROM sqlite_master`} {
		rows, err := db.Query(q)
		if err != nil {
			t.Errorf("%s: %v", q, err)
			continue
		}
		rows.Close()
	}
}
