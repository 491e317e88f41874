package upkeep

import (
	"context"
	"testing"
	"time"

	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/dlq/resolve"
	"github.com/redrive/redrive/internal/sqlitetest"
	"github.com/redrive/redrive/jobs"
	"github.com/redrive/redrive/queue"
	"github.com/redrive/redrive/queue/queuetest"
)

// gateSender tells when a send starts and holds it until released.
type gateSender struct {
	queuetest.Sender
	started, release chan struct{}
}

func newGateSender() *gateSender {
	return &gateSender{started: make(chan struct{}), release: make(chan struct{})}
}

func (s *gateSender) SendBatch(ctx context.Context, q string, msgs []queue.Outgoing) error {
	close(s.started)
	<-s.release
	return s.Sender.SendBatch(ctx, q, msgs)
}

// A replay whose settle comes late — after Rescue returned its row to
// pending and a second replay claimed it — must not settle the second
// replay's claim: the row stays the second replay's (replaying, its claim
// time) until that one settles it, and the replay is counted once.
func TestLateSettleDoesNotTouchAnotherReplaysClaim(t *testing.T) {
	db := sqlitetest.New(t)
	ids := insert(t, db, adminRow{Key: "1", Label1: "A", FailedAt: 100})
	t0 := time.UnixMilli(1_750_000_000_000)
	later := t0.Add(20 * time.Minute) // past the rescue's StuckAfter
	replay := func(s queue.Sender, at time.Time) <-chan resolve.ReplayResult {
		done := make(chan resolve.ReplayResult, 1)
		go func() {
			r := resolve.Replay{DB: db, Sender: s, Log: discard, Cursors: dlq.NewCursors("s"), BulkMax: 500, Clock: func() time.Time { return at }}
			res, err := r.Run(ctx, resolve.ReplayRequest{Selection: dlq.Selection{IDs: ids}})
			if err != nil {
				t.Error(err)
			}
			done <- res
		}()
		return done
	}
	row := func() (status string, replayingAt, replayCount int64) {
		var at *int64
		if err := db.QueryRow(`SELECT status, replaying_at, replay_count FROM dlq_messages WHERE id = ?`, ids[0]).Scan(&status, &at, &replayCount); err != nil {
			t.Fatal(err)
		}
		if at != nil {
			replayingAt = *at
		}
		return status, replayingAt, replayCount
	}

	s1, s2 := newGateSender(), newGateSender()
	first := replay(s1, t0)
	<-s1.started // claimed at t0, sending
	if _, err := (&Rescue{DB: db, Log: discard, StuckAfter: 10 * time.Minute, Limits: jobs.Limits{ChunkRows: 100, Budget: time.Minute}}).Run(ctx, later); err != nil {
		t.Fatal(err)
	}
	second := replay(s2, later)
	<-s2.started // claimed again at later, sending
	close(s1.release)
	if res := <-first; res.ClaimedCount != 1 {
		t.Fatalf("first replay %+v", res)
	}
	if st, at, n := row(); st != dlq.StatusReplaying || at != later.UnixMilli() || n != 0 {
		t.Fatalf("after the late settle: %s, replaying_at %d, replay_count %d; want the second claim untouched", st, at, n)
	}
	close(s2.release)
	if res := <-second; res.ClaimedCount != 1 || res.ReplayedCount != 1 {
		t.Fatalf("second replay %+v", res)
	}
	if st, _, n := row(); st != dlq.StatusReplayed || n != 1 {
		t.Fatalf("after the second settle: %s, replay_count %d", st, n)
	}
	if n := counter(t, db, resolve.CounterReplayed); n != 1 {
		t.Fatalf("%s = %d, want 1", resolve.CounterReplayed, n)
	}
}
