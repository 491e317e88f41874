package dlq

import (
	"fmt"
	"reflect"
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
		row{msgID: "ack-old", beerID: "1", status: "acknowledged", failedAt: now.Add(-40 * day), ackAt: now.Add(-31 * day)},
		row{msgID: "ack-recent-action", beerID: "1", status: "acknowledged", failedAt: now.Add(-100 * day), ackAt: now.Add(-29 * day)},
		row{msgID: "ack-no-time-old", beerID: "2", status: "acknowledged", failedAt: now.Add(-31 * day)},
		row{msgID: "ack-no-time-new", beerID: "2", status: "acknowledged", failedAt: now.Add(-29 * day)},
		row{msgID: "replayed-old", beerID: "3", status: "replayed", failedAt: now.Add(-60 * day), replayedAt: now.Add(-31 * day)},
		row{msgID: "replayed-new", beerID: "3", status: "replayed", failedAt: now.Add(-60 * day), replayedAt: now.Add(-1 * day)},
		row{msgID: "replayed-no-time-old", beerID: "3", status: "replayed", failedAt: now.Add(-31 * day)},
		row{msgID: "pending-ancient", beerID: "4", status: "pending", failedAt: now.Add(-400 * day)},
		row{msgID: "pending-with-old-ack", beerID: "4", status: "pending", failedAt: now.Add(-400 * day), ackAt: now.Add(-400 * day)},
		// A replayed message that failed again: pending, with the old replay's time.
		row{msgID: "pending-replay-failed-again", beerID: "4", status: "pending", failedAt: now.Add(-400 * day), replayedAt: now.Add(-400 * day)},
		row{msgID: "replaying-ancient", beerID: "4", status: "replaying", failedAt: now.Add(-400 * day), replayingAt: now.Add(-400 * day)},
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
		rows = append(rows, row{msgID: fmt.Sprintf("a%d", i), beerID: "A", status: status, failedAt: now.Add(-time.Duration(i) * time.Minute), ackAt: now, replayedAt: now})
	}
	// Same failed_at as a3: the higher id (inserted later) ranks newer.
	rows = append(rows, row{msgID: "a3-tie", beerID: "A", status: "acknowledged", failedAt: now.Add(-3 * time.Minute), ackAt: now})
	// Pending rows of A: older than every terminal one, never counted or deleted.
	rows = append(rows, row{msgID: "a-pending-1", beerID: "A", status: "pending", failedAt: now.Add(-time.Hour)},
		row{msgID: "a-pending-2", beerID: "A", status: "replaying", failedAt: now.Add(-time.Hour), replayingAt: now})
	for i := 1; i <= 3; i++ { // beer B: exactly at the cap
		rows = append(rows, row{msgID: fmt.Sprintf("b%d", i), beerID: "B", status: "acknowledged", failedAt: now.Add(-time.Duration(i) * time.Hour), ackAt: now})
	}
	seed(t, r.DB, rows...)

	sum, err := r.Run(ctx, now)
	if err != nil {
		t.Fatal(err)
	}
	if sum["deleted_cap"] != int64(3) || sum["deleted_age"] != int64(0) || !reflect.DeepEqual(sum["cap_keys"], []string{"A"}) {
		t.Fatalf("summary = %v", sum)
	}
	var left []string
	res, _ := r.DB.Query(`SELECT message_id FROM dlq_messages WHERE beer_id = 'A' ORDER BY message_id`)
	for res.Next() {
		var s string
		res.Scan(&s)
		left = append(left, s)
	}
	res.Close()
	if want := []string{"a-pending-1", "a-pending-2", "a1", "a2", "a3-tie"}; !reflect.DeepEqual(left, want) {
		t.Fatalf("beer A left %v, want %v", left, want)
	}
	if n := count(t, r.DB, `SELECT COUNT(*) FROM dlq_messages WHERE beer_id = 'B'`); n != 3 {
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
	clock := &fakeClock{t: now, step: time.Second}
	r.Limits = jobs.Limits{ChunkRows: 2, Budget: 3 * time.Second, Clock: clock.Now}
	var rows []row
	for i := 0; i < 10; i++ {
		rows = append(rows, row{msgID: fmt.Sprint("old", i), beerID: fmt.Sprint(i), status: "acknowledged", failedAt: now.Add(-90 * day), ackAt: now.Add(-60 * day)})
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
