package alerts

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Announcer is a source of one-off alerts: each of its items (a new
// failure signature, ...) is announced once, not fired and resolved like a
// Condition. Its state must be durable (D1), and Claim must be one
// conditional statement so that overlapping runs never announce twice.
type Announcer interface {
	// Name is the alert name (logs, the message, alert_state).
	Name() string
	// Claim marks the items not announced yet (a bounded number) as
	// announced at now and returns them.
	Claim(ctx context.Context, now time.Time) ([]Announcement, error)
	// Release undoes the claim of an item whose notification failed, so the
	// next run announces it again.
	Release(ctx context.Context, key string, now time.Time) error
}

// Announcement is one item to announce.
type Announcement struct {
	// Key identifies the item for Release.
	Key string
	// Detail is the one-line text (no secrets, no payloads).
	Detail string
}

// announce claims and sends each Announcer's new items: "[redrive] NEW
// <name>: <detail>" once per item. The latest is kept in alert_state (not
// firing: an announcement does not resolve) so GET /admin/alerts shows it.
func (a *Engine) announce(ctx context.Context, now time.Time) (sent int, errs []error) {
	for _, an := range a.Announcers {
		name := an.Name()
		items, err := an.Claim(ctx, now)
		if err != nil {
			a.Log.ErrorContext(ctx, "alert: announcement claim failed", "alert", name, "error", err.Error())
			errs = append(errs, fmt.Errorf("alert %s: claim: %w", name, err))
			continue
		}
		for _, it := range items {
			a.Log.WarnContext(ctx, "alert: announced", "alert", name, "key", it.Key, "detail", it.Detail)
			if a.Notifier != nil {
				if err := a.Notifier.Notify(ctx, fmt.Sprintf("[redrive] NEW %s: %s", name, it.Detail)); err != nil {
					a.Log.ErrorContext(ctx, "alert: notification failed; the next run retries", "alert", name, "key", it.Key, "error", err.Error())
					if rerr := an.Release(ctx, it.Key, now); rerr != nil {
						err = errors.Join(err, fmt.Errorf("release: %w", rerr))
					}
					errs = append(errs, fmt.Errorf("alert %s: notify: %w", name, err))
					continue
				}
			}
			sent++
			t := now.UnixMilli()
			if _, err := a.DB.ExecContext(ctx, `INSERT INTO alert_state(name, firing, last_notified_at, detail, notifications, updated_at)
				VALUES (?, 0, ?, ?, 1, ?)
				ON CONFLICT(name) DO UPDATE SET last_notified_at = excluded.last_notified_at, detail = excluded.detail,
					notifications = notifications + 1, updated_at = excluded.updated_at`, name, t, it.Detail, t); err != nil {
				a.Log.WarnContext(ctx, "alert: could not record the announcement", "alert", name, "error", err.Error())
			}
		}
	}
	return sent, errs
}
