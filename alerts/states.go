package alerts

import (
	"context"
	"database/sql"
	"fmt"
)

// AlertStates reads alert_state for GET /admin/alerts: one row per alert
// condition the alerts job has checked (a handful, fixed by the code, not
// by the backlog; at most maxAlertStates are read).
type AlertStates struct {
	DB *sql.DB
}

const maxAlertStates = 100

// AlertState is one alert's state (handlers/openapi.json).
type AlertState struct {
	Name   string `json:"name"`
	Firing bool   `json:"firing"`
	// Since is when it started firing (null when resolved).
	Since *int64 `json:"since"`
	// LastNotifiedAt is the last start or reminder notification.
	LastNotifiedAt *int64 `json:"last_notified_at"`
	// ResolvedAt is when it last resolved.
	ResolvedAt *int64 `json:"resolved_at"`
	// Detail is what the condition reported last (no payloads, no secrets).
	Detail        *string `json:"detail"`
	Notifications int64   `json:"notifications"`
	UpdatedAt     int64   `json:"updated_at"`
}

// AlertList is the alerts response.
type AlertList struct {
	// Alerts are firing ones first, then by name.
	Alerts []AlertState `json:"alerts"`
	// FiringCount counts the firing ones.
	FiringCount int `json:"firing_count"`
}

// List returns every alert's state.
func (a AlertStates) List(ctx context.Context) (AlertList, error) {
	rows, err := a.DB.QueryContext(ctx, `SELECT name, firing, since, last_notified_at, resolved_at, detail, notifications, updated_at
		FROM alert_state ORDER BY firing DESC, name LIMIT ?`, int64(maxAlertStates))
	if err != nil {
		return AlertList{}, fmt.Errorf("alert states: %w", err)
	}
	defer rows.Close()
	out := AlertList{Alerts: []AlertState{}}
	for rows.Next() {
		var s AlertState
		if err := rows.Scan(&s.Name, &s.Firing, &s.Since, &s.LastNotifiedAt, &s.ResolvedAt, &s.Detail, &s.Notifications, &s.UpdatedAt); err != nil {
			return AlertList{}, fmt.Errorf("alert states scan: %w", err)
		}
		if s.Firing {
			out.FiringCount++
		}
		out.Alerts = append(out.Alerts, s)
	}
	if err := rows.Err(); err != nil {
		return AlertList{}, fmt.Errorf("alert states: %w", err)
	}
	return out, nil
}
