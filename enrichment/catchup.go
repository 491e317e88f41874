package enrichment

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/redrive/redrive/jobs"
	"github.com/redrive/redrive/metrics"
	"github.com/redrive/redrive/queue"
)

// CatchUpJobName is the name the catch-up job records its runs under.
const CatchUpJobName = "enrichment_catchup"

// Counters of the catch-up job, added once per run.
var (
	CounterCatchUpEnqueued = metrics.Declare("catchup_enqueued_total",
		"Beers the catch-up job enqueued (due or lost), each claimed once.")
	CounterCatchUpLost = metrics.Declare("catchup_lost_requeued_total",
		"Beers re-enqueued by the catch-up job because their message was lost (included in catchup_enqueued_total).")
	CounterCatchUpSendFailed = metrics.Declare("catchup_send_failed_total",
		"Beers the catch-up job claimed but could not send; put back to pending for the next run.")
	CounterCatchUpLateness = metrics.Declare("catchup_lateness_seconds_total",
		"Sum of the lateness (now - due) of the beers the catch-up job enqueued; divide by catchup_enqueued_total for the mean.")
)

// CatchUp is the scheduled recovery sweep of the beers table (docs/operations.md "Scheduled jobs"):
// the beers table is the source of truth, so whatever should be on the
// enrichment queue and is not (a day of downtime, a failed send, a lost
// message) is found by "due <= now", claimed with one conditional UPDATE
// ... RETURNING, and sent once. It runs on the frequent cron and is bounded
// by Limits (each claim takes at most the batch size; no new claim after
// the budget). Two rules use the one mechanism (claim, send, put back):
//
//   - due: next_attempt_at has passed and the beer is `pending`, or `failed`
//     with attempts below MaxAttempts. Lateness is now - next_attempt_at.
//   - lost: the beer should have a message but shows no sign of one for
//     LostAfter: `queued` (or `pending` without next_attempt_at: registered,
//     but its send failed or never happened) with neither its last update
//     nor its scheduled retry (next_attempt_at) within LostAfter, and no DLQ
//     row since it was queued (a message that reached the DLQ is not lost:
//     it waits for the operator, so a beer whose deliveries crash the
//     consumer is re-queued at most once, not forever). Lateness is counted
//     from the moment it became lost.
//
// Failed beers. The consumer marks a beer failed only when it gives up on
// its message: a permanent answer (stored in dlq_messages at once) or a
// failed last attempt (the queue moves the message to the DLQ), and both
// times it clears next_attempt_at. Such a beer is never due: its message is
// a DLQ row and recovering it is the operator's call (replay, acknowledge,
// POST /admin/enrich); a catch-up send beside a replay would enqueue it
// twice, and a permanent failure must not be retried. beers.attempts counts
// every delivery of every message, so a beer whose message used up its
// retries has attempts >= MaxAttempts: even if something sets a
// next_attempt_at on it, the cron never re-queues it; it stays `failed` and
// visible (GET /admin/beers/{id}: status, attempts, last_error). Only a
// failed beer deliberately rescheduled (next_attempt_at set, e.g. by an
// operator) with attempts left is due.
//
// Claims. One statement moves a batch to `queued` (queued_at = updated_at =
// now, next_attempt_at = when the attempt was due) and returns it; its
// conditions are repeated in its WHERE and a claimed beer matches neither
// rule any more, so overlapping runs never claim, and never send, a beer
// twice. The messages ({beer_id, beer_name, brewer}, as Registry.Enqueue
// sends them) go out with SendBatch in groups of at most 100. When a send
// fails, the beers not sent go back to `pending` (still due) in one
// statement and the run fails; the next run sends them.
//
// Downtime. While the worker is down, queued beers' messages wait on the
// queue and would look lost on its return. The lost rule therefore waits
// until the job has run without a gap longer than LostAfter for LostAfter
// (up_since, kept in the job's summary in job_runs): after a day of
// downtime the queue's backlog has LostAfter to be delivered first. A
// message that is merely later than LostAfter (a longer backlog) is sent a
// second time; the consumer acks the extra one without a provider call once
// the beer is done (at least once, never lost).
type CatchUp struct {
	DB  *sql.DB
	Log *slog.Logger
	// Sender puts the messages on the enrichment queue.
	Sender queue.Sender
	// MaxAttempts is ENRICHMENT_MAX_ATTEMPTS: a rescheduled failed beer is
	// due only while its attempts are below it.
	MaxAttempts int
	// LostAfter is ENRICHMENT_QUEUED_STUCK_MINUTES: how long a queued beer
	// may show no sign of its message before it is sent again.
	LostAfter time.Duration
	// Limits bounds each run (batch size and wall-time budget).
	Limits jobs.Limits
	// Configured is whether the provider's API key is set: waiting beers
	// are sent back only then.
	Configured bool
	// KeyProbe, when set, is the breaker's probe while it is open because
	// the key was refused: the run asks the provider itself (no queue
	// operation). Without it a waiting beer goes back as the probe.
	KeyProbe *KeyProbe
	// Clock is the wall clock the key probe reads the breaker at (the
	// consumers' clock, not the run's scheduled time, which a fired cron
	// may set anywhere); nil: time.Now.
	Clock func() time.Time
}

// Name implements jobs.Job.
func (c *CatchUp) Name() string { return CatchUpJobName }

// catchUpRule selects beers for the claim. where and due are SQL over the
// beers row: ?1 is now (epoch ms), ?2 the claim's limit, ?3 the rule's param.
type catchUpRule struct {
	name       string
	where, due string
	param      func(c *CatchUp) int64
	// afterUptime: only once the job has run for LostAfter without a gap.
	afterUptime bool
	// when, if set, says whether the rule runs at all in this run (it
	// costs nothing when it does not).
	when func(run *catchUpRun) bool
	// once: a single claim of one beer per run (the breaker's probe).
	once bool
}

var catchUpRules = []catchUpRule{
	{
		name:  "due",
		where: `status IN ('pending', 'failed') AND next_attempt_at <= ?1 AND (status = 'pending' OR attempts < ?3)`,
		due:   `next_attempt_at`,
		param: func(c *CatchUp) int64 { return int64(c.MaxAttempts) },
	},
	{
		name: "lost",
		where: `(status = 'queued' OR (status = 'pending' AND next_attempt_at IS NULL))
			AND max(updated_at, COALESCE(next_attempt_at, 0)) + ?3 <= ?1
			AND NOT EXISTS (SELECT 1 FROM dlq_messages d WHERE d.row_key = beers.beer_id AND d.failed_at >= COALESCE(beers.queued_at, 0))`,
		due:         `max(updated_at, COALESCE(next_attempt_at, 0)) + ?3`,
		param:       func(c *CatchUp) int64 { return c.LostAfter.Milliseconds() },
		afterUptime: true,
	},
	// Waiting beers (parked by the consumer while the provider could not be
	// called) all go back once the breaker is closed and the key is set;
	// next_attempt_at is only their order. ?3 is unused.
	{
		name:  "released",
		where: `status = 'waiting' AND ?3 = ?3`,
		due:   `next_attempt_at`,
		param: func(*CatchUp) int64 { return 0 },
		when:  func(run *catchUpRun) bool { return run.c.Configured && run.breaker.State == BreakerClosed },
	},
	// While the breaker is open and due for its probe, one waiting beer
	// goes back to be that probe: the first in next_attempt_at order, which
	// the consumer moves back each time a beer waits again, so the probe
	// rotates among the waiting beers (no single bad beer holds the
	// breaker open for the others). Not while the key is refused and the
	// run has probed the key itself (KeyProbe): a waiting beer would cost a
	// queue round trip per probe and prove nothing more.
	{
		name:  "probe",
		where: `status = 'waiting' AND ?3 = ?3`,
		due:   `next_attempt_at`,
		param: func(*CatchUp) int64 { return 0 },
		when: func(run *catchUpRun) bool {
			return run.c.Configured && run.breaker.State != BreakerClosed && run.breaker.ProbeDue(run.now) && !run.keyProbed
		},
		once: true,
	},
}

// catchUpRun is what one run did.
type catchUpRun struct {
	c       *CatchUp
	breaker BreakerState
	now     time.Time
	// keyProbed: the key probe is this run's probe (keyProbes), so no
	// waiting beer goes back as the probe.
	keyProbed bool
	sent      map[string]int64 // by rule
	putBack   int64
	lateness  []int64 // ms, one per beer sent
}

// Run claims and sends the due and the lost beers at now.
func (c *CatchUp) Run(ctx context.Context, now time.Time) (map[string]any, error) {
	if err := c.validate(); err != nil {
		return nil, err
	}
	upSince, err := c.upSince(ctx, now)
	if err != nil {
		return nil, err
	}
	run := &catchUpRun{c: c, now: now, sent: map[string]int64{}}
	keyProbe, err := run.readProvider(ctx)
	if err != nil {
		return nil, err
	}
	lostFrom := upSince + c.LostAfter.Milliseconds()
	more, errs := run.sendRules(ctx, lostFrom)
	total := run.sent["due"] + run.sent["lost"] + run.sent["released"] + run.sent["probe"]
	if err := run.addCounters(ctx, total); err != nil {
		errs = append(errs, fmt.Errorf("catch-up: %w", err))
	}
	maxLate, medianLate := latenessStats(run.lateness)
	sum := map[string]any{"enqueued": total, "due": run.sent["due"], "lost": run.sent["lost"],
		"released": run.sent["released"], "probe": run.sent["probe"], "put_back": run.putBack,
		"lateness_max_ms": maxLate, "lateness_median_ms": medianLate, "more": more, "up_since": upSince}
	if keyProbe != "" {
		sum["key_probe"] = keyProbe
	}
	if now.UnixMilli() < lostFrom {
		sum["lost_check_from"] = lostFrom
	}
	return sum, errors.Join(errs...)
}

// validate rejects a catch-up that cannot run: MaxAttempts and LostAfter
// must be positive and a queue sender set.
func (c *CatchUp) validate() error {
	switch {
	case c.MaxAttempts <= 0:
		return errors.New("catch-up: MaxAttempts must be positive")
	case c.LostAfter <= 0:
		return errors.New("catch-up: LostAfter must be positive")
	case c.Sender == nil:
		return errors.New("catch-up: no queue sender")
	}
	return nil
}

// readProvider, when the provider's key is set, reads the breaker for the
// run and, when the key probe is this run's probe and due, probes the key.
// It returns the key probe's outcome ("" when there was none).
func (run *catchUpRun) readProvider(ctx context.Context) (string, error) {
	c := run.c
	keyProbe := ""
	if c.Configured {
		var err error
		if run.breaker, err = (Breaker{DB: c.DB}).Read(ctx); err != nil {
			return "", fmt.Errorf("catch-up: %w", err)
		}
		if run.keyProbed = run.keyProbes(); run.keyProbed && run.breaker.ProbeDue(c.clock()) {
			if keyProbe, err = run.keyProbe(ctx); err != nil {
				return "", fmt.Errorf("catch-up: key probe: %w", err)
			}
		}
	}
	return keyProbe, nil
}

// sendRules claims and sends the beers of each rule that applies to this
// run, in catchUpRules order, within the budget of c.Limits (started
// here); the lost rule only once the run is at or past lostFrom. It stops
// at the first rule that fails, and returns whether beers were left for a
// later run and the errors.
func (run *catchUpRun) sendRules(ctx context.Context, lostFrom int64) (more bool, errs []error) {
	now := run.now
	budget := run.c.Limits.Start()
	for _, r := range catchUpRules {
		if (r.afterUptime && now.UnixMilli() < lostFrom) || (r.when != nil && !r.when(run)) {
			continue
		}
		if r.once {
			if _, err := run.claimAndSend(ctx, r, 1); err != nil {
				errs = append(errs, err)
				break
			}
			continue
		}
		_, m, err := budget.Drain(ctx, func(ctx context.Context, limit int) (int64, error) {
			return run.claimAndSend(ctx, r, limit)
		})
		more = more || m
		if err != nil {
			errs = append(errs, err)
			break
		}
	}
	return more, errs
}

// addCounters adds the run's counters: total beers enqueued, those of the
// lost rule, those put back, and the sum of their lateness in seconds.
func (run *catchUpRun) addCounters(ctx context.Context, total int64) error {
	var lateSum int64
	for _, l := range run.lateness {
		lateSum += l / 1000
	}
	return (metrics.Counters{DB: run.c.DB}).Add(ctx, map[string]int64{
		CounterCatchUpEnqueued: total, CounterCatchUpLost: run.sent["lost"],
		CounterCatchUpSendFailed: run.putBack, CounterCatchUpLateness: lateSum,
	})
}

// upSince is when the job's current stretch of runs began: the previous
// run's up_since, unless that run is older than LostAfter (or later than
// now, or missing): then now.
func (c *CatchUp) upSince(ctx context.Context, now time.Time) (int64, error) {
	n := now.UnixMilli()
	var last int64
	var prev sql.NullInt64
	err := c.DB.QueryRowContext(ctx, `SELECT last_run_at, CAST(last_summary ->> '$.up_since' AS INTEGER) FROM job_runs WHERE job = ?`,
		c.Name()).Scan(&last, &prev)
	if errors.Is(err, sql.ErrNoRows) {
		return n, nil
	}
	if err != nil {
		return 0, fmt.Errorf("catch-up: previous run: %w", err)
	}
	if !prev.Valid || prev.Int64 > n || last > n || n-last > c.LostAfter.Milliseconds() {
		return n, nil
	}
	return prev.Int64, nil
}

// claimed is one beer a claim returned, with when it was due.
type claimed struct {
	beer  Beer
	dueMS int64
}

// claimAndSend claims up to limit beers of rule r, sends them, and puts
// back those it could not send. It returns how many it claimed.
func (run *catchUpRun) claimAndSend(ctx context.Context, r catchUpRule, limit int) (int64, error) {
	c, now := run.c, run.now.UnixMilli()
	rows, err := c.DB.QueryContext(ctx, `UPDATE beers SET status = 'queued', queued_at = ?1, updated_at = ?1, next_attempt_at = `+r.due+`
		WHERE beer_id IN (SELECT beer_id FROM beers WHERE `+r.where+` ORDER BY `+r.due+`, beer_id LIMIT ?2)
			AND `+r.where+`
		RETURNING beer_id, name, brewer, next_attempt_at`, now, int64(limit), r.param(c))
	if err != nil {
		return 0, fmt.Errorf("catch-up %s: claim: %w", r.name, err)
	}
	var got []claimed
	for rows.Next() {
		var b claimed
		if err := rows.Scan(&b.beer.BeerID, &b.beer.BeerName, &b.beer.Brewer, &b.dueMS); err != nil {
			rows.Close()
			return 0, fmt.Errorf("catch-up %s: claim: %w", r.name, err)
		}
		got = append(got, b)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		// The claim may have happened: those beers are queued without a
		// message, and the lost rule sends them after LostAfter.
		return 0, fmt.Errorf("catch-up %s: claim: %w", r.name, err)
	}
	if len(got) == 0 {
		return 0, nil
	}

	msgs := make([]queue.Outgoing, len(got))
	for i, b := range got {
		if msgs[i], err = b.beer.message(); err != nil {
			return int64(len(got)), run.putBackFrom(ctx, r, got, 0, err)
		}
	}
	sent := 0
	for _, batch := range queue.Batches(msgs) {
		if err := c.Sender.SendBatch(ctx, queue.Enrichment, batch); err != nil {
			return int64(len(got)), run.putBackFrom(ctx, r, got, sent, err)
		}
		sent += len(batch)
	}
	run.record(ctx, r, got)
	return int64(len(got)), nil
}

// record counts and logs the beers sent.
func (run *catchUpRun) record(ctx context.Context, r catchUpRule, sent []claimed) {
	now := run.now.UnixMilli()
	var maxLate int64
	for _, b := range sent {
		late := max(0, now-b.dueMS)
		run.lateness = append(run.lateness, late)
		maxLate = max(maxLate, late)
		if r.name == "lost" {
			run.c.Log.WarnContext(ctx, "catch-up: message lost; beer enqueued again", "beer_id", b.beer.BeerID,
				"lost_since", b.dueMS, "lateness_ms", late)
		}
	}
	run.sent[r.name] += int64(len(sent))
	run.c.Log.InfoContext(ctx, "catch-up: beers enqueued", "rule", r.name, "beers", len(sent), "lateness_max_ms", maxLate)
}

// putBackSQL returns the listed beers (?1) that catch-up queued at ?2 to
// pending, keeping their due time (+status: see claimBeersSQL).
const putBackSQL = `UPDATE beers SET status = 'pending', queued_at = NULL, updated_at = ?2
	WHERE beer_id IN (SELECT value FROM json_each(?1)) AND +status = 'queued' AND queued_at = ?2`

// putBackFrom records the beers sent before the failure and returns the
// others (got[sent:]) to pending, still due, in one statement. It returns
// the error that fails the run.
func (run *catchUpRun) putBackFrom(ctx context.Context, r catchUpRule, got []claimed, sent int, sendErr error) error {
	run.record(ctx, r, got[:sent])
	rest := got[sent:]
	ids := make([]string, len(rest))
	for i, b := range rest {
		ids[i] = b.beer.BeerID
	}
	js, _ := json.Marshal(ids)
	err := fmt.Errorf("catch-up %s: send %d beers: %w", r.name, len(rest), sendErr)
	res, perr := run.c.DB.ExecContext(ctx, putBackSQL, string(js), run.now.UnixMilli())
	if perr != nil {
		run.c.Log.ErrorContext(ctx, "catch-up: send failed and the beers could not be put back; the lost rule sends them later",
			"rule", r.name, "beers", len(rest), "error", err.Error(), "put_back_error", perr.Error())
		return errors.Join(err, fmt.Errorf("put back: %w", perr))
	}
	n, _ := res.RowsAffected()
	run.putBack += n
	run.c.Log.ErrorContext(ctx, "catch-up: send failed; beers put back to pending for the next run",
		"rule", r.name, "beers", len(rest), "put_back", n, "error", err.Error())
	return err
}

// latenessStats returns the largest and the median of ls (0, 0 when empty).
func latenessStats(ls []int64) (maxMS, medianMS int64) {
	if len(ls) == 0 {
		return 0, 0
	}
	s := slices.Clone(ls)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n-1], s[n/2]
	}
	return s[n-1], (s[n/2-1] + s[n/2]) / 2
}
