package upkeep

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/dlq/resolve"
	"github.com/redrive/redrive/internal/sqlitetest"
	"github.com/redrive/redrive/queue/queuetest"
)

// Retention deletes acknowledged and replayed rows without a trigger; the
// daily dlq_tally job counts them again per signature.
func TestTallyCheckRecountsSignatures(t *testing.T) {
	db := sqlitetest.New(t)
	var logs bytes.Buffer
	c := newCapture(db, &logs)
	for i := 0; i < 6; i++ {
		id := fmt.Sprintf("m%d", i)
		if err := (dlq.Attempts{DB: db}).Record(ctx, dlq.Attempt{MessageID: id, Queue: "beer-enrichment", Attempt: 4, Class: "transient", Error: fmt.Sprintf("status 50%d", i), At: t0}); err != nil {
			t.Fatal(err)
		}
		consume(t, c, queuetest.New(id, beer(fmt.Sprint(i))))
	}
	if _, err := (resolve.Acknowledge{DB: db, BulkMax: 10, Clock: func() time.Time { return t0 }}).Run(ctx,
		resolve.AcknowledgeRequest{Selection: dlq.Selection{IDs: []int64{1, 2, 3, 4}}}); err != nil {
		t.Fatal(err)
	}
	mustExec(t, db, `DELETE FROM dlq_messages WHERE id IN (1, 2)`) // as retention does
	mustExec(t, db, `INSERT INTO counters(name, value) VALUES (?, 2)`, CounterRetentionAge)
	if _, err := (&TallyCheck{DB: db}).Run(ctx, t0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	var p, a int64
	if err := db.QueryRow(`SELECT pending, acknowledged FROM dlq_signatures`).Scan(&p, &a); err != nil {
		t.Fatal(err)
	}
	if p != 2 || a != 2 || count(t, db, `SELECT COUNT(*) FROM dlq_signatures`) != 1 {
		t.Errorf("pending %d acknowledged %d, want 2 and 2 in one signature", p, a)
	}
}
