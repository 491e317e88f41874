package upkeep

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/config"
	"github.com/redrive/redrive/internal/sqlitetest"
	"github.com/redrive/redrive/jobs"
)

// pipelinesRetention is a retention with the beer pipeline (DLQ_RETENTION_DAYS,
// 30 days) and tickets, which keeps 7.
func pipelinesRetention(t *testing.T) *Retention {
	r := newRetention(t)
	tickets := config.Pipeline{Name: "tickets", Queue: "tickets", Retention: 7 * day}
	beers := config.BeerPipeline()
	beers.Retention = r.MaxAge
	r.Pipelines = []config.Pipeline{beers, tickets}
	return r
}

// seedQueue seeds rows and sets their source_queue.
func seedQueue(t *testing.T, r *Retention, queue string, rows ...row) {
	t.Helper()
	seed(t, r.DB, rows...)
	for _, x := range rows {
		if _, err := r.DB.Exec(`UPDATE dlq_messages SET source_queue = ? WHERE message_id = ?`, queue, x.MsgID); err != nil {
			t.Fatal(err)
		}
	}
}

func messageIDs(t *testing.T, r *Retention) []string {
	t.Helper()
	var left []string
	rows, err := r.DB.Query(`SELECT message_id FROM dlq_messages ORDER BY message_id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var s string
		rows.Scan(&s)
		left = append(left, s)
	}
	return left
}

func TestRetentionPerPipelineDeletesAShorterRetentionsRowsOnly(t *testing.T) {
	r := pipelinesRetention(t)
	now := time.Date(2030, 6, 1, 3, 17, 0, 0, time.UTC)
	seedQueue(t, r, "tickets",
		row{MsgID: "t-ack-8d", Key: "t1", Status: "acknowledged", FailedAt: now.Add(-40 * day), AckAt: now.Add(-8 * day)},
		row{MsgID: "t-ack-6d", Key: "t1", Status: "acknowledged", FailedAt: now.Add(-40 * day), AckAt: now.Add(-6 * day)},
		row{MsgID: "t-replayed-8d", Key: "t2", Status: "replayed", FailedAt: now.Add(-9 * day), ReplayedAt: now.Add(-8 * day)},
		row{MsgID: "t-replayed-31d", Key: "t2", Status: "replayed", FailedAt: now.Add(-40 * day), ReplayedAt: now.Add(-31 * day)},
		row{MsgID: "t-pending-old", Key: "t3", Status: "pending", FailedAt: now.Add(-100 * day)},
	)
	seedQueue(t, r, "beer-enrichment",
		row{MsgID: "b-ack-8d", Key: "1", Status: "acknowledged", FailedAt: now.Add(-9 * day), AckAt: now.Add(-8 * day)},
		row{MsgID: "b-replayed-29d", Key: "1", Status: "replayed", FailedAt: now.Add(-40 * day), ReplayedAt: now.Add(-29 * day)},
		row{MsgID: "b-ack-31d", Key: "1", Status: "acknowledged", FailedAt: now.Add(-40 * day), AckAt: now.Add(-31 * day)},
	)
	// A queue no pipeline names follows DLQ_RETENTION_DAYS.
	seedQueue(t, r, "other",
		row{MsgID: "o-ack-8d", Key: "9", Status: "acknowledged", FailedAt: now.Add(-9 * day), AckAt: now.Add(-8 * day)},
	)
	sum, err := r.Run(ctx, now)
	if err != nil {
		t.Fatal(err)
	}
	if sum["deleted_age"] != int64(4) || sum["more"] != false {
		t.Fatalf("summary = %v", sum)
	}
	want := []string{"b-ack-8d", "b-replayed-29d", "o-ack-8d", "t-ack-6d", "t-pending-old"}
	if left := messageIDs(t, r); !reflect.DeepEqual(left, want) {
		t.Fatalf("left %v, want %v", left, want)
	}
	if n := counter(t, r.DB, CounterRetentionAge); n != 4 {
		t.Fatalf("age counter = %d", n)
	}
	// Two days later the 6-day ticket is past 7 days; the 8-day beer and
	// other rows stay (30 days).
	if _, err := r.Run(ctx, now.Add(2*day)); err != nil {
		t.Fatal(err)
	}
	want = []string{"b-ack-8d", "o-ack-8d", "t-pending-old"} // b-replayed-29d is 31 days old now
	if left := messageIDs(t, r); !reflect.DeepEqual(left, want) {
		t.Fatalf("two days later: left %v, want %v", left, want)
	}
}

// DLQ_RETENTION_DAYS shorter than a pipeline's: the rows of every other
// queue go at DLQ_RETENTION_DAYS, the pipeline's at its own.
func TestRetentionPerPipelineLongerThanTheDefault(t *testing.T) {
	r := newRetention(t)
	r.MaxAge = 7 * day
	r.Pipelines = []config.Pipeline{{Name: "archive", Queue: "archive", Retention: 90 * day}, {Name: "short", Queue: "short", Retention: 3 * day}}
	now := time.Date(2030, 6, 1, 3, 17, 0, 0, time.UTC)
	seedQueue(t, r, "archive",
		row{MsgID: "a-ack-8d", Key: "a", Status: "acknowledged", FailedAt: now.Add(-9 * day), AckAt: now.Add(-8 * day)},
		row{MsgID: "a-ack-91d", Key: "a", Status: "acknowledged", FailedAt: now.Add(-99 * day), AckAt: now.Add(-91 * day)},
	)
	seedQueue(t, r, "beer-enrichment",
		row{MsgID: "b-ack-8d", Key: "1", Status: "acknowledged", FailedAt: now.Add(-9 * day), AckAt: now.Add(-8 * day)},
		row{MsgID: "b-replayed-6d", Key: "1", Status: "replayed", FailedAt: now.Add(-9 * day), ReplayedAt: now.Add(-6 * day)},
	)
	seedQueue(t, r, "short",
		row{MsgID: "s-ack-4d", Key: "s", Status: "acknowledged", FailedAt: now.Add(-9 * day), AckAt: now.Add(-4 * day)},
		row{MsgID: "s-ack-2d", Key: "s", Status: "acknowledged", FailedAt: now.Add(-9 * day), AckAt: now.Add(-2 * day)},
	)
	sum, err := r.Run(ctx, now)
	if err != nil || sum["deleted_age"] != int64(3) {
		t.Fatalf("run: %v %v", sum, err)
	}
	want := []string{"a-ack-8d", "b-replayed-6d", "s-ack-2d"}
	if left := messageIDs(t, r); !reflect.DeepEqual(left, want) {
		t.Fatalf("left %v, want %v", left, want)
	}
	scanned, _ := sum["age_scanned_to"].(map[string]int64)
	wantScanned := map[string]int64{
		"3d:in:short":             now.Add(-3 * day).UnixMilli(),
		"7d:not_in:archive,short": now.Add(-7 * day).UnixMilli(),
	}
	if !reflect.DeepEqual(scanned, wantScanned) {
		t.Fatalf("age_scanned_to = %v, want %v", scanned, wantScanned)
	}
}

// windowEntries is how many index entries the window statements of a run
// at now would visit after prev: the terminal rows whose action time is in
// [position, cutoff) of the tickets group (the chunk query reads each
// entry once, the delete each entry and its row).
func windowEntries(t *testing.T, r *Retention, from, to int64) int64 {
	t.Helper()
	return count(t, r.DB, fmt.Sprintf(`SELECT COUNT(*) FROM dlq_messages WHERE
		(status = 'acknowledged' AND acknowledged_at >= %[1]d AND acknowledged_at < %[2]d) OR
		(status = 'replayed' AND replayed_at >= %[1]d AND replayed_at < %[2]d)`, from, to))
}

// A run reads the window's rows once: the next run starts where it
// stopped, so when nothing new became due it visits no window entry,
// however many rows the longer retention keeps there.
func TestRetentionPerPipelineReadsTheWindowOnce(t *testing.T) {
	r := pipelinesRetention(t)
	now := time.Date(2030, 6, 1, 3, 17, 0, 0, time.UTC)
	var beers []row
	for i := 0; i < 2000; i++ { // kept 30 days, in the tickets' window
		beers = append(beers, row{MsgID: fmt.Sprint("b", i), Key: fmt.Sprint(i % 50), Status: "acknowledged",
			FailedAt: now.Add(-20 * day), AckAt: now.Add(-20*day + time.Duration(i)*time.Minute)})
	}
	seedQueue(t, r, "beer-enrichment", beers...)
	seedQueue(t, r, "tickets", row{MsgID: "t-ack-8d", Key: "t", Status: "acknowledged", FailedAt: now.Add(-9 * day), AckAt: now.Add(-8 * day)})

	key := "7d:in:tickets"
	sum := runRecorded(t, r, r.DB, now)
	if sum["deleted_age"] != int64(1) {
		t.Fatalf("first run: %v", sum)
	}
	first := scannedTo(t, sum, key)
	if first != now.Add(-7*day).UnixMilli() {
		t.Fatalf("first run scanned to %d, want the 7-day cutoff %d", first, now.Add(-7*day).UnixMilli())
	}
	if n := windowEntries(t, r, now.Add(-30*day).UnixMilli(), first); n != 2000 {
		t.Fatalf("first run's window holds %d entries, want 2000 (read once)", n)
	}
	// A run an hour later, with nothing acknowledged 7 days before it,
	// starts at the first run's cutoff: its window holds no entry.
	// A tickets row planted behind the first run's position (no
	// acknowledge writes one: action times are the present) shows that
	// the second run does not look there again.
	seedQueue(t, r, "tickets", row{MsgID: "t-planted", Key: "t", Status: "acknowledged", FailedAt: now.Add(-19 * day), AckAt: now.Add(-10 * day)})
	later := now.Add(time.Hour)
	sum = runRecorded(t, r, r.DB, later)
	if sum["deleted_age"] != int64(0) || sum["more"] != false {
		t.Fatalf("second run: %v", sum)
	}
	second := scannedTo(t, sum, key)
	if second != later.Add(-7*day).UnixMilli() {
		t.Fatalf("second run scanned to %d, want %d", second, later.Add(-7*day).UnixMilli())
	}
	if n := count(t, r.DB, `SELECT COUNT(*) FROM dlq_messages WHERE message_id = 't-planted'`); n != 1 {
		t.Fatal("the second run looked behind the first run's position")
	}
	if n := windowEntries(t, r, first, second); n != 0 {
		t.Fatalf("second run's window holds %d entries, want 0", n)
	}
	// Without the first run's position it would start over at the
	// 30-day cutoff and visit the 2000 beer rows (and the planted one) again.
	if n := windowEntries(t, r, later.Add(-30*day).UnixMilli(), second); n != 2001 {
		t.Fatalf("the whole window holds %d entries, want 2001", n)
	}
}

// A run the budget stops keeps its position; the next run continues from
// it and does not read again what the first one did.
func TestRetentionPerPipelineContinuesAfterTheBudget(t *testing.T) {
	r := pipelinesRetention(t)
	now := time.Date(2030, 6, 1, 3, 17, 0, 0, time.UTC)
	clock := &fakeClock{T: now, Step: time.Second}
	r.Limits = jobs.Limits{ChunkRows: 2, Budget: 3 * time.Second, Clock: clock.Now}
	var tickets []row
	for i := 0; i < 10; i++ {
		tickets = append(tickets, row{MsgID: fmt.Sprint("t", i), Key: fmt.Sprint(i), Status: "acknowledged",
			FailedAt: now.Add(-20 * day), AckAt: now.Add(-20*day + time.Duration(i)*time.Hour)})
	}
	seedQueue(t, r, "tickets", tickets...)
	seedQueue(t, r, "beer-enrichment", row{MsgID: "b", Key: "b", Status: "acknowledged", FailedAt: now.Add(-20 * day), AckAt: now.Add(-6 * day)})

	key := "7d:in:tickets"
	sum := runRecorded(t, r, r.DB, now)
	// Three chunks of two rows (the first always runs; two more within
	// the budget of three clock reads).
	if sum["deleted_age"] != int64(6) || sum["more"] != true {
		t.Fatalf("first run: %v", sum)
	}
	pos := scannedTo(t, sum, key)
	seedQueue(t, r, "tickets", row{MsgID: "t-planted", Key: "t", Status: "acknowledged", FailedAt: now.Add(-20 * day), AckAt: now.Add(-20*day + time.Minute)})
	if want := now.Add(-20*day + 5*time.Hour + time.Millisecond).UnixMilli(); pos != want {
		t.Fatalf("first run stopped at %d, want %d (after the sixth row)", pos, want)
	}
	sum = runRecorded(t, r, r.DB, now.Add(5*time.Minute))
	if sum["deleted_age"] != int64(4) || sum["more"] != false {
		t.Fatalf("second run: %v", sum)
	}
	// The planted row, behind the first run's position, was not looked at again.
	if left := messageIDs(t, r); !reflect.DeepEqual(left, []string{"b", "t-planted"}) {
		t.Fatalf("left %v, want the beer row and the planted one", left)
	}
}

func scannedTo(t *testing.T, sum map[string]any, key string) int64 {
	t.Helper()
	m, ok := sum["age_scanned_to"].(map[string]int64)
	if !ok {
		t.Fatalf("age_scanned_to = %#v", sum["age_scanned_to"])
	}
	return m[key]
}

// The window statements read index ranges of the status indexes, never
// the table.
func TestRetentionPerPipelinePlans(t *testing.T) {
	db := sqlitetest.New(t)
	for q, index := range map[string]string{
		ageWindowAckInSQL:         "idx_dlq_status_acknowledged_at",
		ageWindowAckNotInSQL:      "idx_dlq_status_acknowledged_at",
		ageWindowReplayedInSQL:    "idx_dlq_status_replayed_at",
		ageWindowReplayedNotInSQL: "idx_dlq_status_replayed_at",
		ageWindowChunkSQL:         "idx_dlq_status_acknowledged_at",
	} {
		args := []any{int64(1), int64(2), `["tickets"]`}
		if q == ageWindowChunkSQL {
			args[2] = 10
		}
		plan := strings.Join(sqlitetest.Plan(t, db, q, args...), "\n")
		if !strings.Contains(plan, "USING COVERING INDEX "+index) && !strings.Contains(plan, "USING INDEX "+index) {
			t.Errorf("%s\nplan:\n%s\nwant %s", q, plan, index)
		}
		if strings.Contains(plan, "SCAN dlq_messages") {
			t.Errorf("%s scans the table:\n%s", q, plan)
		}
	}
}

// Only a retention_days that differs from DLQ_RETENTION_DAYS makes a group:
// a pipeline without one (0) or with DLQ_RETENTION_DAYS itself follows the
// default, and when the default is the longest retention no group of it is
// scanned. age_scanned_to names exactly the groups that exist.
func TestRetentionPerPipelineGroupsOnlyOtherRetentions(t *testing.T) {
	now := time.Date(2030, 6, 1, 3, 17, 0, 0, time.UTC)

	// The default (30 days) is the longest: the tickets group alone.
	r := pipelinesRetention(t)
	sum, err := r.Run(ctx, now)
	if err != nil {
		t.Fatal(err)
	}
	if scanned, want := sum["age_scanned_to"], map[string]int64{"7d:in:tickets": now.Add(-7 * day).UnixMilli()}; !reflect.DeepEqual(scanned, want) {
		t.Fatalf("default longest: age_scanned_to = %v, want %v", scanned, want)
	}

	// The default (7 days) shorter than archive's 90: one group of the
	// default, for every queue but archive's.
	r = newRetention(t)
	r.MaxAge = 7 * day
	r.Pipelines = []config.Pipeline{
		{Name: "archive", Queue: "archive", Retention: 90 * day},
		{Name: "same", Queue: "same", Retention: 7 * day},
		{Name: "unset", Queue: "unset"},
	}
	seedQueue(t, r, "unset", row{MsgID: "u-ack-1d", Key: "u", Status: "acknowledged", FailedAt: now.Add(-2 * day), AckAt: now.Add(-day)},
		row{MsgID: "u-ack-8d", Key: "u", Status: "acknowledged", FailedAt: now.Add(-9 * day), AckAt: now.Add(-8 * day)})
	seedQueue(t, r, "same", row{MsgID: "s-ack-6d", Key: "s", Status: "acknowledged", FailedAt: now.Add(-9 * day), AckAt: now.Add(-6 * day)},
		row{MsgID: "s-replayed-8d", Key: "s", Status: "replayed", FailedAt: now.Add(-9 * day), ReplayedAt: now.Add(-8 * day)})
	seedQueue(t, r, "archive", row{MsgID: "a-ack-8d", Key: "a", Status: "acknowledged", FailedAt: now.Add(-9 * day), AckAt: now.Add(-8 * day)})
	sum, err = r.Run(ctx, now)
	if err != nil || sum["deleted_age"] != int64(2) {
		t.Fatalf("run: %v %v", sum, err)
	}
	if left, want := messageIDs(t, r), []string{"a-ack-8d", "s-ack-6d", "u-ack-1d"}; !reflect.DeepEqual(left, want) {
		t.Fatalf("left %v, want %v", left, want)
	}
	if scanned, want := sum["age_scanned_to"], map[string]int64{"7d:not_in:archive": now.Add(-7 * day).UnixMilli()}; !reflect.DeepEqual(scanned, want) {
		t.Fatalf("default shorter: age_scanned_to = %v, want %v", scanned, want)
	}
}

// The groups run shortest retention first: when the budget runs out, the
// rows due soonest after the action (the shortest retention's) were the
// ones deleted first. Every group still runs one chunk.
func TestRetentionPerPipelineShortestRetentionFirst(t *testing.T) {
	r := newRetention(t)
	now := time.Date(2030, 6, 1, 3, 17, 0, 0, time.UTC)
	clock := &fakeClock{T: now, Step: time.Second}
	r.Limits = jobs.Limits{ChunkRows: 2, Budget: 4 * time.Second, Clock: clock.Now}
	r.Pipelines = []config.Pipeline{{Name: "tickets", Queue: "tickets", Retention: 7 * day}, {Name: "short", Queue: "short", Retention: 3 * day}}
	for _, q := range []string{"tickets", "short"} {
		var rows []row
		for i := 0; i < 4; i++ {
			rows = append(rows, row{MsgID: fmt.Sprint(q, i), Key: fmt.Sprint(q, i), Status: "acknowledged",
				FailedAt: now.Add(-20 * day), AckAt: now.Add(-20*day + time.Duration(i)*time.Hour)})
		}
		seedQueue(t, r, q, rows...)
	}
	sum, err := r.Run(ctx, now)
	if err != nil || sum["more"] != true || sum["deleted_age"] != int64(6) {
		t.Fatalf("run: %v %v", sum, err)
	}
	if left, want := messageIDs(t, r), []string{"tickets2", "tickets3"}; !reflect.DeepEqual(left, want) {
		t.Fatalf("left %v, want the 3-day group done first (%v)", left, want)
	}
}

// more says that a group stopped with rows of its window left: a run that
// finished every window reports false, whatever budget it had left when
// its last chunk ended (each budget from 1 to 12 clock readings).
func TestRetentionPerPipelineMoreOnlyWithRowsLeft(t *testing.T) {
	now := time.Date(2030, 6, 1, 3, 17, 0, 0, time.UTC)
	for budget := 1; budget <= 12; budget++ {
		r := pipelinesRetention(t)
		clock := &fakeClock{T: now, Step: time.Second}
		r.Limits = jobs.Limits{ChunkRows: 2, Budget: time.Duration(budget) * time.Second, Clock: clock.Now}
		var tickets []row
		for i := 0; i < 5; i++ {
			tickets = append(tickets, row{MsgID: fmt.Sprint("t", i), Key: fmt.Sprint(i), Status: "acknowledged",
				FailedAt: now.Add(-20 * day), AckAt: now.Add(-20*day + time.Duration(i)*time.Hour)})
		}
		seedQueue(t, r, "tickets", tickets...)
		sum, err := r.Run(ctx, now)
		if err != nil {
			t.Fatal(err)
		}
		left := count(t, r.DB, `SELECT COUNT(*) FROM dlq_messages`)
		if sum["deleted_age"] != 5-left || sum["more"] != (left > 0) {
			t.Fatalf("budget %d s: %d rows left, summary %v", budget, left, sum)
		}
	}
}
