package upkeep

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"testing"

	"github.com/redrive/redrive/dlq/dlqtest"
	"github.com/redrive/redrive/internal/sqlitetest"
)

// Migration 0034 renames dlq_messages' beer_id, beer_name and brewer to
// row_key, label_1 and label_2, and dlq_tally's brewer_key to label_key,
// without writing a row: every row keeps its values under the new names,
// the counts stay as they were, and the triggers that keep them follow the
// renamed columns (a pending row whose second label changes moves its
// count).
func TestMigration0034RenamesWithoutWritingARow(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := sqlitetest.Migrated(t, "0034")
	mustExec(t, db, `INSERT INTO dlq_messages(message_id, last_message_id, beer_id, beer_name, brewer, failed_at, status, acknowledged_at, source_queue) VALUES
		('m1', 'm1', 'k1', 'One', 'A', 1000, 'pending', NULL, 'beer-enrichment'),
		('m2', 'm2', 'k2', NULL, 'A', 2000, 'pending', NULL, 'orders'),
		('m3', 'm3', 'k3', 'Three', NULL, 3000, 'pending', NULL, 'orders'),
		('m4', 'm4', 'k1', 'One', 'B', 4000, 'acknowledged', 5000, 'beer-enrichment')`)
	before := dlqtest.Keyed(t, db, `SELECT status || '|' || source_queue || '|' || brewer_key, n FROM dlq_tally WHERE n <> 0`)
	if len(before) != 4 {
		t.Fatalf("tally before 0034: %v", before)
	}
	rows := `SELECT id || '|' || message_id || '|' || %s || '|' || COALESCE(%s, '-') || '|' || COALESCE(%s, '-') || '|' || status, failed_at FROM dlq_messages`
	old := dlqtest.Keyed(t, db, fmt.Sprintf(rows, "beer_id", "beer_name", "brewer"))

	root, err := sqlitetest.Root()
	if err != nil {
		t.Fatal(err)
	}
	ddl, err := os.ReadFile(filepath.Join(root, "migrations", "0034_generic_names.sql"))
	if err != nil {
		t.Fatal(err)
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	changes := func() (n int64) {
		if err := conn.QueryRowContext(ctx, `SELECT total_changes()`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	c0 := changes()
	if _, err := conn.ExecContext(ctx, string(ddl)); err != nil {
		t.Fatal(err)
	}
	if c := changes() - c0; c != 0 {
		t.Errorf("0034 wrote %d rows, want 0 (a rename is a schema change only)", c)
	}
	conn.Close()

	if got := dlqtest.Keyed(t, db, fmt.Sprintf(rows, "row_key", "label_1", "label_2")); !maps.Equal(got, old) {
		t.Errorf("rows after 0034:\n%v\nwant\n%v", got, old)
	}
	if got := dlqtest.TallyRows(t, db); !maps.Equal(got, before) || !maps.Equal(got, dlqtest.WantTally(t, db)) {
		t.Errorf("tally after 0034: %v, before %v, recounted %v", got, before, dlqtest.WantTally(t, db))
	}
	mustExec(t, db, `UPDATE dlq_messages SET label_2 = 'C' WHERE message_id = 'm1'`)
	mustExec(t, db, `DELETE FROM dlq_messages WHERE message_id = 'm2'`)
	mustExec(t, db, `INSERT INTO dlq_messages(message_id, last_message_id, row_key, label_2, failed_at, source_queue) VALUES ('m5', 'm5', 'k5', 'A', 6000, 'orders')`)
	got, want := dlqtest.TallyRows(t, db), dlqtest.WantTally(t, db)
	if !maps.Equal(got, want) || got["pending|beer-enrichment|=C"] != 1 || got["pending|beer-enrichment|=A"] != 0 || got["pending|orders|=A"] != 1 {
		t.Errorf("tally after a move, a delete and an insert: %v, recounted %v", got, want)
	}
}
