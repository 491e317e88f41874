package enrichment

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"runtime"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/redrive/redrive/internal/sqlitetest"
	"github.com/redrive/redrive/jobs"
	"github.com/redrive/redrive/metrics"
	"github.com/redrive/redrive/queue"
	"github.com/redrive/redrive/queue/queuetest"
)

// catchUpNow is the scheduled time of the runs in these tests.
var catchUpNow = time.Date(2030, 6, 2, 9, 0, 0, 0, time.UTC)

// beerRow seeds one beers row; zero times are NULL (created_at and updated_at default to a day before catchUpNow).
type beerRow struct {
	id, status         string
	attempts           int
	next, updated, qAt time.Time
	name, brewer       string
}

func msOrNil(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UnixMilli()
}

func seedBeers(t *testing.T, db *sql.DB, rows ...beerRow) {
	t.Helper()
	for _, r := range rows {
		updated := r.updated
		if updated.IsZero() {
			updated = catchUpNow.Add(-24 * time.Hour)
		}
		name := r.name
		if name == "" {
			name = "Name of " + r.id
		}
		if _, err := db.Exec(`INSERT INTO beers(beer_id, name, brewer, status, attempts, next_attempt_at, queued_at, created_at, updated_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`, r.id, name, r.brewer, r.status, r.attempts, msOrNil(r.next), msOrNil(r.qAt),
			updated.UnixMilli(), updated.UnixMilli()); err != nil {
			t.Fatal(err)
		}
	}
}

// sentBeers decodes every message sent to the enrichment queue.
func sentBeers(t *testing.T, s *queuetest.Sender) []Beer {
	t.Helper()
	var out []Beer
	for _, m := range s.Sent[queue.Enrichment] {
		var b Beer
		if err := json.Unmarshal([]byte(m.Body), &b); err != nil {
			t.Fatalf("message body %q: %v", m.Body, err)
		}
		if m.Delay != 0 {
			t.Errorf("message for %s has a delay %s", b.BeerID, m.Delay)
		}
		out = append(out, b)
	}
	return out
}

func ids(bs []Beer) []string {
	var out []string
	for _, b := range bs {
		out = append(out, b.BeerID)
	}
	sort.Strings(out)
	return out
}

func beerOf(t *testing.T, db *sql.DB, id string) BeerState {
	t.Helper()
	s, err := (Registry{DB: db}).Lookup(context.Background(), id)
	if err != nil {
		t.Fatalf("lookup %s: %v", id, err)
	}
	return s
}

func counterOf(t *testing.T, db *sql.DB, name string) int64 {
	t.Helper()
	var n int64
	if err := db.QueryRow(`SELECT COALESCE((SELECT value FROM counters WHERE name = ?), 0)`, name).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func newCatchUp(db *sql.DB, s queue.Sender) *CatchUp {
	return &CatchUp{DB: db, Log: discard, Sender: s, MaxAttempts: 4, LostAfter: time.Hour}
}

// recordRun stores a run's summary the way jobs.CronRouter does, so the
// next run sees it (up_since) and /admin/metrics reads it.
func recordRun(t *testing.T, db *sql.DB, at time.Time, sum map[string]any, runErr error) {
	t.Helper()
	if err := (metrics.JobRuns{DB: db}).RecordRun(context.Background(), CatchUpJobName, at, time.Second, runErr, sum); err != nil {
		t.Fatal(err)
	}
}

func TestCatchUpClaimsDueBeersAndLeavesExhaustedOnesFailed(t *testing.T) {
	ctx := context.Background()
	db := sqlitetest.New(t)
	now := catchUpNow
	day := 24 * time.Hour
	seedBeers(t, db,
		beerRow{id: "pending-day-late", status: "pending", next: now.Add(-day), brewer: "Brew Co"},
		beerRow{id: "pending-due-now", status: "pending", next: now},
		beerRow{id: "pending-future", status: "pending", next: now.Add(time.Minute)},
		beerRow{id: "failed-rescheduled", status: "failed", attempts: 2, next: now.Add(-time.Hour)},
		// Used up its attempts: never re-queued, even with a schedule.
		beerRow{id: "failed-exhausted", status: "failed", attempts: 4, next: now.Add(-time.Hour)},
		beerRow{id: "failed-exhausted-more", status: "failed", attempts: 9, next: now.Add(-day)},
		// As the consumer leaves them: last attempt (DLQ) or permanent failure.
		beerRow{id: "failed-to-dlq", status: "failed", attempts: 4},
		beerRow{id: "failed-permanent", status: "failed", attempts: 1},
		beerRow{id: "queued-retrying", status: "queued", attempts: 1, next: now.Add(-time.Minute), updated: now.Add(-2 * time.Minute)},
		beerRow{id: "enriched", status: "enriched", attempts: 1, next: now.Add(-day)},
		beerRow{id: "not-found", status: "not_found", attempts: 1, next: now.Add(-day)},
	)
	sender := &queuetest.Sender{}
	c := newCatchUp(db, sender)
	sum, err := c.Run(ctx, now)
	if err != nil {
		t.Fatal(err)
	}
	got := sentBeers(t, sender)
	if want := []string{"failed-rescheduled", "pending-day-late", "pending-due-now"}; !reflect.DeepEqual(ids(got), want) {
		t.Fatalf("sent %v, want %v", ids(got), want)
	}
	// Oldest due first, body as Registry.Enqueue builds it.
	if got[0] != (Beer{BeerID: "pending-day-late", BeerName: "Name of pending-day-late", Brewer: "Brew Co"}) {
		t.Fatalf("first message %+v", got[0])
	}
	if sum["enqueued"] != int64(3) || sum["due"] != int64(3) || sum["lost"] != int64(0) || sum["put_back"] != int64(0) ||
		sum["lateness_max_ms"] != day.Milliseconds() || sum["lateness_median_ms"] != time.Hour.Milliseconds() || sum["more"] != false {
		t.Fatalf("summary %v", sum)
	}
	for _, id := range []string{"pending-day-late", "pending-due-now", "failed-rescheduled"} {
		s := beerOf(t, db, id)
		if s.Status != StatusQueued || s.QueuedAt == nil || *s.QueuedAt != now.UnixMilli() || s.UpdatedAt != now.UnixMilli() || s.NextAttemptAt == nil {
			t.Errorf("%s after the claim: %+v", id, s)
		}
	}
	if s := beerOf(t, db, "pending-day-late"); *s.NextAttemptAt != now.Add(-day).UnixMilli() {
		t.Errorf("next_attempt_at must keep when the attempt was due: %+v", s)
	}
	for id, st := range map[string]string{"pending-future": "pending", "failed-exhausted": "failed", "failed-exhausted-more": "failed",
		"failed-to-dlq": "failed", "failed-permanent": "failed", "queued-retrying": "queued", "enriched": "enriched", "not-found": "not_found"} {
		if s := beerOf(t, db, id); s.Status != st || s.UpdatedAt == now.UnixMilli() {
			t.Errorf("%s must be left alone: %+v", id, s)
		}
	}
	if n := counterOf(t, db, CounterCatchUpEnqueued); n != 3 {
		t.Errorf("enqueued counter %d", n)
	}
	if n := counterOf(t, db, CounterCatchUpLateness); n != 86400+3600+0 {
		t.Errorf("lateness counter %d s", n)
	}

	// Later runs send only what becomes due (pending-future, a minute
	// later); the exhausted beers stay failed for good.
	recordRun(t, db, now, sum, nil)
	for _, r := range []struct {
		at  time.Time
		due int64
	}{{now, 0}, {now.Add(5 * time.Minute), 1}, {now.Add(10 * time.Minute), 0}, {now.Add(30 * day), 0}} {
		sum, err = c.Run(ctx, r.at)
		if err != nil || sum["due"] != r.due {
			t.Fatalf("run at %s: %v %v, want %d due", r.at, sum, err, r.due)
		}
		recordRun(t, db, r.at, sum, nil)
	}
	if got := ids(sentBeers(t, sender)); !reflect.DeepEqual(got, []string{"failed-rescheduled", "pending-day-late", "pending-due-now", "pending-future"}) {
		t.Fatalf("sent over all runs: %v", got)
	}
	if s := beerOf(t, db, "failed-exhausted"); s.Status != StatusFailed || s.Attempts != 4 {
		t.Fatalf("exhausted beer %+v", s)
	}
}

func TestCatchUpRequeuesBeersWhoseMessageWasLost(t *testing.T) {
	ctx := context.Background()
	db := sqlitetest.New(t)
	now := catchUpNow
	m := time.Minute
	// The job has been running every 5 minutes for two hours.
	recordRun(t, db, now.Add(-5*m), map[string]any{"up_since": now.Add(-2 * time.Hour).UnixMilli()}, nil)
	seedBeers(t, db,
		beerRow{id: "queued-lost", status: "queued", updated: now.Add(-61 * m), qAt: now.Add(-61 * m)},
		beerRow{id: "queued-exactly-lost", status: "queued", updated: now.Add(-60 * m), qAt: now.Add(-60 * m)},
		// A retry was due 70 minutes ago and never came.
		beerRow{id: "retry-lost", status: "queued", attempts: 2, updated: now.Add(-3 * time.Hour), next: now.Add(-70 * m), qAt: now.Add(-3 * time.Hour)},
		// Waiting for the quota reset: its message is on the queue with a delay.
		beerRow{id: "retry-waiting", status: "queued", attempts: 1, updated: now.Add(-3 * time.Hour), next: now.Add(5 * time.Hour), qAt: now.Add(-3 * time.Hour)},
		beerRow{id: "queued-recent", status: "queued", updated: now.Add(-30 * m), qAt: now.Add(-30 * m)},
		// Its message reached the DLQ after it was queued: not lost, the operator decides.
		beerRow{id: "queued-in-dlq", status: "queued", updated: now.Add(-2 * time.Hour), qAt: now.Add(-2 * time.Hour)},
		// Only an older failure is in the DLQ: this message is lost.
		beerRow{id: "queued-old-dlq", status: "queued", updated: now.Add(-2 * time.Hour), qAt: now.Add(-2 * time.Hour)},
		// Registered, but its send failed long ago / is in flight now.
		beerRow{id: "pending-unsent", status: "pending", updated: now.Add(-2 * time.Hour)},
		beerRow{id: "pending-sending", status: "pending", updated: now.Add(-time.Second)},
	)
	for _, r := range []struct {
		beer string
		at   time.Time
	}{{"queued-in-dlq", now.Add(-110 * m)}, {"queued-old-dlq", now.Add(-24 * time.Hour)}} {
		if _, err := db.Exec(`INSERT INTO dlq_messages(message_id, last_message_id, row_key, status, failed_at) VALUES (?, ?, ?, 'pending', ?)`,
			"m-"+r.beer, "m-"+r.beer, r.beer, r.at.UnixMilli()); err != nil {
			t.Fatal(err)
		}
	}
	sender := &queuetest.Sender{}
	c := newCatchUp(db, sender)
	sum, err := c.Run(ctx, now)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"pending-unsent", "queued-exactly-lost", "queued-lost", "queued-old-dlq", "retry-lost"}
	if got := ids(sentBeers(t, sender)); !reflect.DeepEqual(got, want) {
		t.Fatalf("sent %v, want %v", got, want)
	}
	// Lost at: queued-lost 1 min ago, exactly 0, retry-lost 10 min ago, the two 2 h ones 1 h ago.
	if sum["lost"] != int64(5) || sum["due"] != int64(0) || sum["lateness_max_ms"] != time.Hour.Milliseconds() ||
		sum["lateness_median_ms"] != (10*m).Milliseconds() || sum["up_since"] != now.Add(-2*time.Hour).UnixMilli() {
		t.Fatalf("summary %v", sum)
	}
	if s := beerOf(t, db, "retry-lost"); s.Status != StatusQueued || *s.QueuedAt != now.UnixMilli() || *s.NextAttemptAt != now.Add(-10*m).UnixMilli() {
		t.Fatalf("retry-lost after the claim %+v", s)
	}
	for _, id := range []string{"retry-waiting", "queued-recent", "queued-in-dlq", "pending-sending"} {
		if s := beerOf(t, db, id); s.UpdatedAt == now.UnixMilli() {
			t.Errorf("%s must be left alone: %+v", id, s)
		}
	}
	if counterOf(t, db, CounterCatchUpLost) != 5 || counterOf(t, db, CounterCatchUpEnqueued) != 5 {
		t.Fatalf("counters lost %d enqueued %d", counterOf(t, db, CounterCatchUpLost), counterOf(t, db, CounterCatchUpEnqueued))
	}

	// Every run every 5 minutes for the next hour: queued-recent is lost
	// at +30 min; the re-enqueued beers get LostAfter again (a beer whose
	// messages keep vanishing is sent once per LostAfter, not every run),
	// and so does pending-sending; retry-waiting and queued-in-dlq never.
	recordRun(t, db, now, sum, nil)
	for at := now.Add(5 * m); !at.After(now.Add(60 * m)); at = at.Add(5 * m) {
		sum, err := c.Run(ctx, at)
		want := int64(0)
		switch at.Sub(now) {
		case 30 * m:
			want = 1
		case 60 * m:
			want = 6
		}
		if err != nil || sum["lost"] != want {
			t.Fatalf("run at +%s: %v %v, want %d lost", at.Sub(now), sum, err, want)
		}
		recordRun(t, db, at, sum, nil)
	}
	if s := beerOf(t, db, "queued-in-dlq"); s.UpdatedAt != now.Add(-2*time.Hour).UnixMilli() {
		t.Fatalf("a beer whose message is in the DLQ was re-queued: %+v", s)
	}
}

// After a gap in the job's runs (the worker was down), queued beers are
// not declared lost until the job has run for LostAfter: their messages
// are still on the queue. Due beers are sent at once.
func TestCatchUpWaitsAfterDowntimeBeforeDeclaringMessagesLost(t *testing.T) {
	ctx := context.Background()
	db := sqlitetest.New(t)
	day := 24 * time.Hour
	back := catchUpNow // the first run after a day of downtime
	recordRun(t, db, back.Add(-day), map[string]any{"up_since": back.Add(-10 * day).UnixMilli()}, nil)
	seedBeers(t, db,
		beerRow{id: "queued-before-downtime", status: "queued", updated: back.Add(-day - time.Hour), qAt: back.Add(-day - time.Hour)},
		beerRow{id: "due-during-downtime", status: "pending", next: back.Add(-day / 2)},
	)
	sender := &queuetest.Sender{}
	c := newCatchUp(db, sender)
	at := back
	for ; at.Before(back.Add(time.Hour)); at = at.Add(5 * time.Minute) {
		sum, err := c.Run(ctx, at)
		if err != nil || sum["lost"] != int64(0) || sum["up_since"] != back.UnixMilli() || sum["lost_check_from"] != back.Add(time.Hour).UnixMilli() {
			t.Fatalf("run at +%s: %v %v", at.Sub(back), sum, err)
		}
		recordRun(t, db, at, sum, nil)
	}
	if got := ids(sentBeers(t, sender)); !reflect.DeepEqual(got, []string{"due-during-downtime"}) {
		t.Fatalf("sent during the first hour: %v", got)
	}
	// Neither message was delivered within the hour (no consumer here):
	// both are lost now.
	sum, err := c.Run(ctx, at)
	if err != nil || sum["lost"] != int64(2) || sum["lost_check_from"] != nil {
		t.Fatalf("run at +1h: %v %v", sum, err)
	}
}

// racySender records sends. The first send of each run waits (up to a
// deadline) until a second run is sending too, so that two runs certainly
// hold claims at the same time.
type racySender struct {
	mu       sync.Mutex
	sent     map[string]int
	sending  int           // runs that reached their first send
	overlap  chan struct{} // closed when two runs have
	deadline time.Duration
}

func newRacySender() *racySender {
	return &racySender{sent: map[string]int{}, overlap: make(chan struct{}), deadline: 30 * time.Second}
}

// run is one run's view of the sender.
type racyRun struct {
	s     *racySender
	first bool
}

func (r *racyRun) SendBatch(ctx context.Context, q string, msgs []queue.Outgoing) error {
	s := r.s
	if !r.first {
		r.first = true
		s.mu.Lock()
		if s.sending++; s.sending == 2 {
			close(s.overlap)
		}
		s.mu.Unlock()
		select {
		case <-s.overlap:
		case <-time.After(s.deadline): // a deadline, not a measurement
			return errors.New("no second run started sending while this one held its claim")
		}
	}
	runtime.Gosched()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, m := range msgs {
		var b Beer
		if err := json.Unmarshal([]byte(m.Body), &b); err != nil {
			return err
		}
		s.sent[b.BeerID]++
	}
	return nil
}

// Concurrent runs (two isolates running the cron at once; in wrangler dev two
// fires interleave or not as its scheduling has it) each claim and send,
// and no beer is sent twice.
func TestCatchUpOverlappingRunsNeverSendABeerTwice(t *testing.T) {
	db := sqlitetest.New(t)
	db.SetMaxOpenConns(8)
	const beers, runs = 600, 4
	if _, err := db.Exec(`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?)
		INSERT INTO beers(beer_id, name, status, next_attempt_at, created_at, updated_at)
		SELECT 'b' || i, 'Beer ' || i, 'pending', ?2 - i * 1000, 1, 1 FROM n`, beers, catchUpNow.UnixMilli()); err != nil {
		t.Fatal(err)
	}
	sender := newRacySender()
	var wg sync.WaitGroup
	sums := make([]map[string]any, runs)
	errs := make([]error, runs)
	for i := 0; i < runs; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := newCatchUp(db, &racyRun{s: sender})
			c.Limits = jobs.Limits{ChunkRows: 7}
			sums[i], errs[i] = c.Run(context.Background(), catchUpNow)
		}()
	}
	wg.Wait()
	var total int64
	active := 0
	for i := range sums {
		if errs[i] != nil {
			t.Fatalf("run %d: %v", i, errs[i])
		}
		n := sums[i]["enqueued"].(int64)
		total += n
		if n > 0 {
			active++
		}
		t.Logf("run %d enqueued %d", i, n)
	}
	if active < 2 {
		t.Fatalf("only %d run(s) enqueued beers: the runs did not overlap", active)
	}
	if len(sender.sent) != beers || total != beers {
		t.Fatalf("%d distinct beers sent, runs report %d; want %d", len(sender.sent), total, beers)
	}
	for id, n := range sender.sent {
		if n != 1 {
			t.Errorf("beer %s sent %d times", id, n)
		}
	}
	var queued int64
	db.QueryRow(`SELECT COUNT(*) FROM beers WHERE status = 'queued' AND queued_at = ?`, catchUpNow.UnixMilli()).Scan(&queued)
	if queued != beers || counterOf(t, db, CounterCatchUpEnqueued) != beers {
		t.Fatalf("queued %d, counter %d", queued, counterOf(t, db, CounterCatchUpEnqueued))
	}
}

// failingSender accepts the first ok calls, then fails every call.
type failingSender struct {
	queuetest.Sender
	ok, calls int
}

func (s *failingSender) SendBatch(ctx context.Context, q string, msgs []queue.Outgoing) error {
	s.calls++
	if s.calls > s.ok {
		return errors.New("queue unavailable")
	}
	return s.Sender.SendBatch(ctx, q, msgs)
}

func TestCatchUpFailedSendPutsTheBeersBackAndFailsTheRun(t *testing.T) {
	ctx := context.Background()
	db := sqlitetest.New(t)
	now := catchUpNow
	var rows []beerRow
	for i := 0; i < 150; i++ {
		rows = append(rows, beerRow{id: fmt.Sprintf("b%03d", i), status: "pending", next: now.Add(-time.Duration(150-i) * time.Minute)})
	}
	seedBeers(t, db, rows...)

	// The second SendBatch (messages 101..150) fails: 100 stay queued, 50 go back.
	sender := &failingSender{ok: 1}
	c := newCatchUp(db, sender)
	sum, err := c.Run(ctx, now)
	if err == nil || sum["enqueued"] != int64(100) || sum["put_back"] != int64(50) {
		t.Fatalf("run: %v %v", sum, err)
	}
	var queued, pending int64
	db.QueryRow(`SELECT COUNT(*) FROM beers WHERE status = 'queued' AND queued_at = ?`, now.UnixMilli()).Scan(&queued)
	db.QueryRow(`SELECT COUNT(*) FROM beers WHERE status = 'pending' AND queued_at IS NULL AND next_attempt_at < ?`, now.UnixMilli()).Scan(&pending)
	if queued != 100 || pending != 50 {
		t.Fatalf("queued %d pending %d", queued, pending)
	}
	if s := beerOf(t, db, "b149"); s.Status != StatusPending || *s.NextAttemptAt != now.Add(-time.Minute).UnixMilli() {
		t.Fatalf("put back beer keeps its due time: %+v", s)
	}
	if counterOf(t, db, CounterCatchUpSendFailed) != 50 || counterOf(t, db, CounterCatchUpEnqueued) != 100 {
		t.Fatal("counters")
	}

	// Every send fails: all claimed beers go back, nothing is counted as sent.
	recordRun(t, db, now, sum, err)
	sum, err = newCatchUp(db, &failingSender{}).Run(ctx, now.Add(5*time.Minute))
	if err == nil || sum["enqueued"] != int64(0) || sum["put_back"] != int64(50) {
		t.Fatalf("failing run: %v %v", sum, err)
	}
	// The queue is back: the next run sends exactly the 50 left.
	ok := &queuetest.Sender{}
	sum, err = newCatchUp(db, ok).Run(ctx, now.Add(10*time.Minute))
	if err != nil || sum["enqueued"] != int64(50) {
		t.Fatalf("recovered run: %v %v", sum, err)
	}
	all := append(sentBeers(t, &sender.Sender), sentBeers(t, ok)...)
	got := ids(all)
	if distinct := len(slices.Compact(slices.Clone(got))); len(got) != 150 || distinct != 150 {
		t.Fatalf("sent %d messages for %d beers, want 150 for 150", len(got), distinct)
	}
}

func TestCatchUpIsBoundedByBatchAndBudget(t *testing.T) {
	ctx := context.Background()
	db := sqlitetest.New(t)
	var rows []beerRow
	for i := 0; i < 5; i++ {
		rows = append(rows, beerRow{id: fmt.Sprint("b", i), status: "pending", next: catchUpNow.Add(-time.Hour)})
	}
	seedBeers(t, db, rows...)
	clock := catchUpNow
	c := newCatchUp(db, &queuetest.Sender{})
	c.Limits = jobs.Limits{ChunkRows: 2, Budget: time.Second, Clock: func() time.Time { clock = clock.Add(time.Second); return clock }}
	for i, want := range []struct {
		n    int64
		more bool
	}{{2, true}, {2, true}, {1, false}, {0, false}} {
		sum, err := c.Run(ctx, catchUpNow)
		if err != nil || sum["enqueued"] != want.n || sum["more"] != want.more {
			t.Fatalf("run %d: %v %v, want %d more=%v", i, sum, err, want.n, want.more)
		}
	}
}

func TestCatchUpRejectsIncompleteConfig(t *testing.T) {
	db := sqlitetest.New(t)
	for _, c := range []*CatchUp{
		{DB: db, Log: discard, Sender: &queuetest.Sender{}, LostAfter: time.Hour},
		{DB: db, Log: discard, Sender: &queuetest.Sender{}, MaxAttempts: 4},
		{DB: db, Log: discard, MaxAttempts: 4, LostAfter: time.Hour},
	} {
		if _, err := c.Run(context.Background(), catchUpNow); err == nil {
			t.Errorf("%+v: no error", c)
		}
	}
}

func TestLatenessStats(t *testing.T) {
	for _, c := range []struct {
		in          []int64
		max, median int64
	}{{nil, 0, 0}, {[]int64{5}, 5, 5}, {[]int64{9, 1, 4}, 9, 4}, {[]int64{10, 2, 4, 8}, 10, 6}} {
		if mx, md := latenessStats(c.in); mx != c.max || md != c.median {
			t.Errorf("%v: max %d median %d, want %d %d", c.in, mx, md, c.max, c.median)
		}
	}
}

// The lateness gauges of /admin/metrics read what the run recorded.
func TestCatchUpLatenessReachesMetrics(t *testing.T) {
	ctx := context.Background()
	db := sqlitetest.New(t)
	seedBeers(t, db, beerRow{id: "a", status: "pending", next: catchUpNow.Add(-24 * time.Hour)},
		beerRow{id: "b", status: "pending", next: catchUpNow.Add(-2 * time.Hour)})
	sum, err := newCatchUp(db, &queuetest.Sender{}).Run(ctx, catchUpNow)
	if err != nil {
		t.Fatal(err)
	}
	recordRun(t, db, catchUpNow, sum, nil)
	snap, err := metrics.ReadSnapshot(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	if snap.Gauges["catchup_last_lateness_max_seconds"] != 24*3600_000 || snap.Gauges["catchup_last_lateness_median_seconds"] != 13*3600_000 ||
		snap.Counters[CounterCatchUpEnqueued] != 2 || snap.Counters[CounterCatchUpLateness] != 26*3600 {
		t.Fatalf("snapshot %+v %+v", snap.Gauges, snap.Counters)
	}
}

// A beer parked by the quota is pending, due after the reset: the catch-up
// leaves it alone until then and sends it once due, without an attempt
// counted.
func TestCatchUpSendsQuotaParkedBeersAfterTheReset(t *testing.T) {
	f := newFixture(t)
	f.c.Policy.DailyLimit = 1
	f.now = catchUpNow
	f.consume(t, msg("d0", "spent", "Spends the quota", 1))
	m := msg("d1", "waits", "Waits for the reset", 1)
	f.consume(t, m)
	f.wantParked(t, m, "waits", StatusPending, ClassQuota)
	due := ResetAt(catchUpNow).Add(QuotaSpread / 2)

	s := &queuetest.Sender{}
	c := newCatchUp(f.db, s)
	c.Configured = true
	run := func(at time.Time) map[string]any {
		t.Helper()
		recordRun(t, f.db, at.Add(-5*time.Minute), map[string]any{"up_since": catchUpNow.Add(-2 * time.Hour).UnixMilli()}, nil)
		sum, err := c.Run(context.Background(), at)
		if err != nil {
			t.Fatal(err)
		}
		return sum
	}
	for _, at := range []time.Time{catchUpNow.Add(time.Minute), due.Add(-time.Second)} {
		if sum := run(at); sum["enqueued"] != int64(0) || len(s.Messages(queue.Enrichment)) != 0 {
			t.Fatalf("at %s the catch-up sent %v before the beer was due", at, sum)
		}
	}
	if sum := run(due); sum["due"] != int64(1) || len(sentBeers(t, s)) != 1 || sentBeers(t, s)[0].BeerID != "waits" {
		t.Fatalf("due beer not sent: %v %v", sum, sentBeers(t, s))
	}
	if st := f.beer(t, "waits"); st.Attempts != 0 || st.Status != StatusQueued {
		t.Fatalf("a deferral counted an attempt: %+v", st)
	}
}

// Waiting beers (parked while the breaker is open) stay in D1 while it is
// open, cost nothing per run, and one of them at a time goes back as the
// breaker's probe when the breaker is due for one: the first in
// next_attempt_at order, which moves back each time a beer waits again, so
// the probe rotates. Once the breaker is closed all of them go back.
// Without an API key none do.
func TestCatchUpReleasesWaitingBeersAndRotatesTheProbe(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	f.now = catchUpNow
	b := f.c.Breaker()
	if _, _, err := b.Trip(ctx, f.now, CauseAuth); err != nil {
		t.Fatal(err)
	}
	for i, id := range []string{"w1", "w2", "w3"} {
		m := msg("m"+id, id, "Waits "+id, 1)
		f.now = catchUpNow.Add(time.Duration(i) * time.Second)
		f.consume(t, m)
		f.wantParked(t, m, id, StatusWaiting, ClassBreakerOpen)
	}
	s := &queuetest.Sender{}
	c := newCatchUp(f.db, s)
	run := func(at time.Time) map[string]any {
		t.Helper()
		recordRun(t, f.db, at.Add(-5*time.Minute), map[string]any{"up_since": catchUpNow.Add(-2 * time.Hour).UnixMilli()}, nil)
		sum, err := c.Run(ctx, at)
		if err != nil {
			t.Fatal(err)
		}
		return sum
	}
	// Without a key: nothing, even with the breaker due.
	if sum := run(catchUpNow.Add(2 * time.Minute)); sum["enqueued"] != int64(0) {
		t.Fatalf("sent without a key: %v", sum)
	}
	c.Configured = true
	// Open and not due: nothing.
	if sum := run(catchUpNow.Add(30 * time.Second)); sum["enqueued"] != int64(0) {
		t.Fatalf("sent while open: %v", sum)
	}
	// Due: one probe, the first in order (w1 waited first).
	probeAt := catchUpNow.Add(2 * time.Minute)
	if sum := run(probeAt); sum["probe"] != int64(1) || sum["enqueued"] != int64(1) || len(sentBeers(t, s)) != 1 || sentBeers(t, s)[0].BeerID != "w1" {
		t.Fatalf("probe: %v %v", sum, sentBeers(t, s))
	}
	// w1's probe is refused again: it waits again, behind the others.
	f.now = probeAt.Add(time.Second)
	f.provider.status(401, `{"error":"bad key"}`)
	p1 := msg("p1", "w1", "Waits w1", 1)
	f.consume(t, p1)
	f.wantParked(t, p1, "w1", StatusWaiting, ClassAuth)
	var openUntil int64
	f.db.QueryRow(`SELECT open_until FROM enrichment_breaker`).Scan(&openUntil)
	next := time.UnixMilli(openUntil)
	if sum := run(next); sum["probe"] != int64(1) || sentBeers(t, s)[1].BeerID != "w2" {
		t.Fatalf("the probe did not rotate: %v %v", sum, sentBeers(t, s))
	}
	// w2's probe succeeds: closed; the next run sends every waiting beer.
	f.now = next.Add(time.Second)
	f.provider.set(func(w http.ResponseWriter, _ *http.Request) { w.Write(answer("5.0")) })
	p2 := msg("p2", "w2", "Waits w2", 1)
	f.consume(t, p2)
	if !p2.Acked || f.beer(t, "w2").Status != StatusEnriched {
		t.Fatalf("probe p2: %+v", p2)
	}
	sum := run(f.now.Add(time.Minute))
	got := sentBeers(t, s)
	if sum["released"] != int64(2) || sum["enqueued"] != int64(2) || len(got) != 4 || got[2].BeerID+got[3].BeerID != "w1w3" {
		t.Fatalf("release: %v %v", sum, got)
	}
	for _, id := range []string{"w1", "w3"} {
		if st := f.beer(t, id); st.Status != StatusQueued || st.Attempts != 0 {
			t.Fatalf("%s after release: %+v", id, st)
		}
	}
}

// A probe the catch-up cannot send fails the run and goes back to pending,
// never lost.
func TestCatchUpProbeSendFailureFailsTheRun(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	f.now = catchUpNow
	if _, _, err := f.c.Breaker().Trip(ctx, f.now, CauseAuth); err != nil {
		t.Fatal(err)
	}
	m := msg("mw", "w", "Waits", 1)
	f.consume(t, m)
	f.wantParked(t, m, "w", StatusWaiting, ClassBreakerOpen)
	c := newCatchUp(f.db, &queuetest.Sender{Err: errors.New("queue down")})
	c.Configured = true
	sum, err := c.Run(ctx, catchUpNow.Add(2*time.Minute))
	if err == nil || sum["put_back"] != int64(1) {
		t.Fatalf("run: %v %v", sum, err)
	}
	if st := f.beer(t, "w"); st.Status != StatusPending || st.NextAttemptAt == nil {
		t.Fatalf("beer after the failed send: %+v", st)
	}
}
