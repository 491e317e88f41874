package upkeep

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/dlq/inspect"
	"github.com/redrive/redrive/dlq/resolve"
	"github.com/redrive/redrive/internal/sqlitetest"
	"github.com/redrive/redrive/jobs"
	"github.com/redrive/redrive/metrics"
	"github.com/redrive/redrive/queue"
	"github.com/redrive/redrive/queue/queuetest"
	"github.com/redrive/redrive/sqlbatch"
)

// Every way a row changes keeps dlq_tally and dlq_activity equal to what
// counting the rows gives: captures (new rows, redeliveries, repeat failures
// of replayed rows), acknowledge and replay (ids and bulk, sends that fail),
// rescue, and SQL typed by hand (status, source queue, brewer and time
// changes, deleted pending rows). Deleting acknowledged and replayed rows
// (retention) is followed by the daily dlq_tally job, which makes the
// counts and the hours of the last 25 hours exact again (older hours are
// not read by anything). Random sequences, checked after each step.
func TestCountsFollowEveryChange(t *testing.T) {
	for seed := range uint64(6) {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 15))
			db := sqlitetest.New(t)
			now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
			clock := func() time.Time { return now }
			sender := &queuetest.Sender{}
			capture := &dlq.Capture{DB: db, Log: discard, SourceQueue: map[string]string{dlqName: "beer-enrichment", "other-dlq": "other"}, Clock: clock}
			ack := resolve.Acknowledge{DB: db, Batch: sqlbatch.Tx{DB: db}, BulkMax: 7, Clock: clock}
			replay := resolve.Replay{DB: db, Sender: sender, Log: discard, Cursors: dlq.NewCursors("k"), BulkMax: 5, Clock: clock}
			rescue := &Rescue{DB: db, Log: discard, StuckAfter: time.Minute, Limits: jobs.Limits{ChunkRows: 3}}
			brewers := []string{"", "A", "B", "C"}
			msg := 0
			var exactFrom int64 // dlq_activity is exact from this hour on
			body := func() string {
				b := brewers[rng.IntN(len(brewers))]
				if b == "" {
					return fmt.Sprintf(`{"beer_id":"b%d"}`, rng.IntN(30))
				}
				return fmt.Sprintf(`{"beer_id":"b%d","brewer":%q}`, rng.IntN(30), b)
			}
			ids := func(status string, n int) []int64 {
				rows, err := db.Query(`SELECT id FROM dlq_messages WHERE status = ? ORDER BY random() LIMIT ?`, status, n)
				if err != nil {
					t.Fatal(err)
				}
				defer rows.Close()
				var out []int64
				for rows.Next() {
					var id int64
					rows.Scan(&id)
					out = append(out, id)
				}
				return out
			}
			for step := 0; step < 90; step++ {
				now = now.Add(time.Duration(rng.IntN(90)) * time.Minute)
				var what string
				switch op := rng.IntN(12); op {
				case 0, 1, 11: // a batch of new messages, some redelivered
					what = "capture"
					var batch []*queuetest.Message
					for range 1 + rng.IntN(6) {
						msg++
						batch = append(batch, &queuetest.Message{MsgID: fmt.Sprint("m", msg), Attempt: 1, Text: body(), Type: queue.JSON})
					}
					if msg > 3 && rng.IntN(2) == 0 {
						batch = append(batch, &queuetest.Message{MsgID: fmt.Sprint("m", 1+rng.IntN(msg-1)), Attempt: 2, Text: body(), Type: queue.JSON})
					}
					q := dlqName
					if rng.IntN(4) == 0 {
						q = "other-dlq"
					}
					if err := capture.ConsumeBatch(ctx, q, queuetest.Batch(batch...)); err != nil {
						t.Fatal(err)
					}
				case 2: // replayed messages fail again
					what = "repeat failures"
					for i, o := range sender.Sent["beer-enrichment"] {
						if rng.IntN(3) == 0 {
							consume(t, capture, &queuetest.Message{MsgID: fmt.Sprint("again", step, i), Attempt: 4, Text: o.Body, Type: o.ContentType})
						}
					}
				case 3:
					what = "acknowledge ids"
					if got := ids(dlq.StatusPending, 1+rng.IntN(4)); len(got) > 0 {
						if _, err := ack.Run(ctx, resolve.AcknowledgeRequest{Selection: dlq.Selection{IDs: append(got, 999999)}}); err != nil {
							t.Fatal(err)
						}
					}
				case 4:
					what = "acknowledge bulk"
					if _, err := ack.Run(ctx, resolve.AcknowledgeRequest{Selection: dlq.Selection{Filter: &dlq.Filter{Key: fmt.Sprint("b", rng.IntN(30))}}}); err != nil {
						t.Fatal(err)
					}
				case 5:
					what = "replay ids"
					if rng.IntN(3) == 0 {
						sender.Err = errors.New("queue down")
					}
					if got := ids(dlq.StatusPending, 1+rng.IntN(4)); len(got) > 0 {
						if _, err := replay.Run(ctx, resolve.ReplayRequest{Selection: dlq.Selection{IDs: got}}); err != nil {
							t.Fatal(err)
						}
					}
					sender.Err = nil
				case 6:
					what = "replay bulk"
					if _, err := replay.Run(ctx, resolve.ReplayRequest{Selection: dlq.Selection{Filter: &dlq.Filter{}}}); err != nil {
						t.Fatal(err)
					}
				case 7: // a replay that died after its claim, then the rescue
					what = "rescue"
					if got := ids(dlq.StatusPending, 2); len(got) > 0 {
						mustExec(t, db, `UPDATE dlq_messages SET status = 'replaying', replaying_at = ? WHERE id IN (SELECT value FROM json_each(?))`,
							now.Add(-time.Hour).UnixMilli(), idsJSON(got))
						checkCounts(t, db, exactFrom, "claim by hand")
					}
					if _, err := rescue.Run(ctx, now); err != nil {
						t.Fatal(err)
					}
				case 8: // SQL typed by hand
					what = "SQL by hand"
					stmts := []string{
						`UPDATE dlq_messages SET status = 'replayed', replayed_at = failed_at + 1000 WHERE id IN (SELECT id FROM dlq_messages WHERE status = 'pending' ORDER BY random() LIMIT 2)`,
						`UPDATE dlq_messages SET status = 'acknowledged', acknowledged_at = failed_at WHERE id IN (SELECT id FROM dlq_messages WHERE status = 'pending' ORDER BY random() LIMIT 2)`,
						`UPDATE dlq_messages SET source_queue = 'moved' WHERE id IN (SELECT id FROM dlq_messages ORDER BY random() LIMIT 2)`,
						`UPDATE dlq_messages SET label_2 = CASE WHEN label_2 IS NULL THEN 'Z' ELSE NULL END WHERE id IN (SELECT id FROM dlq_messages ORDER BY random() LIMIT 2)`,
						`UPDATE dlq_messages SET failed_at = failed_at - 7200000 WHERE id IN (SELECT id FROM dlq_messages ORDER BY random() LIMIT 2)`,
						`UPDATE dlq_messages SET acknowledged_at = acknowledged_at + 3600000 WHERE status = 'acknowledged'`,
						`UPDATE dlq_messages SET status = 'pending' WHERE id IN (SELECT id FROM dlq_messages WHERE status <> 'pending' ORDER BY random() LIMIT 2)`,
						`DELETE FROM dlq_messages WHERE id IN (SELECT id FROM dlq_messages WHERE status IN ('pending', 'replaying') ORDER BY random() LIMIT 1)`,
					}
					mustExec(t, db, stmts[rng.IntN(len(stmts))])
				case 9: // retention's cap evicts terminal rows (any, recent ones too); the daily job counts again
					what = "retention and dlq_tally"
					res, err := db.Exec(`DELETE FROM dlq_messages WHERE id IN (SELECT id FROM dlq_messages WHERE status IN ('acknowledged', 'replayed') ORDER BY random() LIMIT 3)`)
					if err != nil {
						t.Fatal(err)
					}
					n, _ := res.RowsAffected()
					if err := (metrics.Counters{DB: db}).Add(ctx, map[string]int64{CounterRetentionCap: n}); err != nil {
						t.Fatal(err)
					}
					if _, err := (&TallyCheck{DB: db}).Run(ctx, now); err != nil {
						t.Fatal(err)
					}
					exactFrom = now.Add(-25*time.Hour).UnixMilli() / dlq.HourMS
				case 10: // stats agree with counting
					what = "stats"
					r, err := inspect.Stats{DBs: dlq.Single(dlq.Store{DB: db}), Clock: clock}.Report(ctx)
					if err != nil {
						t.Fatal(err)
					}
					for st, got := range map[string]int64{dlq.StatusPending: r.ByStatus.Pending, dlq.StatusReplaying: r.ByStatus.Replaying,
						dlq.StatusReplayed: r.ByStatus.Replayed, dlq.StatusAcknowledged: r.ByStatus.Acknowledged} {
						if want := count(t, db, `SELECT COUNT(*) FROM dlq_messages WHERE status = ?`, st); got != want {
							t.Fatalf("stats %s = %d, want %d", st, got, want)
						}
					}
					day := now.Add(-24 * time.Hour).UnixMilli()
					if want := count(t, db, `SELECT COUNT(*) FROM dlq_messages WHERE failed_at > ?`, day); r.Last24h.NewFailures24h != want {
						t.Fatalf("new_failures_24h = %d, want %d", r.Last24h.NewFailures24h, want)
					}
					if want := count(t, db, `SELECT COUNT(*) FROM dlq_messages WHERE status = 'replayed' AND replayed_at > ?`, day); r.Last24h.Replayed24h != want {
						t.Fatalf("replayed_24h = %d, want %d", r.Last24h.Replayed24h, want)
					}
					if want := count(t, db, `SELECT COUNT(*) FROM dlq_messages WHERE status = 'acknowledged' AND acknowledged_at > ?`, day); r.Last24h.Acknowledged24h != want {
						t.Fatalf("acknowledged_24h = %d, want %d", r.Last24h.Acknowledged24h, want)
					}
				}
				if step%7 == 6 { // the prune keeps what last_24h needs
					if _, err := (&TallyCheck{DB: db}).Run(ctx, now); err != nil {
						t.Fatal(err)
					}
					exactFrom = max(exactFrom, now.Add(-activityKeep).UnixMilli()/dlq.HourMS) // older hours are gone
					hour := exactFrom
					if got, want := activityRows(t, db, hour), wantActivity(t, db, hour); !reflect.DeepEqual(got, want) {
						t.Fatalf("after the prune: dlq_activity\n got %v\nwant %v", got, want)
					}
					if got, want := tallyRows(t, db), wantTally(t, db); !reflect.DeepEqual(got, want) {
						t.Fatalf("after the prune: dlq_tally\n got %v\nwant %v", got, want)
					}
					continue
				}
				checkCounts(t, db, exactFrom, fmt.Sprintf("step %d (%s)", step, what))
			}
			if n := count(t, db, `SELECT COUNT(*) FROM dlq_messages`); n < 20 {
				t.Fatalf("only %d rows: the sequence tested little", n)
			}
		})
	}
}

// The daily job counts again only what retention's deletions since its last
// run made stale: acknowledged and replayed counts after any deletion, the
// hours of the last day after evictions by the per-key cap (which can be
// recent; deletions by age are older than any hour last_24h reads).
func TestTallyCheckRecountsWhatRetentionChanged(t *testing.T) {
	db := sqlitetest.New(t)
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	job := &TallyCheck{DB: db}
	run := func(wantStatuses, wantHours bool) {
		t.Helper()
		sum, err := job.Run(ctx, now)
		if err != nil {
			t.Fatal(err)
		}
		if sum["recounted_statuses"] != wantStatuses || sum["recounted_hours"] != wantHours {
			t.Fatalf("summary %v, want statuses %v hours %v", sum, wantStatuses, wantHours)
		}
		if err := (metricsRuns{db}).record(job.Name(), now, sum); err != nil {
			t.Fatal(err)
		}
	}
	run(true, true) // never ran: everything
	run(false, false)
	metrics.Counters{DB: db}.Add(ctx, map[string]int64{CounterRetentionAge: 5})
	run(true, false)
	metrics.Counters{DB: db}.Add(ctx, map[string]int64{CounterRetentionCap: 1})
	run(true, true)
	run(false, false)
}

// metricsRuns records a job's run as the cron router does.
type metricsRuns struct{ db *sql.DB }

func (m metricsRuns) record(job string, at time.Time, sum map[string]any) error {
	return metrics.JobRuns{DB: m.db}.RecordRun(ctx, job, at, time.Millisecond, nil, sum)
}

// A batch counts its own new rows (migrations/0029), whether its failures
// share one group and hour (no GROUP BY) or not, and counts neither its
// duplicates nor rows inserted before it; rows inserted by hand are still
// counted by the trigger.
func TestSaveCountsItsNewRowsOnce(t *testing.T) {
	db := sqlitetest.New(t)
	s := dlq.Store{DB: db}
	h0 := time.Date(2030, 1, 2, 3, 0, 0, 0, time.UTC)
	brewer := func(id, b string) string { return fmt.Sprintf(`{"beer_id":%q,"brewer":%q}`, id, b) }
	save := func(step string, fs ...dlq.Failure) {
		t.Helper()
		if _, err := s.Save(context.Background(), fs); err != nil {
			t.Fatal(err)
		}
		checkCounts(t, db, 0, step)
	}
	save("one group, one hour", failure("a1", brewer("1", "A"), h0), failure("a2", brewer("2", "A"), h0.Add(time.Minute)))
	save("groups and hours", failure("b1", brewer("3", "A"), h0), failure("b2", brewer("4", "B"), h0.Add(time.Hour)),
		failure("b3", `{"beer_id":"5"}`, h0.Add(2*time.Hour)), failure("b4", `not json`, h0),
		dlq.Failure{MessageID: "b5", SourceQueue: "other", Body: brewer("6", "A"), FailedAt: h0})
	save("duplicates beside a new row", failure("a1", brewer("1", "A"), h0), failure("b2", brewer("4", "B"), h0), failure("c1", brewer("7", "C"), h0))
	save("duplicates only", failure("a2", brewer("2", "A"), h0), failure("c1", brewer("7", "C"), h0))
	if _, err := db.Exec(`INSERT INTO dlq_messages(message_id, row_key, label_2, failed_at, last_message_id) VALUES ('h1', 'x', 'H', ?, 'h1')`, h0.UnixMilli()); err != nil {
		t.Fatal(err)
	}
	checkCounts(t, db, 0, "a row inserted by hand")
	save("after a row inserted by hand", failure("d1", brewer("8", "H"), h0))
	if n := count(t, db, `SELECT COUNT(*) FROM dlq_messages`); n != 10 {
		t.Fatalf("%d rows, want 10", n)
	}
}

// A database other than the shared one: the job is dlq_tally:<binding>,
// reads retention's counters from its database and its previous summary
// from Runs (the shared database's job_runs), whether or not that
// database holds a job_runs row of the same name.
func TestTallyCheckOfAnotherDatabaseReadsItsRunsFromRuns(t *testing.T) {
	shared, own := sqlitetest.New(t), sqlitetest.New(t)
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	job := &TallyCheck{DB: own, Database: "TICKETS_DB", Runs: shared}
	if job.Name() != "dlq_tally:TICKETS_DB" {
		t.Fatalf("name %q", job.Name())
	}
	// The own database's job_runs says it saw other counters: not read.
	if err := (metricsRuns{own}).record(job.Name(), now, map[string]any{"retention_deleted": 9, "retention_capped": 9}); err != nil {
		t.Fatal(err)
	}
	run := func(wantStatuses, wantHours bool) {
		t.Helper()
		sum, err := job.Run(ctx, now)
		if err != nil {
			t.Fatal(err)
		}
		if sum["recounted_statuses"] != wantStatuses || sum["recounted_hours"] != wantHours {
			t.Fatalf("summary %v, want statuses %v hours %v", sum, wantStatuses, wantHours)
		}
		if err := (metricsRuns{shared}).record(job.Name(), now, sum); err != nil {
			t.Fatal(err)
		}
	}
	run(true, true) // never ran (in Runs): everything
	run(false, false)
	metrics.Counters{DB: shared}.Add(ctx, map[string]int64{CounterRetentionAge: 5}) // the shared database's own retention
	run(false, false)
	metrics.Counters{DB: own}.Add(ctx, map[string]int64{CounterRetentionCap: 1})
	run(true, true)
	run(false, false)
}
