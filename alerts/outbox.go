package alerts

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/redrive/redrive/clock"
	"github.com/redrive/redrive/internal/text"
	"github.com/redrive/redrive/outbound"
	"github.com/redrive/redrive/sqlbatch"
)

// Outbox records events in D1 (alert_events, alert_deliveries), in the
// batch of the change that caused them, and delivers them to the channels
// that route them from the alerts job: due deliveries in order, each
// incident's events to a channel one after another, with exponential
// backoff and jitter between attempts, and at most Attempts attempts.
// Nothing is lost: an event is written with the change or not at all, and
// a delivery stays pending until a receiver took it (2xx) or its last
// attempt failed (it is then failed, counted in the counters table as
// alert_deliveries_failed_total, and listed by GET /admin/alerts/events).
// Nothing is doubled per receiver: an occurrence has one stable id (a
// second write of it is ignored), and a delivery is claimed by one
// conditional statement before it is sent. A receiver that answers 410
// Gone is disabled (alert_channels) and the other channels are told
// (channel.disabled).
type Outbox struct {
	DB    *sql.DB
	Batch sqlbatch.Runner
	// Database is the binding of DB ("" is the shared "DB"): Commit makes
	// a change in it and its events one batch.
	Database string
	// Doer sends the requests (platform.Fetch in the Worker).
	Doer outbound.Doer
	Log  *slog.Logger
	// Channels are ALERT_CHANNELS; none: events are only recorded.
	Channels []Channel
	// Attempts is ALERT_DELIVERY_ATTEMPTS.
	Attempts int
	// Jitter returns a number in [0, 1) (nil: math/rand/v2).
	Jitter func() float64
	// Clock stamps a request when it is sent (a signature's
	// webhook-timestamp), which may be later than the run's scheduled
	// time; nil: the wall clock.
	Clock clock.Clock
}

// Delivery bounds, per alerts run.
const (
	// DeliveriesPerRun bounds the requests one run sends (subrequests:
	// the Free plan allows 50 per invocation).
	DeliveriesPerRun = 25
	// deliveryRounds bounds the claims of one run: the first takes one
	// delivery per channel, each next one the next event of every
	// incident whose previous one was delivered.
	deliveryRounds = 5
	// deliveryLease is how long a claim holds a delivery: longer than a
	// run. A run that dies leaves it to lapse, then it is sent again.
	deliveryLease = 15 * time.Minute
	// BackoffBase and BackoffMax shape the wait after a failed attempt:
	// BackoffBase doubled per attempt up to BackoffMax, of which a random
	// half is taken off (equal jitter).
	BackoffBase = time.Minute
	BackoffMax  = time.Hour
	// errorText bounds a delivery's last_error.
	errorText = 200
)

// FailedCounter is the counters row of deliveries whose last attempt failed.
const FailedCounter = "alert_deliveries_failed_total"

// Backoff is the wait after the attempt-th failed attempt (1-based), for
// a jitter j in [0, 1): between half and all of BackoffBase·2^(attempt-1),
// at most BackoffMax.
func Backoff(attempt int, j float64) time.Duration {
	d := BackoffMax
	if attempt >= 1 && attempt <= 7 {
		d = min(BackoffBase<<(attempt-1), BackoffMax)
	}
	return d/2 + time.Duration(j*float64(d/2))
}

// outboxEvent is one event as a statement of Record reads it (json_each).
type outboxEvent struct {
	ID       string   `json:"id"`
	Type     string   `json:"type"`
	DedupKey string   `json:"dedup_key"`
	Pipeline string   `json:"pipeline"`
	Severity string   `json:"severity"`
	Body     string   `json:"body"`
	Key      string   `json:"key"`
	Channels []string `json:"channels"`
}

// Keyed is an event and the key its guard checks (Record).
type Keyed struct {
	Event
	// Key is what the guard reads as j.value ->> 'key' (a signature, ...).
	Key string
}

// Record returns the two statements that write evs and their deliveries
// (one per channel that routes the event and is not disabled), for the
// batch of the change that caused them. An event is written only when
// guard holds for it: a SQL condition over j, the event's json_each row
// (j.value ->> 'key' is its Key), with guardArgs for its ? parameters
// ("1" for always). An event whose id is already stored is not written
// again, and gets no new delivery.
func (o *Outbox) Record(evs []Keyed, at time.Time, guard string, guardArgs ...any) ([]sqlbatch.Stmt, error) {
	list := make([]outboxEvent, 0, len(evs))
	for _, ev := range evs {
		body, err := json.Marshal(ev.Event)
		if err != nil {
			return nil, fmt.Errorf("event %s: %w", ev.Type, err)
		}
		oe := outboxEvent{ID: ev.ID, Type: ev.Type, DedupKey: ev.DedupKey, Pipeline: ev.Pipeline, Severity: ev.Severity,
			Body: string(body), Key: ev.Key, Channels: []string{}}
		for _, c := range o.Channels {
			if c.Routes(ev.Event) {
				oe.Channels = append(oe.Channels, c.Name)
			}
		}
		list = append(list, oe)
	}
	js, err := json.Marshal(list)
	if err != nil {
		return nil, fmt.Errorf("events: %w", err)
	}
	t := at.UnixMilli()
	return []sqlbatch.Stmt{
		{SQL: `INSERT OR IGNORE INTO alert_events(id, type, dedup_key, pipeline, severity, created_at, body)
			SELECT j.value ->> 'id', j.value ->> 'type', j.value ->> 'dedup_key', NULLIF(j.value ->> 'pipeline', ''),
				j.value ->> 'severity', ?2, j.value ->> 'body'
			FROM json_each(?1) AS j WHERE ` + guard, Args: append([]any{string(js), t}, guardArgs...)},
		{SQL: `INSERT OR IGNORE INTO alert_deliveries(event_id, channel, dedup_key, next_at)
			SELECT j.value ->> 'id', c.value, j.value ->> 'dedup_key', ?2
			FROM json_each(?1) AS j, json_each(j.value -> 'channels') AS c
			WHERE EXISTS (SELECT 1 FROM alert_events e WHERE e.id = j.value ->> 'id' AND e.created_at = ?2)
				AND NOT EXISTS (SELECT 1 FROM alert_channels WHERE name = c.value AND disabled_at IS NOT NULL)
			ORDER BY j.key, c.key`, Args: []any{string(js), t}},
	}, nil
}

// Commit makes change, statements run in the database of the binding
// database, and records evs, the events it tells. In the outbox's own
// database they are one batch: the change first, then the events, each
// written only when guard (over j, as Record's, with guardArgs) holds in
// the state the change left, so a change that matched nothing tells
// nothing. In another database the events go first, unguarded, then the
// change: an event's id is fixed by what it tells, so a retry after a
// failed change writes the same event again (ignored), never a change
// without its event. It returns the change's results.
func (o *Outbox) Commit(ctx context.Context, database string, run sqlbatch.Runner, change []sqlbatch.Stmt, evs []Keyed,
	at time.Time, guard string, guardArgs ...any) ([]json.RawMessage, error) {
	if len(evs) == 0 {
		return run.Batch(ctx, change...)
	}
	if database == cmp.Or(o.Database, "DB") {
		rec, err := o.Record(evs, at, guard, guardArgs...)
		if err != nil {
			return nil, err
		}
		res, err := run.Batch(ctx, append(slices.Clip(change), rec...)...)
		if err != nil {
			return nil, err
		}
		return res[:len(change)], nil
	}
	if err := o.Write(ctx, evs, at); err != nil {
		return nil, fmt.Errorf("record events: %w", err)
	}
	res, err := run.Batch(ctx, change...)
	if err != nil {
		return nil, fmt.Errorf("its events are recorded, and a retry records them again as the same: %w", err)
	}
	return res, nil
}

// Write records evs at once in their own batch (no guard).
func (o *Outbox) Write(ctx context.Context, evs []Keyed, at time.Time) error {
	stmts, err := o.Record(evs, at, "1")
	if err != nil {
		return err
	}
	if _, err := o.Batch.Batch(ctx, stmts...); err != nil {
		return fmt.Errorf("record events: %w", err)
	}
	return nil
}

// claimSQL takes the due deliveries (?1 now) that are the first pending
// one of their channel and incident, not of a channel in ?4 (a JSON list),
// oldest first, at most ?5 per channel and ?2 in all, for a lease (?3 ms).
// Through idx_alert_deliveries_due (only due entries are read) and
// idx_alert_deliveries_order.
const claimSQL = `UPDATE alert_deliveries SET next_at = ?1 + ?3, attempts = attempts + 1
	WHERE seq IN (SELECT seq FROM (SELECT d.seq, ROW_NUMBER() OVER (PARTITION BY d.channel ORDER BY d.seq) AS k
			FROM alert_deliveries d
			WHERE d.state = 'pending' AND d.next_at <= ?1 AND d.channel NOT IN (SELECT value FROM json_each(?4))
				AND NOT EXISTS (SELECT 1 FROM alert_deliveries e WHERE e.state = 'pending' AND e.channel = d.channel
					AND e.dedup_key = d.dedup_key AND e.seq < d.seq))
		WHERE k <= ?5 ORDER BY seq LIMIT ?2)
		AND state = 'pending' AND next_at <= ?1
	RETURNING seq, event_id, channel, attempts`

type claimed struct {
	seq      int64
	event    string
	channel  string
	attempts int
}

// DeliveryReport is what one Deliver did.
type DeliveryReport struct {
	Sent, Retrying, Failed, Skipped int
	// Disabled names the channels disabled by a 410 in this run.
	Disabled []string
}

// Deliver sends the due deliveries at now: at most DeliveriesPerRun
// requests. A channel whose request fails is not tried again in this run
// (its other deliveries keep their place). The error names the channels
// that failed (the alerts run fails, so job_failing says so).
func (o *Outbox) Deliver(ctx context.Context, now time.Time) (DeliveryReport, error) {
	var rep DeliveryReport
	var errs []error
	down := []string{}
	requests := 0
	for round := 0; round < deliveryRounds && requests < DeliveriesPerRun; round++ {
		// The first round tries one delivery per channel: a receiver that
		// is down costs one attempt a run, not a claim of every delivery
		// it has due.
		perChannel := DeliveriesPerRun
		if round == 0 {
			perChannel = 1
		}
		batch, err := o.claim(ctx, o.due(now), DeliveriesPerRun-requests, perChannel, down)
		if err != nil {
			return rep, errors.Join(append(errs, err)...)
		}
		if len(batch) == 0 {
			break
		}
		bodies, err := o.bodies(ctx, batch)
		if err != nil {
			return rep, errors.Join(append(errs, err)...)
		}
		for _, d := range batch {
			if slices.Contains(down, d.channel) {
				// An earlier delivery of this run failed there: give the claim back.
				if err := o.exec(ctx, `UPDATE alert_deliveries SET attempts = attempts - 1, next_at = ?2 WHERE seq = ?1 AND state = 'pending'`,
					d.seq, now.UnixMilli()); err != nil {
					errs = append(errs, err)
				}
				continue
			}
			requests++
			outcome, err := o.deliver(ctx, d, bodies[d.event], now)
			switch outcome {
			case delivered:
				rep.Sent++
			case skipped:
				rep.Skipped++
			case gone:
				rep.Disabled = append(rep.Disabled, d.channel)
				down = append(down, d.channel)
			case retrying:
				rep.Retrying++
				down = append(down, d.channel)
			case failed:
				rep.Failed++
				down = append(down, d.channel)
			}
			if err != nil {
				errs = append(errs, err)
			}
		}
	}
	return rep, errors.Join(errs...)
}

// due is the time deliveries are due by: the run's scheduled time, or the
// clock when later (a run starts after its scheduled second; an event
// recorded in between is due in this run, not the next).
func (o *Outbox) due(now time.Time) time.Time {
	if c := o.Clock.Now(); c.After(now) {
		return c
	}
	return now
}

func (o *Outbox) claim(ctx context.Context, now time.Time, n, perChannel int, down []string) ([]claimed, error) {
	js, _ := json.Marshal(down) // a []string always marshals
	rows, err := o.DB.QueryContext(ctx, claimSQL, now.UnixMilli(), int64(n), deliveryLease.Milliseconds(), string(js), int64(perChannel))
	if err != nil {
		return nil, fmt.Errorf("claim deliveries: %w", err)
	}
	defer rows.Close()
	var out []claimed
	for rows.Next() {
		var c claimed
		if err := rows.Scan(&c.seq, &c.event, &c.channel, &c.attempts); err != nil {
			return nil, fmt.Errorf("claim deliveries: %w", err)
		}
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("claim deliveries: %w", err)
	}
	slices.SortFunc(out, func(a, b claimed) int { return int(a.seq - b.seq) })
	return out, nil
}

func (o *Outbox) bodies(ctx context.Context, batch []claimed) (map[string]string, error) {
	ids := make([]string, 0, len(batch))
	for _, c := range batch {
		ids = append(ids, c.event)
	}
	js, _ := json.Marshal(ids)
	rows, err := o.DB.QueryContext(ctx, `SELECT id, body FROM alert_events WHERE id IN (SELECT value FROM json_each(?))`, string(js))
	if err != nil {
		return nil, fmt.Errorf("read events: %w", err)
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var id, body string
		if err := rows.Scan(&id, &body); err != nil {
			return nil, fmt.Errorf("read events: %w", err)
		}
		out[id] = body
	}
	return out, rows.Err()
}

type outcome int

const (
	delivered outcome = iota
	skipped
	retrying
	failed
	gone
)

// deliver sends one claimed delivery and records its outcome.
func (o *Outbox) deliver(ctx context.Context, d claimed, body string, now time.Time) (outcome, error) {
	t := now.UnixMilli()
	ch, ok := o.channel(d.channel)
	var ev Event
	if ok && body != "" {
		if err := json.Unmarshal([]byte(body), &ev); err != nil {
			body = ""
		}
	}
	if !ok || body == "" {
		reason := "channel " + d.channel + " is not configured"
		if ok {
			reason = "the event is gone"
		}
		return skipped, o.exec(ctx, `UPDATE alert_deliveries SET state = 'skipped', done_at = ?2, last_error = ?3 WHERE seq = ?1 AND state = 'pending'`,
			d.seq, t, reason)
	}
	req, send, err := ch.Request(ev, []byte(body), o.Clock.Now())
	if err != nil || !send {
		reason := "nothing to send for " + ev.Type
		if err != nil {
			reason = text.Clip(err.Error(), errorText)
		}
		return skipped, o.exec(ctx, `UPDATE alert_deliveries SET state = 'skipped', done_at = ?2, last_error = ?3 WHERE seq = ?1 AND state = 'pending'`,
			d.seq, t, reason)
	}
	resp, err := o.Doer.Do(ctx, req)
	status := 0
	if err == nil {
		status = resp.Status
	}
	switch {
	case err == nil && ch.Outcome(status) == Delivered:
		o.Log.InfoContext(ctx, "alert: delivered", "event_id", ev.ID, "type", ev.Type, "channel", d.channel, "attempt", d.attempts)
		return delivered, o.exec(ctx, `UPDATE alert_deliveries SET state = 'sent', done_at = ?2, last_status = ?3, last_error = NULL
			WHERE seq = ?1 AND state = 'pending'`, d.seq, t, int64(status))
	case err == nil && ch.Outcome(status) == Gone:
		return gone, o.disable(ctx, ch, d, ev, now)
	}
	return o.failedAttempt(ctx, d, ev, status, err, now, err == nil && ch.Outcome(status) == Refused)
}

// failedAttempt records an attempt that got no 2xx (status 0: no answer,
// err says why): the delivery waits Backoff, or fails after its last
// attempt, or at once when the receiver refused the event (refused).
func (o *Outbox) failedAttempt(ctx context.Context, d claimed, ev Event, status int, err error, now time.Time, refused bool) (outcome, error) {
	t := now.UnixMilli()
	reason := fmt.Sprintf("status %d", status)
	if refused {
		reason += " (the receiver refused the event; not sent again)"
	}
	if err != nil {
		// The Doer's error names the host at most, never the URL's path or query.
		reason = text.Clip(err.Error(), errorText)
	}
	deliverErr := fmt.Errorf("deliver %s to %s: %s", ev.Type, d.channel, reason)
	if d.attempts >= o.Attempts || refused {
		o.Log.ErrorContext(ctx, "alert: delivery failed for good", "event_id", ev.ID, "type", ev.Type, "channel", d.channel,
			"attempts", d.attempts, "error", reason)
		_, berr := o.Batch.Batch(ctx,
			sqlbatch.Stmt{SQL: `UPDATE alert_deliveries SET state = 'failed', done_at = ?2, last_status = ?3, last_error = ?4
				WHERE seq = ?1 AND state = 'pending'`, Args: []any{d.seq, t, nullStatus(status), reason}},
			sqlbatch.Stmt{SQL: `INSERT INTO counters(name, value) VALUES (?1, 1) ON CONFLICT(name) DO UPDATE SET value = value + 1`,
				Args: []any{FailedCounter}})
		if berr != nil {
			deliverErr = errors.Join(deliverErr, fmt.Errorf("mark failed: %w", berr))
		}
		return failed, deliverErr
	}
	wait := Backoff(d.attempts, o.jitter())
	o.Log.WarnContext(ctx, "alert: delivery failed; retrying", "event_id", ev.ID, "type", ev.Type, "channel", d.channel,
		"attempt", d.attempts, "retry_in", wait.Round(time.Second).String(), "error", reason)
	if err := o.exec(ctx, `UPDATE alert_deliveries SET next_at = ?2, last_status = ?3, last_error = ?4 WHERE seq = ?1 AND state = 'pending'`,
		d.seq, t+wait.Milliseconds(), nullStatus(status), reason); err != nil {
		deliverErr = errors.Join(deliverErr, err)
	}
	return retrying, deliverErr
}

// disable marks ch disabled after its receiver answered 410 Gone: its
// pending deliveries fail, and the other channels get channel.disabled;
// all in one batch.
func (o *Outbox) disable(ctx context.Context, ch Channel, d claimed, ev Event, now time.Time) error {
	t := now.UnixMilli()
	reason := fmt.Sprintf("the receiver answered 410 Gone to %s %s", ev.Type, ev.ID)
	o.Log.ErrorContext(ctx, "alert: channel disabled", "channel", ch.Name, "event_id", ev.ID)
	notice := Keyed{Event: Event{ID: EventID("channel.disabled", ch.Name, fmt.Sprint(t)), Type: ChannelDisabled,
		Timestamp: Timestamp(now), Severity: severityError, DedupKey: DedupKey("channel:" + ch.Name),
		Summary: fmt.Sprintf("DISABLED alert channel %s: %s; enable it again with POST /admin/alerts/channels/%s/enable", ch.Name, reason, ch.Name),
		Data:    map[string]any{"channel": ch.Name, "reason": reason}}}
	stmts := []sqlbatch.Stmt{
		{SQL: `INSERT INTO alert_channels(name, disabled_at, reason) VALUES (?1, ?2, ?3)
			ON CONFLICT(name) DO UPDATE SET disabled_at = excluded.disabled_at, reason = excluded.reason`, Args: []any{ch.Name, t, reason}},
		{SQL: `UPDATE alert_deliveries SET state = 'failed', done_at = ?2, last_status = 410, last_error = ?3
			WHERE channel = ?1 AND state = 'pending'`, Args: []any{ch.Name, t, "channel disabled: " + reason}},
	}
	rec, err := o.Record([]Keyed{notice}, now, "1")
	if err != nil {
		return err
	}
	if _, err := o.Batch.Batch(ctx, append(stmts, rec...)...); err != nil {
		return fmt.Errorf("disable channel %s: %w", ch.Name, err)
	}
	return fmt.Errorf("deliver %s to %s: 410 Gone: channel disabled", ev.Type, ch.Name)
}

// Enable enables a channel disabled by a 410 again (its failed deliveries stay failed).
func (o *Outbox) Enable(ctx context.Context, name string) (bool, error) {
	res, err := o.DB.ExecContext(ctx, `DELETE FROM alert_channels WHERE name = ?`, name)
	if err != nil {
		return false, fmt.Errorf("enable channel: %w", err)
	}
	n, _ := res.RowsAffected()
	return n > 0, nil
}

func (o *Outbox) channel(name string) (Channel, bool) {
	for _, c := range o.Channels {
		if c.Name == name {
			return c, true
		}
	}
	return Channel{}, false
}

func (o *Outbox) exec(ctx context.Context, q string, args ...any) error {
	if _, err := o.DB.ExecContext(ctx, q, args...); err != nil {
		return fmt.Errorf("delivery: %w", err)
	}
	return nil
}

func (o *Outbox) jitter() float64 {
	if o.Jitter != nil {
		return o.Jitter()
	}
	return rand.Float64()
}

func nullStatus(s int) any {
	if s == 0 {
		return nil
	}
	return int64(s)
}

// Timestamp is an event's time: RFC 3339 UTC with milliseconds.
func Timestamp(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z07:00") }

// eventRetention bounds how long events and their deliveries are kept;
// pruneBatch bounds the events one run deletes.
const (
	eventRetention = 30 * 24 * time.Hour
	pruneBatch     = 200
)

// Prune deletes events older than 30 days and their deliveries, at most
// pruneBatch a run (oldest first; a delivery still pending is kept with its event).
func (o *Outbox) Prune(ctx context.Context, now time.Time) (int, error) {
	cut := now.Add(-eventRetention).UnixMilli()
	res, err := o.Batch.Batch(ctx,
		sqlbatch.Stmt{SQL: `DELETE FROM alert_deliveries WHERE state <> 'pending' AND event_id IN (SELECT id FROM alert_events
			WHERE created_at < ?1 ORDER BY created_at LIMIT ?2)`, Args: []any{cut, int64(pruneBatch)}},
		sqlbatch.Stmt{SQL: `DELETE FROM alert_events WHERE id IN (SELECT id FROM alert_events WHERE created_at < ?1
			ORDER BY created_at LIMIT ?2) AND NOT EXISTS (SELECT 1 FROM alert_deliveries WHERE event_id = alert_events.id)
			RETURNING id`, Args: []any{cut, int64(pruneBatch)}})
	if err != nil {
		return 0, fmt.Errorf("prune events: %w", err)
	}
	var ids []json.RawMessage
	_ = json.Unmarshal(res[1], &ids)
	return len(ids), nil
}
