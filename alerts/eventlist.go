package alerts

import (
	"context"
	"encoding/json"
	"fmt"
)

// Delivery is one event's delivery to one channel (GET /admin/alerts/events).
type Delivery struct {
	Channel string `json:"channel"`
	// State is pending, sent, failed or skipped.
	State    string `json:"state"`
	Attempts int64  `json:"attempts"`
	// NextAt is when a pending delivery is tried next (epoch ms).
	NextAt     int64   `json:"next_at"`
	LastStatus *int64  `json:"last_status"`
	LastError  *string `json:"last_error"`
	DoneAt     *int64  `json:"done_at"`
}

// ListedEvent is a recorded event and its deliveries.
type ListedEvent struct {
	Event      Event      `json:"event"`
	CreatedAt  int64      `json:"created_at"`
	Deliveries []Delivery `json:"deliveries"`
}

// ChannelState is a configured channel as the API shows it: never its URL
// or its secret.
type ChannelState struct {
	Name        string   `json:"name"`
	Type        string   `json:"type"`
	Events      []string `json:"events"`
	Pipelines   []string `json:"pipelines"`
	MinSeverity string   `json:"min_severity"`
	// DisabledAt is when a 410 disabled it (null: enabled), Reason why.
	DisabledAt *int64  `json:"disabled_at"`
	Reason     *string `json:"reason"`
}

// EventList is GET /admin/alerts/events: the newest events, the
// channels, and the deliveries that failed for good.
type EventList struct {
	Events   []ListedEvent  `json:"events"`
	Channels []ChannelState `json:"channels"`
	// Failed counts the deliveries whose last attempt failed, up to 1,000
	// (alert_deliveries_failed_total in GET /admin/metrics counts them all).
	Failed int64 `json:"failed"`
}

// failedCountMax bounds the count of failed deliveries a list reads.
const failedCountMax = 1000

// List returns the newest limit events (only those with a failed
// delivery when failed), each with its deliveries, and the channels.
// Reads at most limit events, their deliveries (one per channel),
// 1,000 entries of idx_alert_deliveries_failed and the channel rows.
func (o *Outbox) List(ctx context.Context, limit int, failed bool) (EventList, error) {
	out := EventList{Events: []ListedEvent{}, Channels: []ChannelState{}}
	q := `SELECT e.created_at, e.body, (SELECT json_group_array(json_array(d.channel, d.state, d.attempts, d.next_at, d.last_status,
			d.last_error, d.done_at)) FROM alert_deliveries d WHERE d.event_id = e.id)
		FROM alert_events e ORDER BY e.created_at DESC, e.id LIMIT ?`
	if failed {
		q = `SELECT e.created_at, e.body, (SELECT json_group_array(json_array(d.channel, d.state, d.attempts, d.next_at, d.last_status,
				d.last_error, d.done_at)) FROM alert_deliveries d WHERE d.event_id = e.id)
			FROM alert_events e WHERE e.id IN (SELECT event_id FROM alert_deliveries WHERE state = 'failed' ORDER BY done_at DESC LIMIT ?1)
			ORDER BY e.created_at DESC, e.id LIMIT ?1`
	}
	rows, err := o.DB.QueryContext(ctx, q, int64(limit))
	if err != nil {
		return out, fmt.Errorf("alert events: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var le ListedEvent
		var body, ds string
		if err := rows.Scan(&le.CreatedAt, &body, &ds); err != nil {
			return out, fmt.Errorf("alert events: %w", err)
		}
		if err := json.Unmarshal([]byte(body), &le.Event); err != nil {
			return out, fmt.Errorf("alert event body: %w", err)
		}
		le.Deliveries = deliveriesOf(ds)
		out.Events = append(out.Events, le)
	}
	if err := rows.Err(); err != nil {
		return out, fmt.Errorf("alert events: %w", err)
	}
	if err := o.DB.QueryRowContext(ctx, `SELECT COUNT(*) FROM (SELECT 1 FROM alert_deliveries WHERE state = 'failed' LIMIT ?)`,
		int64(failedCountMax)).Scan(&out.Failed); err != nil {
		return out, fmt.Errorf("failed deliveries: %w", err)
	}
	out.Channels, err = o.channelStates(ctx)
	return out, err
}

// deliveriesOf decodes the JSON array of [channel, state, attempts,
// next_at, last_status, last_error, done_at] rows (numbers may be REAL).
func deliveriesOf(ds string) []Delivery {
	var raw [][7]any
	_ = json.Unmarshal([]byte(ds), &raw)
	out := []Delivery{}
	for _, r := range raw {
		d := Delivery{}
		d.Channel, _ = r[0].(string)
		d.State, _ = r[1].(string)
		d.Attempts, d.NextAt = num(r[2]), num(r[3])
		if r[4] != nil {
			v := num(r[4])
			d.LastStatus = &v
		}
		if s, ok := r[5].(string); ok {
			d.LastError = &s
		}
		if r[6] != nil {
			v := num(r[6])
			d.DoneAt = &v
		}
		out = append(out, d)
	}
	return out
}

func num(v any) int64 {
	f, _ := v.(float64)
	return int64(f)
}

func (o *Outbox) channelStates(ctx context.Context) ([]ChannelState, error) {
	disabled := map[string][2]any{}
	rows, err := o.DB.QueryContext(ctx, `SELECT name, disabled_at, reason FROM alert_channels WHERE disabled_at IS NOT NULL LIMIT 100`)
	if err != nil {
		return nil, fmt.Errorf("alert channels: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var name, reason string
		var at int64
		if err := rows.Scan(&name, &at, &reason); err != nil {
			return nil, fmt.Errorf("alert channels: %w", err)
		}
		disabled[name] = [2]any{at, reason}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("alert channels: %w", err)
	}
	out := []ChannelState{}
	for _, c := range o.Channels {
		s := ChannelState{Name: c.Name, Type: c.Type, Events: nonNil(c.Events), Pipelines: nonNil(c.Pipelines), MinSeverity: c.MinSeverity}
		if d, ok := disabled[c.Name]; ok {
			at, reason := d[0].(int64), d[1].(string)
			s.DisabledAt, s.Reason = &at, &reason
		}
		out = append(out, s)
	}
	return out, nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
