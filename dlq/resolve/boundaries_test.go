package resolve

import (
	"strings"
	"testing"

	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/internal/sqlitetest"
	"github.com/redrive/redrive/sqlbatch"
)

// Limits hold at their exact value: a note of MaxNoteLength bytes is
// accepted (one more is refused: TestAcknowledgeRejectsBadInput).
func TestAcknowledgeNoteOfExactlyTheMaximum(t *testing.T) {
	db := sqlitetest.New(t)
	ids := insert(t, db, adminRow{Key: "1", FailedAt: 1})
	a := Acknowledge{DB: db, Batch: sqlbatch.Tx{DB: db}, BulkMax: 100}
	res, err := a.Run(ctx, AcknowledgeRequest{Selection: dlq.Selection{IDs: ids}, Note: strings.Repeat("n", dlq.MaxNoteLength)})
	if err != nil || res.AcknowledgedCount != 1 {
		t.Fatalf("note of %d bytes: %+v, %v", dlq.MaxNoteLength, res, err)
	}
}
