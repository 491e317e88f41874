package resolve

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/dlq/inspect"
	"github.com/redrive/redrive/internal/sqlitetest"
	"github.com/redrive/redrive/internal/text"
	"github.com/redrive/redrive/queue"
	"github.com/redrive/redrive/queue/queuetest"
)

func newReplay(db *sql.DB, s queue.Sender) Replay {
	return Replay{DB: db, Sender: s, Log: discard, Cursors: dlq.NewCursors("s"), BulkMax: 500, Clock: fixedClock}
}

// sentRows returns the row id of every message sent to q, found by its body
// (the tests' rows have distinct bodies, sent unchanged).
func sentRows(t *testing.T, db *sql.DB, s *queuetest.Sender, q string) []int64 {
	t.Helper()
	var out []int64
	for _, m := range s.Sent[q] {
		var id int64
		if err := db.QueryRow(`SELECT id FROM dlq_messages WHERE raw_message = ?`, m.Body).Scan(&id); err != nil {
			t.Fatalf("sent body %q is no row's body: %v", text.Clip(m.Body, 80), err)
		}
		out = append(out, id)
	}
	return out
}

func TestReplaySendsClaimedRowsUnchangedAndMarksThemReplayed(t *testing.T) {
	db := sqlitetest.New(t)
	ids := insert(t, db,
		adminRow{Key: "1", Label1: "A", FailedAt: 100, Raw: `{"beer_id":"1","beer_name":"A","extra":{"k":[1,2.50]}}`},
		adminRow{Key: "2", Label1: "B", FailedAt: 200, ReplayCount: 2},
		adminRow{Key: "3", Label1: "C", FailedAt: 300})
	s := &queuetest.Sender{}
	res, err := newReplay(db, s).Run(ctx, ReplayRequest{Selection: dlq.Selection{IDs: ids}, DelaySeconds: 60})
	if err != nil {
		t.Fatal(err)
	}
	if res.RequestedCount != 3 || res.ClaimedCount != 3 || res.ReplayedCount != 3 || res.FailedCount != 0 ||
		res.QueuedTo != "beer-enrichment" || res.SkippedCount != 0 || res.BulkProgress != nil {
		t.Fatalf("result %+v", res)
	}
	sent := s.Sent["beer-enrichment"]
	if len(sent) != 3 || s.Calls != 1 {
		t.Fatalf("sent %d messages in %d calls", len(sent), s.Calls)
	}
	got := sentRows(t, db, s, "beer-enrichment")
	if got[0] != ids[2] || got[1] != ids[1] || got[2] != ids[0] {
		t.Fatalf("sent rows %v, want newest failure first %v", got, ids)
	}
	if sent[2].Body != `{"beer_id":"1","beer_name":"A","extra":{"k":[1,2.50]}}` || sent[2].ContentType != queue.JSON || sent[0].Delay != 60*time.Second {
		t.Fatalf("body must be the stored one, as JSON, with the delay: %+v", sent[2])
	}
	for i, id := range ids {
		var status string
		var count, replayedAt int64
		var replayingAt sql.NullInt64
		db.QueryRow(`SELECT status, replay_count, replayed_at, replaying_at FROM dlq_messages WHERE id = ?`, id).Scan(&status, &count, &replayedAt, &replayingAt)
		want := int64(1)
		if i == 1 {
			want = 3
		}
		if status != dlq.StatusReplayed || count != want || replayedAt != fixedClock().UnixMilli() || replayingAt.Valid {
			t.Fatalf("row %d: %s count=%d replayed_at=%d replaying_at=%v", id, status, count, replayedAt, replayingAt)
		}
	}
	// A second replay of the same ids is a no-op: nothing is pending.
	res, err = newReplay(db, s).Run(ctx, ReplayRequest{Selection: dlq.Selection{IDs: ids}})
	if err != nil || res.ClaimedCount != 0 || res.ReplayedCount != 0 || len(s.Sent["beer-enrichment"]) != 3 || res.QueuedTo != "" {
		t.Fatalf("second replay: %+v %v", res, err)
	}
	if res.SkippedCount != 3 || res.Skipped[0].Reason != "not_pending" || res.Skipped[0].Status != dlq.StatusReplayed {
		t.Fatalf("skipped %+v", res.Skipped)
	}
	// The final update counts the replays (migrations/0009), once each.
	if n := counter(t, db, CounterReplayed); n != 3 {
		t.Fatalf("%s = %d, want 3", CounterReplayed, n)
	}
}

func TestReplaySkipsRowsItCannotClaim(t *testing.T) {
	db := sqlitetest.New(t)
	ids := insert(t, db,
		adminRow{Key: "ok", FailedAt: 1},
		adminRow{Key: "acked", FailedAt: 1, Status: dlq.StatusAcknowledged},
		adminRow{Key: "replaying", FailedAt: 1, Status: dlq.StatusReplaying},
		adminRow{Key: dlq.UnparseableKey, FailedAt: 1, Raw: `{"beer_id":"7","v8":true}`, ContentType: "v8"},
		adminRow{Key: dlq.UnparseableKey, FailedAt: 1, Raw: `{broken`, ContentType: "json"},
	)
	mustExec(t, db, `UPDATE dlq_messages SET raw_message = NULL WHERE id = ?`, ids[0])
	// Poison that is still a body as it was produced: replayed like any other.
	poison := insert(t, db,
		adminRow{Key: dlq.UnparseableKey, FailedAt: 1, Raw: `not json at all`},
		adminRow{Key: dlq.UnparseableKey, FailedAt: 1, Raw: `[1,2,3]`},
		adminRow{Key: dlq.UnparseableKey, FailedAt: 1, Raw: `"a string"`, ContentType: "json"},
		adminRow{Key: dlq.UnparseableKey, FailedAt: 1, Raw: `eyJhIjoxfQ==`, Encoding: "base64"},
		adminRow{Key: dlq.UnparseableKey, FailedAt: 1, Raw: `{broken`, ContentType: "text"},
	)
	s := &queuetest.Sender{}
	req := append(append(append([]int64{}, ids...), poison...), 999_999)
	res, err := newReplay(db, s).Run(ctx, ReplayRequest{Selection: dlq.Selection{IDs: req}})
	if err != nil {
		t.Fatal(err)
	}
	if res.ClaimedCount != 5 || res.ReplayedCount != 5 || len(s.Sent["beer-enrichment"]) != 5 || res.SkippedCount != 6 {
		t.Fatalf("result %+v", res)
	}
	want := []string{"not_replayable", "not_pending", "not_pending", "not_replayable", "not_replayable", "not_found"}
	skippedIDs := append(append([]int64{}, ids...), 999_999)
	for i, sk := range res.Skipped {
		if sk.ID != skippedIDs[i] || sk.Reason != want[i] {
			t.Errorf("skipped[%d] = %+v, want id %d %s", i, sk, skippedIDs[i], want[i])
		}
	}
	sent := map[string]queue.ContentType{}
	for _, m := range s.Sent["beer-enrichment"] {
		sent[m.Body] = m.ContentType
	}
	wantSent := map[string]queue.ContentType{`not json at all`: queue.Text, `[1,2,3]`: queue.JSON, `"a string"`: queue.JSON,
		`eyJhIjoxfQ==`: queue.Bytes, `{broken`: queue.Text}
	if fmt.Sprint(sent) != fmt.Sprint(wantSent) {
		t.Fatalf("sent %v, want %v", sent, wantSent)
	}
	if n := count(t, db, `SELECT COUNT(*) FROM dlq_messages WHERE status = 'pending' AND row_key = ?`, dlq.UnparseableKey); n != 2 {
		t.Fatalf("the v8 and invalid-JSON rows must stay pending, %d rows are", n)
	}
}

// failingSender fails every send to one queue.
type failingSender struct {
	queuetest.Sender
	broken string
}

func (f *failingSender) SendBatch(ctx context.Context, q string, msgs []queue.Outgoing) error {
	if q == f.broken {
		return errors.New("queue unavailable")
	}
	return f.Sender.SendBatch(ctx, q, msgs)
}

func TestReplaySendFailureReturnsRowsToPending(t *testing.T) {
	db := sqlitetest.New(t)
	ids := insert(t, db, adminRow{Key: "1", FailedAt: 1, ReplayCount: 1}, adminRow{Key: "2", FailedAt: 2})
	res, err := newReplay(db, &queuetest.Sender{Err: errors.New("queue down")}).Run(ctx, ReplayRequest{Selection: dlq.Selection{IDs: ids}})
	if err != nil {
		t.Fatal(err)
	}
	if res.ClaimedCount != 2 || res.ReplayedCount != 0 || res.FailedCount != 2 || ReplayOutcome(res) != dlq.OutcomeFailed {
		t.Fatalf("result %+v", res)
	}
	if n := count(t, db, `SELECT COUNT(*) FROM dlq_messages WHERE status = 'pending' AND replaying_at IS NULL AND replayed_at IS NULL
		AND replay_count = CASE row_key WHEN '1' THEN 1 ELSE 0 END`); n != 2 {
		t.Fatalf("rows must be back to pending, untouched; %d are", n)
	}

	// Partial: one queue works, the other does not.
	more := insert(t, db, adminRow{Key: "3", FailedAt: 3, Source: "good-queue"}, adminRow{Key: "4", FailedAt: 4, Source: "bad-queue"})
	fs := &failingSender{broken: "bad-queue"}
	res, err = newReplay(db, fs).Run(ctx, ReplayRequest{Selection: dlq.Selection{IDs: more}})
	if err != nil {
		t.Fatal(err)
	}
	if res.ReplayedCount != 1 || res.FailedCount != 1 || res.QueuedTo != "bad-queue,good-queue" || ReplayOutcome(res) != dlq.OutcomePartial ||
		res.ReplayedIDs[0] != more[0] || res.FailedIDs[0] != more[1] || len(fs.Sent["good-queue"]) != 1 {
		t.Fatalf("partial: %+v", res)
	}
	var s3, s4 string
	db.QueryRow(`SELECT status FROM dlq_messages WHERE id = ?`, more[0]).Scan(&s3)
	db.QueryRow(`SELECT status FROM dlq_messages WHERE id = ?`, more[1]).Scan(&s4)
	if s3 != dlq.StatusReplayed || s4 != dlq.StatusPending {
		t.Fatalf("statuses %s %s", s3, s4)
	}
}

func TestConcurrentReplaysSendEveryRowOnce(t *testing.T) {
	db := sqlitetest.New(t)
	generate(t, db, "conc", 40, 1, 1_700_000_000_000)
	var ids []int64
	rows, _ := db.Query(`SELECT id FROM dlq_messages ORDER BY id`)
	for rows.Next() {
		var id int64
		rows.Scan(&id)
		ids = append(ids, id)
	}
	rows.Close()
	s := &slowSender{}
	var mu sync.Mutex
	claimed := 0
	var wg sync.WaitGroup
	for g := 0; g < 24; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			// Overlapping windows of 20 ids, each id wanted by ~12 requests.
			var want []int64
			for k := 0; k < 20; k++ {
				want = append(want, ids[(g*5+k)%len(ids)])
			}
			res, err := newReplay(db, s).Run(ctx, ReplayRequest{Selection: dlq.Selection{IDs: want}})
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			claimed += res.ClaimedCount
			mu.Unlock()
		}(g)
	}
	wg.Wait()
	sent := sentRows(t, db, &s.Sender, "beer-enrichment")
	seen := map[int64]int{}
	for _, id := range sent {
		seen[id]++
	}
	if claimed != len(ids) || len(sent) != len(ids) || len(seen) != len(ids) {
		t.Fatalf("claimed %d, sent %d, distinct %d, want %d each", claimed, len(sent), len(seen), len(ids))
	}
	if n := count(t, db, `SELECT COUNT(*) FROM dlq_messages WHERE status = 'replayed' AND replay_count = 1`); n != int64(len(ids)) {
		t.Fatalf("%d rows replayed once, want %d", n, len(ids))
	}
}

// slowSender holds each send for a moment, so that concurrent replays
// overlap between their claim and their settle.
type slowSender struct{ queuetest.Sender }

func (s *slowSender) SendBatch(ctx context.Context, q string, msgs []queue.Outgoing) error {
	time.Sleep(2 * time.Millisecond)
	return s.Sender.SendBatch(ctx, q, msgs)
}

// nestedSender runs another replay of the same ids while the first one is
// sending: the overlapping request must claim nothing.
type nestedSender struct {
	queuetest.Sender
	nested func() ReplayResult
	got    *ReplayResult
}

func (n *nestedSender) SendBatch(ctx context.Context, q string, msgs []queue.Outgoing) error {
	if n.got == nil {
		r := n.nested()
		n.got = &r
	}
	return n.Sender.SendBatch(ctx, q, msgs)
}

func TestReplayOverlappingARunningReplayClaimsNothing(t *testing.T) {
	db := sqlitetest.New(t)
	ids := insert(t, db, adminRow{Key: "1", FailedAt: 1}, adminRow{Key: "2", FailedAt: 2}, adminRow{Key: "3", FailedAt: 3})
	inner := &queuetest.Sender{}
	outer := &nestedSender{}
	outer.nested = func() ReplayResult {
		res, err := newReplay(db, inner).Run(ctx, ReplayRequest{Selection: dlq.Selection{IDs: ids}})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	res, err := newReplay(db, outer).Run(ctx, ReplayRequest{Selection: dlq.Selection{IDs: ids}})
	if err != nil || res.ReplayedCount != 3 {
		t.Fatalf("%+v %v", res, err)
	}
	if outer.got == nil || outer.got.ClaimedCount != 0 || inner.Calls != 0 || outer.got.Skipped[0].Status != dlq.StatusReplaying {
		t.Fatalf("overlapping replay: %+v, %d sends", outer.got, inner.Calls)
	}
	// The same holds for a bulk replay overlapping a running one.
	more := insert(t, db, adminRow{Key: "4", FailedAt: 4}, adminRow{Key: "5", FailedAt: 5})
	outer = &nestedSender{}
	outer.nested = func() ReplayResult {
		res, err := newReplay(db, inner).Run(ctx, ReplayRequest{Selection: dlq.Selection{Filter: &dlq.Filter{}}})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	res, err = newReplay(db, outer).Run(ctx, ReplayRequest{Selection: dlq.Selection{Filter: &dlq.Filter{}}})
	if err != nil || res.ReplayedCount != len(more) || outer.got.ClaimedCount != 0 || inner.Calls != 0 {
		t.Fatalf("bulk: %+v %+v %v", res, outer.got, err)
	}
}

func TestBulkReplayPagesThroughEveryMatchOnce(t *testing.T) {
	db := sqlitetest.New(t)
	generate(t, db, "bulk", 1000, 3, 1_700_000_000_000)
	// Not matching: other queue, other status; matching but poison: skipped.
	insert(t, db, adminRow{Key: "x", Label1: "other queue", FailedAt: 1_700_000_000_000, Source: "other"},
		adminRow{Key: "y", Label1: "acked", FailedAt: 1_700_000_000_000, Status: dlq.StatusAcknowledged},
		adminRow{Key: dlq.UnparseableKey, FailedAt: 1_699_999_999_900, Raw: "poison", ContentType: "v8"})
	s := &queuetest.Sender{}
	r := newReplay(db, s)
	r.BulkMax = 300
	f := &dlq.Filter{SourceQueue: "beer-enrichment"}
	total, calls, cursor := 0, 0, ""
	for {
		res, err := r.Run(ctx, ReplayRequest{Selection: dlq.Selection{Filter: f}, Cursor: cursor})
		if err != nil {
			t.Fatal(err)
		}
		calls++
		if res.ClaimedCount > 300 || res.RequestedCount != res.ClaimedCount || res.ReplayedCount != res.ClaimedCount || res.BulkProgress == nil {
			t.Fatalf("call %d: %+v", calls, res)
		}
		total += res.ClaimedCount
		if !res.HasMore {
			if res.NextCursor != nil {
				t.Fatalf("done but cursor given")
			}
			break
		}
		cursor = *res.NextCursor
	}
	if total != 1000 || calls != 4 {
		t.Fatalf("claimed %d in %d calls", total, calls)
	}
	sent := sentRows(t, db, s, "beer-enrichment")
	seen := map[int64]bool{}
	for _, id := range sent {
		if seen[id] {
			t.Fatalf("id %d sent twice", id)
		}
		seen[id] = true
	}
	for _, m := range s.Sent["beer-enrichment"] {
		if !strings.Contains(m.Body, "bulk-") {
			t.Fatalf("a non-matching row was sent: %s", m.Body)
		}
	}
	if len(sent) != 1000 || s.Calls != 10 || len(s.Sent) != 1 { // 3 pages of 300 (3 batches each) + 100
		t.Fatalf("sent %d in %d calls to %d queues", len(sent), s.Calls, len(s.Sent))
	}
	if n := count(t, db, `SELECT COUNT(*) FROM dlq_messages WHERE status = 'pending'`); n != 2 {
		t.Fatalf("pending left: %d, want the other-queue row and the v8 row", n)
	}
}

func TestBulkReplayStopsAtItsCursorAndRejectsForeignCursors(t *testing.T) {
	db := sqlitetest.New(t)
	generate(t, db, "cur", 10, 1, 1_700_000_000_000)
	s := &queuetest.Sender{}
	r := newReplay(db, s)
	res, err := r.Run(ctx, ReplayRequest{Selection: dlq.Selection{Filter: &dlq.Filter{}}, Limit: 4})
	if err != nil || res.ClaimedCount != 4 || !res.HasMore {
		t.Fatalf("%+v %v", res, err)
	}
	// A failure newer than the cursor (a repeat failure, or a new one) is not
	// part of this bulk run.
	insert(t, db, adminRow{Key: "new", FailedAt: 1_800_000_000_000})
	res2, err := r.Run(ctx, ReplayRequest{Selection: dlq.Selection{Filter: &dlq.Filter{}}, Cursor: *res.NextCursor, Limit: 100})
	if err != nil || res2.ClaimedCount != 6 || res2.HasMore {
		t.Fatalf("%+v %v", res2, err)
	}
	for _, m := range s.Sent["beer-enrichment"] {
		if strings.Contains(m.Body, `"new"`) {
			t.Fatal("row newer than the bulk run was replayed")
		}
	}
	_, err = r.Run(ctx, ReplayRequest{Selection: dlq.Selection{Filter: &dlq.Filter{Key: "gen-1"}}, Cursor: *res.NextCursor})
	wantInput(t, err, "INVALID_CURSOR")
	page, _ := inspect.List{DBs: dlq.Single(dlq.Store{DB: db}), Cursors: dlq.NewCursors("s")}.Page(ctx, inspect.ListParams{Filter: dlq.Filter{Status: dlq.StatusAll}, Limit: 1})
	_, err = r.Run(ctx, ReplayRequest{Selection: dlq.Selection{Filter: &dlq.Filter{}}, Cursor: *page.NextCursor})
	wantInput(t, err, "INVALID_CURSOR")
}

func TestReplayBatchesRespectQueueLimits(t *testing.T) {
	db := sqlitetest.New(t)
	big := strings.Repeat("x", 100_000)
	var rows []adminRow
	for i := 0; i < 5; i++ {
		rows = append(rows, adminRow{Key: fmt.Sprint(i), FailedAt: int64(i), Raw: fmt.Sprintf(`{"beer_id":"%d","pad":"%s"}`, i, big)})
	}
	ids := insert(t, db, rows...)
	s := &queuetest.Sender{}
	rec := &recordingSender{inner: s}
	res, err := newReplay(db, rec).Run(ctx, ReplayRequest{Selection: dlq.Selection{IDs: ids}})
	if err != nil || res.ReplayedCount != 5 {
		t.Fatalf("%+v %v", res, err)
	}
	if len(rec.sizes) != 3 {
		t.Fatalf("5 bodies of 100 KB need 3 batches under 256 KB, got %v", rec.sizes)
	}
	for _, n := range rec.sizes {
		if n > queue.MaxBatchBytes {
			t.Fatalf("batch of %d bytes", n)
		}
	}
}

type recordingSender struct {
	inner queue.Sender
	sizes []int
}

func (r *recordingSender) SendBatch(ctx context.Context, q string, msgs []queue.Outgoing) error {
	n := 0
	for _, m := range msgs {
		n += len(m.Body)
	}
	r.sizes = append(r.sizes, n)
	return r.inner.SendBatch(ctx, q, msgs)
}

// snapshot is every column of every row, to prove that nothing changed.
func snapshot(t *testing.T, db *sql.DB) string {
	t.Helper()
	var s string
	if err := db.QueryRow(`SELECT COALESCE(group_concat(json_array(id, status, replay_count, replayed_at, acknowledged_at,
		replaying_at, acknowledged_note, updated_at, failed_at), ';'), '') FROM dlq_messages`).Scan(&s); err != nil {
		t.Fatal(err)
	}
	return s
}

func TestReplayDryRunChangesNothing(t *testing.T) {
	db := sqlitetest.New(t)
	generate(t, db, "dry", 30, 1, 1_700_000_000_000) // reasons: 'reason 0/1/2', 10 each
	poison := insert(t, db, adminRow{Key: dlq.UnparseableKey, FailedAt: 1_800_000_000_000, Raw: "{broken", Reason: "reason 0", ContentType: "json"})
	before := snapshot(t, db)
	s := &queuetest.Sender{}
	p, err := newReplay(db, s).DryRun(ctx, ReplayRequest{Selection: dlq.Selection{Filter: &dlq.Filter{}}})
	if err != nil {
		t.Fatal(err)
	}
	if !p.DryRun || p.MatchedCount != 30 || p.NotReplayableCount != 1 || len(p.Sample) != 10 || len(p.ByFailureReason) != 3 ||
		p.ByFailureReason[0].Count != 10 || *p.ByFailureReason[0].FailureReason != "reason 0" {
		t.Fatalf("preview %+v", p)
	}
	if p.Sample[0].ID == poison[0] {
		t.Fatal("sample must hold rows the replay would send")
	}
	p, err = newReplay(db, s).DryRun(ctx, ReplayRequest{Selection: dlq.Selection{IDs: []int64{1, 2, poison[0], 12345}}})
	if err != nil || p.RequestedCount != 4 || p.MatchedCount != 2 || p.NotReplayableCount != 1 {
		t.Fatalf("ids preview %+v %v", p, err)
	}
	if after := snapshot(t, db); after != before || s.Calls != 0 {
		t.Fatal("dry run changed rows or sent messages")
	}
}

func TestReplayRejectsBadInput(t *testing.T) {
	db := sqlitetest.New(t)
	ids := insert(t, db, adminRow{Key: "1", FailedAt: 1})
	before := snapshot(t, db)
	many := make([]int64, 51)
	for i := range many {
		many[i] = int64(i + 1)
	}
	cases := []struct {
		name string
		req  ReplayRequest
		code string
	}{
		{"no ids", ReplayRequest{Selection: dlq.Selection{IDs: []int64{}}}, "INVALID_REQUEST"},
		{"nil ids", ReplayRequest{}, "INVALID_REQUEST"},
		{"51 ids", ReplayRequest{Selection: dlq.Selection{IDs: many}}, "INVALID_REQUEST"},
		{"zero id", ReplayRequest{Selection: dlq.Selection{IDs: []int64{0}}}, "INVALID_REQUEST"},
		{"negative id", ReplayRequest{Selection: dlq.Selection{IDs: []int64{-1}}}, "INVALID_REQUEST"},
		{"duplicate", ReplayRequest{Selection: dlq.Selection{IDs: []int64{ids[0], ids[0]}}}, "INVALID_REQUEST"},
		{"ids and filter", ReplayRequest{Selection: dlq.Selection{IDs: ids, Filter: &dlq.Filter{}}}, "INVALID_REQUEST"},
		{"negative delay", ReplayRequest{Selection: dlq.Selection{IDs: ids}, DelaySeconds: -1}, "INVALID_DELAY"},
		{"delay over 12 h", ReplayRequest{Selection: dlq.Selection{IDs: ids}, DelaySeconds: 43201}, "INVALID_DELAY"},
		{"cursor with ids", ReplayRequest{Selection: dlq.Selection{IDs: ids}, Cursor: "x"}, "INVALID_REQUEST"},
		{"bulk of replayed rows", ReplayRequest{Selection: dlq.Selection{Filter: &dlq.Filter{Status: dlq.StatusReplayed}}}, "INVALID_FILTER"},
		{"bulk limit over max", ReplayRequest{Selection: dlq.Selection{Filter: &dlq.Filter{}}, Limit: 501}, "INVALID_LIMIT"},
		{"bulk bad cursor", ReplayRequest{Selection: dlq.Selection{Filter: &dlq.Filter{}}, Cursor: "abc.def"}, "INVALID_CURSOR"},
	}
	s := &queuetest.Sender{}
	for _, c := range cases {
		_, err := newReplay(db, s).Run(ctx, c.req)
		t.Run(c.name, func(t *testing.T) { wantInput(t, err, c.code) })
	}
	if snapshot(t, db) != before || s.Calls != 0 {
		t.Fatal("rejected input changed something")
	}
	if _, err := newReplay(db, s).Run(ctx, ReplayRequest{Selection: dlq.Selection{IDs: ids}, DelaySeconds: 43200}); err != nil {
		t.Fatalf("delay of 12 h is allowed: %v", err)
	}
}

// Replay sends each body exactly as it was captured, byte for byte, with the
// content type it was sent with: no key sorted, no duplicate key collapsed,
// no <>& escaped, nothing added; a body near the queue's message limit
// stays near it. Text, bytes and non-object JSON (poison) go back too.
func TestReplaySendsBodiesExactlyWithTheirContentType(t *testing.T) {
	db := sqlitetest.New(t)
	c := newCapture(db, &bytes.Buffer{})
	big := `{"z":1,"beer_id":"big","pad":"` + strings.Repeat("<&>", 42_320) + `"}`
	msgs := []*queuetest.Message{
		{MsgID: "dup", Text: `{"b":1,"beer_id":"1","a":2,"b":3}`, Type: queue.Text},
		{MsgID: "html", Text: `{"beer_id":"2","beer_name":"<Ale> & \u2028 \"Co\""}`, Type: queue.Text},
		{MsgID: "order", Text: `{"z":{"y":1,"x":[3,2,1]},"beer_id":"3","a":2.50}`, Type: queue.JSON},
		{MsgID: "big", Text: big, Type: queue.JSON},
		{MsgID: "array", Text: `[1,"two",{"b":1,"a":2}]`, Type: queue.JSON},
		{MsgID: "number", Text: `12345678901234567890`, Type: queue.JSON},
		{MsgID: "plain", Text: "plain text\n with \x00 a NUL", Type: queue.Text},
		{MsgID: "empty", Text: "", Type: queue.Text},
		{MsgID: "bin", Text: base64.StdEncoding.EncodeToString([]byte{0, 1, 2, 0xff, 0xfe}), Type: queue.Bytes},
		{MsgID: "lineage", Text: `{"beer_id":"4","_redrive_dlq_id":1}`, Type: queue.JSON},
	}
	for _, m := range msgs {
		m.Attempt = 1
	}
	consume(t, c, msgs...)
	if len(big) < 126_900 || len(big) > 127_000 { // the queue's limit is 128,000 bytes
		t.Fatalf("big body is %d bytes", len(big))
	}
	s := &queuetest.Sender{}
	rec := &recordingSender{inner: s}
	res, err := newReplay(db, rec).Run(ctx, ReplayRequest{Selection: dlq.Selection{Filter: &dlq.Filter{}}})
	if err != nil || res.ReplayedCount != len(msgs) || res.FailedCount != 0 {
		t.Fatalf("%+v %v", res, err)
	}
	got := map[string]queue.Outgoing{}
	for _, o := range s.Sent["beer-enrichment"] {
		got[o.Body] = o
	}
	for _, m := range msgs {
		o, ok := got[m.Text]
		if !ok {
			t.Errorf("%s: body not sent byte for byte (%d bytes)", m.MsgID, len(m.Text))
			continue
		}
		if o.ContentType != m.Type {
			t.Errorf("%s: sent as %s, captured as %s", m.MsgID, o.ContentType, m.Type)
		}
		if strings.Contains(o.Body, "_redrive_dlq_id") && m.MsgID != "lineage" {
			t.Errorf("%s: lineage added to the body", m.MsgID)
		}
	}
	for _, n := range rec.sizes {
		if n > queue.MaxBatchBytes {
			t.Fatalf("a send of %d bytes", n)
		}
	}
}

// A text or JSON body stored as base64 (invalid UTF-8, or capture's minimal
// row of an unstorable message) is decoded and sent as it was produced.
func TestReplayDecodesBase64TextAndJSON(t *testing.T) {
	db := sqlitetest.New(t)
	ids := insert(t, db,
		adminRow{Key: "t", FailedAt: 2, Raw: base64.StdEncoding.EncodeToString([]byte("\xff text")), Encoding: "base64", ContentType: "text"},
		adminRow{Key: "j", FailedAt: 1, Raw: base64.StdEncoding.EncodeToString([]byte(`{"beer_id":"j"}`)), Encoding: "base64", ContentType: "json"},
		adminRow{Key: "bad", FailedAt: 0, Raw: base64.StdEncoding.EncodeToString([]byte(`{nope`)), Encoding: "base64", ContentType: "json"},
	)
	s := &queuetest.Sender{}
	res, err := newReplay(db, s).Run(ctx, ReplayRequest{Selection: dlq.Selection{IDs: ids}})
	if err != nil {
		t.Fatal(err)
	}
	sent := s.Sent["beer-enrichment"]
	if res.ReplayedCount != 2 || res.FailedCount != 1 || res.FailedIDs[0] != ids[2] || len(sent) != 2 ||
		sent[0].Body != "\xff text" || sent[0].ContentType != queue.Text ||
		sent[1].Body != `{"beer_id":"j"}` || sent[1].ContentType != queue.JSON {
		t.Fatalf("%+v %+v", res, sent)
	}
}

// The whole loop: a captured message is replayed, fails again (a new
// message id, the same body), is replayed again and fails again: always the
// same row, replay_count 1 then 2, back to pending each time.
func TestReplayedMessageFailingAgainKeepsItsRow(t *testing.T) {
	for _, ct := range []queue.ContentType{queue.JSON, queue.Text, queue.Bytes} {
		t.Run(string(ct), func(t *testing.T) {
			db := sqlitetest.New(t)
			c := newCapture(db, &bytes.Buffer{})
			body := `{"beer_id":"1","b":1,"a":2}`
			if ct == queue.Bytes {
				body = base64.StdEncoding.EncodeToString([]byte{9, 8, 7})
			}
			consume(t, c, &queuetest.Message{MsgID: "m0", Attempt: 4, Text: body, Type: ct})
			id := readRow(t, db, `message_id = 'm0'`).ID
			s := &queuetest.Sender{}
			for round := 1; round <= 2; round++ {
				res, err := newReplay(db, s).Run(ctx, ReplayRequest{Selection: dlq.Selection{IDs: []int64{id}}})
				if err != nil || res.ReplayedCount != 1 {
					t.Fatalf("round %d: %+v %v", round, res, err)
				}
				out := s.Sent["beer-enrichment"][round-1]
				// What the queue delivers back after the consumer fails it again.
				again := &queuetest.Message{MsgID: fmt.Sprint("m", round), Attempt: 4, Text: out.Body, Type: out.ContentType}
				consume(t, c, again)
				r := readRow(t, db, `id = ?`, id)
				if r.Status != dlq.StatusPending || r.ReplayCount != int64(round) || r.LastMessageID != again.MsgID || r.MessageID != "m0" {
					t.Fatalf("round %d: %+v", round, shortRow(r))
				}
				// Its redelivery changes nothing.
				consume(t, c, &queuetest.Message{MsgID: again.MsgID, Attempt: 5, Text: out.Body, Type: out.ContentType})
				if r2 := readRow(t, db, `id = ?`, id); r2 != r {
					t.Fatalf("round %d: redelivery changed the row: %+v", round, shortRow(r2))
				}
			}
			if n := count(t, db, `SELECT COUNT(*) FROM dlq_messages`); n != 1 {
				t.Fatalf("rows = %d, want 1", n)
			}
			poison := int64(0)
			if ct == queue.Bytes {
				poison = 1 // no beer_id in a binary body: stored as poison, once
			}
			wantCounters(t, db, 3, 2, poison)
		})
	}
}

// Rows captured before body_hash existed (NULL) get it when a replay claims
// them, in one statement and only then, so that their repeat failure finds
// them; rows that have it cost no statement more.
func TestReplaySetsTheBodyHashOfRowsCapturedBeforeIt(t *testing.T) {
	plain, db, stmts := flakyDB(t, 1_000_000)
	legacy := insert(t, plain,
		adminRow{Key: "1", FailedAt: 1}, // content type derived: json
		adminRow{Key: "2", FailedAt: 2, Raw: "plain text"},
		adminRow{Key: "3", FailedAt: 3, Raw: "AAEC", Encoding: "base64"},
	)
	mustExec(t, plain, `UPDATE dlq_messages SET body_hash = NULL`)
	s := &queuetest.Sender{}
	res, err := newReplay(db, s).Run(ctx, ReplayRequest{Selection: dlq.Selection{IDs: legacy}})
	if err != nil || res.ReplayedCount != 3 {
		t.Fatalf("%+v %v", res, err)
	}
	if n := stmts.Load(); n != 3 {
		t.Fatalf("%d D1 round trips, want claim, body hash, settle", n)
	}
	want := map[int64]string{legacy[0]: dlq.BodyHash(queue.JSON, `{"beer_id":"1","beer_name":"","brewer":""}`),
		legacy[1]: dlq.BodyHash(queue.Text, "plain text"), legacy[2]: dlq.BodyHash(queue.Bytes, "AAEC")}
	for id, h := range want {
		var got sql.NullString
		plain.QueryRow(`SELECT body_hash FROM dlq_messages WHERE id = ?`, id).Scan(&got)
		if got.String != h {
			t.Errorf("row %d: body_hash %q, want %q", id, got.String, h)
		}
	}
	// The repeat failures find their rows.
	c := newCapture(plain, &bytes.Buffer{})
	for i, o := range s.Sent["beer-enrichment"] {
		consume(t, c, &queuetest.Message{MsgID: fmt.Sprint("again", i), Attempt: 4, Text: o.Body, Type: o.ContentType})
	}
	if n := count(t, plain, `SELECT COUNT(*) FROM dlq_messages WHERE status = 'pending' AND replay_count = 1 AND last_message_id LIKE 'again%'`); n != 3 {
		t.Fatalf("%d legacy rows updated by their repeat failure, want 3", n)
	}
	if n := count(t, plain, `SELECT COUNT(*) FROM dlq_messages`); n != 3 {
		t.Fatalf("rows = %d, want 3", n)
	}

	// Rows with a hash: claim and settle only.
	more := insert(t, plain, adminRow{Key: "4", FailedAt: 4})
	mustExec(t, plain, `UPDATE dlq_messages SET body_hash = 'x' WHERE id = ?`, more[0])
	stmts.Store(0)
	if res, err := newReplay(db, s).Run(ctx, ReplayRequest{Selection: dlq.Selection{IDs: more}}); err != nil || res.ReplayedCount != 1 {
		t.Fatalf("%+v %v", res, err)
	}
	if n := stmts.Load(); n != 2 {
		t.Fatalf("%d D1 round trips, want claim and settle", n)
	}
}

// A failed body-hash statement sends nothing: the rows go back to pending.
func TestReplayWithoutItsBodyHashSendsNothing(t *testing.T) {
	db := sqlitetest.New(t)
	ids := insert(t, db, adminRow{Key: "1", FailedAt: 1}, adminRow{Key: "2", FailedAt: 2})
	mustExec(t, db, `UPDATE dlq_messages SET body_hash = NULL`)
	mustExec(t, db, `CREATE TRIGGER no_hash BEFORE UPDATE OF body_hash ON dlq_messages BEGIN SELECT RAISE(ABORT, 'no'); END`)
	s := &queuetest.Sender{}
	res, err := newReplay(db, s).Run(ctx, ReplayRequest{Selection: dlq.Selection{IDs: ids}})
	if err != nil || res.ClaimedCount != 2 || res.FailedCount != 2 || s.Calls != 0 {
		t.Fatalf("%+v %v, %d sends", res, err, s.Calls)
	}
	if n := count(t, db, `SELECT COUNT(*) FROM dlq_messages WHERE status = 'pending' AND replay_count = 0`); n != 2 {
		t.Fatalf("rows must be back to pending: %d are", n)
	}
}

// The statement that sets missing body hashes looks its rows up by id.
func TestReplayBodyHashStatementUsesPrimaryKey(t *testing.T) {
	plan := sqlitetest.Plan(t, sqlitetest.New(t), setHashSQL, `[{"id":1,"h":"x"}]`)
	if !strings.Contains(strings.Join(plan, "\n"), "dlq_messages USING INTEGER PRIMARY KEY") {
		t.Fatalf("plan:\n%s", strings.Join(plan, "\n"))
	}
}

// A replay to a capture-only pipeline's queue is PRODUCER_MISSING, whether
// the queue is the destination or, without one, the filter's source queue;
// a destination that has a producer wins over the filter's source queue, and
// an unset destination is never refused (pins checkProducer's q != "" and
// checkTarget's dest == "").
func TestReplayRefusesCaptureOnlyQueues(t *testing.T) {
	r := newReplay(sqlitetest.New(t), &queuetest.Sender{})
	r.Destinations = []string{"beers", "orders"}
	r.MissingProducers = map[string]string{"orders": "ORDERS_QUEUE", "": "NO_QUEUE"}
	for _, c := range []struct {
		name string
		req  ReplayRequest
		code string
	}{
		{"to the capture-only queue", ReplayRequest{Selection: dlq.Selection{IDs: []int64{1}}, Destination: "orders"}, "PRODUCER_MISSING"},
		{"filter on it, no destination", ReplayRequest{Selection: dlq.Selection{Filter: &dlq.Filter{SourceQueue: "orders"}}}, "PRODUCER_MISSING"},
		{"filter on it, sent elsewhere", ReplayRequest{Selection: dlq.Selection{Filter: &dlq.Filter{SourceQueue: "orders"}}, Destination: "beers"}, ""},
		{"ids, no destination", ReplayRequest{Selection: dlq.Selection{IDs: []int64{1}}}, ""},
		{"filter on another queue", ReplayRequest{Selection: dlq.Selection{Filter: &dlq.Filter{SourceQueue: "beers"}}}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := r.Check(c.req)
			if c.code == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			wantInput(t, err, c.code)
			if !strings.Contains(err.Error(), "ORDERS_QUEUE") {
				t.Fatalf("%v does not name the binding", err)
			}
		})
	}
	if err := r.CheckDestination(""); err != nil {
		t.Fatalf("no destination refused: %v", err)
	}
}

// A replay that claims nothing runs one batch, the claim: no settle batch
// (five statements billed for nothing) and nothing sent, for ids and for a
// bulk page alike (pins Run's len(cs) > 0).
func TestReplayClaimingNothingRunsNoSettle(t *testing.T) {
	db := sqlitetest.New(t)
	ids := insert(t, db, adminRow{Key: "acked", FailedAt: 1, Status: dlq.StatusAcknowledged})
	for _, req := range []ReplayRequest{
		{Selection: dlq.Selection{IDs: ids}},
		{Selection: dlq.Selection{Filter: &dlq.Filter{Key: "nothing matches"}}},
	} {
		h := &hookRunner{db: db}
		s := &queuetest.Sender{}
		r := newReplay(db, s)
		r.Batch = h
		res, err := r.Run(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		if res.ClaimedCount != 0 || h.calls != 1 || s.Calls != 0 {
			t.Fatalf("claimed %d, %d batches (want the claim only), %d sends", res.ClaimedCount, h.calls, s.Calls)
		}
	}
}

// hookSender calls hook after each successful send.
type hookSender struct {
	queuetest.Sender
	hook func()
}

func (s *hookSender) SendBatch(ctx context.Context, q string, msgs []queue.Outgoing) error {
	err := s.Sender.SendBatch(ctx, q, msgs)
	if err == nil && s.hook != nil {
		s.hook()
	}
	return err
}

// A replay warns when its settle finds fewer of its claimed rows than it
// claimed (one was rescued while it was sending), and only then (pins
// settle's Unmarshal err == nil and settled != len(cs)).
func TestReplayWarnsOnlyWhenClaimedRowsChangedBeforeSettling(t *testing.T) {
	const warning = "replay: some claimed rows changed before settling"
	db := sqlitetest.New(t)
	var logs bytes.Buffer
	s := &hookSender{}
	r := newReplay(db, s)
	r.Log = slog.New(slog.NewJSONHandler(&logs, nil))
	ids := insert(t, db, adminRow{Key: "1", FailedAt: 1}, adminRow{Key: "2", FailedAt: 2})
	res, err := r.Run(ctx, ReplayRequest{Selection: dlq.Selection{IDs: ids}})
	if err != nil || res.ReplayedCount != 2 {
		t.Fatalf("%+v %v", res, err)
	}
	if strings.Contains(logs.String(), warning) {
		t.Fatalf("a replay that settled every row it claimed warned:\n%s", logs.String())
	}
	if !strings.Contains(logs.String(), `"msg":"replay: done","claimed":2,"replayed":2`) {
		t.Fatalf("no done line:\n%s", logs.String())
	}

	// Row 3 is returned to pending while the replay sends (as Rescue does).
	more := insert(t, db, adminRow{Key: "3", FailedAt: 3}, adminRow{Key: "4", FailedAt: 4})
	s.hook = func() {
		mustExec(t, db, `UPDATE dlq_messages SET status = 'pending', replaying_at = NULL WHERE id = ?`, more[0])
	}
	logs.Reset()
	res, err = r.Run(ctx, ReplayRequest{Selection: dlq.Selection{IDs: more}})
	if err != nil || res.ReplayedCount != 2 {
		t.Fatalf("%+v %v", res, err)
	}
	if !strings.Contains(logs.String(), `"msg":"`+warning+`","claimed":2,"settled":1`) {
		t.Fatalf("no warning with claimed 2, settled 1:\n%s", logs.String())
	}
	var st3, st4 string
	db.QueryRow(`SELECT status FROM dlq_messages WHERE id = ?`, more[0]).Scan(&st3)
	db.QueryRow(`SELECT status FROM dlq_messages WHERE id = ?`, more[1]).Scan(&st4)
	if st3 != dlq.StatusPending || st4 != dlq.StatusReplayed {
		t.Fatalf("statuses %s %s: the rescued row must stay the rescue's", st3, st4)
	}
}
