package dlq

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/internal/sqlitetest"
	"github.com/redrive/redrive/sqlbatch"
)

func TestDetailReadsEveryFieldAndTheBody(t *testing.T) {
	db := sqlitetest.New(t)
	body := `{"beer_id":"1","beer_name":"<img src=x onerror=alert(1)>"}`
	ids := insert(t, db, adminRow{BeerID: "1", BeerName: "<img src=x onerror=alert(1)>", Brewer: "Acme",
		Reason: "permanent: <script>x</script>", FailedAt: 1_700_000_000_000, Raw: body, ContentType: "json"})
	d, err := Detail{DB: db}.Read(ctx, ids[0])
	if err != nil {
		t.Fatal(err)
	}
	m := d.Message
	if m.ID != ids[0] || m.BeerID != "1" || *m.BeerName != "<img src=x onerror=alert(1)>" || *m.FailureReason != "permanent: <script>x</script>" ||
		m.ContentType != "json" || m.RawEncoding != "text" || m.Status != StatusPending {
		t.Errorf("message: %+v", m)
	}
	var raw string
	if err := json.Unmarshal(m.RawMessage, &raw); err != nil || raw != body {
		t.Errorf("raw_message %s (%v)", m.RawMessage, err)
	}
	if d.LastMessageID != "" || d.BodyHash != nil || len(d.RelatedIDs) != 0 || len(d.Audit) != 0 || d.AuditWindow != AuditWindow {
		t.Errorf("detail: %+v", d)
	}
	for _, id := range []int64{0, -1, ids[0] + 1, 1 << 60} {
		if _, err := (Detail{DB: db}).Read(ctx, id); !errors.Is(err, ErrMessageNotFound) {
			t.Errorf("id %d: %v", id, err)
		}
	}
}

// The audit entries that touched a row: those that named it, and bulk
// actions whose filter fits it and whose run covers its action time; dry
// runs of a filter and actions on other rows are not. Only the newest
// AuditWindow entries are searched.
func TestDetailAuditEntriesAndLineage(t *testing.T) {
	db := sqlitetest.New(t)
	now := fixedClock().UnixMilli()
	ids := insert(t, db,
		adminRow{BeerID: "a", FailedAt: now - 10},
		adminRow{BeerID: "b", FailedAt: now - 20},
		adminRow{BeerID: "c", FailedAt: now - 30},
	)
	ack := Acknowledge{DB: db, Batch: sqlbatch.Tx{DB: db}, BulkMax: 100, Clock: fixedClock}
	by := Requester{RequestID: "r1", KeyFingerprint: "fp"}
	// Named in a dry run (ids) and acknowledged with another row (ids).
	if err := (Audit{DB: db, Clock: fixedClock}).Record(ctx, AuditStart{Action: ActionReplay, Requester: by, DryRun: true, IDs: []int64{ids[0]}}, OutcomeOK, nil, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := ack.Run(ctx, AcknowledgeRequest{Selection: Selection{IDs: []int64{ids[0], ids[2]}}, Note: "dup", By: by}); err != nil {
		t.Fatal(err)
	}
	// Row b: a bulk dry run, then a bulk acknowledge of beer b at a later time.
	later := func() time.Time { return fixedClock().Add(time.Minute) }
	ackLater := Acknowledge{DB: db, Batch: sqlbatch.Tx{DB: db}, BulkMax: 100, Clock: later}
	if err := (Audit{DB: db, Clock: fixedClock}).Record(ctx, AuditStart{Action: ActionAcknowledge, Requester: by, DryRun: true, Filter: &Filter{BeerID: "b"}}, OutcomeOK, nil, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := ackLater.Run(ctx, AcknowledgeRequest{Selection: Selection{Filter: &Filter{BeerID: "b"}}, Note: "bulk", By: by}); err != nil {
		t.Fatal(err)
	}
	// A bulk acknowledge at the same time for another beer fits b's time but not its filter.
	if _, err := ackLater.Run(ctx, AcknowledgeRequest{Selection: Selection{Filter: &Filter{BeerID: "zzz"}}, By: by}); err != nil {
		t.Fatal(err)
	}

	a, err := Detail{DB: db}.Read(ctx, ids[0])
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Audit) != 2 || a.Audit[0].Action != ActionAcknowledge || a.Audit[0].MatchedBy != "ids" || *a.Audit[0].Note != "dup" ||
		a.Audit[1].Action != ActionReplay || !a.Audit[1].DryRun || a.Audit[1].KeyFingerprint != "fp" || string(a.Audit[0].IDs) != `[`+strconv.FormatInt(ids[0], 10)+`,`+strconv.FormatInt(ids[2], 10)+`]` {
		t.Errorf("row a audit: %s", mustJSON(a.Audit))
	}
	// A dry-run replay is an audit entry, not a replay of the row.
	if a.Replays == nil || len(a.Replays) != 0 {
		t.Errorf("row a replays: %s", mustJSON(a.Replays))
	}
	b, err := Detail{DB: db}.Read(ctx, ids[1])
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
		SELECT ?, 'replay', 'noise', 'fp', '[999999]', 'ok' FROM seq`, AuditWindow, now); err != nil {
		t.Fatal(err)
	}
	if a, err = (Detail{DB: db}).Read(ctx, ids[0]); err != nil || len(a.Audit) != 0 {
		t.Errorf("after %d newer entries: %d entries (%v)", AuditWindow, len(a.Audit), err)
	}

	// Lineage: rows of the same queue and body a replay claimed.
	db.Exec(`UPDATE dlq_messages SET body_hash = 'h', replay_count = 1 WHERE id IN (?, ?)`, ids[0], ids[1])
	db.Exec(`UPDATE dlq_messages SET body_hash = 'h' WHERE id = ?`, ids[2]) // never replayed: not in the lineage index
	if a, err = (Detail{DB: db}).Read(ctx, ids[0]); err != nil || len(a.RelatedIDs) != 1 || a.RelatedIDs[0] != ids[1] || *a.BodyHash != "h" {
		t.Errorf("related %v (%v)", a.RelatedIDs, err)
	}
}

// Finding a row's audit entries reads at most AuditWindow audit rows
// (newest first by primary key), the related rows come from the lineage
// index, and the row itself by primary key.
func TestDetailPlanIsBounded(t *testing.T) {
	db := sqlitetest.New(t)
	plan := strings.Join(sqlitetest.Plan(t, db, detailAuditSQL, 1, "q", "h", nil, nil, nil, "b", int64(AuditWindow), int64(relatedLimit)), "\n")
	if !strings.Contains(plan, "idx_dlq_replay_lineage") || !strings.Contains(plan, "SCAN admin_audit") {
		t.Errorf("plan:\n%s", plan)
	}
	if plan := strings.Join(sqlitetest.Plan(t, db, detailRowSQL(), 1), "\n"); !strings.Contains(plan, "USING INTEGER PRIMARY KEY") {
		t.Errorf("row plan:\n%s", plan)
	}
}

func mustJSON(v any) string { b, _ := json.Marshal(v); return string(b) }

// Every id from 1 to 2^53-1 (JavaScript's largest safe integer) is read,
// both ends included; an id past it, which D1 could only bind as the
// nearest REAL, is not found rather than read as its neighbour.
func TestDetailReadsIDsFromOneToTheLargestSafeInteger(t *testing.T) {
	db := sqlitetest.New(t)
	ids := insert(t, db, adminRow{BeerID: "one", FailedAt: 1}, adminRow{BeerID: "max", FailedAt: 1}, adminRow{BeerID: "past", FailedAt: 1})
	for i, id := range []int64{1, 1<<53 - 1, 1 << 53} {
		mustExec(t, db, `UPDATE dlq_messages SET id = ? WHERE id = ?`, strconv.FormatInt(id, 10), ids[i])
	}
	for id, beer := range map[int64]string{1: "one", 1<<53 - 1: "max"} {
		if d, err := (Detail{DB: db}).Read(ctx, id); err != nil || d.Message.BeerID != beer {
			t.Errorf("id %d: row %d, beer %q, %v", id, d.Message.ID, d.Message.BeerID, err)
		}
	}
	for _, id := range []int64{0, 1<<53 + 1} {
		if d, err := (Detail{DB: db}).Read(ctx, id); !errors.Is(err, ErrMessageNotFound) {
			t.Errorf("id %d: row %d, beer %q, %v", id, d.Message.ID, d.Message.BeerID, err)
		}
	}
}

// A row's replays are the audit entries of replays that ran (not dry runs,
// not acknowledgements), finished or not, and [] when there are none;
// finished_at is null exactly while an action has not finished.
func TestDetailReplaysAndFinishedAt(t *testing.T) {
	db := sqlitetest.New(t)
	ids := insert(t, db, adminRow{BeerID: "a", FailedAt: 1})
	if d, err := (Detail{DB: db}).Read(ctx, ids[0]); err != nil || !strings.Contains(mustJSON(d), `"replays":[]`) {
		t.Fatalf("no replays: %s, %v", mustJSON(d), err)
	}
	audit := Audit{DB: db, Clock: fixedClock}
	by := Requester{RequestID: "r", KeyFingerprint: "fp"}
	if err := audit.Record(ctx, AuditStart{Action: ActionReplay, Requester: by, DryRun: true, IDs: ids}, OutcomeOK, nil, nil); err != nil {
		t.Fatal(err)
	}
	if err := audit.Record(ctx, AuditStart{Action: ActionAcknowledge, Requester: by, IDs: ids}, OutcomeOK, nil, nil); err != nil {
		t.Fatal(err)
	}
	done, err := audit.Begin(ctx, AuditStart{Action: ActionReplay, Requester: by, IDs: ids})
	if err != nil {
		t.Fatal(err)
	}
	if err := audit.Finish(ctx, done, OutcomeOK, nil, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := audit.Begin(ctx, AuditStart{Action: ActionReplay, Requester: by, IDs: ids}); err != nil {
		t.Fatal(err)
	}
	d, err := Detail{DB: db}.Read(ctx, ids[0])
	if err != nil {
		t.Fatal(err)
	}
	at := fixedClock().UnixMilli()
	var finished []string
	for _, e := range d.Audit {
		f := "null"
		if e.FinishedAt != nil {
			f = strconv.FormatInt(*e.FinishedAt, 10)
		}
		finished = append(finished, e.Action+" "+f)
	}
	want := fmt.Sprintf("replay null, replay %d, acknowledge %d, replay %d", at, at, at)
	if strings.Join(finished, ", ") != want {
		t.Errorf("audit entries %s, want %s", strings.Join(finished, ", "), want)
	}
	if len(d.Replays) != 2 || d.Replays[0].FinishedAt != nil || d.Replays[1].FinishedAt == nil || *d.Replays[1].FinishedAt != at {
		t.Errorf("replays %s", mustJSON(d.Replays))
	}
}

// The edges of Detail's bounds and the version: an entry is searched while
// it is among the newest AuditWindow (and not once AuditWindow newer ones
// exist), related_ids holds at most relatedLimit rows, and the version the
// latest failure happened on is read.
func TestDetailBoundsAndVersion(t *testing.T) {
	db := sqlitetest.New(t)
	now := fixedClock().UnixMilli()
	ids := insert(t, db, adminRow{BeerID: "v", FailedAt: now})
	if _, err := db.Exec(`UPDATE dlq_messages SET version = 'v42' WHERE id = ?`, ids[0]); err != nil {
		t.Fatal(err)
	}
	ack := Acknowledge{DB: db, Batch: sqlbatch.Tx{DB: db}, BulkMax: 100, Clock: fixedClock}
	if _, err := ack.Run(ctx, AcknowledgeRequest{Selection: Selection{IDs: []int64{ids[0]}}, By: Requester{RequestID: "r"}}); err != nil {
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
	noise(AuditWindow - 1)
	d, err := Detail{DB: db}.Read(ctx, ids[0])
	if err != nil || len(d.Audit) != 1 || d.Version == nil || *d.Version != "v42" {
		t.Fatalf("with %d newer entries: audit %s version %v (%v)", AuditWindow-1, mustJSON(d.Audit), d.Version, err)
	}
	noise(1)
	if d, err = (Detail{DB: db}).Read(ctx, ids[0]); err != nil || len(d.Audit) != 0 {
		t.Fatalf("with %d newer entries: audit %s (%v)", AuditWindow, mustJSON(d.Audit), err)
	}
	// relatedLimit+2 rows of the same lineage: relatedLimit are listed.
	rows := make([]adminRow, relatedLimit+2)
	for i := range rows {
		rows[i] = adminRow{BeerID: "v", FailedAt: now - int64(i+1)}
	}
	more := insert(t, db, rows...)
	for _, id := range append(more, ids[0]) {
		if _, err := db.Exec(`UPDATE dlq_messages SET body_hash = 'h', replay_count = 1 WHERE id = ?`, id); err != nil {
			t.Fatal(err)
		}
	}
	if d, err = (Detail{DB: db}).Read(ctx, ids[0]); err != nil || len(d.RelatedIDs) != relatedLimit {
		t.Fatalf("related %v (%v), want %d", d.RelatedIDs, err, relatedLimit)
	}
}
