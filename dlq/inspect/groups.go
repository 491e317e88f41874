package inspect

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/dlq/incidents"
)

// Groups reads GET /admin/dlq/groups: failures grouped by signature, from
// the counts dlq_signatures keeps as rows change (never counted per call).
// A page reads its groups (at most limit + 1 rows of dlq_signatures,
// through idx_dlq_signatures_pending or idx_dlq_signatures_first_seen) and
// nothing else.
//
// What a reader paging through them sees: in the default order (most
// pending rows first) each page is read from the live counts, after the
// last group of the previous page by (pending, signature); a group whose
// pending count did not change between two page requests is listed exactly
// once, but one whose count grew past that position is missed and one whose
// count fell below it is listed again. In SortFirstSeen order (newest group
// first) the key never changes: every group that existed when the first
// page was read is listed exactly once, and groups first seen later are
// not (they are on a new first page).
type Groups struct {
	// DBs are the databases of the groups: a pipeline filter reads its
	// database; without one, more than one database are read and merged
	// (pageMerged).
	DBs     dlq.Databases
	Cursors dlq.Cursors
}

// GroupsParams are the groups route's query parameters.
type GroupsParams struct {
	// Limit is 1..MaxListLimit (DefaultListLimit when 0).
	Limit int
	// Cursor continues a previous page (its next_cursor).
	Cursor string
	// Class keeps groups of one class (transient, permanent, ...).
	Class string
	// Version keeps groups whose versions seen include it.
	Version string
	// Sort is SortPending (also "") or SortFirstSeen.
	Sort string
	// Pipeline keeps the groups of one configured pipeline (a group is one
	// cause in one pipeline's queue, migrations/0030), through
	// idx_dlq_signatures_queue_pending or _queue_first_seen.
	Pipeline string
	// Incident keeps the groups of one status (incidents.Statuses),
	// newest first unless Sort says otherwise, through
	// idx_dlq_signatures_incident.
	Incident string
}

// Orders of the groups page.
const (
	// SortPending: most pending rows first (then by signature), from live counts.
	SortPending = "pending"
	// SortFirstSeen: newest group first (then by signature); stable while paging.
	SortFirstSeen = "first_seen"
)

// GroupCounts are a group's rows per status.
type GroupCounts struct {
	Pending      int64 `json:"pending"`
	Replaying    int64 `json:"replaying"`
	Replayed     int64 `json:"replayed"`
	Acknowledged int64 `json:"acknowledged"`
}

// Group is one failure signature and its rows.
type Group struct {
	// Signature is the group's key: the signature filter of list, replay
	// and acknowledge.
	Signature string `json:"signature"`
	Class     string `json:"class"`
	// SourceQueue is the queue its failures happened on, and Pipeline the
	// configured pipeline of that queue (null: none).
	SourceQueue string  `json:"source_queue"`
	Pipeline    *string `json:"pipeline"`
	// Text is the normalised reason (variable parts as <n>, <id>, <hex>,
	// <uuid>, <q>, <v>).
	Text   string      `json:"text"`
	Counts GroupCounts `json:"counts"`
	// Total is the sum of Counts.
	Total     int64 `json:"total"`
	FirstSeen int64 `json:"first_seen"`
	LastSeen  int64 `json:"last_seen"`
	// Versions are the worker versions its failures happened on, newest first (at most 10).
	Versions []string `json:"versions"`
	// SampleIDs are row ids of its first failures (at most 5; a row may
	// have been deleted by retention since).
	SampleIDs []int64 `json:"sample_ids"`
	// ReplayWillFail: the failures are permanent (or poison): replaying the
	// rows unchanged fails again; fix the cause (or acknowledge them) first.
	ReplayWillFail bool `json:"replay_will_fail"`
	// Advice says so in words (empty when there is nothing to say).
	Advice string `json:"advice,omitempty"`
	// AnnouncedAt is when group.opened was recorded for it (null: not yet).
	AnnouncedAt *int64 `json:"announced_at"`
	// Incident is its lifecycle (dlq/incidents).
	Incident incidents.Incident `json:"incident"`
}

// GroupsPage is the groups route's response: groups by pending rows, most
// first (or newest first: SortFirstSeen).
type GroupsPage struct {
	Groups     []Group `json:"groups"`
	Limit      int     `json:"limit"`
	NextCursor *string `json:"next_cursor"`
	HasMore    bool    `json:"has_more"`
}

// Page returns one page of groups, most pending rows first (then by
// signature), or newest first with SortFirstSeen.
func (g Groups) Page(ctx context.Context, p GroupsParams) (GroupsPage, error) {
	if err := p.check(); err != nil {
		return GroupsPage{}, err
	}
	byFirstSeen := p.Sort == SortFirstSeen
	status := "groups"
	if byFirstSeen {
		status = "groups:" + SortFirstSeen
	}
	if p.Incident != "" {
		status += ":incident=" + p.Incident
	}
	queue, err := g.DBs.Pipelines().Queue(p.Pipeline)
	if err != nil {
		return GroupsPage{}, err
	}
	fp := dlq.Filter{Status: status, SourceQueue: p.Class, Version: p.Version, Pipeline: p.Pipeline}.Fingerprint()
	if g.DBs.Many() && queue == "" {
		return g.pageMerged(ctx, p, fp)
	}
	var after *dlq.Spot
	if p.Cursor != "" {
		pos, err := g.Cursors.Decode(p.Cursor, dlq.CursorGroups, fp)
		if err != nil {
			return GroupsPage{}, err
		}
		if !dlq.ValidSignatureKey(pos.Key) {
			return GroupsPage{}, dlq.InputErr("INVALID_CURSOR", "cursor is not valid here: malformed")
		}
		after = &dlq.Spot{T: pos.FailedAt, I: pos.ID, S: pos.Key}
	}
	groups, err := readGroups(ctx, g.DBs.OfPipeline(p.Pipeline).DB, g.DBs.Pipelines(), p, queue, after)
	if err != nil {
		return GroupsPage{}, err
	}
	out := GroupsPage{Groups: groups, Limit: p.Limit}
	if len(out.Groups) > p.Limit {
		out.Groups = out.Groups[:p.Limit]
		last := groupSpot(out.Groups[p.Limit-1], byFirstSeen)
		next := g.Cursors.Encode(dlq.Position{Kind: dlq.CursorGroups, Filter: fp, ID: last.I, FailedAt: last.T, Key: last.S})
		out.NextCursor, out.HasMore = &next, true
	}
	return out, nil
}

// check validates p and applies its defaults: limit, and newest first for
// an incident status.
func (p *GroupsParams) check() error {
	if p.Limit == 0 {
		p.Limit = dlq.DefaultListLimit
	}
	if p.Limit < 1 || p.Limit > dlq.MaxListLimit {
		return dlq.InputErr("INVALID_LIMIT", "limit must be an integer in 1..%d", dlq.MaxListLimit)
	}
	for _, t := range []struct{ name, v string }{{"class", p.Class}, {"version", p.Version}} {
		if len(t.v) > dlq.MaxFilterText {
			return dlq.InputErr("INVALID_FILTER", "%s is longer than %d bytes", t.name, dlq.MaxFilterText)
		}
	}
	if p.Incident != "" && !incidents.ValidStatus(p.Incident) {
		return dlq.InputErr("INVALID_FILTER", "incident must be one of %s", strings.Join(incidents.Statuses, ", "))
	}
	if p.Sort == "" && p.Incident != "" {
		p.Sort = SortFirstSeen
	}
	if p.Sort != "" && p.Sort != SortPending && p.Sort != SortFirstSeen {
		return dlq.InputErr("INVALID_FILTER", "sort must be %s or %s", SortPending, SortFirstSeen)
	}
	return nil
}

// groupSpot is the position of group gr in the order of the page: its
// pending count + 1 (or, by first seen, 1 and its first_seen) and signature.
func groupSpot(gr Group, byFirstSeen bool) dlq.Spot {
	if byFirstSeen {
		return dlq.Spot{T: gr.FirstSeen, I: 1, S: gr.Signature}
	}
	return dlq.Spot{I: gr.Counts.Pending + 1, S: gr.Signature}
}

// readGroups reads at most p.Limit + 1 groups of queue ("": every queue)
// from db, after the group at after (nil: from the first).
func readGroups(ctx context.Context, db *sql.DB, ps dlq.Pipelines, p GroupsParams, queue string, after *dlq.Spot) ([]Group, error) {
	byFirstSeen := p.Sort == SortFirstSeen
	cond, args := "1 = 1", []any{}
	if after != nil {
		if byFirstSeen {
			cond, args = "(first_seen < ? OR (first_seen = ? AND signature > ?))", []any{after.T, after.T, after.S}
		} else {
			cond, args = "(pending < ? OR (pending = ? AND signature > ?))", []any{after.I - 1, after.I - 1, after.S}
		}
	}
	if queue != "" {
		cond, args = cond+" AND source_queue = ?", append(args, queue)
	}
	if p.Class != "" {
		cond, args = cond+" AND class = ?", append(args, p.Class)
	}
	if p.Incident != "" {
		cond, args = cond+" AND incident = ?", append(args, p.Incident)
	}
	if p.Version != "" {
		cond, args = cond+" AND EXISTS (SELECT 1 FROM json_each(versions) WHERE value = ?)", append(args, p.Version)
	}
	rows, err := db.QueryContext(ctx, groupsSQL(cond, byFirstSeen), append(args, int64(p.Limit+1))...)
	if err != nil {
		return nil, fmt.Errorf("dlq groups: %w", err)
	}
	defer rows.Close()
	groups := []Group{}
	for rows.Next() {
		gr, err := scanGroup(rows, ps)
		if err != nil {
			return nil, err
		}
		groups = append(groups, gr)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("dlq groups rows: %w", err)
	}
	return groups, nil
}

// scanGroup reads one row of groupsSQL.
func scanGroup(rows *sql.Rows, ps dlq.Pipelines) (Group, error) {
	var gr Group
	var versions, samples string
	var announced sql.NullInt64
	c, in := &gr.Counts, &gr.Incident
	if err := rows.Scan(&gr.Signature, &gr.Class, &gr.Text, &c.Pending, &c.Replaying, &c.Replayed, &c.Acknowledged,
		&gr.FirstSeen, &gr.LastSeen, &versions, &samples, &announced, &gr.SourceQueue,
		&in.Status, &in.Occurrence, &in.Since, &in.ResolvedAt, &in.SnoozedUntil, &in.Owner, &in.Note); err != nil {
		return Group{}, fmt.Errorf("dlq groups scan: %w", err)
	}
	gr.Total = c.Pending + c.Replaying + c.Replayed + c.Acknowledged
	in.Signature = gr.Signature
	if pl, ok := ps.OfQueue(gr.SourceQueue); ok {
		gr.Pipeline = &pl.Name
	}
	gr.Versions = []string{}
	_ = json.Unmarshal([]byte(versions), &gr.Versions)
	var ids []float64 // D1 may give integers in JSON as REAL
	_ = json.Unmarshal([]byte(samples), &ids)
	gr.SampleIDs = make([]int64, len(ids))
	for i, v := range ids {
		gr.SampleIDs[i] = int64(v)
	}
	if announced.Valid {
		gr.AnnouncedAt = &announced.Int64
	}
	if gr.ReplayWillFail = dlq.ReplayWillFail(gr.Class); gr.ReplayWillFail {
		gr.Advice = "these failures are " + gr.Class + ": replaying them unchanged fails again; fix the cause or acknowledge them"
	}
	return gr, nil
}

// groupsSQL is a page of groups matching cond, through
// idx_dlq_signatures_pending (or idx_dlq_signatures_first_seen; their
// _queue_ forms with a pipeline filter).
func groupsSQL(cond string, byFirstSeen bool) string {
	order := "pending DESC, signature"
	if byFirstSeen {
		order = "first_seen DESC, signature"
	}
	return `SELECT signature, class, text, pending, replaying, replayed, acknowledged,
			first_seen, last_seen, versions, sample_ids, announced_at, source_queue,
			incident, incident_seq, incident_at, resolved_at, snoozed_until, owner, note
		FROM dlq_signatures WHERE ` + cond + ` ORDER BY ` + order + ` LIMIT ?`
}
