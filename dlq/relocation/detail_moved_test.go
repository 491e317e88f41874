package relocation

import (
	"bytes"
	"database/sql"
	"testing"
	"time"

	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/dlq/inspect"
	"github.com/redrive/redrive/dlq/resolve"
)

// A row moved to its pipeline's own database keeps the audit of what was
// done to it before the move: its detail there lists the acknowledge
// recorded in DB (found by TestMoveProperties).
func TestDetailOfAMovedRowShowsItsAuditFromBefore(t *testing.T) {
	t.Parallel()
	shared, tickets, dbs := moveTickets(t)
	seedMoved(t, shared, dbs.Pipelines(), 4)
	id := count(t, shared, `SELECT MIN(id) FROM dlq_messages WHERE source_queue = 'tickets' AND status = 'pending'`)
	at := time.Date(2030, 2, 1, 0, 0, 0, 0, time.UTC)
	ack := resolve.Acknowledge{DB: shared, BulkMax: 10, Clock: func() time.Time { return at }, Pipelines: dbs.Pipelines()}
	if res, err := ack.Run(ctx, resolve.AcknowledgeRequest{Selection: dlq.Selection{IDs: []int64{id}}, Note: "before the move"}); err != nil || res.AcknowledgedCount != 1 {
		t.Fatalf("%+v %v", res, err)
	}
	importLines(t, dbs, exportAll(t, shared, dbs.Pipelines(), "tickets"), 100)
	if res, err := (Release{DBs: dbs}).Run(ctx, ReleaseParams{Pipeline: "tickets", Database: "DB"}); err != nil || res.Released != 4 {
		t.Fatalf("release: %+v %v", res, err)
	}
	// Acknowledged again after the move (a no-op, recorded in TICKETS_DB).
	ack.DB, at = tickets, at.Add(time.Hour)
	if _, err := ack.Run(ctx, resolve.AcknowledgeRequest{Selection: dlq.Selection{IDs: []int64{id}}}); err != nil {
		t.Fatal(err)
	}
	d, err := inspect.Detail{DB: tickets, Others: []*sql.DB{shared}, Pipelines: dbs.Pipelines()}.Read(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Audit) != 2 || d.Audit[0].At != at.UnixMilli() || d.Audit[1].Note == nil || *d.Audit[1].Note != "before the move" ||
		!bytes.Contains(d.Audit[1].IDs, []byte("[")) {
		t.Fatalf("audit of the moved row: %+v", d.Audit)
	}
	// Without the other databases only the entry after the move is found.
	if d, err := (inspect.Detail{DB: tickets, Pipelines: dbs.Pipelines()}).Read(ctx, id); err != nil || len(d.Audit) != 1 {
		t.Fatalf("%+v %v", d.Audit, err)
	}
}
