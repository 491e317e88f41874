package inspect

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/internal/sqlitetest"
	"github.com/redrive/redrive/queue/queuetest"
)

func recordAttempts(t *testing.T, a dlq.Attempts, msgID string, from, to int, class, errText, version string, at time.Time) {
	t.Helper()
	for n := from; n <= to; n++ {
		err := a.Record(ctx, dlq.Attempt{MessageID: msgID, Queue: "beer-enrichment", Attempt: n, Class: class,
			Error: fmt.Sprintf(errText, n), At: at.Add(time.Duration(n) * time.Minute), Status: 500, Duration: 1200 * time.Millisecond, Version: version})
		if err != nil {
			t.Fatal(err)
		}
	}
}

func groupOf(t *testing.T, g GroupsPage, sig string) Group {
	t.Helper()
	for _, gr := range g.Groups {
		if gr.Signature == sig {
			return gr
		}
	}
	t.Fatalf("no group %s in %+v", sig, g.Groups)
	return Group{}
}

// A message that fails 4 times and is dead-lettered has 4 history entries
// with their classes; replayed and failing twice more, 6 on the same row.
// The row carries the signature and version of its latest failure, and the
// group's counts follow the row.
func TestHistoryFollowsTheMessageAcrossReplays(t *testing.T) {
	db := sqlitetest.New(t)
	var logs bytes.Buffer
	c := newCapture(db, &logs)
	c.Version = "v-capture"
	a := dlq.Attempts{DB: db}
	recordAttempts(t, a, "m1", 1, 2, "transient", "status 503: upstream busy (req %d)", "v1", t0)
	recordAttempts(t, a, "m1", 3, 4, "rate_limited", "status 429: slow down, retry in %d s", "v1", t0)
	consume(t, c, queuetest.New("m1", beer("1")))
	h, dropped, sig, ver := historyOf(t, db, `message_id = 'm1'`)
	if len(h) != 4 || dropped != 0 {
		t.Fatalf("history = %+v (dropped %d), want 4 entries", h, dropped)
	}
	for i, want := range []string{"transient", "transient", "rate_limited", "rate_limited"} {
		e := h[i]
		if e.Class != want || e.Attempt != i+1 || e.Status == nil || *e.Status != 500 || e.DurationMS == nil || *e.DurationMS != 1200 ||
			e.Version != "v1" || e.MessageID != "m1" || e.Error == "" {
			t.Errorf("entry %d = %+v, want class %s", i, e, want)
		}
	}
	if want := dlq.SignatureOf("rate_limited", "status 429: slow down, retry in 4 s").Key; sig != want || ver != "v1" {
		t.Errorf("signature %q version %q, want %q v1", sig, ver, want)
	}

	// Replayed; the replayed message (a new id) fails twice more.
	mustExec(t, db, `UPDATE dlq_messages SET status = 'replayed', replay_count = 1, replayed_at = 5 WHERE message_id = 'm1'`)
	recordAttempts(t, a, "m9", 1, 2, "permanent", "status 400: model %d unknown", "v2", t0.Add(time.Hour))
	c.Clock = func() time.Time { return t0.Add(2 * time.Hour) }
	consume(t, c, queuetest.New("m9", beer("1")))
	h, _, sig2, ver := historyOf(t, db, `message_id = 'm1'`)
	if len(h) != 6 || h[4].MessageID != "m9" || h[5].Class != "permanent" || h[0].MessageID != "m1" || ver != "v2" {
		t.Fatalf("after the repeat failure: %d entries %+v, version %q", len(h), h, ver)
	}
	if n := count(t, db, `SELECT COUNT(*) FROM dlq_messages`); n != 1 {
		t.Fatalf("%d rows, want 1", n)
	}
	g, err := Groups{DBs: dlq.Single(dlq.Store{DB: db})}.Page(ctx, GroupsParams{})
	if err != nil {
		t.Fatal(err)
	}
	old, now := groupOf(t, g, sig), groupOf(t, g, sig2)
	if old.Counts != (GroupCounts{}) || now.Counts != (GroupCounts{Pending: 1}) || !now.ReplayWillFail || old.ReplayWillFail || len(now.SampleIDs) != 1 {
		t.Errorf("groups after the repeat failure: old %+v, new %+v", old, now)
	}
	if len(now.Versions) != 1 || now.Versions[0] != "v2" {
		t.Errorf("versions %v", now.Versions)
	}
}

// A message failing hundreds of times keeps its first 5 and newest 45 attempts.
func TestHistoryIsBounded(t *testing.T) {
	db := sqlitetest.New(t)
	var logs bytes.Buffer
	c := newCapture(db, &logs)
	recordAttempts(t, dlq.Attempts{DB: db}, "m1", 1, 30, "transient", "boom %d", "v1", t0)
	consume(t, c, queuetest.New("m1", beer("1")))
	for r := 0; r < 5; r++ {
		mustExec(t, db, `UPDATE dlq_messages SET status = 'replayed', replay_count = replay_count + 1 WHERE message_id = 'm1'`)
		id := fmt.Sprintf("r%d", r)
		recordAttempts(t, dlq.Attempts{DB: db}, id, 1, 30, "transient", "boom %d", "v1", t0)
		c.Clock = func() time.Time { return t0.Add(time.Duration(r+1) * time.Hour) }
		consume(t, c, queuetest.New(id, beer("1")))
	}
	h, dropped, _, _ := historyOf(t, db, `message_id = 'm1'`)
	if len(h) != dlq.MaxHistory || dropped != 6*30-dlq.MaxHistory {
		t.Fatalf("%d entries, %d dropped; want %d and %d", len(h), dropped, dlq.MaxHistory, 6*30-dlq.MaxHistory)
	}
	if h[0].MessageID != "m1" || h[0].Attempt != 1 || h[4].Attempt != 5 || h[5].MessageID != "r3" || h[len(h)-1].MessageID != "r4" || h[len(h)-1].Attempt != 30 {
		t.Errorf("kept %+v ... %+v", h[:6], h[len(h)-1])
	}
}

// A redelivered message (its attempt record already used) changes no
// group and creates none.
func TestRedeliveryCreatesNoSignature(t *testing.T) {
	db := sqlitetest.New(t)
	var logs bytes.Buffer
	c := newCapture(db, &logs)
	if err := (dlq.Attempts{DB: db}).Record(ctx, dlq.Attempt{MessageID: "m1", Queue: "beer-enrichment", Attempt: 4, Class: "transient", Error: "status 500", At: t0}); err != nil {
		t.Fatal(err)
	}
	consume(t, c, queuetest.New("m1", beer("1")))
	c.Clock = func() time.Time { return t0.Add(time.Minute) }
	consume(t, c, queuetest.New("m1", beer("1")))
	if n := count(t, db, `SELECT COUNT(*) FROM dlq_signatures`); n != 1 {
		t.Errorf("%d signatures after a redelivery, want 1", n)
	}
	if n := count(t, db, `SELECT pending FROM dlq_signatures`); n != 1 {
		t.Errorf("pending %d after a redelivery, want 1", n)
	}
}

// The same attempt recorded twice (a redelivery before its Retry took
// effect) replaces its entry instead of adding one; an older attempt's
// late write changes nothing.
func TestAttemptRecordedTwiceIsOneEntry(t *testing.T) {
	db := sqlitetest.New(t)
	a := dlq.Attempts{DB: db}
	recordAttempts(t, a, "m1", 1, 2, "transient", "boom %d", "v1", t0)
	recordAttempts(t, a, "m1", 2, 2, "rate_limited", "slow %d", "v1", t0)
	recordAttempts(t, a, "m1", 1, 1, "transient", "late %d", "v1", t0)
	var h string
	if err := db.QueryRow(`SELECT history FROM message_attempts WHERE message_id = 'm1'`).Scan(&h); err != nil {
		t.Fatal(err)
	}
	var entries []dlq.HistoryEntry
	if err := json.Unmarshal([]byte(h), &entries); err != nil || len(entries) != 2 || entries[1].Class != "rate_limited" || entries[0].Error != "boom 1" {
		t.Fatalf("history %s (%v)", h, err)
	}
}

// A realistic mixed failure set (as an earlier review measured it): 1,150
// failures, ids, addresses, counts and quoted values differing inside each
// kind, are the 5 kinds of failure they really are. go test -v -run
// TestMixedFailureSetGroups ./dlq prints the groups.
func TestMixedFailureSetGroups(t *testing.T) {
	db := sqlitetest.New(t)
	var logs bytes.Buffer
	c := newCapture(db, &logs)
	c.Version = "8d2c1f7e-capture"
	a := dlq.Attempts{DB: db}
	kinds := []struct {
		n       int
		class   string
		error   func(n int) string
		version string
	}{
		{600, "transient", func(n int) string {
			return fmt.Sprintf("status 503: upstream 10.0.%d.%d busy (request %08x-1b4d-4e8f-9a0b-123456789abc)", n%7, n*31%255, n*7919)
		}, "6f1c2a90-old"},
		{300, "rate_limited", func(n int) string {
			return fmt.Sprintf("status 429: rate limit exceeded for key_id=%x (%d/%d per minute)", n*7919, n%60, 60)
		}, "6f1c2a90-old"},
		{150, "transient", func(n int) string {
			return fmt.Sprintf("timeout: Post \"https://api.perplexity.ai/chat/completions?req=%d\": no answer after %d ms", n*7919, 15000+n%9)
		}, "8d2c1f7e-new"},
		{80, "permanent", func(n int) string {
			return fmt.Sprintf("status 400: model 'sonar-%d' does not exist (beer %d)", n%3, n)
		}, "8d2c1f7e-new"},
	}
	n := 0
	for _, k := range kinds {
		var batch []*queuetest.Message
		for i := 0; i < k.n; i++ {
			n++
			id := fmt.Sprintf("mix-%04d", n)
			errText := k.error(n)
			for at := 1; at <= 4; at++ {
				if err := a.Record(ctx, dlq.Attempt{MessageID: id, Queue: "beer-enrichment", Attempt: at, Class: k.class, Error: errText,
					At: t0.Add(time.Duration(n) * time.Second), Status: 503, Duration: 300 * time.Millisecond, Version: k.version}); err != nil {
					t.Fatal(err)
				}
			}
			batch = append(batch, queuetest.New(id, beer(fmt.Sprint(n))))
			if len(batch) == 100 {
				consume(t, c, batch...)
				batch = nil
			}
		}
		consume(t, c, batch...)
	}
	var poison []*queuetest.Message
	for i := 0; i < 20; i++ {
		poison = append(poison, queuetest.New(fmt.Sprintf("poison-%d", i), fmt.Sprintf("Beer #%d, no JSON", i)))
	}
	consume(t, c, poison...)
	g, err := Groups{DBs: dlq.Single(dlq.Store{DB: db})}.Page(ctx, GroupsParams{})
	if err != nil {
		t.Fatal(err)
	}
	if len(g.Groups) != 5 {
		t.Fatalf("%d groups: %+v", len(g.Groups), g.Groups)
	}
	for i, want := range []int64{600, 300, 150, 80, 20} {
		if g.Groups[i].Counts.Pending != want {
			t.Errorf("group %d %q: %d pending, want %d", i, g.Groups[i].Text, g.Groups[i].Counts.Pending, want)
		}
	}
	var js strings.Builder
	enc := json.NewEncoder(&js)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	_ = enc.Encode(g)
	t.Logf("GET /admin/dlq/groups:\n%s", js.String())
}

// Groups paging with ties and adjacent counts (2, 2, 1, 1 pending): one
// group a page, each exactly once, and the last page says it is the last.
func TestGroupsPagesThroughTiesOnce(t *testing.T) {
	db := sqlitetest.New(t)
	var fs []dlq.Failure
	for g, n := range map[string]int{"a": 2, "b": 2, "c": 1, "d": 1} {
		for i := range n {
			f := failure(fmt.Sprintf("%s%d", g, i), fmt.Sprintf(`{"beer_id":"%s%d"}`, g, i), t0)
			f.Class, f.Reason = "transient", "transient: upstream "+g+" busy"
			fs = append(fs, f)
		}
	}
	save(t, dlq.Store{DB: db}, fs...)
	seen := map[string]int64{}
	p := GroupsParams{Limit: 1}
	cur := dlq.NewCursors("secret")
	pages := 0
	for {
		page, err := Groups{DBs: dlq.Single(dlq.Store{DB: db}), Cursors: cur}.Page(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		pages++
		if len(page.Groups) != 1 {
			t.Fatalf("page %d has %d groups", pages, len(page.Groups))
		}
		gr := page.Groups[0]
		if _, dup := seen[gr.Signature]; dup {
			t.Fatalf("group %s twice", gr.Text)
		}
		seen[gr.Signature] = gr.Counts.Pending
		if !page.HasMore {
			break
		}
		p.Cursor = *page.NextCursor
	}
	if pages != 4 || len(seen) != 4 {
		t.Fatalf("%d pages, %d groups: %v", pages, len(seen), seen)
	}
}

// The groups page's limit and filters are accepted at their edges and
// refused one past them.
func TestGroupsLimitsAtTheirEdges(t *testing.T) {
	g := Groups{DBs: dlq.Single(dlq.Store{DB: sqlitetest.New(t)}), Cursors: dlq.NewCursors("s")}
	long := strings.Repeat("v", dlq.MaxFilterText)
	for _, p := range []GroupsParams{{Limit: 1}, {Limit: dlq.MaxListLimit}, {Class: long}, {Version: long}} {
		if _, err := g.Page(ctx, p); err != nil {
			t.Errorf("%d %d %d: %v", p.Limit, len(p.Class), len(p.Version), err)
		}
	}
	for _, p := range []GroupsParams{{Limit: -1}, {Limit: dlq.MaxListLimit + 1}, {Class: long + "v"}, {Version: long + "v"}} {
		var ie *dlq.InputError
		if _, err := g.Page(ctx, p); !errors.As(err, &ie) {
			t.Errorf("%d %d %d: %v, want an input error", p.Limit, len(p.Class), len(p.Version), err)
		}
	}
}

// A message retried 60 times on its queue (max_retries of 50 or more) keeps
// attempts 1..5 and the newest 45 in its record, and its row says 10 were
// left out.
func TestHistoryOfManyAttemptsKeepsTheFirstFive(t *testing.T) {
	db := sqlitetest.New(t)
	c := newCapture(db, &bytes.Buffer{})
	recordAttempts(t, dlq.Attempts{DB: db}, "m1", 1, 60, "transient", "boom %d", "v1", t0)
	consume(t, c, queuetest.New("m1", beer("1")))
	h, dropped, _, _ := historyOf(t, db, `message_id = 'm1'`)
	if len(h) != dlq.MaxHistory || dropped != 10 {
		t.Fatalf("%d entries, %d dropped; want %d and 10", len(h), dropped, dlq.MaxHistory)
	}
	for i, e := range h {
		want := i + 1
		if i >= dlq.HistoryHead {
			want = 60 - dlq.MaxHistory + i + 1
		}
		if e.Attempt != want {
			t.Fatalf("entry %d is attempt %d, want %d", i, e.Attempt, want)
		}
	}
	// A repeat failure of the replayed message with 60 more attempts: the
	// row still keeps the first 5 of the first message and the newest 45.
	mustExec(t, db, `UPDATE dlq_messages SET status = 'replayed', replay_count = 1 WHERE message_id = 'm1'`)
	recordAttempts(t, dlq.Attempts{DB: db}, "m2", 1, 60, "transient", "boom %d", "v1", t0)
	c.Clock = func() time.Time { return t0.Add(time.Hour) }
	consume(t, c, queuetest.New("m2", beer("1")))
	h, dropped, _, _ = historyOf(t, db, `message_id = 'm1'`)
	if len(h) != dlq.MaxHistory || dropped != 120-dlq.MaxHistory || h[4].MessageID != "m1" || h[4].Attempt != 5 ||
		h[5].MessageID != "m2" || h[5].Attempt != 16 || h[len(h)-1].Attempt != 60 {
		t.Fatalf("after the repeat failure: %d entries, %d dropped; kept %+v ... %+v", len(h), dropped, h[:6], h[len(h)-1])
	}
}

// Paging newest group first is stable: a group whose pending count changes
// between two page requests is listed exactly once, where paging by
// pending count (live) misses a group whose count grew past the cursor.
func TestGroupsPagingNewestFirstIsStable(t *testing.T) {
	db := sqlitetest.New(t)
	var fs []dlq.Failure
	for i, g := range []string{"a", "b", "c", "d"} {
		for j := 0; j < 4-i; j++ { // a: 4 rows, b: 3, c: 2, d: 1; d is the newest group
			f := failure(fmt.Sprintf("%s%d", g, j), fmt.Sprintf(`{"beer_id":"%s%d"}`, g, j), t0.Add(time.Duration(i)*time.Hour))
			f.Class, f.Reason = "transient", "transient: upstream "+g+" busy"
			fs = append(fs, f)
		}
	}
	save(t, dlq.Store{DB: db}, fs...)
	cur := dlq.NewCursors("secret")
	// Between the first and the second page, group c (not listed yet) gains
	// 5 pending rows (moving ahead of every group) and group a, listed on
	// the first page, loses 3 (moving behind the rest).
	walk := func(sort string) []string {
		t.Helper()
		var seen []string
		p := GroupsParams{Limit: 1, Sort: sort}
		for pages := 0; ; pages++ {
			page, err := Groups{DBs: dlq.Single(dlq.Store{DB: db}), Cursors: cur}.Page(ctx, p)
			if err != nil {
				t.Fatal(err)
			}
			for _, gr := range page.Groups {
				seen = append(seen, strings.Fields(gr.Text)[1])
			}
			if pages == 0 {
				mustExec(t, db, `UPDATE dlq_signatures SET pending = pending + 5 WHERE text LIKE '%upstream c busy'`)
				mustExec(t, db, `UPDATE dlq_signatures SET pending = pending - 3 WHERE text LIKE '%upstream a busy'`)
			}
			if !page.HasMore || pages > 10 {
				break
			}
			p.Cursor = *page.NextCursor
		}
		mustExec(t, db, `UPDATE dlq_signatures SET pending = pending - 5 WHERE text LIKE '%upstream c busy'`)
		mustExec(t, db, `UPDATE dlq_signatures SET pending = pending + 3 WHERE text LIKE '%upstream a busy'`)
		return seen
	}
	if got := strings.Join(walk(SortFirstSeen), ","); got != "d,c,b,a" {
		t.Errorf("newest first: listed %s, want d,c,b,a (each once)", got)
	}
	if got := strings.Join(walk(""), ","); got != "a,b,d,a" {
		t.Errorf("by pending count: listed %s; the documented behaviour is a,b,d,a (c missed, a twice)", got)
	}
	var ie *dlq.InputError
	if _, err := (Groups{DBs: dlq.Single(dlq.Store{DB: db}), Cursors: cur}).Page(ctx, GroupsParams{Sort: "size"}); !errors.As(err, &ie) || ie.Code != "INVALID_FILTER" {
		t.Errorf("sort=size: %v", err)
	}
}
