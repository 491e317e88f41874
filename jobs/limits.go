package jobs

import (
	"context"
	"time"

	"github.com/redrive/redrive/clock"
)

// Limits bounds one run of a maintenance job, so that a large backlog is
// worked off over several runs instead of one run outliving the cron's limits.
type Limits struct {
	// ChunkRows is the most rows one statement deletes or updates (CRON_BATCH_SIZE):
	// a job drains its work in chunks of this size. ("Batch" is kept for
	// a queue batch and for D1's batch(), sqlbatch.)
	ChunkRows int
	// Budget is the wall time after which a run starts no new chunk
	// (CRON_JOB_BUDGET_SECONDS). A chunk already started always finishes.
	Budget time.Duration
	// Clock measures the budget; time.Now when nil (tests pass a fake clock).
	// In workerd the clock advances across I/O, which is what chunks wait on.
	Clock clock.Clock
}

// Chunk is the chunk size in effect (ChunkRows, 1000 when unset).
func (l Limits) Chunk() int {
	if l.ChunkRows <= 0 {
		return 1000
	}
	return l.ChunkRows
}

// Budget is the wall-time allowance of one run (Limits.Start).
type Budget struct {
	l        Limits
	deadline time.Time
}

// Start begins a run's budget now. Every rule of the run drains under the
// same budget, so together they stay inside CRON_JOB_BUDGET_SECONDS.
func (l Limits) Start() *Budget {
	b := l.Budget
	if b <= 0 {
		b = 20 * time.Second
	}
	return &Budget{l: l, deadline: l.Clock.Now().Add(b)}
}

// Spent reports whether the run's wall time is used up.
func (b *Budget) Spent() bool { return !b.l.Clock.Now().Before(b.deadline) }

// Drain calls step with the chunk size until a chunk changes fewer rows than
// that (nothing left) or the budget is spent. The first chunk always runs, so
// every rule of a job makes progress on every run even after an earlier rule
// used the budget up. more reports that rows were probably left for the next
// run (the last chunk was full when the budget ran out).
func (b *Budget) Drain(ctx context.Context, step func(ctx context.Context, limit int) (int64, error)) (total int64, more bool, err error) {
	size := b.l.Chunk()
	for {
		n, err := step(ctx, size)
		total += n
		if err != nil {
			return total, false, err
		}
		if n < int64(size) {
			return total, false, nil
		}
		if b.Spent() {
			return total, true, nil
		}
	}
}
