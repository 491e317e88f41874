package resolve

import (
	"strconv"
	"testing"
	"time"

	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/dlq/inspect"
	"github.com/redrive/redrive/internal/sqlitetest"
	"github.com/redrive/redrive/sqlbatch"
)

// The audit entries that touched a row: those that named it, and bulk
// actions whose filter fits it and whose run covers its action time; dry
// runs of a filter and actions on other rows are not. Only the newest
// AuditWindow entries are searched.
func TestDetailAuditEntriesAndLineage(t *testing.T) {
	db := sqlitetest.New(t)
	now := fixedClock().UnixMilli()
	ids := insert(t, db,
		adminRow{Key: "a", FailedAt: now - 10},
		adminRow{Key: "b", FailedAt: now - 20},
		adminRow{Key: "c", FailedAt: now - 30},
	)
	ack := Acknowledge{DB: db, Batch: sqlbatch.Tx{DB: db}, BulkMax: 100, Clock: fixedClock}
	by := dlq.Requester{RequestID: "r1", KeyFingerprint: "fp"}
	// Named in a dry run (ids) and acknowledged with another row (ids).
	if err := (dlq.Audit{DB: db, Clock: fixedClock}).Record(ctx, dlq.AuditStart{Action: dlq.ActionReplay, Requester: by, DryRun: true, IDs: []int64{ids[0]}}, dlq.OutcomeOK, nil, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := ack.Run(ctx, AcknowledgeRequest{Selection: dlq.Selection{IDs: []int64{ids[0], ids[2]}}, Note: "dup", By: by}); err != nil {
		t.Fatal(err)
	}
	// Row b: a bulk dry run, then a bulk acknowledge of beer b at a later time.
	later := func() time.Time { return fixedClock().Add(time.Minute) }
	ackLater := Acknowledge{DB: db, Batch: sqlbatch.Tx{DB: db}, BulkMax: 100, Clock: later}
	if err := (dlq.Audit{DB: db, Clock: fixedClock}).Record(ctx, dlq.AuditStart{Action: dlq.ActionAcknowledge, Requester: by, DryRun: true, Filter: &dlq.Filter{Key: "b"}}, dlq.OutcomeOK, nil, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := ackLater.Run(ctx, AcknowledgeRequest{Selection: dlq.Selection{Filter: &dlq.Filter{Key: "b"}}, Note: "bulk", By: by}); err != nil {
		t.Fatal(err)
	}
	// A bulk acknowledge at the same time for another beer fits b's time but not its filter.
	if _, err := ackLater.Run(ctx, AcknowledgeRequest{Selection: dlq.Selection{Filter: &dlq.Filter{Key: "zzz"}}, By: by}); err != nil {
		t.Fatal(err)
	}

	a, err := inspect.Detail{DB: db}.Read(ctx, ids[0])
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Audit) != 2 || a.Audit[0].Action != dlq.ActionAcknowledge || a.Audit[0].MatchedBy != "ids" || *a.Audit[0].Note != "dup" ||
		a.Audit[1].Action != dlq.ActionReplay || !a.Audit[1].DryRun || a.Audit[1].KeyFingerprint != "fp" || string(a.Audit[0].IDs) != `[`+strconv.FormatInt(ids[0], 10)+`,`+strconv.FormatInt(ids[2], 10)+`]` {
		t.Errorf("row a audit: %s", mustJSON(a.Audit))
	}
	// A dry-run replay is an audit entry, not a replay of the row.
	if a.Replays == nil || len(a.Replays) != 0 {
		t.Errorf("row a replays: %s", mustJSON(a.Replays))
	}
	b, err := inspect.Detail{DB: db}.Read(ctx, ids[1])
	if err != nil {
		t.Fatal(err)
	}
	if len(b.Audit) != 1 || b.Audit[0].MatchedBy != "filter" || *b.Audit[0].Note != "bulk" || string(b.Audit[0].Filter) != `{"status":"pending","beer_id":"b"}` {
		t.Errorf("row b audit: %s", mustJSON(b.Audit))
	}
	if string(b.Audit[0].Counts) != `{"requested_count":0,"acknowledged_count":1,"has_more":false}` {
		t.Errorf("row b counts: %s", b.Audit[0].Counts)
	}

	// AuditWindow newer entries push them out of the search.
	if _, err := db.Exec(`INSERT INTO admin_audit(at, action, request_id, key_fingerprint, ids, outcome)
		WITH RECURSIVE seq(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM seq WHERE i < ?)
		SELECT ?, 'replay', 'noise', 'fp', '[999999]', 'ok' FROM seq`, inspect.AuditWindow, now); err != nil {
		t.Fatal(err)
	}
	if a, err = (inspect.Detail{DB: db}).Read(ctx, ids[0]); err != nil || len(a.Audit) != 0 {
		t.Errorf("after %d newer entries: %d entries (%v)", inspect.AuditWindow, len(a.Audit), err)
	}

	// Lineage: rows of the same queue and body a replay claimed.
	db.Exec(`UPDATE dlq_messages SET body_hash = 'h', replay_count = 1 WHERE id IN (?, ?)`, ids[0], ids[1])
	db.Exec(`UPDATE dlq_messages SET body_hash = 'h' WHERE id = ?`, ids[2]) // never replayed: not in the lineage index
	if a, err = (inspect.Detail{DB: db}).Read(ctx, ids[0]); err != nil || len(a.RelatedIDs) != 1 || a.RelatedIDs[0] != ids[1] || *a.BodyHash != "h" {
		t.Errorf("related %v (%v)", a.RelatedIDs, err)
	}
}

// The edges of Detail's bounds and the version: an entry is searched while
// it is among the newest AuditWindow (and not once AuditWindow newer ones
// exist), related_ids holds at most inspect.RelatedLimit rows, and the version the
// latest failure happened on is read.
func TestDetailBoundsAndVersion(t *testing.T) {
	db := sqlitetest.New(t)
	now := fixedClock().UnixMilli()
	ids := insert(t, db, adminRow{Key: "v", FailedAt: now})
	if _, err := db.Exec(`UPDATE dlq_messages SET version = 'v42' WHERE id = ?`, ids[0]); err != nil {
		t.Fatal(err)
	}
	ack := Acknowledge{DB: db, Batch: sqlbatch.Tx{DB: db}, BulkMax: 100, Clock: fixedClock}
	if _, err := ack.Run(ctx, AcknowledgeRequest{Selection: dlq.Selection{IDs: []int64{ids[0]}}, By: dlq.Requester{RequestID: "r"}}); err != nil {
		t.Fatal(err)
	}
	noise := func(n int) {
		t.Helper()
		if _, err := db.Exec(`INSERT INTO admin_audit(at, action, request_id, key_fingerprint, ids, outcome)
			WITH RECURSIVE seq(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM seq WHERE i < ?)
			SELECT ?, 'replay', 'noise', 'fp', '[999999]', 'ok' FROM seq`, n, now); err != nil {
			t.Fatal(err)
		}
	}
	noise(inspect.AuditWindow - 1)
	d, err := inspect.Detail{DB: db}.Read(ctx, ids[0])
	if err != nil || len(d.Audit) != 1 || d.Version == nil || *d.Version != "v42" {
		t.Fatalf("with %d newer entries: audit %s version %v (%v)", inspect.AuditWindow-1, mustJSON(d.Audit), d.Version, err)
	}
	noise(1)
	if d, err = (inspect.Detail{DB: db}).Read(ctx, ids[0]); err != nil || len(d.Audit) != 0 {
		t.Fatalf("with %d newer entries: audit %s (%v)", inspect.AuditWindow, mustJSON(d.Audit), err)
	}
	// inspect.RelatedLimit+2 rows of the same lineage: inspect.RelatedLimit are listed.
	rows := make([]adminRow, inspect.RelatedLimit+2)
	for i := range rows {
		rows[i] = adminRow{Key: "v", FailedAt: now - int64(i+1)}
	}
	more := insert(t, db, rows...)
	for _, id := range append(more, ids[0]) {
		if _, err := db.Exec(`UPDATE dlq_messages SET body_hash = 'h', replay_count = 1 WHERE id = ?`, id); err != nil {
			t.Fatal(err)
		}
	}
	if d, err = (inspect.Detail{DB: db}).Read(ctx, ids[0]); err != nil || len(d.RelatedIDs) != inspect.RelatedLimit {
		t.Fatalf("related %v (%v), want %d", d.RelatedIDs, err, inspect.RelatedLimit)
	}
}
