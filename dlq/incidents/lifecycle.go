package incidents

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/redrive/redrive/alerts"
	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/sqlbatch"
)

// Lifecycle is the alerts job's part of the groups of one database (an
// alerts.Source). On each run it:
//   - opens the groups first seen since (not announced yet): group.opened;
//   - reopens resolved groups that failed after their resolution:
//     group.reopened, a new occurrence;
//   - resolves open and acknowledged groups with no pending or replaying
//     row and no failure for AutoResolve: group.resolved;
//   - opens snoozed groups whose snooze ended (no event).
//
// Each step reads its groups through a partial index that holds only the
// groups in that state (at most stepLimit a run), whatever the backlog. A
// change and its events are committed together (alerts.Outbox.Commit): an
// event's id is fixed by the group and its occurrence.
type Lifecycle struct {
	DB    *sql.DB
	Batch sqlbatch.Runner
	// Database is the binding (dlq.JobName names the source).
	Database  string
	Pipelines dlq.Pipelines
	// AutoResolve is GROUP_AUTO_RESOLVE_MINUTES.
	AutoResolve time.Duration
}

// stepLimit bounds the groups one step changes per run.
const stepLimit = 20

// Name implements alerts.Source.
func (l Lifecycle) Name() string { return dlq.JobName("group_lifecycle", l.Database) }

// step is one of the lifecycle's changes: the groups it reads, the event
// type it tells (none: ""), and its change of a JSON list of [signature,
// incident_seq] pairs (?1) at ?2, guarded by the state it read.
type step struct {
	name, read, typ, change string
	args                    func(now time.Time) []any
	// next is the occurrence the event tells: the group's, or one more.
	next int64
}

func (l Lifecycle) steps() []step {
	return []step{
		{name: "opened", typ: alerts.GroupOpened,
			read: `FROM dlq_signatures WHERE announced_at IS NULL ORDER BY first_seen LIMIT ?1`,
			change: `UPDATE dlq_signatures SET announced_at = ?2, announce_claimed_at = NULL, incident_at = COALESCE(incident_at, ?2)
				WHERE (signature, incident_seq) IN (SELECT value ->> 0, value ->> 1 FROM json_each(?1)) AND announced_at IS NULL`},
		{name: "reopened", typ: alerts.GroupReopened, next: 1,
			read: `FROM dlq_signatures WHERE incident = 'resolved' AND last_seen > resolved_at LIMIT ?1`,
			change: `UPDATE dlq_signatures SET incident = 'open', incident_seq = incident_seq + 1, incident_at = ?2, owner = NULL, note = NULL
				WHERE (signature, incident_seq) IN (SELECT value ->> 0, value ->> 1 FROM json_each(?1))
					AND incident = 'resolved' AND last_seen > resolved_at`},
		{name: "resolved", typ: alerts.GroupResolved,
			read: `FROM dlq_signatures WHERE incident IN ('open', 'acknowledged') AND pending = 0 AND replaying = 0
				AND announced_at IS NOT NULL AND last_seen <= ?2 ORDER BY last_seen LIMIT ?1`,
			change: `UPDATE dlq_signatures SET incident = 'resolved', resolved_at = ?2, incident_at = ?2, snoozed_until = NULL
				WHERE (signature, incident_seq) IN (SELECT value ->> 0, value ->> 1 FROM json_each(?1))
					AND incident IN ('open', 'acknowledged') AND pending = 0 AND replaying = 0 AND announced_at IS NOT NULL AND last_seen <= ?3`,
			args: func(now time.Time) []any { return []any{now.Add(-l.AutoResolve).UnixMilli()} }},
		{name: "unsnoozed",
			read: `FROM dlq_signatures WHERE incident = 'snoozed' AND snoozed_until <= ?2 ORDER BY snoozed_until LIMIT ?1`,
			change: `UPDATE dlq_signatures SET incident = 'open', incident_at = ?2, snoozed_until = NULL
				WHERE (signature, incident_seq) IN (SELECT value ->> 0, value ->> 1 FROM json_each(?1))
					AND incident = 'snoozed' AND snoozed_until <= ?2`},
	}
}

// Emit implements alerts.Source.
func (l Lifecycle) Emit(ctx context.Context, o *alerts.Outbox, now time.Time) (int, error) {
	total := 0
	var errs []error
	for _, s := range l.steps() {
		n, err := l.run(ctx, o, s, now)
		total += n
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", s.name, err))
		}
	}
	return total, errors.Join(errs...)
}

func (l Lifecycle) run(ctx context.Context, o *alerts.Outbox, s step, now time.Time) (int, error) {
	t := now.UnixMilli()
	gs, err := l.read(ctx, s.read, l.readArgs(s.name, now))
	if err != nil {
		return 0, err
	}
	if len(gs) == 0 {
		return 0, nil
	}
	pairs := make([][2]any, 0, len(gs))
	var evs []alerts.Keyed
	ts := alerts.Timestamp(now)
	for _, g := range gs {
		pairs = append(pairs, [2]any{g.Signature, g.Seq})
		if s.typ == "" {
			continue
		}
		summary := ""
		if s.typ == alerts.GroupOpened {
			summary = openedSummary(g, l.Pipelines, l.Database)
		}
		if s.typ == alerts.GroupResolved {
			g.Pending = 0
		}
		evs = append(evs, event(g, s.typ, g.Seq+s.next, ts, l.Pipelines, summary))
	}
	js, _ := json.Marshal(pairs) // strings and integers always marshal
	args := []any{string(js), t}
	if s.args != nil {
		args = append(args, s.args(now)...)
	}
	change := sqlbatch.Stmt{SQL: s.change, Args: args}
	if _, err := o.Commit(ctx, l.Database, l.Batch, []sqlbatch.Stmt{change}, evs, now, changedNow); err != nil {
		return 0, fmt.Errorf("change groups: %w", err)
	}
	return len(evs), nil
}

// changedNow is the guard of a group's event (alerts.Outbox.Record): the
// change of this run (?2, its time) reached the group, whose incident_at
// or announced_at it set.
const changedNow = `EXISTS (SELECT 1 FROM dlq_signatures s WHERE s.signature = j.value ->> 'key' AND ?2 IN (s.incident_at, s.announced_at))`

// readArgs are a step's read parameters: D1 refuses one the statement does
// not use, and opened and reopened read with ?1 alone.
func (l Lifecycle) readArgs(step string, now time.Time) []any {
	switch step {
	case "resolved":
		return []any{int64(stepLimit), now.Add(-l.AutoResolve).UnixMilli()}
	case "unsnoozed":
		return []any{int64(stepLimit), now.UnixMilli()}
	}
	return []any{int64(stepLimit)}
}

// read reads the groups of a step (at most stepLimit).
func (l Lifecycle) read(ctx context.Context, from string, args []any) ([]group, error) {
	rows, err := l.DB.QueryContext(ctx, `SELECT `+groupColumns+` `+from, args...)
	if err != nil {
		return nil, fmt.Errorf("read groups: %w", err)
	}
	defer rows.Close()
	var gs []group
	for rows.Next() {
		var g group
		if err := rows.Scan(&g.Signature, &g.Class, &g.Text, &g.Queue, &g.Incident, &g.Seq, &g.Pending, &g.Total, &g.Samples,
			&g.Owner, &g.Note); err != nil {
			return nil, fmt.Errorf("read groups: %w", err)
		}
		gs = append(gs, g)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read groups: %w", err)
	}
	return gs, nil
}

func jsonUnmarshal(s string, v any) error { return json.Unmarshal([]byte(s), v) }
