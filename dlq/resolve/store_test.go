package resolve

import (
	"database/sql"
	"testing"
	"time"

	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/internal/sqlitetest"
)

// A repeat failure that arrives while its replay has not settled yet (row
// still `replaying`) ends the claim and counts the replay itself.
func TestSaveLineageOvertakingItsReplaySettles(t *testing.T) {
	db := sqlitetest.New(t)
	s := dlq.Store{DB: db}
	at := time.UnixMilli(1_700_000_000_000)
	save(t, s, failure("orig", `{"beer_id":"9"}`, at))
	id := count(t, db, `SELECT id FROM dlq_messages WHERE message_id = 'orig'`)
	mustExec(t, db, `UPDATE dlq_messages SET status = 'replaying', replaying_at = ? WHERE id = ?`, at.UnixMilli(), id)
	save(t, s, failure("replayed-1", `{"beer_id":"9"}`, at.Add(time.Minute)))
	var status string
	var replays int64
	var claimed sql.NullInt64
	if err := db.QueryRow(`SELECT status, replay_count, replaying_at FROM dlq_messages WHERE id = ?`, id).Scan(&status, &replays, &claimed); err != nil {
		t.Fatal(err)
	}
	if status != "pending" || replays != 1 || claimed.Valid {
		t.Fatalf("status %s replay_count %d replaying_at %v", status, replays, claimed)
	}
	if n := counter(t, db, CounterReplayed); n != 1 {
		t.Fatalf("%s = %d: the overtaken replay counts once", CounterReplayed, n)
	}
}
