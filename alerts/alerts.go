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

// Notifier delivers one alert message, e.g. to ALERT_WEBHOOK_URL (see
// alerts.Webhook, which posts WebhookPayload(text)).
type Notifier interface {
	Notify(ctx context.Context, text string) error
}

// WebhookPayload is the Slack-compatible JSON body for text: {"text": ...},
// with &, < and > escaped as Slack requires.
func WebhookPayload(text string) []byte {
	esc := strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(text)
	b, _ := json.Marshal(map[string]string{"text": esc})
	return b
}

// Alerts checks its conditions and notifies once when one starts firing,
// once when it resolves, and again every Reminder while it keeps firing.
// The state lives in D1 (alert_state) and every transition is claimed by one
// conditional statement, so overlapping runs never notify twice. When the
// notification fails, the claim is undone (the next run tries again) and the
// run fails. Every transition is logged, with or without a Notifier.
type Engine struct {
	DB  *sql.DB
	Log *slog.Logger
	// Conditions are checked in order on every run.
	Conditions []Condition
	// Notifier receives the messages; nil means they are only logged.
	Notifier Notifier
	// Reminder is ALERT_REMINDER_MINUTES.
	Reminder time.Duration
	// Announcers are checked after the conditions: each new item is
	// announced once (announce.go).
	Announcers []Announcer
}

// Name implements jobs.Job.
func (a *Engine) Name() string { return JobName }

type alertState struct {
	firing                          bool
	since, lastNotified, resolvedAt sql.NullInt64
}

// Run checks every condition at now and makes the transitions due.
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
		sent, err := a.transition(ctx, name, on, detail, states[name], now)
		if sent {
			notified++
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("alert %s: %w", name, err))
		}
	}
	sent, aerrs := a.announce(ctx, now)
	errs = append(errs, aerrs...)
	return map[string]any{"firing": firing, "notified": notified, "announced": sent}, errors.Join(errs...)
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

// transition claims and sends the notification due for one condition, if
// any. sent reports that a message was delivered (or logged, without a Notifier).
func (a *Engine) transition(ctx context.Context, name string, on bool, detail string, st alertState, now time.Time) (sent bool, err error) {
	t := now.UnixMilli()
	switch {
	case on && !st.firing:
		claimed, err := a.claim(ctx, `INSERT INTO alert_state(name, firing, since, last_notified_at, detail, notifications, updated_at)
			VALUES (?, 1, ?, ?, ?, 1, ?)
			ON CONFLICT(name) DO UPDATE SET firing = 1, since = excluded.since, last_notified_at = excluded.last_notified_at,
				detail = excluded.detail, notifications = notifications + 1, updated_at = excluded.updated_at
			WHERE alert_state.firing = 0
			RETURNING name`, name, t, t, detail, t)
		if err != nil || !claimed {
			return false, err
		}
		a.Log.WarnContext(ctx, "alert: firing", "alert", name, "detail", detail)
		return a.send(ctx, name, fmt.Sprintf("[redrive] FIRING %s: %s", name, detail), `UPDATE alert_state
			SET firing = 0, since = NULL, last_notified_at = ?, notifications = notifications - 1, updated_at = ?
			WHERE name = ? AND firing = 1 AND since = ? AND last_notified_at = ?`, st.lastNotified, t, name, t, t)

	case on && st.firing:
		if st.lastNotified.Valid && t-st.lastNotified.Int64 < a.Reminder.Milliseconds() {
			return false, nil
		}
		claimed, err := a.claim(ctx, `UPDATE alert_state SET last_notified_at = ?, detail = ?, notifications = notifications + 1, updated_at = ?
			WHERE name = ? AND firing = 1 AND last_notified_at IS ? AND COALESCE(last_notified_at, 0) <= ?
			RETURNING name`, t, detail, t, name, st.lastNotified, t-a.Reminder.Milliseconds())
		if err != nil || !claimed {
			return false, err
		}
		a.Log.WarnContext(ctx, "alert: still firing", "alert", name, "since", st.since.Int64, "detail", detail)
		return a.send(ctx, name, fmt.Sprintf("[redrive] STILL FIRING %s (since %s, %s): %s", name,
			Stamp(st.since.Int64), ago(t, st.since.Int64), detail), `UPDATE alert_state
			SET last_notified_at = ?, notifications = notifications - 1, updated_at = ?
			WHERE name = ? AND firing = 1 AND last_notified_at = ?`, st.lastNotified, t, name, t)

	case !on && st.firing:
		claimed, err := a.claim(ctx, `UPDATE alert_state SET firing = 0, since = NULL, resolved_at = ?, detail = ?,
				notifications = notifications + 1, updated_at = ?
			WHERE name = ? AND firing = 1 AND since IS ?
			RETURNING name`, t, detail, t, name, st.since)
		if err != nil || !claimed {
			return false, err
		}
		a.Log.InfoContext(ctx, "alert: resolved", "alert", name, "since", st.since.Int64, "detail", detail)
		return a.send(ctx, name, fmt.Sprintf("[redrive] RESOLVED %s after %s: %s", name, ago(t, st.since.Int64), detail), `UPDATE alert_state
			SET firing = 1, since = ?, resolved_at = ?, notifications = notifications - 1, updated_at = ?
			WHERE name = ? AND firing = 0 AND resolved_at = ?`, st.since, st.resolvedAt, t, name, t)
	}
	return false, nil
}

// claim runs one conditional statement and reports whether it changed the
// row (RETURNING produced it): only the run that changed it notifies.
func (a *Engine) claim(ctx context.Context, query string, args ...any) (bool, error) {
	rows, err := a.DB.QueryContext(ctx, query, args...)
	if err != nil {
		return false, fmt.Errorf("claim: %w", err)
	}
	defer rows.Close()
	claimed := rows.Next()
	if err := rows.Err(); err != nil {
		return false, fmt.Errorf("claim: %w", err)
	}
	return claimed, nil
}

// send notifies; on failure it undoes the claim with the given conditional
// statement so that the next run tries again, and returns the error.
func (a *Engine) send(ctx context.Context, name, text, undo string, undoArgs ...any) (bool, error) {
	if a.Notifier == nil {
		return true, nil
	}
	err := a.Notifier.Notify(ctx, text)
	if err == nil {
		return true, nil
	}
	a.Log.ErrorContext(ctx, "alert: notification failed; the next run retries", "alert", name, "error", err.Error())
	if _, uerr := a.DB.ExecContext(ctx, undo, undoArgs...); uerr != nil {
		a.Log.ErrorContext(ctx, "alert: could not undo the claim", "alert", name, "error", uerr.Error())
		err = errors.Join(err, fmt.Errorf("undo claim: %w", uerr))
	}
	return false, fmt.Errorf("notify: %w", err)
}

// Stamp formats epoch milliseconds as RFC 3339 UTC, for alert details.
func Stamp(ms int64) string { return time.UnixMilli(ms).UTC().Format(time.RFC3339) }

func ago(now, then int64) string {
	return (time.Duration(now-then) * time.Millisecond).Round(time.Second).String()
}
