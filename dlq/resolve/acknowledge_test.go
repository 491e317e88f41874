package resolve

import (
	"context"
	"database/sql"
	"encoding/json"
	"strings"
	"testing"

	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/internal/sqlitetest"
	"github.com/redrive/redrive/sqlbatch"
)

// auditCounts returns the outcome and counts of acknowledge's audit rows, oldest first.
func auditCounts(t *testing.T, db *sql.DB) []string {
	t.Helper()
	rows, err := db.Query(`SELECT outcome || ' ' || counts || ' ' || request_id FROM admin_audit
		WHERE action = 'acknowledge' AND finished_at = at ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	return out
}

func TestAcknowledgeHundredIDsMovesOnlyPendingRows(t *testing.T) {
	db := sqlitetest.New(t)
	generate(t, db, "ack", 100, 1, 1_700_000_000_000)
	db.Exec(`UPDATE dlq_messages SET status = 'replayed' WHERE id % 10 = 0`)
	var ids []int64
	for i := int64(1); i <= 100; i++ {
		ids = append(ids, i)
	}
	a := Acknowledge{DB: db, Batch: sqlbatch.Tx{DB: db}, BulkMax: 5000, Clock: fixedClock}
	res, err := a.Run(ctx, AcknowledgeRequest{Selection: dlq.Selection{IDs: ids}, Note: "known bad beers", By: dlq.Requester{RequestID: "r1"}})
	if err != nil {
		t.Fatal(err)
	}
	if res.AcknowledgedCount != 90 || res.RequestedCount != 100 || len(res.AcknowledgedIDs) != 90 || res.HasMore != nil {
		t.Fatalf("result %+v", res)
	}
	if n := count(t, db, `SELECT COUNT(*) FROM dlq_messages WHERE status = 'acknowledged' AND acknowledged_at = ?
		AND acknowledged_note = 'known bad beers' AND id % 10 <> 0`, fixedClock().UnixMilli()); n != 90 {
		t.Fatalf("acknowledged rows: %d", n)
	}
	if n := count(t, db, `SELECT COUNT(*) FROM dlq_messages WHERE status = 'replayed'`); n != 10 {
		t.Fatalf("replayed rows must stay replayed: %d", n)
	}
	res, err = a.Run(ctx, AcknowledgeRequest{Selection: dlq.Selection{IDs: ids}, By: dlq.Requester{RequestID: "r2"}})
	if err != nil || res.AcknowledgedCount != 0 {
		t.Fatalf("second acknowledge must be a no-op: %+v %v", res, err)
	}
	// Each call wrote its finished audit row, counted in the same batch.
	want := []string{`ok {"requested_count":100,"acknowledged_count":90} r1`, `ok {"requested_count":100,"acknowledged_count":0} r2`}
	if got := auditCounts(t, db); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("audit rows %q, want %q", got, want)
	}
	// The statement that moves the rows counts them (migrations/0009).
	if n := count(t, db, `SELECT value FROM counters WHERE name = ?`, CounterAcknowledged); n != 90 {
		t.Fatalf("%s = %d, want 90", CounterAcknowledged, n)
	}
}

func TestBulkAcknowledgePagesAndDryRun(t *testing.T) {
	db := sqlitetest.New(t)
	generate(t, db, "bulkack", 250, 2, 1_700_000_000_000)
	insert(t, db, adminRow{Key: "keep", Label1: "Keep Me", FailedAt: 1})
	a := Acknowledge{DB: db, Batch: sqlbatch.Tx{DB: db}, BulkMax: 100, Clock: fixedClock}
	f := &dlq.Filter{Q: "bulkack-"}
	before := snapshot(t, db)
	p, err := a.DryRun(ctx, AcknowledgeRequest{Selection: dlq.Selection{Filter: f}})
	if err != nil || p.MatchedCount != 250 || len(p.Sample) != 10 || len(p.ByFailureReason) != 3 || p.NotReplayableCount != 0 {
		t.Fatalf("dry run %+v %v", p, err)
	}
	if snapshot(t, db) != before {
		t.Fatal("dry run changed rows")
	}
	var counts []int64
	for {
		res, err := a.Run(ctx, AcknowledgeRequest{Selection: dlq.Selection{Filter: f}, Note: "bulk"})
		if err != nil {
			t.Fatal(err)
		}
		counts = append(counts, res.AcknowledgedCount)
		if !*res.HasMore {
			break
		}
	}
	if len(counts) != 3 || counts[0] != 100 || counts[1] != 100 || counts[2] != 50 {
		t.Fatalf("pages %v", counts)
	}
	want := []string{`ok {"requested_count":0,"acknowledged_count":100,"has_more":true} `,
		`ok {"requested_count":0,"acknowledged_count":100,"has_more":true} `,
		`ok {"requested_count":0,"acknowledged_count":50,"has_more":false} `}
	if got := auditCounts(t, db); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("audit rows %q, want %q", got, want)
	}
	if n := count(t, db, `SELECT COUNT(*) FROM dlq_messages WHERE status = 'pending'`); n != 1 {
		t.Fatalf("pending left %d, want only the non-matching row", n)
	}
}

func TestAcknowledgeRejectsBadInput(t *testing.T) {
	db := sqlitetest.New(t)
	insert(t, db, adminRow{Key: "1", FailedAt: 1})
	before := snapshot(t, db)
	many := make([]int64, 101)
	for i := range many {
		many[i] = int64(i + 1)
	}
	a := Acknowledge{DB: db, Batch: sqlbatch.Tx{DB: db}, BulkMax: 100}
	for name, c := range map[string]struct {
		req  AcknowledgeRequest
		code string
	}{
		"101 ids":     {AcknowledgeRequest{Selection: dlq.Selection{IDs: many}}, "INVALID_REQUEST"},
		"empty":       {AcknowledgeRequest{Selection: dlq.Selection{IDs: []int64{}}}, "INVALID_REQUEST"},
		"duplicates":  {AcknowledgeRequest{Selection: dlq.Selection{IDs: []int64{1, 1}}}, "INVALID_REQUEST"},
		"long note":   {AcknowledgeRequest{Selection: dlq.Selection{IDs: []int64{1}}, Note: strings.Repeat("n", 1001)}, "INVALID_REQUEST"},
		"bad status":  {AcknowledgeRequest{Selection: dlq.Selection{Filter: &dlq.Filter{Status: "all"}}}, "INVALID_FILTER"},
		"both":        {AcknowledgeRequest{Selection: dlq.Selection{IDs: []int64{1}, Filter: &dlq.Filter{}}}, "INVALID_REQUEST"},
		"neither":     {AcknowledgeRequest{}, "INVALID_REQUEST"},
		"bad q":       {AcknowledgeRequest{Selection: dlq.Selection{Filter: &dlq.Filter{Q: strings.Repeat("q", 300)}}}, "INVALID_FILTER"},
		"bad id zero": {AcknowledgeRequest{Selection: dlq.Selection{IDs: []int64{0}}}, "INVALID_REQUEST"},
	} {
		_, err := a.Run(ctx, c.req)
		t.Run(name, func(t *testing.T) { wantInput(t, err, c.code) })
	}
	if snapshot(t, db) != before {
		t.Fatal("rejected input changed something")
	}
}

// The audit row and the change are one batch: when the change fails,
// nothing is acknowledged and nothing is recorded.
func TestAcknowledgeFailureChangesAndRecordsNothing(t *testing.T) {
	db := sqlitetest.New(t)
	generate(t, db, "fail", 3, 1, 1_700_000_000_000)
	if _, err := db.Exec(`CREATE TRIGGER refuse BEFORE UPDATE ON dlq_messages BEGIN SELECT RAISE(ABORT, 'refused'); END`); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, db)
	a := Acknowledge{DB: db, Batch: sqlbatch.Tx{DB: db}, BulkMax: 100, Clock: fixedClock}
	for _, sel := range []dlq.Selection{{IDs: []int64{1, 2}}, {Filter: &dlq.Filter{Q: "fail-"}}} {
		if _, err := a.Run(ctx, AcknowledgeRequest{Selection: sel}); err == nil || !strings.Contains(err.Error(), "refused") {
			t.Fatalf("%+v: err = %v, want the refusal", sel, err)
		}
	}
	if snapshot(t, db) != before || count(t, db, `SELECT COUNT(*) FROM admin_audit`) != 0 {
		t.Fatal("a failed acknowledge left a change or an audit row")
	}
}

// The ids form always lists acknowledged_ids, [] when nothing moved (as
// replay lists replayed_ids); the bulk form has none.
func TestAcknowledgedIDsAlwaysInTheIDsForm(t *testing.T) {
	db := sqlitetest.New(t)
	ids := insert(t, db, adminRow{Key: "1", FailedAt: 1, Status: dlq.StatusAcknowledged})
	a := Acknowledge{DB: db, Batch: sqlbatch.Tx{DB: db}, BulkMax: 10, Clock: fixedClock}
	res, err := a.Run(ctx, AcknowledgeRequest{Selection: dlq.Selection{IDs: ids}})
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := json.Marshal(res); !strings.Contains(string(b), `"acknowledged_ids":[]`) {
		t.Fatalf("ids form: %s", b)
	}
	res, err = a.Run(ctx, AcknowledgeRequest{Selection: dlq.Selection{Filter: &dlq.Filter{Key: "1"}}})
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := json.Marshal(res); strings.Contains(string(b), `acknowledged_ids`) {
		t.Fatalf("bulk form: %s", b)
	}
}

// firstResult is a sqlbatch.Runner that runs each batch in a transaction
// and hands back first as the first statement's result.
type firstResult struct {
	db    *sql.DB
	first string
}

func (r firstResult) Batch(ctx context.Context, stmts ...sqlbatch.Stmt) ([]json.RawMessage, error) {
	out, err := sqlbatch.Tx{DB: r.db}.Batch(ctx, stmts...)
	if err == nil {
		out[0] = json.RawMessage(r.first)
	}
	return out, err
}

// A bulk acknowledge whose audit statement returns anything but one row of
// counts with has_more is an error, never a panic or a result without
// has_more: no row, two rows, text that is not JSON, counts that are not
// JSON and counts without has_more.
func TestBulkAcknowledgeRejectsCountsItCannotRead(t *testing.T) {
	db := sqlitetest.New(t)
	insert(t, db, adminRow{Key: "1", FailedAt: 1})
	for _, first := range []string{`[]`, `[{"Counts":"{\"has_more\":true}"},{"Counts":"{\"has_more\":true}"}]`, `not json`,
		`[{"Counts":"{"}]`, `[{"Counts":"{\"requested_count\":0,\"acknowledged_count\":1}"}]`} {
		t.Run(first, func(t *testing.T) {
			a := Acknowledge{DB: db, Batch: firstResult{db: db, first: first}, BulkMax: 10, Clock: fixedClock}
			defer func() {
				if p := recover(); p != nil {
					t.Fatalf("panics: %v", p)
				}
			}()
			res, err := a.Run(ctx, AcknowledgeRequest{Selection: dlq.Selection{Filter: &dlq.Filter{}}})
			if err == nil || !strings.Contains(err.Error(), "bulk acknowledge counts") {
				t.Fatalf("result %+v, error %v", res, err)
			}
		})
	}
}
