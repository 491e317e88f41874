package upkeep

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/alerts"
	"github.com/redrive/redrive/alerts/alertstest"
	"github.com/redrive/redrive/jobs"
)

// terminalLeft lists the message ids of the terminal rows of beer, sorted.
func terminalLeft(t *testing.T, r *Retention, beer string) []string {
	t.Helper()
	rows, err := r.DB.Query(`SELECT message_id FROM dlq_messages WHERE row_key = ? AND status IN ('acknowledged', 'replayed') ORDER BY message_id`, beer)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := []string{}
	for rows.Next() {
		var s string
		rows.Scan(&s)
		out = append(out, s)
	}
	return out
}

// The cap rule looks at the beers whose rows became terminal since the
// previous run. A beer whose rows became terminal long ago (20 days, within
// the 30-day retention) is found by the first run (it starts at the age
// cutoff) and then stays at exactly its N newest; a beer that later gets new
// terminal rows is trimmed by the run after that, and a pending row of a
// beer at the cap that is acknowledged later is evicted if it is the oldest.
func TestRetentionCapFindsBeersThatChangedLongAgoAndSince(t *testing.T) {
	r := newRetention(t)
	r.MaxRowsPerKey = 3
	now := time.Date(2030, 6, 1, 3, 17, 0, 0, time.UTC)
	var rows []row
	for i := 1; i <= 5; i++ {
		// L: 5 rows acknowledged or replayed 20 days ago; l1 failed last.
		rows = append(rows, row{MsgID: fmt.Sprintf("l%d", i), Key: "L", Status: []string{"acknowledged", "replayed"}[i%2],
			FailedAt: now.Add(-21*day - time.Duration(i)*time.Hour), AckAt: now.Add(-20 * day), ReplayedAt: now.Add(-20 * day)})
	}
	for i := 1; i <= 3; i++ { // M: exactly at the cap, 25 days ago
		rows = append(rows, row{MsgID: fmt.Sprintf("m%d", i), Key: "M", Status: "acknowledged",
			FailedAt: now.Add(-26*day + time.Duration(i)*time.Hour), AckAt: now.Add(-25 * day)})
	}
	rows = append(rows, row{MsgID: "m0-pending", Key: "M", Status: "pending", FailedAt: now.Add(-40 * day)})
	seed(t, r.DB, rows...)

	sum := runRecorded(t, r, r.DB, now)
	if sum["deleted_cap"] != int64(2) || !reflect.DeepEqual(sum["cap_keys"], []string{"beer-enrichment:L"}) || sum["cap_scanned_to"] != now.UnixMilli() {
		t.Fatalf("first run: %v", sum)
	}
	if got := terminalLeft(t, r, "L"); !reflect.DeepEqual(got, []string{"l1", "l2", "l3"}) {
		t.Fatalf("L kept %v, want its 3 newest", got)
	}

	// A day later: R gets 5 terminal rows, and M's old pending row is acknowledged.
	next := now.Add(day)
	for i := 1; i <= 5; i++ {
		seed(t, r.DB, row{MsgID: fmt.Sprintf("r%d", i), Key: "R", Status: "replayed", FailedAt: next.Add(-time.Duration(i) * time.Minute), ReplayedAt: next.Add(-time.Hour)})
	}
	if _, err := r.DB.Exec(`UPDATE dlq_messages SET status = 'acknowledged', acknowledged_at = ? WHERE message_id = 'm0-pending'`, next.Add(-time.Minute).UnixMilli()); err != nil {
		t.Fatal(err)
	}
	sum = runRecorded(t, r, r.DB, next)
	if sum["deleted_cap"] != int64(3) || !reflect.DeepEqual(sum["cap_keys"], []string{"beer-enrichment:M", "beer-enrichment:R"}) {
		t.Fatalf("second run: %v", sum)
	}
	for beer, want := range map[string][]string{"L": {"l1", "l2", "l3"}, "M": {"m1", "m2", "m3"}, "R": {"r1", "r2", "r3"}} {
		if got := terminalLeft(t, r, beer); !reflect.DeepEqual(got, want) {
			t.Errorf("%s kept %v, want %v", beer, got, want)
		}
	}
	// Nothing changed since: a third run evicts nothing and cap_evicting
	// would resolve (this run starts a new cycle).
	if sum = runRecorded(t, r, r.DB, next.Add(day)); sum["deleted_cap"] != int64(0) || sum["cycle_deleted_cap"] != int64(0) {
		t.Fatalf("third run: %v", sum)
	}
}

// The cap rule reads only the beers of rows that became terminal since the
// previous run (less capRescan): rows that are over the cap but became
// terminal before that (which retention itself never leaves behind; here
// written straight into the table) are not looked at, until
// DLQ_MAX_ROWS_PER_KEY changes: then every beer is checked again.
func TestRetentionCapLooksOnlyAtWhatChangedUntilTheCapChanges(t *testing.T) {
	r := newRetention(t)
	r.MaxRowsPerKey = 3
	now := time.Date(2030, 6, 1, 3, 17, 0, 0, time.UTC)
	runRecorded(t, r, r.DB, now) // position: now
	var rows []row
	for i := 1; i <= 5; i++ {
		rows = append(rows, row{MsgID: fmt.Sprintf("q%d", i), Key: "Q", Status: "acknowledged",
			FailedAt: now.Add(-time.Duration(i) * time.Hour), AckAt: now.Add(-capRescan - time.Minute)})
	}
	seed(t, r.DB, rows...)
	if sum := runRecorded(t, r, r.DB, now.Add(5*time.Minute)); sum["deleted_cap"] != int64(0) {
		t.Fatalf("a beer that did not change was ranked: %v", sum)
	}
	r.MaxRowsPerKey = 4
	sum := runRecorded(t, r, r.DB, now.Add(10*time.Minute))
	if sum["deleted_cap"] != int64(1) || sum["cap_max_rows"] != 4 {
		t.Fatalf("after the cap changed: %v", sum)
	}
	if got := terminalLeft(t, r, "Q"); !reflect.DeepEqual(got, []string{"q1", "q2", "q3", "q4"}) {
		t.Fatalf("Q kept %v", got)
	}
}

// With batches of 2 (chunks of 2 terminal rows, evictions 2 at a time), a
// budget that ends every run after a few statements, rows sharing failure
// and action times, and runs continued while they say more, every beer
// keeps exactly its N newest terminal rows (failed_at, then id) and no
// pending or replaying row is touched.
func TestRetentionCapKeepsExactlyTheNewestAcrossChunksAndRuns(t *testing.T) {
	r := newRetention(t)
	r.MaxRowsPerKey = 2
	now := time.Date(2030, 6, 1, 3, 17, 0, 0, time.UTC)
	clock := &fakeClock{T: now, Step: time.Second}
	r.Limits = jobs.Limits{ChunkRows: 2, Budget: 4 * time.Second, Clock: clock.Now}
	rng := rand.New(rand.NewPCG(7, 21))
	statuses := []string{"acknowledged", "replayed", "pending", "replaying"}
	var rows []row
	for b := 0; b < 12; b++ {
		for i := rng.IntN(15); i > 0; i-- {
			st := statuses[rng.IntN(4)]
			rw := row{MsgID: fmt.Sprintf("b%02d-%03d", b, len(rows)), Key: fmt.Sprintf("b%02d", b), Status: st,
				FailedAt: now.Add(-time.Duration(rng.IntN(4)) * time.Hour)} // ties on failed_at
			action := now.Add(-time.Duration(rng.IntN(3)) * time.Minute) // ties on action time
			switch st {
			case "acknowledged":
				rw.AckAt = action
			case "replayed":
				rw.ReplayedAt = action
			case "replaying":
				rw.ReplayingAt = action
			}
			rows = append(rows, rw)
		}
	}
	seed(t, r.DB, rows...)
	type kept struct{ id, failedAt int64 }
	want := map[string][]string{}
	byBeer := map[string][]kept{}
	ids := map[int64]string{}
	res, err := r.DB.Query(`SELECT id, message_id, row_key, failed_at, status FROM dlq_messages`)
	if err != nil {
		t.Fatal(err)
	}
	var untouched []string
	for res.Next() {
		var id, failedAt int64
		var msg, beer, status string
		res.Scan(&id, &msg, &beer, &failedAt, &status)
		ids[id] = msg
		if status == "acknowledged" || status == "replayed" {
			byBeer[beer] = append(byBeer[beer], kept{id, failedAt})
		} else {
			untouched = append(untouched, msg)
		}
	}
	res.Close()
	evict := 0
	for beer, ks := range byBeer {
		sort.Slice(ks, func(i, j int) bool {
			return ks[i].failedAt > ks[j].failedAt || ks[i].failedAt == ks[j].failedAt && ks[i].id > ks[j].id
		})
		want[beer] = []string{}
		for i, k := range ks {
			if i < r.MaxRowsPerKey {
				want[beer] = append(want[beer], ids[k.id])
			} else {
				evict++
			}
		}
		slices.Sort(want[beer])
	}
	if evict < 20 {
		t.Fatalf("the seed evicts only %d rows", evict)
	}

	runs, deleted := 0, int64(0)
	for at := now; ; at = at.Add(5 * time.Minute) {
		sum := runRecorded(t, r, r.DB, at)
		runs++
		deleted += sum["deleted_cap"].(int64)
		if sum["more"] == false {
			break
		}
		if runs > 50 {
			t.Fatalf("still more after %d runs: %v", runs, sum)
		}
	}
	t.Logf("%d runs evicted %d rows", runs, deleted)
	if runs < 2 || deleted != int64(evict) {
		t.Fatalf("%d runs deleted %d rows over the cap, want %d over several runs", runs, deleted, evict)
	}
	for beer, w := range want {
		if got := terminalLeft(t, r, beer); !reflect.DeepEqual(got, w) {
			t.Errorf("%s kept %v, want %v", beer, got, w)
		}
	}
	for _, msg := range untouched {
		if count(t, r.DB, `SELECT COUNT(*) FROM dlq_messages WHERE message_id = ?`, msg) != 1 {
			t.Errorf("%s (pending or replaying) was deleted", msg)
		}
	}
}

// A run that ends with rows left says so in its summary (more, a bounded
// count of what is left, behind_since = its own time); the runs that
// continue it keep behind_since and add their evictions to the cycle; the
// run that finishes clears behind_since. A batch of exactly the rows left
// with the budget spent is counted, not reported as more.
func TestRetentionSummaryCarriesTheBacklogAcrossRuns(t *testing.T) {
	r := newRetention(t)
	r.MaxRowsPerKey = 2
	now := time.Date(2030, 6, 1, 3, 17, 0, 0, time.UTC)
	clock := &fakeClock{T: now, Step: time.Second}
	r.Limits = jobs.Limits{ChunkRows: 3, Budget: 2 * time.Second, Clock: clock.Now}
	var rows []row
	for i := 0; i < 9; i++ {
		rows = append(rows, row{MsgID: fmt.Sprint("old", i), Key: fmt.Sprint("o", i), Status: "acknowledged", FailedAt: now.Add(-90 * day), AckAt: now.Add(-60 * day)})
	}
	for i := 0; i < 3; i++ { // one beer over the cap by one
		rows = append(rows, row{MsgID: fmt.Sprint("cap", i), Key: "C", Status: "replayed", FailedAt: now.Add(-time.Duration(i) * time.Hour), ReplayedAt: now})
	}
	rows = append(rows, row{MsgID: "pending", Key: "C", Status: "pending", FailedAt: now.Add(-400 * day)})
	seed(t, r.DB, rows...)

	sum := runRecorded(t, r, r.DB, now)
	if sum["more"] != true || sum["deleted_age"] != int64(6) || sum["expired_left"] != int64(3) || sum["behind_since"] != now.UnixMilli() ||
		sum["deleted_cap"] != int64(1) || sum["cycle_deleted_cap"] != int64(1) {
		t.Fatalf("first run: %v", sum)
	}
	later := now.Add(5 * time.Minute)
	sum = runRecorded(t, r, r.DB, later)
	if sum["more"] != false || sum["deleted_age"] != int64(3) || sum["expired_left"] != int64(0) || sum["behind_since"] != nil ||
		sum["deleted_cap"] != int64(0) || sum["cycle_deleted_cap"] != int64(1) || !reflect.DeepEqual(sum["cap_keys"], []string{"beer-enrichment:C"}) {
		t.Fatalf("continuing run: %v", sum)
	}
	if n := count(t, r.DB, `SELECT COUNT(*) FROM dlq_messages`); n != 3 {
		t.Fatalf("%d rows left, want C's 2 and its pending row", n)
	}
	// cap_evicting still sees what the daily run evicted.
	if on, detail, err := (CapEvicting{DB: r.DB}).Check(ctx, later); err != nil || !on {
		t.Fatalf("cap evicting after the catch-up: %v %q %v", on, detail, err)
	}
}

// A rule that fails leaves the run failed and saying more, so that the
// frequent cron looks again soon instead of the next day.
func TestRetentionFailureSaysMore(t *testing.T) {
	r := newRetention(t)
	if _, err := r.DB.Exec(`DROP TABLE message_attempts`); err != nil {
		t.Fatal(err)
	}
	sum, err := r.Run(ctx, time.Now())
	if err == nil || sum["more"] != true {
		t.Fatalf("summary %v, error %v", sum, err)
	}
	a := &AuditRetention{DB: r.DB, MaxAge: day}
	r.DB.Exec(`DROP TABLE admin_audit`)
	if sum, err := a.Run(ctx, time.Now()); err == nil || sum["more"] != true {
		t.Fatalf("audit: summary %v, error %v", sum, err)
	}
}

// The age rule deletes a backlog whose rows all share one action time in
// batches of exactly the batch size (the boundary's ties are cut by id),
// oldest first, whatever the backlog.
func TestExpiryBatchesCutTiesById(t *testing.T) {
	r := newRetention(t)
	now := time.Date(2030, 6, 1, 3, 17, 0, 0, time.UTC)
	var rows []row
	for i := 0; i < 10; i++ {
		rows = append(rows, row{MsgID: fmt.Sprint("t", i), Key: fmt.Sprint(i), Status: "acknowledged", FailedAt: now.Add(-90 * day), AckAt: now.Add(-60 * day)})
	}
	seed(t, r.DB, rows...)
	cutoff := now.Add(-r.MaxAge).UnixMilli()
	for _, want := range []int64{4, 4, 2, 0} {
		minBefore := count(t, r.DB, `SELECT COALESCE(MIN(id), 0) FROM dlq_messages`)
		n, err := expireAcknowledged.deleteBatch(ctx, r.DB, cutoff, 4)
		if err != nil || n != want {
			t.Fatalf("batch deleted %d (%v), want %d", n, err, want)
		}
		if n > 0 && count(t, r.DB, `SELECT COUNT(*) FROM dlq_messages WHERE id < ?`, minBefore+n) != 0 {
			t.Fatal("a batch did not delete the oldest rows")
		}
	}
}

// retention_behind fires once the retention job has had expired rows left
// for longer than the configured time (runs continuing it included), names
// the job and what is left, and resolves when a run finishes.
func TestRetentionBehindFiresAndResolves(t *testing.T) {
	r := newRetention(t)
	now := time.Date(2030, 6, 1, 3, 17, 0, 0, time.UTC)
	clock := &fakeClock{T: now, Step: time.Second}
	r.Limits = jobs.Limits{ChunkRows: 2, Budget: time.Second, Clock: clock.Now} // one batch per run
	var rows []row
	for i := 0; i < 30; i++ {
		rows = append(rows, row{MsgID: fmt.Sprint("old", i), Key: fmt.Sprint(i), Status: "replayed", FailedAt: now.Add(-90 * day), ReplayedAt: now.Add(-60 * day)})
	}
	seed(t, r.DB, rows...)
	rec := &alertstest.Slack{}
	engine := &alerts.Engine{DB: r.DB, Log: discard, Outbox: alertstest.Outbox(r.DB, rec), Reminder: 24 * time.Hour,
		Conditions: []alerts.Condition{RetentionBehind{DB: r.DB, After: 10 * time.Minute}}}
	var fired, resolved time.Time
	for at := now; ; at = at.Add(5 * time.Minute) {
		sum := runRecorded(t, r, r.DB, at)
		if _, err := engine.Run(ctx, at); err != nil {
			t.Fatal(err)
		}
		for _, text := range rec.Take() {
			switch {
			case strings.HasPrefix(text, "[redrive] FIRING retention_behind: dlq_retention has had expired rows left since 2030-06-01T03:17:00Z (15m0s; threshold 10m0s): 22 left"):
				fired = at
			case strings.HasPrefix(text, "[redrive] RESOLVED retention_behind"):
				resolved = at
			default:
				t.Fatalf("unexpected alert at %s: %q", at, text)
			}
		}
		if sum["more"] == false {
			break
		}
		if at.Sub(now) > 2*time.Hour {
			t.Fatalf("still more at %s", at)
		}
	}
	if fired != now.Add(15*time.Minute) || resolved != now.Add(70*time.Minute) {
		t.Fatalf("fired at %s, resolved at %s", fired, resolved)
	}
}
