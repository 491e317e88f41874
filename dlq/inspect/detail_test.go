package inspect

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/internal/sqlitetest"
)

func TestDetailReadsEveryFieldAndTheBody(t *testing.T) {
	db := sqlitetest.New(t)
	body := `{"beer_id":"1","beer_name":"<img src=x onerror=alert(1)>"}`
	ids := insert(t, db, adminRow{Key: "1", Label1: "<img src=x onerror=alert(1)>", Label2: "Acme",
		Reason: "permanent: <script>x</script>", FailedAt: 1_700_000_000_000, Raw: body, ContentType: "json"})
	d, err := Detail{DB: db}.Read(ctx, ids[0])
	if err != nil {
		t.Fatal(err)
	}
	m := d.Message
	if m.ID != ids[0] || m.BeerID != "1" || *m.BeerName != "<img src=x onerror=alert(1)>" || *m.FailureReason != "permanent: <script>x</script>" ||
		m.ContentType != "json" || m.RawEncoding != "text" || m.Status != dlq.StatusPending {
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

// Finding a row's audit entries reads at most AuditWindow audit rows
// (newest first by primary key), the related rows come from the lineage
// index, and the row itself by primary key.
func TestDetailPlanIsBounded(t *testing.T) {
	db := sqlitetest.New(t)
	plan := strings.Join(sqlitetest.Plan(t, db, detailAuditSQL, 1, "q", "h", nil, nil, nil, "b", int64(AuditWindow), int64(RelatedLimit)), "\n")
	if !strings.Contains(plan, "idx_dlq_replay_lineage") || !strings.Contains(plan, "SCAN admin_audit") {
		t.Errorf("plan:\n%s", plan)
	}
	if plan := strings.Join(sqlitetest.Plan(t, db, detailRowSQL(nil), 1), "\n"); !strings.Contains(plan, "USING INTEGER PRIMARY KEY") {
		t.Errorf("row plan:\n%s", plan)
	}
}

// Every id from 1 to 2^53-1 (JavaScript's largest safe integer) is read,
// both ends included; an id past it, which D1 could only bind as the
// nearest REAL, is not found rather than read as its neighbour.
func TestDetailReadsIDsFromOneToTheLargestSafeInteger(t *testing.T) {
	db := sqlitetest.New(t)
	ids := insert(t, db, adminRow{Key: "one", FailedAt: 1}, adminRow{Key: "max", FailedAt: 1}, adminRow{Key: "past", FailedAt: 1})
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
	ids := insert(t, db, adminRow{Key: "a", FailedAt: 1})
	if d, err := (Detail{DB: db}).Read(ctx, ids[0]); err != nil || !strings.Contains(mustJSON(d), `"replays":[]`) {
		t.Fatalf("no replays: %s, %v", mustJSON(d), err)
	}
	audit := dlq.Audit{DB: db, Clock: fixedClock}
	by := dlq.Requester{RequestID: "r", KeyFingerprint: "fp"}
	if err := audit.Record(ctx, dlq.AuditStart{Action: dlq.ActionReplay, Requester: by, DryRun: true, IDs: ids}, dlq.OutcomeOK, nil, nil); err != nil {
		t.Fatal(err)
	}
	if err := audit.Record(ctx, dlq.AuditStart{Action: dlq.ActionAcknowledge, Requester: by, IDs: ids}, dlq.OutcomeOK, nil, nil); err != nil {
		t.Fatal(err)
	}
	done, err := audit.Begin(ctx, dlq.AuditStart{Action: dlq.ActionReplay, Requester: by, IDs: ids})
	if err != nil {
		t.Fatal(err)
	}
	if err := audit.Finish(ctx, done, dlq.OutcomeOK, nil, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := audit.Begin(ctx, dlq.AuditStart{Action: dlq.ActionReplay, Requester: by, IDs: ids}); err != nil {
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
