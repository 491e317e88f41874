package alerts

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Announcer is a source of one-off alerts: each of its items (a new
// failure signature, ...) is announced once, not fired and resolved like a
// Condition. Its state must be durable (D1). An item is claimed for a
// while (a lease) before it is sent and marked announced only after it was
// sent, so a run that dies in between loses nothing (a later run claims it
// again once the claim lapsed: at least once, never lost); Claim must be one
// conditional statement so that overlapping runs never claim an item twice.
type Announcer interface {
	// Name is the alert name (logs, the message, alert_state).
	Name() string
	// Claim takes the items not announced yet and not claimed by a run
	// still within its lease (a bounded number) and returns them.
	Claim(ctx context.Context, now time.Time) ([]Announcement, error)
	// Done marks an item claimed at now as announced (it was sent).
	Done(ctx context.Context, key string, now time.Time) error
	// Release gives back the claims at now of items that were not sent
	// (the notification failed), so the next run announces them.
	Release(ctx context.Context, keys []string, now time.Time) error
}

// Announcement is one item to announce.
type Announcement struct {
	// Key identifies the item for Done and Release.
	Key string
	// Detail is the one-line text (no secrets, no payloads).
	Detail string
}

// announce claims and sends each Announcer's new items: "[redrive] NEW
// <name>: <detail>" once per item. The latest is kept in alert_state (not
// firing: an announcement does not resolve) so GET /admin/alerts shows it.
// When the webhook fails, the run sends nothing more: it gives back the
// claims of the item and of the rest (the next run tries again) and claims
// nothing from the other announcers.
func (a *Engine) announce(ctx context.Context, now time.Time) (sent int, errs []error) {
	down := false
	for _, an := range a.Announcers {
		if down {
			break
		}
		name := an.Name()
		items, err := an.Claim(ctx, now)
		if err != nil {
			a.Log.ErrorContext(ctx, "alert: announcement claim failed", "alert", name, "error", err.Error())
			errs = append(errs, fmt.Errorf("alert %s: claim: %w", name, err))
			continue
		}
		for i, it := range items {
			if a.Notifier != nil {
				if err := a.Notifier.Notify(ctx, fmt.Sprintf("[redrive] NEW %s: %s", name, it.Detail)); err != nil {
					down = true
					var keys []string
					for _, rest := range items[i:] {
						keys = append(keys, rest.Key)
					}
					a.Log.ErrorContext(ctx, "alert: notification failed; the next run retries", "alert", name, "key", it.Key,
						"unsent", len(keys), "error", err.Error())
					if rerr := an.Release(ctx, keys, now); rerr != nil {
						err = errors.Join(err, fmt.Errorf("release: %w", rerr))
					}
					errs = append(errs, fmt.Errorf("alert %s: notify: %w", name, err))
					break
				}
			}
			a.Log.WarnContext(ctx, "alert: announced", "alert", name, "key", it.Key, "detail", it.Detail)
			sent++
			if err := an.Done(ctx, it.Key, now); err != nil {
				// Sent but not marked: a later run sends it again once the claim lapsed.
				a.Log.ErrorContext(ctx, "alert: could not mark the announcement sent", "alert", name, "key", it.Key, "error", err.Error())
				errs = append(errs, fmt.Errorf("alert %s: done: %w", name, err))
			}
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
