// Package alerts is redrive's alerting: conditions checked by a scheduled job,
// state in D1 (alert_state) so each transition is notified once, and the
// webhook that carries the notifications. Each domain keeps its own
// conditions (dlq, enrichment); the job failure condition lives here.
package alerts

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/redrive/redrive/sqlbatch"
)

// JobName is the name the alerts job records its runs under.
const JobName = "alerts"

// Condition is one alert condition, checked on every run of the alerts job.
// Conditions are pluggable: anything that can tell whether it holds (a D1
// query, a breaker's state) can be one.
type Condition interface {
	// Name is the stable alert name: the alert_state key and the metrics label.
	Name() string
	// Check reports whether the condition holds at now, with a one-line
	// detail for humans (no secrets, no payloads). An error leaves the
	// alert's state as it was (it neither starts nor resolves).
	Check(ctx context.Context, now time.Time) (firing bool, detail string, err error)
}

// WebhookPayload is the Slack-compatible JSON body for text: {"text": ...},
// with &, < and > escaped as Slack requires.
func WebhookPayload(text string) []byte {
	esc := strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(text)
	b, _ := json.Marshal(map[string]string{"text": esc})
	return b
}

// Kind says which events a condition's transitions are; a Condition that
// implements Described has its own, the others are alert.firing and
// alert.resolved at severity error.
type Kind struct {
	// Fire and Resolve are the event types of its start and its end.
	Fire, Resolve string
	// Pipeline is the pipeline it concerns ("" for none).
	Pipeline string
	// Severity is its events' severity.
	Severity string
}

// Described is a Condition that names its events.
type Described interface {
	Kind() Kind
}

func kindOf(c Condition) Kind {
	if d, ok := c.(Described); ok {
		return d.Kind()
	}
	return Kind{Fire: AlertFiring, Resolve: AlertResolved, Severity: severityError}
}

// Source writes events of its own through the outbox, each in the batch of
// the change it tells (the failure groups' lifecycle: dlq/upkeep).
type Source interface {
	Name() string
	// Emit makes the changes due at now and records their events; it
	// returns how many events it recorded.
	Emit(ctx context.Context, o *Outbox, now time.Time) (int, error)
}

// Engine checks its conditions and records an event once when one starts
// firing, once when it resolves, and again every Reminder while it keeps
// firing; then runs its Sources, delivers the due events (Outbox.Deliver)
// and prunes old ones. The state lives in D1 (alert_state); each
// transition is one conditional statement, in one batch with its event
// (Outbox.Record), so overlapping runs never record it twice and an event
// is never lost to a failed delivery: the outbox retries it.
type Engine struct {
	DB  *sql.DB
	Log *slog.Logger
	// Conditions are checked in order on every run.
	Conditions []Condition
	// Outbox records and delivers the events.
	Outbox *Outbox
	// Reminder is ALERT_REMINDER_MINUTES.
	Reminder time.Duration
	// Sources run after the conditions.
	Sources []Source
}

// Name implements jobs.Job.
func (a *Engine) Name() string { return JobName }

type alertState struct {
	firing                          bool
	since, lastNotified, resolvedAt sql.NullInt64
}

// Run checks every condition at now, records the transitions due, runs
// the sources and delivers what is due.
func (a *Engine) Run(ctx context.Context, now time.Time) (map[string]any, error) {
	if a.Reminder <= 0 {
		return nil, errors.New("alerts: Reminder must be positive")
	}
	states, err := a.states(ctx)
	if err != nil {
		return nil, err
	}
	firing, notified := []string{}, 0
	var errs []error
	for _, c := range a.Conditions {
		name := c.Name()
		on, detail, err := c.Check(ctx, now)
		if err != nil {
			a.Log.ErrorContext(ctx, "alert: check failed", "alert", name, "error", err.Error())
			errs = append(errs, fmt.Errorf("alert %s: check: %w", name, err))
			continue
		}
		if on {
			firing = append(firing, name)
		}
		sent, err := a.transition(ctx, c, on, detail, states[name], now)
		if sent {
			notified++
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("alert %s: %w", name, err))
		}
	}
	announced := 0
	for _, s := range a.Sources {
		n, err := s.Emit(ctx, a.Outbox, now)
		announced += n
		if err != nil {
			a.Log.ErrorContext(ctx, "alert: source failed", "source", s.Name(), "error", err.Error())
			errs = append(errs, fmt.Errorf("alert %s: %w", s.Name(), err))
		}
	}
	rep, err := a.Outbox.Deliver(ctx, now)
	if err != nil {
		errs = append(errs, err)
	}
	pruned, err := a.Outbox.Prune(ctx, now)
	if err != nil {
		errs = append(errs, err)
	}
	return map[string]any{"firing": firing, "notified": notified, "announced": announced, "delivered": rep.Sent,
		"retrying": rep.Retrying, "failed": rep.Failed, "skipped": rep.Skipped, "disabled": rep.Disabled, "pruned": pruned}, errors.Join(errs...)
}

func (a *Engine) states(ctx context.Context) (map[string]alertState, error) {
	rows, err := a.DB.QueryContext(ctx, `SELECT name, firing, since, last_notified_at, resolved_at FROM alert_state`)
	if err != nil {
		return nil, fmt.Errorf("alerts: read state: %w", err)
	}
	defer rows.Close()
	out := map[string]alertState{}
	for rows.Next() {
		var name string
		var s alertState
		if err := rows.Scan(&name, &s.firing, &s.since, &s.lastNotified, &s.resolvedAt); err != nil {
			return nil, fmt.Errorf("alerts: read state: %w", err)
		}
		out[name] = s
	}
	return out, rows.Err()
}

// transition records the transition due for one condition, if any, and
// its event, in one batch. recorded reports that this run made it.
func (a *Engine) transition(ctx context.Context, c Condition, on bool, detail string, st alertState, now time.Time) (recorded bool, err error) {
	name, k, t := c.Name(), kindOf(c), now.UnixMilli()
	p, due := a.plan(name, k, on, detail, st, t)
	if !due {
		return false, nil
	}
	ev := Event{ID: EventID("alert", name, p.occurrence, fmt.Sprint(p.at)), Type: p.typ, Timestamp: Timestamp(now),
		Severity: k.Severity, Pipeline: k.Pipeline, DedupKey: DedupKey("alert:" + name), Summary: p.summary,
		Data: map[string]any{"alert": name, "detail": detail, "since": p.since}}
	rec, err := a.Outbox.Record([]Keyed{{Event: ev}}, now, p.guard, p.guardArgs...)
	if err != nil {
		return false, err
	}
	res, err := a.Outbox.Batch.Batch(ctx, append([]sqlbatch.Stmt{p.claim}, rec...)...)
	if err != nil {
		return false, fmt.Errorf("record transition: %w", err)
	}
	var rows []json.RawMessage
	_ = json.Unmarshal(res[0], &rows)
	if len(rows) == 0 {
		return false, nil
	}
	a.Log.Log(ctx, p.level, p.msg, "alert", name, "since", p.since, "detail", detail, "event_id", ev.ID)
	return true, nil
}

// transitionPlan is a transition's claim (one conditional statement, with
// RETURNING: a row when this run made it), the guard its event is written
// under (the state the claim leaves), and the event's words.
type transitionPlan struct {
	claim      sqlbatch.Stmt
	guard      string
	guardArgs  []any
	typ        string
	occurrence string
	// at fixes the occurrence (the id): the start time, the reminder's time.
	at, since int64
	summary   string
	msg       string
	level     slog.Level
}

// plan is the transition due for condition name at t, if any.
func (a *Engine) plan(name string, k Kind, on bool, detail string, st alertState, t int64) (transitionPlan, bool) {
	switch {
	case on && !st.firing:
		return transitionPlan{claim: sqlbatch.Stmt{SQL: `INSERT INTO alert_state(name, firing, since, last_notified_at, detail, notifications, updated_at)
			VALUES (?, 1, ?, ?, ?, 1, ?)
			ON CONFLICT(name) DO UPDATE SET firing = 1, since = excluded.since, last_notified_at = excluded.last_notified_at,
				detail = excluded.detail, notifications = notifications + 1, updated_at = excluded.updated_at
			WHERE alert_state.firing = 0
			RETURNING name`, Args: []any{name, t, t, detail, t}},
			guard: `EXISTS (SELECT 1 FROM alert_state WHERE name = ? AND firing = 1 AND since = ?)`, guardArgs: []any{name, t},
			typ: k.Fire, occurrence: "firing", at: t, since: t, summary: fmt.Sprintf("FIRING %s: %s", name, detail),
			msg: "alert: firing", level: slog.LevelWarn}, true
	case on && st.firing:
		if st.lastNotified.Valid && t-st.lastNotified.Int64 < a.Reminder.Milliseconds() {
			return transitionPlan{}, false
		}
		return transitionPlan{claim: sqlbatch.Stmt{SQL: `UPDATE alert_state SET last_notified_at = ?, detail = ?, notifications = notifications + 1, updated_at = ?
			WHERE name = ? AND firing = 1 AND last_notified_at IS ? AND COALESCE(last_notified_at, 0) <= ?
			RETURNING name`, Args: []any{t, detail, t, name, nullable(st.lastNotified), t - a.Reminder.Milliseconds()}},
			guard: `EXISTS (SELECT 1 FROM alert_state WHERE name = ? AND firing = 1 AND last_notified_at = ?)`, guardArgs: []any{name, t},
			typ: AlertReminder, occurrence: "reminder", at: t, since: st.since.Int64,
			summary: fmt.Sprintf("STILL FIRING %s (since %s, %s): %s", name, Stamp(st.since.Int64), ago(t, st.since.Int64), detail),
			msg:     "alert: still firing", level: slog.LevelWarn}, true
	case !on && st.firing:
		return transitionPlan{claim: sqlbatch.Stmt{SQL: `UPDATE alert_state SET firing = 0, since = NULL, resolved_at = ?, detail = ?,
				notifications = notifications + 1, updated_at = ?
			WHERE name = ? AND firing = 1 AND since IS ?
			RETURNING name`, Args: []any{t, detail, t, name, nullable(st.since)}},
			guard: `EXISTS (SELECT 1 FROM alert_state WHERE name = ? AND firing = 0 AND resolved_at = ?)`, guardArgs: []any{name, t},
			typ: k.Resolve, occurrence: "resolved", at: st.since.Int64, since: st.since.Int64,
			summary: fmt.Sprintf("RESOLVED %s after %s: %s", name, ago(t, st.since.Int64), detail),
			msg:     "alert: resolved", level: slog.LevelInfo}, true
	}
	return transitionPlan{}, false
}

// nullable is v as a batch argument: its int64, or nil (sqlbatch takes
// int64, float64, string, []byte and nil only).
func nullable(v sql.NullInt64) any {
	if !v.Valid {
		return nil
	}
	return v.Int64
}

// Stamp formats epoch milliseconds as RFC 3339 UTC, for alert details.
func Stamp(ms int64) string { return time.UnixMilli(ms).UTC().Format(time.RFC3339) }

func ago(now, then int64) string {
	return (time.Duration(now-then) * time.Millisecond).Round(time.Second).String()
}
