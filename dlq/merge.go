package dlq

import (
	"cmp"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// Views over every pipeline when a pipeline keeps its rows in a database
// of its own: the list, export, groups and audit pages read each
// database after its own position, at most one single-database page from
// each, and merge them (mergeTake); their cursors carry a position per
// database (spots). Stats and the time series add each database's figures
// up. docs/pipelines.md "Its own database".

// spot is one database's position in a merged cursor: the last row of it
// a page listed (T and I: the listing's keys, S the group signature), or
// nothing yet (I is 0 and S empty), or Done (it has no row after).
type spot struct {
	T    int64  `json:"t,omitempty"`
	I    int64  `json:"i,omitempty"`
	S    string `json:"s,omitempty"`
	Done bool   `json:"d,omitempty"`
}

// started reports whether the spot names a row (a page listed one of it).
func (s spot) started() bool { return s.I != 0 || s.S != "" }

// merged is the cursor kind of a listing's merged form: a cursor of the
// single-database form is not one of the merged form, nor the reverse.
func merged(kind string) string { return kind + "*" }

// mergedFilter is fp bound to the databases read: a cursor made before a
// binding was added or removed is INVALID_CURSOR, not a walk that skips a
// database.
func mergedFilter(fp string, d Databases) string {
	names := make([]string, len(d.All))
	for i, db := range d.All {
		names[i] = db.Name
	}
	sum := sha256.Sum256([]byte(strings.Join(names, "\x00")))
	return fp + "@" + hex.EncodeToString(sum[:4])
}

// decodeSpots returns the spots of a merged cursor for kind and fp over d
// (one per database; every one unstarted for the first page, cursor "").
func (c Cursors) decodeSpots(cursor, kind, fp string, d Databases) (Position, error) {
	if cursor == "" {
		return Position{Spots: make([]spot, len(d.All))}, nil
	}
	p, err := c.Decode(cursor, merged(kind), mergedFilter(fp, d))
	if err != nil {
		return Position{}, err
	}
	if len(p.Spots) != len(d.All) {
		return Position{}, InputErr("INVALID_CURSOR", "cursor is not valid here: malformed; use next_cursor from a previous response with the same filters")
	}
	for _, s := range p.Spots {
		if s.I < 0 || s.T < 0 || (s.S != "" && !validSignatureKey(s.S)) {
			return Position{}, InputErr("INVALID_CURSOR", "cursor is not valid here: malformed; use next_cursor from a previous response with the same filters")
		}
	}
	return p, nil
}

// encodeSpots is the next cursor of a merged page: p with its spots,
// or nil when every database is done.
func (c Cursors) encodeSpots(p Position, kind, fp string, d Databases) *string {
	more := false
	for _, s := range p.Spots {
		more = more || !s.Done
	}
	if !more {
		return nil
	}
	p.Kind, p.Filter, p.ID = merged(kind), mergedFilter(fp, d), 1
	next := c.Encode(p)
	return &next
}

// stream is what one database gave for a merged page: its next rows in
// the listing's order and whether it has rows after them.
type stream[T any] struct {
	rows []T
	more bool
}

// mergeTake merges streams (each already in the listing's order; before
// says whether a comes first) into at most limit rows and returns them with
// how many rows of each stream they hold. It stops early when a stream that
// has more rows than it gave runs out: its next row, unread, might come
// before the other streams' rows. Every row of each stream before the
// returned count is listed, so a walk resuming each stream after its last
// listed row lists every row of every stream exactly once.
func mergeTake[T any](streams []stream[T], limit int, before func(a, b T) bool) ([]T, []int) {
	taken := make([]int, len(streams))
	var out []T
	for len(out) < limit {
		best := -1
		for i, s := range streams {
			if taken[i] == len(s.rows) {
				if s.more {
					return out, taken
				}
				continue
			}
			if best < 0 || before(s.rows[taken[i]], streams[best].rows[taken[best]]) {
				best = i
			}
		}
		if best < 0 {
			break
		}
		out = append(out, streams[best].rows[taken[best]])
		taken[best]++
	}
	return out, taken
}

// advance moves each database's spot past the rows of it a page listed:
// at of its last listed row, unchanged when it listed none, Done when it
// listed every row it has. Databases already done stay so.
func advance[T any](spots []spot, streams []stream[T], taken []int, at func(T) spot) {
	for i, s := range streams {
		if spots[i].Done {
			continue
		}
		if taken[i] > 0 {
			spots[i] = at(s.rows[taken[i]-1])
		}
		if taken[i] == len(s.rows) && !s.more {
			spots[i].Done = true
		}
	}
}

// dbOf is the connection of the database a view with a pipeline or source
// queue filter reads (d empty: db, the services' own DB).
func dbOf(d Databases, db *sql.DB, pipeline, sourceQueue string) *sql.DB {
	switch {
	case len(d.All) == 0:
		return db
	case sourceQueue != "":
		return d.OfQueue(sourceQueue).DB
	default:
		return d.OfPipeline(pipeline).DB
	}
}

// listRow is one row of a merged list page: its JSON and its keys.
type listRow struct {
	js           json.RawMessage
	failedAt, id int64
}

// pageMerged is List.Page over every database (f has no source queue):
// from each database not done, one page after its spot (the statement of
// a single database: its budget), merged newest failure first. The first
// page counts each database's total and adds them up; the cursor carries
// the sum and each database's spot.
func (l List) pageMerged(ctx context.Context, f Filter, p ListParams) (Page, error) {
	fp := f.Fingerprint()
	pos, err := l.Cursors.decodeSpots(p.Cursor, cursorList, fp, l.DBs)
	if err != nil {
		return Page{}, err
	}
	var carried *Position
	out := Page{Limit: p.Limit, TotalCountExact: true}
	if p.Cursor != "" {
		if pos.Total == nil {
			return Page{}, InputErr("INVALID_CURSOR", "cursor is not valid here: malformed; use next_cursor from a previous response with the same filters")
		}
		carried = &pos
		out.TotalCount, out.TotalCountExact = *pos.Total, !pos.Bounded
	}
	streams := make([]stream[listRow], len(l.DBs.All))
	for i, d := range l.DBs.All {
		s := pos.Spots[i]
		if s.Done {
			continue
		}
		var after *Position
		if s.started() {
			after = &Position{FailedAt: s.T, ID: s.I}
		}
		r, err := readListPage(ctx, d.DB, f, after, carried, p.Limit, p.IncludeRaw)
		if err != nil {
			return Page{}, fmt.Errorf("%s: %w", d.Name, err)
		}
		if carried == nil {
			out.TotalCount += r.total
			out.TotalCountExact = out.TotalCountExact && r.exact
		}
		if streams[i], err = listStream(r); err != nil {
			return Page{}, fmt.Errorf("%s: %w", d.Name, err)
		}
	}
	rows, taken := mergeTake(streams, p.Limit, func(a, b listRow) bool {
		return a.failedAt > b.failedAt || (a.failedAt == b.failedAt && a.id > b.id)
	})
	advance(pos.Spots, streams, taken, func(r listRow) spot { return spot{T: r.failedAt, I: r.id} })
	page := []byte{'['}
	for i, r := range rows {
		if i > 0 {
			page = append(page, ',')
		}
		page = append(page, r.js...)
	}
	out.Messages = append(page, ']')
	pos.Total, pos.Bounded = &out.TotalCount, !out.TotalCountExact
	out.NextCursor = l.Cursors.encodeSpots(pos, cursorList, fp, l.DBs)
	out.HasMore = out.NextCursor != nil
	return out, nil
}

// listStream splits a database's page into its rows and their keys.
func listStream(r listRead) (stream[listRow], error) {
	var raws []json.RawMessage
	if err := json.Unmarshal([]byte(r.page), &raws); err != nil {
		return stream[listRow]{}, fmt.Errorf("dlq list merge: %w", err)
	}
	s := stream[listRow]{rows: make([]listRow, len(raws)), more: r.more}
	for i, js := range raws {
		var k struct {
			ID       float64 `json:"id"` // D1 may give integers in JSON as REAL
			FailedAt float64 `json:"failed_at"`
		}
		if err := json.Unmarshal(js, &k); err != nil {
			return stream[listRow]{}, fmt.Errorf("dlq list merge: %w", err)
		}
		s.rows[i] = listRow{js: js, failedAt: int64(k.FailedAt), id: int64(k.ID)}
	}
	return s, nil
}

// pageMerged is Groups.Page over every database (no pipeline filter): at
// most p.Limit + 1 groups from each database not done, after its spot,
// merged in the page's order (signatures are one pipeline's, so no group
// is in two databases).
func (g Groups) pageMerged(ctx context.Context, p GroupsParams, fp string) (GroupsPage, error) {
	pos, err := g.Cursors.decodeSpots(p.Cursor, cursorGroups, fp, g.DBs)
	if err != nil {
		return GroupsPage{}, err
	}
	byFirstSeen := p.Sort == SortFirstSeen
	streams := make([]stream[Group], len(g.DBs.All))
	for i, d := range g.DBs.All {
		s := pos.Spots[i]
		if s.Done {
			continue
		}
		var after *spot
		if s.started() {
			after = &s
		}
		groups, err := readGroups(ctx, d.DB, p, "", after)
		if err != nil {
			return GroupsPage{}, fmt.Errorf("%s: %w", d.Name, err)
		}
		streams[i] = stream[Group]{rows: groups, more: len(groups) > p.Limit}
		streams[i].rows = groups[:min(len(groups), p.Limit)]
	}
	groups, taken := mergeTake(streams, p.Limit, func(a, b Group) bool {
		ka, kb := groupSpot(a, byFirstSeen), groupSpot(b, byFirstSeen)
		if ka.T != kb.T {
			return ka.T > kb.T
		}
		if ka.I != kb.I {
			return ka.I > kb.I
		}
		return ka.S < kb.S
	})
	advance(pos.Spots, streams, taken, func(gr Group) spot { return groupSpot(gr, byFirstSeen) })
	out := GroupsPage{Groups: append([]Group{}, groups...), Limit: p.Limit}
	out.NextCursor = g.Cursors.encodeSpots(pos, cursorGroups, fp, g.DBs)
	out.HasMore = out.NextCursor != nil
	return out, nil
}

// pageMerged is Audit.Page over every database: at most p.Limit + 1
// entries from each database not done, after its spot (ids below it),
// merged newest first by time, then id.
func (a Audit) pageMerged(ctx context.Context, p AuditParams, fp string) (AuditPage, error) {
	pos, err := a.Cursors.decodeSpots(p.Cursor, cursorAudit, fp, a.DBs)
	if err != nil {
		return AuditPage{}, err
	}
	streams := make([]stream[AuditEntry], len(a.DBs.All))
	for i, d := range a.DBs.All {
		if pos.Spots[i].Done {
			continue
		}
		entries, err := readAudit(ctx, d.DB, p, pos.Spots[i].I)
		if err != nil {
			return AuditPage{}, fmt.Errorf("%s: %w", d.Name, err)
		}
		streams[i] = stream[AuditEntry]{rows: entries[:min(len(entries), p.Limit)], more: len(entries) > p.Limit}
	}
	entries, taken := mergeTake(streams, p.Limit, func(x, y AuditEntry) bool {
		return x.At > y.At || (x.At == y.At && x.ID > y.ID)
	})
	advance(pos.Spots, streams, taken, func(e AuditEntry) spot { return spot{I: e.ID} })
	out := AuditPage{Entries: append([]AuditEntry{}, entries...), Limit: p.Limit}
	out.NextCursor = a.Cursors.encodeSpots(pos, cursorAudit, fp, a.DBs)
	out.HasMore = out.NextCursor != nil
	return out, nil
}

// reportMerged is Stats.Report over every database: each database's
// report (its statement: its budget), added up. by_status, by_source_queue,
// by_pipeline and last_24h are sums; the top lists are merged and cut to
// their length again (a brewer or reason counts what each database's top
// list held of it); oldest pending is the oldest of all.
func (s Stats) reportMerged(ctx context.Context) (StatsReport, error) {
	var out StatsReport
	bySource := map[string]SourceQueueCount{}
	brewers := map[string]int64{}
	reasons := map[string]*ReasonCount{}
	for i, d := range s.DBs.All {
		r, err := Stats{DB: d.DB, Clock: s.Clock}.report(ctx)
		if err != nil {
			return StatsReport{}, fmt.Errorf("%s: %w", d.Name, err)
		}
		if i == 0 {
			out = r
		} else {
			addStatus(&out.ByStatus, r.ByStatus)
			out.Last24h.Replayed24h += r.Last24h.Replayed24h
			out.Last24h.Acknowledged24h += r.Last24h.Acknowledged24h
			out.Last24h.NewFailures24h += r.Last24h.NewFailures24h
			out.OldestPendingAgeHours = max(out.OldestPendingAgeHours, r.OldestPendingAgeHours)
			out.RepeatFailures = append(out.RepeatFailures, r.RepeatFailures...)
			out.TopFailureReasonsSample += r.TopFailureReasonsSample
		}
		for _, q := range r.BySourceQueue {
			c := bySource[q.SourceQueue]
			c.SourceQueue, c.Pending, c.Total = q.SourceQueue, c.Pending+q.Pending, c.Total+q.Total
			bySource[q.SourceQueue] = c
		}
		for _, b := range r.TopFailingBrewers {
			brewers[b.Brewer] += b.Count
		}
		for _, rc := range r.TopFailureReasons {
			k := "\x00"
			if rc.FailureReason != nil {
				k = *rc.FailureReason
			}
			if reasons[k] == nil {
				reasons[k] = &ReasonCount{FailureReason: rc.FailureReason}
			}
			reasons[k].Count += rc.Count
		}
	}
	mergeStatsLists(&out, bySource, brewers, reasons)
	return out, nil
}

func addStatus(to *ByStatus, b ByStatus) {
	to.Pending += b.Pending
	to.Replaying += b.Replaying
	to.Replayed += b.Replayed
	to.Acknowledged += b.Acknowledged
}

// mergeStatsLists sets the lists of a merged report from the summed
// counts, sorted as Report sorts them and cut to statsTop.
func mergeStatsLists(out *StatsReport, bySource map[string]SourceQueueCount, brewers map[string]int64, reasons map[string]*ReasonCount) {
	out.BySourceQueue = []SourceQueueCount{}
	for _, c := range bySource {
		out.BySourceQueue = append(out.BySourceQueue, c)
	}
	slices.SortFunc(out.BySourceQueue, func(a, b SourceQueueCount) int {
		return cmp.Or(cmp.Compare(b.Total, a.Total), cmp.Compare(a.SourceQueue, b.SourceQueue))
	})
	out.ByPipeline = []PipelineCount{}
	for _, p := range Pipelines() {
		c := bySource[p.Queue]
		out.ByPipeline = append(out.ByPipeline, PipelineCount{Pipeline: p.Name, Queue: p.Queue, Pending: c.Pending, Total: c.Total})
	}
	out.TopFailingBrewers = []BrewerCount{}
	for b, n := range brewers {
		out.TopFailingBrewers = append(out.TopFailingBrewers, BrewerCount{Brewer: b, Count: n})
	}
	slices.SortFunc(out.TopFailingBrewers, func(a, b BrewerCount) int {
		return cmp.Or(cmp.Compare(b.Count, a.Count), cmp.Compare(a.Brewer, b.Brewer))
	})
	out.TopFailingBrewers = out.TopFailingBrewers[:min(len(out.TopFailingBrewers), statsTop)]
	slices.SortStableFunc(out.RepeatFailures, func(a, b RepeatFailure) int {
		return cmp.Or(cmp.Compare(b.ReplayCount, a.ReplayCount), cmp.Compare(b.ID, a.ID))
	})
	out.RepeatFailures = out.RepeatFailures[:min(len(out.RepeatFailures), statsTop)]
	out.TopFailureReasons = []ReasonCount{}
	for _, rc := range reasons {
		out.TopFailureReasons = append(out.TopFailureReasons, *rc)
	}
	sortReasons(out.TopFailureReasons)
	out.TopFailureReasons = out.TopFailureReasons[:min(len(out.TopFailureReasons), statsTop)]
}
