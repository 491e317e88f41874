package dlq

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redrive/redrive/internal/sqlitetest"
	"github.com/redrive/redrive/queue"
	"github.com/redrive/redrive/queue/queuetest"
)

var clock = func() time.Time { return time.UnixMilli(1_750_000_000_000) }

func newReplay(db *sql.DB, s queue.Sender) Replay {
	return Replay{DB: db, Sender: s, Log: discard, Cursors: NewCursors("s"), BulkMax: 500, Now: clock}
}

// lineage returns the _redrive_dlq_id of every message sent to q.
func sentLineage(t *testing.T, s *queuetest.Sender, q string) []int64 {
	t.Helper()
	var out []int64
	for _, m := range s.Sent[q] {
		var body map[string]json.RawMessage
		if err := json.Unmarshal([]byte(m.Body), &body); err != nil {
			t.Fatalf("sent body is not a JSON object: %q", m.Body)
		}
		var id int64
		if err := json.Unmarshal(body[LineageField], &id); err != nil {
			t.Fatalf("sent body without lineage: %q", m.Body)
		}
		out = append(out, id)
	}
	return out
}

func TestReplaySendsClaimedRowsWithLineageAndMarksThemReplayed(t *testing.T) {
	db := sqlitetest.New(t)
	ids := insert(t, db,
		adminRow{beerID: "1", beerName: "A", failedAt: 100, raw: `{"beer_id":"1","beer_name":"A","extra":{"k":[1,2.50]}}`},
		adminRow{beerID: "2", beerName: "B", failedAt: 200, replayCount: 2},
		adminRow{beerID: "3", beerName: "C", failedAt: 300})
	s := &queuetest.Sender{}
	res, err := newReplay(db, s).Run(ctx, ReplayRequest{Selection: Selection{IDs: ids}, DelaySeconds: 60})
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
	got := sentLineage(t, s, "beer-enrichment")
	if got[0] != ids[2] || got[1] != ids[1] || got[2] != ids[0] {
		t.Fatalf("lineage %v, want newest failure first %v", got, ids)
	}
	if !strings.Contains(sent[2].Body, `"extra":{"k":[1,2.50]}`) || sent[0].Delay != 60*time.Second {
		t.Fatalf("body must keep the stored fields verbatim and the delay: %+v", sent[2])
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
		if status != StatusReplayed || count != want || replayedAt != clock().UnixMilli() || replayingAt.Valid {
			t.Fatalf("row %d: %s count=%d replayed_at=%d replaying_at=%v", id, status, count, replayedAt, replayingAt)
		}
	}
	// A second replay of the same ids is a no-op: nothing is pending.
	res, err = newReplay(db, s).Run(ctx, ReplayRequest{Selection: Selection{IDs: ids}})
	if err != nil || res.ClaimedCount != 0 || res.ReplayedCount != 0 || len(s.Sent["beer-enrichment"]) != 3 || res.QueuedTo != "" {
		t.Fatalf("second replay: %+v %v", res, err)
	}
	if res.SkippedCount != 3 || res.Skipped[0].Reason != "not_pending" || res.Skipped[0].Status != StatusReplayed {
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
		adminRow{beerID: "ok", failedAt: 1},
		adminRow{beerID: "acked", failedAt: 1, status: StatusAcknowledged},
		adminRow{beerID: "replaying", failedAt: 1, status: StatusReplaying},
		adminRow{beerID: UnparseableBeerID, failedAt: 1, raw: `not json at all`},
		adminRow{beerID: UnparseableBeerID, failedAt: 1, raw: `[1,2,3]`},
		adminRow{beerID: UnparseableBeerID, failedAt: 1, raw: `"a string"`},
		adminRow{beerID: UnparseableBeerID, failedAt: 1, raw: `eyJhIjoxfQ==`, encoding: "base64"},
	)
	s := &queuetest.Sender{}
	req := append(append([]int64{}, ids...), 999_999)
	res, err := newReplay(db, s).Run(ctx, ReplayRequest{Selection: Selection{IDs: req}})
	if err != nil {
		t.Fatal(err)
	}
	if res.ClaimedCount != 1 || res.ReplayedCount != 1 || len(s.Sent["beer-enrichment"]) != 1 || res.SkippedCount != 7 {
		t.Fatalf("result %+v", res)
	}
	want := []string{"not_pending", "not_pending", "not_replayable", "not_replayable", "not_replayable", "not_replayable", "not_found"}
	for i, sk := range res.Skipped {
		if sk.ID != req[i+1] || sk.Reason != want[i] {
			t.Errorf("skipped[%d] = %+v, want id %d %s", i, sk, req[i+1], want[i])
		}
	}
	if n := count(t, db, `SELECT COUNT(*) FROM dlq_messages WHERE status = 'pending' AND beer_id = ?`, UnparseableBeerID); n != 4 {
		t.Fatalf("poison rows must stay pending, %d are", n)
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
	ids := insert(t, db, adminRow{beerID: "1", failedAt: 1, replayCount: 1}, adminRow{beerID: "2", failedAt: 2})
	res, err := newReplay(db, &queuetest.Sender{Err: errors.New("queue down")}).Run(ctx, ReplayRequest{Selection: Selection{IDs: ids}})
	if err != nil {
		t.Fatal(err)
	}
	if res.ClaimedCount != 2 || res.ReplayedCount != 0 || res.FailedCount != 2 || ReplayOutcome(res) != OutcomeFailed {
		t.Fatalf("result %+v", res)
	}
	if n := count(t, db, `SELECT COUNT(*) FROM dlq_messages WHERE status = 'pending' AND replaying_at IS NULL AND replayed_at IS NULL
		AND replay_count = CASE beer_id WHEN '1' THEN 1 ELSE 0 END`); n != 2 {
		t.Fatalf("rows must be back to pending, untouched; %d are", n)
	}

	// Partial: one queue works, the other does not.
	more := insert(t, db, adminRow{beerID: "3", failedAt: 3, source: "good-queue"}, adminRow{beerID: "4", failedAt: 4, source: "bad-queue"})
	fs := &failingSender{broken: "bad-queue"}
	res, err = newReplay(db, fs).Run(ctx, ReplayRequest{Selection: Selection{IDs: more}})
	if err != nil {
		t.Fatal(err)
	}
	if res.ReplayedCount != 1 || res.FailedCount != 1 || res.QueuedTo != "bad-queue,good-queue" || ReplayOutcome(res) != OutcomePartial ||
		res.ReplayedIDs[0] != more[0] || res.FailedIDs[0] != more[1] || len(fs.Sent["good-queue"]) != 1 {
		t.Fatalf("partial: %+v", res)
	}
	var s3, s4 string
	db.QueryRow(`SELECT status FROM dlq_messages WHERE id = ?`, more[0]).Scan(&s3)
	db.QueryRow(`SELECT status FROM dlq_messages WHERE id = ?`, more[1]).Scan(&s4)
	if s3 != StatusReplayed || s4 != StatusPending {
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
			res, err := newReplay(db, s).Run(ctx, ReplayRequest{Selection: Selection{IDs: want}})
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
	sent := sentLineage(t, &s.Sender, "beer-enrichment")
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
	ids := insert(t, db, adminRow{beerID: "1", failedAt: 1}, adminRow{beerID: "2", failedAt: 2}, adminRow{beerID: "3", failedAt: 3})
	inner := &queuetest.Sender{}
	outer := &nestedSender{}
	outer.nested = func() ReplayResult {
		res, err := newReplay(db, inner).Run(ctx, ReplayRequest{Selection: Selection{IDs: ids}})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	res, err := newReplay(db, outer).Run(ctx, ReplayRequest{Selection: Selection{IDs: ids}})
	if err != nil || res.ReplayedCount != 3 {
		t.Fatalf("%+v %v", res, err)
	}
	if outer.got == nil || outer.got.ClaimedCount != 0 || inner.Calls != 0 || outer.got.Skipped[0].Status != StatusReplaying {
		t.Fatalf("overlapping replay: %+v, %d sends", outer.got, inner.Calls)
	}
	// The same holds for a bulk replay overlapping a running one.
	more := insert(t, db, adminRow{beerID: "4", failedAt: 4}, adminRow{beerID: "5", failedAt: 5})
	outer = &nestedSender{}
	outer.nested = func() ReplayResult {
		res, err := newReplay(db, inner).Run(ctx, ReplayRequest{Selection: Selection{Filter: &Filter{}}})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	res, err = newReplay(db, outer).Run(ctx, ReplayRequest{Selection: Selection{Filter: &Filter{}}})
	if err != nil || res.ReplayedCount != len(more) || outer.got.ClaimedCount != 0 || inner.Calls != 0 {
		t.Fatalf("bulk: %+v %+v %v", res, outer.got, err)
	}
}

func TestBulkReplayPagesThroughEveryMatchOnce(t *testing.T) {
	db := sqlitetest.New(t)
	generate(t, db, "bulk", 1000, 3, 1_700_000_000_000)
	// Not matching: other queue, other status; matching but poison: skipped.
	insert(t, db, adminRow{beerID: "x", beerName: "other queue", failedAt: 1_700_000_000_000, source: "other"},
		adminRow{beerID: "y", beerName: "acked", failedAt: 1_700_000_000_000, status: StatusAcknowledged},
		adminRow{beerID: UnparseableBeerID, failedAt: 1_699_999_999_900, raw: "poison"})
	s := &queuetest.Sender{}
	r := newReplay(db, s)
	r.BulkMax = 300
	f := &Filter{SourceQueue: "beer-enrichment"}
	total, calls, cursor := 0, 0, ""
	for {
		res, err := r.Run(ctx, ReplayRequest{Selection: Selection{Filter: f}, Cursor: cursor})
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
	sent := sentLineage(t, s, "beer-enrichment")
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
		t.Fatalf("pending left: %d, want the other-queue row and the poison row", n)
	}
}

func TestBulkReplayStopsAtItsCursorAndRejectsForeignCursors(t *testing.T) {
	db := sqlitetest.New(t)
	generate(t, db, "cur", 10, 1, 1_700_000_000_000)
	s := &queuetest.Sender{}
	r := newReplay(db, s)
	res, err := r.Run(ctx, ReplayRequest{Selection: Selection{Filter: &Filter{}}, Limit: 4})
	if err != nil || res.ClaimedCount != 4 || !res.HasMore {
		t.Fatalf("%+v %v", res, err)
	}
	// A failure newer than the cursor (a repeat failure, or a new one) is not
	// part of this bulk run.
	insert(t, db, adminRow{beerID: "new", failedAt: 1_800_000_000_000})
	res2, err := r.Run(ctx, ReplayRequest{Selection: Selection{Filter: &Filter{}}, Cursor: *res.NextCursor, Limit: 100})
	if err != nil || res2.ClaimedCount != 6 || res2.HasMore {
		t.Fatalf("%+v %v", res2, err)
	}
	for _, m := range s.Sent["beer-enrichment"] {
		if strings.Contains(m.Body, `"new"`) {
			t.Fatal("row newer than the bulk run was replayed")
		}
	}
	_, err = r.Run(ctx, ReplayRequest{Selection: Selection{Filter: &Filter{BeerID: "gen-1"}}, Cursor: *res.NextCursor})
	wantInput(t, err, "INVALID_CURSOR")
	page, _ := List{DB: db, Cursors: NewCursors("s")}.Page(ctx, ListParams{Filter: Filter{Status: StatusAll}, Limit: 1})
	_, err = r.Run(ctx, ReplayRequest{Selection: Selection{Filter: &Filter{}}, Cursor: *page.NextCursor})
	wantInput(t, err, "INVALID_CURSOR")
}

func TestReplayBatchesRespectQueueLimits(t *testing.T) {
	db := sqlitetest.New(t)
	big := strings.Repeat("x", 100_000)
	var rows []adminRow
	for i := 0; i < 5; i++ {
		rows = append(rows, adminRow{beerID: fmt.Sprint(i), failedAt: int64(i), raw: fmt.Sprintf(`{"beer_id":"%d","pad":"%s"}`, i, big)})
	}
	ids := insert(t, db, rows...)
	s := &queuetest.Sender{}
	rec := &recordingSender{inner: s}
	res, err := newReplay(db, rec).Run(ctx, ReplayRequest{Selection: Selection{IDs: ids}})
	if err != nil || res.ReplayedCount != 5 {
		t.Fatalf("%+v %v", res, err)
	}
	if len(rec.sizes) != 3 {
		t.Fatalf("5 bodies of 100 KB need 3 batches under 256 KB, got %v", rec.sizes)
	}
	for _, n := range rec.sizes {
		if n > sendBatchBytes {
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
	poison := insert(t, db, adminRow{beerID: UnparseableBeerID, failedAt: 1_800_000_000_000, raw: "{broken", reason: "reason 0"})
	before := snapshot(t, db)
	s := &queuetest.Sender{}
	p, err := newReplay(db, s).DryRun(ctx, ReplayRequest{Selection: Selection{Filter: &Filter{}}})
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
	p, err = newReplay(db, s).DryRun(ctx, ReplayRequest{Selection: Selection{IDs: []int64{1, 2, poison[0], 12345}}})
	if err != nil || p.RequestedCount != 4 || p.MatchedCount != 2 || p.NotReplayableCount != 1 {
		t.Fatalf("ids preview %+v %v", p, err)
	}
	if after := snapshot(t, db); after != before || s.Calls != 0 {
		t.Fatal("dry run changed rows or sent messages")
	}
}

func TestReplayRejectsBadInput(t *testing.T) {
	db := sqlitetest.New(t)
	ids := insert(t, db, adminRow{beerID: "1", failedAt: 1})
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
		{"no ids", ReplayRequest{Selection: Selection{IDs: []int64{}}}, "INVALID_REQUEST"},
		{"nil ids", ReplayRequest{}, "INVALID_REQUEST"},
		{"51 ids", ReplayRequest{Selection: Selection{IDs: many}}, "INVALID_REQUEST"},
		{"zero id", ReplayRequest{Selection: Selection{IDs: []int64{0}}}, "INVALID_REQUEST"},
		{"negative id", ReplayRequest{Selection: Selection{IDs: []int64{-1}}}, "INVALID_REQUEST"},
		{"duplicate", ReplayRequest{Selection: Selection{IDs: []int64{ids[0], ids[0]}}}, "INVALID_REQUEST"},
		{"ids and filter", ReplayRequest{Selection: Selection{IDs: ids, Filter: &Filter{}}}, "INVALID_REQUEST"},
		{"negative delay", ReplayRequest{Selection: Selection{IDs: ids}, DelaySeconds: -1}, "INVALID_DELAY"},
		{"delay over 12 h", ReplayRequest{Selection: Selection{IDs: ids}, DelaySeconds: 43201}, "INVALID_DELAY"},
		{"cursor with ids", ReplayRequest{Selection: Selection{IDs: ids}, Cursor: "x"}, "INVALID_REQUEST"},
		{"bulk of replayed rows", ReplayRequest{Selection: Selection{Filter: &Filter{Status: StatusReplayed}}}, "INVALID_FILTER"},
		{"bulk limit over max", ReplayRequest{Selection: Selection{Filter: &Filter{}}, Limit: 501}, "INVALID_LIMIT"},
		{"bulk bad cursor", ReplayRequest{Selection: Selection{Filter: &Filter{}}, Cursor: "abc.def"}, "INVALID_CURSOR"},
	}
	s := &queuetest.Sender{}
	for _, c := range cases {
		_, err := newReplay(db, s).Run(ctx, c.req)
		t.Run(c.name, func(t *testing.T) { wantInput(t, err, c.code) })
	}
	if snapshot(t, db) != before || s.Calls != 0 {
		t.Fatal("rejected input changed something")
	}
	if _, err := newReplay(db, s).Run(ctx, ReplayRequest{Selection: Selection{IDs: ids}, DelaySeconds: 43200}); err != nil {
		t.Fatalf("delay of 12 h is allowed: %v", err)
	}
}
