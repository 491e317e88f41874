package upkeep

import (
	"bytes"
	"fmt"
	"log/slog"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/internal/sqlitetest"
	"github.com/redrive/redrive/jobs"
)

var day = 24 * time.Hour

func newRetention(t *testing.T) *Retention {
	return &Retention{DB: sqlitetest.New(t), Log: discard, MaxAge: 30 * day, MaxRowsPerKey: 1000, AttemptMaxAge: 7 * day}
}

func TestRetentionDeletesByAgeButNeverPendingOrReplaying(t *testing.T) {
	r := newRetention(t)
	now := time.Date(2030, 6, 1, 3, 17, 0, 0, time.UTC)
	seed(t, r.DB,
		row{MsgID: "ack-old", Key: "1", Status: "acknowledged", FailedAt: now.Add(-40 * day), AckAt: now.Add(-31 * day)},
		row{MsgID: "ack-recent-action", Key: "1", Status: "acknowledged", FailedAt: now.Add(-100 * day), AckAt: now.Add(-29 * day)},
		row{MsgID: "ack-no-time-old", Key: "2", Status: "acknowledged", FailedAt: now.Add(-31 * day)},
		row{MsgID: "ack-no-time-new", Key: "2", Status: "acknowledged", FailedAt: now.Add(-29 * day)},
		row{MsgID: "replayed-old", Key: "3", Status: "replayed", FailedAt: now.Add(-60 * day), ReplayedAt: now.Add(-31 * day)},
		row{MsgID: "replayed-new", Key: "3", Status: "replayed", FailedAt: now.Add(-60 * day), ReplayedAt: now.Add(-1 * day)},
		row{MsgID: "replayed-no-time-old", Key: "3", Status: "replayed", FailedAt: now.Add(-31 * day)},
		row{MsgID: "pending-ancient", Key: "4", Status: "pending", FailedAt: now.Add(-400 * day)},
		row{MsgID: "pending-with-old-ack", Key: "4", Status: "pending", FailedAt: now.Add(-400 * day), AckAt: now.Add(-400 * day)},
		// A replayed message that failed again: pending, with the old replay's time.
		row{MsgID: "pending-replay-failed-again", Key: "4", Status: "pending", FailedAt: now.Add(-400 * day), ReplayedAt: now.Add(-400 * day)},
		row{MsgID: "replaying-ancient", Key: "4", Status: "replaying", FailedAt: now.Add(-400 * day), ReplayingAt: now.Add(-400 * day)},
	)
	sum, err := r.Run(ctx, now)
	if err != nil {
		t.Fatal(err)
	}
	if sum["deleted_age"] != int64(4) || sum["deleted_cap"] != int64(0) || sum["more"] != false {
		t.Fatalf("summary = %v", sum)
	}
	var left []string
	rows, _ := r.DB.Query(`SELECT message_id FROM dlq_messages ORDER BY message_id`)
	for rows.Next() {
		var s string
		rows.Scan(&s)
		left = append(left, s)
	}
	rows.Close()
	want := []string{"ack-no-time-new", "ack-recent-action", "pending-ancient", "pending-replay-failed-again", "pending-with-old-ack", "replayed-new", "replaying-ancient"}
	if !reflect.DeepEqual(left, want) {
		t.Fatalf("left %v, want %v", left, want)
	}
	if n := counter(t, r.DB, CounterRetentionAge); n != 4 {
		t.Fatalf("age counter = %d", n)
	}
	// Idempotent: a second run at the same time deletes nothing more.
	sum, err = r.Run(ctx, now)
	if err != nil || sum["deleted_age"] != int64(0) || counter(t, r.DB, CounterRetentionAge) != 4 {
		t.Fatalf("second run: %v %v", sum, err)
	}
}

func TestRetentionCapKeepsNewestTerminalRowsPerKey(t *testing.T) {
	r := newRetention(t)
	r.MaxRowsPerKey = 3
	now := time.Date(2030, 6, 1, 3, 17, 0, 0, time.UTC)
	var rows []row
	for i := 1; i <= 5; i++ { // beer A: 5 recent terminal rows, newest = a1
		status := "acknowledged"
		if i%2 == 0 {
			status = "replayed"
		}
		rows = append(rows, row{MsgID: fmt.Sprintf("a%d", i), Key: "A", Status: status, FailedAt: now.Add(-time.Duration(i) * time.Minute), AckAt: now, ReplayedAt: now})
	}
	// Same failed_at as a3: the higher id (inserted later) ranks newer.
	rows = append(rows, row{MsgID: "a3-tie", Key: "A", Status: "acknowledged", FailedAt: now.Add(-3 * time.Minute), AckAt: now})
	// Pending rows of A: older than every terminal one, never counted or deleted.
	rows = append(rows, row{MsgID: "a-pending-1", Key: "A", Status: "pending", FailedAt: now.Add(-time.Hour)},
		row{MsgID: "a-pending-2", Key: "A", Status: "replaying", FailedAt: now.Add(-time.Hour), ReplayingAt: now})
	for i := 1; i <= 3; i++ { // beer B: exactly at the cap
		rows = append(rows, row{MsgID: fmt.Sprintf("b%d", i), Key: "B", Status: "acknowledged", FailedAt: now.Add(-time.Duration(i) * time.Hour), AckAt: now})
	}
	seed(t, r.DB, rows...)

	sum, err := r.Run(ctx, now)
	if err != nil {
		t.Fatal(err)
	}
	if sum["deleted_cap"] != int64(3) || sum["deleted_age"] != int64(0) || !reflect.DeepEqual(sum["cap_keys"], []string{"beer-enrichment:A"}) {
		t.Fatalf("summary = %v", sum)
	}
	var left []string
	res, _ := r.DB.Query(`SELECT message_id FROM dlq_messages WHERE row_key = 'A' ORDER BY message_id`)
	for res.Next() {
		var s string
		res.Scan(&s)
		left = append(left, s)
	}
	res.Close()
	if want := []string{"a-pending-1", "a-pending-2", "a1", "a2", "a3-tie"}; !reflect.DeepEqual(left, want) {
		t.Fatalf("beer A left %v, want %v", left, want)
	}
	if n := count(t, r.DB, `SELECT COUNT(*) FROM dlq_messages WHERE row_key = 'B'`); n != 3 {
		t.Fatalf("beer B rows = %d, want 3 (at the cap)", n)
	}
	if n := counter(t, r.DB, CounterRetentionCap); n != 3 {
		t.Fatalf("cap counter = %d", n)
	}
	if sum, _ := r.Run(ctx, now); sum["deleted_cap"] != int64(0) || len(sum["cap_keys"].([]string)) != 0 {
		t.Fatalf("second run: %v", sum)
	}
}

func TestRetentionExpiresAttempts(t *testing.T) {
	r := newRetention(t)
	now := time.Date(2030, 6, 1, 3, 17, 0, 0, time.UTC)
	for i, at := range []time.Time{now.Add(-8 * day), now.Add(-7*day - time.Second), now.Add(-6 * day), now} {
		if _, err := r.DB.Exec(`INSERT INTO message_attempts(message_id, queue, attempt, error_class, error, recorded_at) VALUES (?, 'q', 1, 'transient', 'x', ?)`,
			fmt.Sprint("m", i), at.UnixMilli()); err != nil {
			t.Fatal(err)
		}
	}
	sum, err := r.Run(ctx, now)
	if err != nil || sum["attempts_expired"] != int64(2) {
		t.Fatalf("summary %v %v", sum, err)
	}
	if n := count(t, r.DB, `SELECT COUNT(*) FROM message_attempts`); n != 2 {
		t.Fatalf("attempts left = %d, want 2", n)
	}
	if n := counter(t, r.DB, CounterAttemptsExpired); n != 2 {
		t.Fatalf("attempts counter = %d", n)
	}
}

// With batches of 2 and a budget of 3 s on a clock that advances 1 s per
// reading, a run deletes three batches, reports more, and the next run
// finishes the work.
func TestRetentionIsBoundedByBatchAndBudget(t *testing.T) {
	r := newRetention(t)
	now := time.Date(2030, 6, 1, 3, 17, 0, 0, time.UTC)
	clock := &fakeClock{T: now, Step: time.Second}
	r.Limits = jobs.Limits{ChunkRows: 2, Budget: 3 * time.Second, Clock: clock.Now}
	var rows []row
	for i := 0; i < 10; i++ {
		rows = append(rows, row{MsgID: fmt.Sprint("old", i), Key: fmt.Sprint(i), Status: "acknowledged", FailedAt: now.Add(-90 * day), AckAt: now.Add(-60 * day)})
	}
	seed(t, r.DB, rows...)
	sum, err := r.Run(ctx, now)
	if err != nil || sum["deleted_age"] != int64(6) || sum["more"] != true {
		t.Fatalf("first run: %v %v", sum, err)
	}
	sum, err = r.Run(ctx, now)
	if err != nil || sum["deleted_age"] != int64(4) || sum["more"] != false {
		t.Fatalf("second run: %v %v", sum, err)
	}
	if n := count(t, r.DB, `SELECT COUNT(*) FROM dlq_messages`); n != 0 {
		t.Fatalf("rows left %d", n)
	}
}

func TestRetentionRejectsZeroSettings(t *testing.T) {
	r := newRetention(t)
	r.MaxRowsPerKey = 0
	if _, err := r.Run(ctx, time.Now()); err == nil {
		t.Fatal("zero MaxRowsPerKey accepted")
	}
}

// Each setting on its own, at zero and below, is refused before anything
// is deleted: a zero MaxAge would otherwise expire every terminal row at
// once, a zero AttemptMaxAge every attempt record.
func TestRetentionRejectsEachSettingAtZeroOrBelow(t *testing.T) {
	now := time.Date(2030, 6, 1, 3, 17, 0, 0, time.UTC)
	for _, c := range []struct {
		name string
		set  func(r *Retention, v int)
	}{
		{"MaxAge", func(r *Retention, v int) { r.MaxAge = time.Duration(v) * day }},
		{"MaxRowsPerKey", func(r *Retention, v int) { r.MaxRowsPerKey = v }},
		{"AttemptMaxAge", func(r *Retention, v int) { r.AttemptMaxAge = time.Duration(v) * day }},
	} {
		for _, v := range []int{0, -1} {
			r := newRetention(t)
			c.set(r, v)
			seed(t, r.DB, row{MsgID: "ack-1d", Key: "1", Status: "acknowledged", FailedAt: now.Add(-2 * day), AckAt: now.Add(-day)})
			if _, err := r.Run(ctx, now); err == nil {
				t.Errorf("%s = %d accepted", c.name, v)
			}
			if n := count(t, r.DB, `SELECT COUNT(*) FROM dlq_messages`); n != 1 {
				t.Errorf("%s = %d: %d rows left, want 1 (nothing deleted)", c.name, v, n)
			}
		}
	}
}

// A failing delete of a shorter retention's window is reported: the run's
// error names it and the summary says more (the next run looks again).
func TestRetentionReportsAFailingWindowDelete(t *testing.T) {
	r := pipelinesRetention(t)
	now := time.Date(2030, 6, 1, 3, 17, 0, 0, time.UTC)
	seedQueue(t, r, "tickets", row{MsgID: "t-ack-8d", Key: "t", Status: "acknowledged", FailedAt: now.Add(-9 * day), AckAt: now.Add(-8 * day)})
	if _, err := r.DB.Exec(`CREATE TRIGGER refuse_tickets BEFORE DELETE ON dlq_messages WHEN OLD.source_queue = 'tickets'
		BEGIN SELECT RAISE(ABORT, 'tickets refused'); END`); err != nil {
		t.Fatal(err)
	}
	sum, err := r.Run(ctx, now)
	if err == nil || !strings.Contains(err.Error(), "delete by pipeline age") || !strings.Contains(err.Error(), "tickets refused") {
		t.Fatalf("error = %v, want the window delete's", err)
	}
	if sum["more"] != true || sum["deleted_age"] != int64(0) {
		t.Fatalf("summary = %v, want more and nothing deleted", sum)
	}
	if n := count(t, r.DB, `SELECT COUNT(*) FROM dlq_messages`); n != 1 {
		t.Fatalf("%d rows left, want 1", n)
	}
}

// The eviction warning is logged when the cap rule evicted rows, and only then.
func TestRetentionWarnsOfEvictionsOnlyWhenItEvicts(t *testing.T) {
	now := time.Date(2030, 6, 1, 3, 17, 0, 0, time.UTC)
	for _, c := range []struct {
		rows int
		warn bool
	}{{2, false}, {3, true}} {
		var logs bytes.Buffer
		r := newRetention(t)
		r.Log = slog.New(slog.NewJSONHandler(&logs, nil))
		r.MaxRowsPerKey = 2
		for i := 0; i < c.rows; i++ {
			seed(t, r.DB, row{MsgID: fmt.Sprint("a", i), Key: "A", Status: "acknowledged", FailedAt: now.Add(-time.Duration(i+1) * time.Hour), AckAt: now.Add(-time.Minute)})
		}
		sum, err := r.Run(ctx, now)
		if err != nil || sum["deleted_cap"] != int64(c.rows-2) {
			t.Fatalf("%d rows: %v %v", c.rows, sum, err)
		}
		if got := strings.Contains(logs.String(), "per-key cap evicted rows"); got != c.warn {
			t.Fatalf("%d rows at a cap of 2: eviction warning logged = %v, want %v; logs:\n%s", c.rows, got, c.warn, logs.String())
		}
		if c.warn && !strings.Contains(logs.String(), `"keys":["beer-enrichment:A"]`) {
			t.Fatalf("warning without the evicted beer: %s", logs.String())
		}
	}
}

// An acknowledge computes its action time before its statement commits, so
// a row can become visible with an action time a run already scanned past:
// the next run looks capRescan back and still finds its beer over the cap.
func TestRetentionCapRescansRowsThatBecameVisibleLate(t *testing.T) {
	r := newRetention(t)
	r.MaxRowsPerKey = 1
	now := time.Date(2030, 6, 1, 3, 17, 0, 0, time.UTC)
	seed(t, r.DB, row{MsgID: "x-new", Key: "X", Status: "acknowledged", FailedAt: now.Add(-time.Hour), AckAt: now.Add(-time.Hour)})
	sum := runRecorded(t, r, r.DB, now)
	if sum["deleted_cap"] != int64(0) || sum["cap_scanned_to"] != now.UnixMilli() {
		t.Fatalf("first run: %v", sum)
	}
	// Committed after the first run, with an action time 2 minutes before it.
	seed(t, r.DB, row{MsgID: "x-old", Key: "X", Status: "acknowledged", FailedAt: now.Add(-2 * time.Hour), AckAt: now.Add(-2 * time.Minute)})
	sum = runRecorded(t, r, r.DB, now.Add(time.Minute))
	if sum["deleted_cap"] != int64(1) {
		t.Fatalf("second run: %v, want the late row's beer trimmed", sum)
	}
	if left := terminalLeft(t, r, "X"); !reflect.DeepEqual(left, []string{"x-new"}) {
		t.Fatalf("beer X left %v, want the newest failure only", left)
	}
}

// Rows whose action time is exactly the age cutoff are not the age rule's
// (it deletes what is before it): the first run's cap scan includes them.
func TestRetentionCapChecksRowsAtExactlyTheAgeCutoff(t *testing.T) {
	r := newRetention(t)
	r.MaxRowsPerKey = 1
	now := time.Date(2030, 6, 1, 3, 17, 0, 0, time.UTC)
	at := now.Add(-r.MaxAge)
	seed(t, r.DB,
		row{MsgID: "y-new", Key: "Y", Status: "acknowledged", FailedAt: at.Add(-time.Hour), AckAt: at},
		row{MsgID: "y-old", Key: "Y", Status: "replayed", FailedAt: at.Add(-2 * time.Hour), ReplayedAt: at})
	sum, err := r.Run(ctx, now)
	if err != nil || sum["deleted_age"] != int64(0) || sum["deleted_cap"] != int64(1) {
		t.Fatalf("run: %v %v", sum, err)
	}
	if left := terminalLeft(t, r, "Y"); !reflect.DeepEqual(left, []string{"y-new"}) {
		t.Fatalf("beer Y left %v, want y-new", left)
	}
}
