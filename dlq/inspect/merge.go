package inspect

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/redrive/redrive/dlq"
)

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
func (l List) pageMerged(ctx context.Context, f dlq.Filter, p ListParams) (Page, error) {
	fp := f.Fingerprint()
	pos, err := l.Cursors.DecodeSpots(p.Cursor, dlq.CursorList, fp, l.DBs)
	if err != nil {
		return Page{}, err
	}
	var carried *dlq.Position
	out := Page{Limit: p.Limit, TotalCountExact: true}
	if p.Cursor != "" {
		if pos.Total == nil {
			return Page{}, dlq.InputErr("INVALID_CURSOR", "cursor is not valid here: malformed; use next_cursor from a previous response with the same filters")
		}
		carried = &pos
		out.TotalCount, out.TotalCountExact = *pos.Total, !pos.Bounded
	}
	streams := make([]dlq.Stream[listRow], len(l.DBs.All))
	for i, d := range l.DBs.All {
		s := pos.Spots[i]
		if s.Done {
			continue
		}
		var after *dlq.Position
		if s.Started() {
			after = &dlq.Position{FailedAt: s.T, ID: s.I}
		}
		r, err := readListPage(ctx, d.DB, l.DBs.Pipelines(), f, after, carried, p.Limit, p.IncludeRaw)
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
	rows, taken := dlq.MergeTake(streams, p.Limit, func(a, b listRow) bool {
		return a.failedAt > b.failedAt || (a.failedAt == b.failedAt && a.id > b.id)
	})
	dlq.Advance(pos.Spots, streams, taken, func(r listRow) dlq.Spot { return dlq.Spot{T: r.failedAt, I: r.id} })
	page := []byte{'['}
	for i, r := range rows {
		if i > 0 {
			page = append(page, ',')
		}
		page = append(page, r.js...)
	}
	out.Messages = append(page, ']')
	pos.Total, pos.Bounded = &out.TotalCount, !out.TotalCountExact
	out.NextCursor = l.Cursors.EncodeSpots(pos, dlq.CursorList, fp, l.DBs)
	out.HasMore = out.NextCursor != nil
	return out, nil
}

// listStream splits a database's page into its rows and their keys.
func listStream(r listRead) (dlq.Stream[listRow], error) {
	var raws []json.RawMessage
	if err := json.Unmarshal([]byte(r.page), &raws); err != nil {
		return dlq.Stream[listRow]{}, fmt.Errorf("dlq list merge: %w", err)
	}
	s := dlq.Stream[listRow]{Rows: make([]listRow, len(raws)), More: r.more}
	for i, js := range raws {
		var k struct {
			ID       float64 `json:"id"` // D1 may give integers in JSON as REAL
			FailedAt float64 `json:"failed_at"`
		}
		if err := json.Unmarshal(js, &k); err != nil {
			return dlq.Stream[listRow]{}, fmt.Errorf("dlq list merge: %w", err)
		}
		s.Rows[i] = listRow{js: js, failedAt: int64(k.FailedAt), id: int64(k.ID)}
	}
	return s, nil
}

// pageMerged is Groups.Page over every database (no pipeline filter): at
// most p.Limit + 1 groups from each database not done, after its spot,
// merged in the page's order (signatures are one pipeline's, so no group
// is in two databases).
func (g Groups) pageMerged(ctx context.Context, p GroupsParams, fp string) (GroupsPage, error) {
	pos, err := g.Cursors.DecodeSpots(p.Cursor, dlq.CursorGroups, fp, g.DBs)
	if err != nil {
		return GroupsPage{}, err
	}
	byFirstSeen := p.Sort == SortFirstSeen
	streams := make([]dlq.Stream[Group], len(g.DBs.All))
	for i, d := range g.DBs.All {
		s := pos.Spots[i]
		if s.Done {
			continue
		}
		var after *dlq.Spot
		if s.Started() {
			after = &s
		}
		groups, err := readGroups(ctx, d.DB, g.DBs.Pipelines(), p, "", after)
		if err != nil {
			return GroupsPage{}, fmt.Errorf("%s: %w", d.Name, err)
		}
		streams[i] = dlq.Stream[Group]{Rows: groups, More: len(groups) > p.Limit}
		streams[i].Rows = groups[:min(len(groups), p.Limit)]
	}
	groups, taken := dlq.MergeTake(streams, p.Limit, func(a, b Group) bool {
		ka, kb := groupSpot(a, byFirstSeen), groupSpot(b, byFirstSeen)
		if ka.T != kb.T {
			return ka.T > kb.T
		}
		if ka.I != kb.I {
			return ka.I > kb.I
		}
		return ka.S < kb.S
	})
	dlq.Advance(pos.Spots, streams, taken, func(gr Group) dlq.Spot { return groupSpot(gr, byFirstSeen) })
	out := GroupsPage{Groups: append([]Group{}, groups...), Limit: p.Limit}
	out.NextCursor = g.Cursors.EncodeSpots(pos, dlq.CursorGroups, fp, g.DBs)
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
	reasons := map[string]*dlq.ReasonCount{}
	for i, d := range s.DBs.All {
		r, err := Stats{Clock: s.Clock}.report(ctx, d.DB)
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
				reasons[k] = &dlq.ReasonCount{FailureReason: rc.FailureReason}
			}
			reasons[k].Count += rc.Count
		}
	}
	mergeStatsLists(&out, s.DBs.Pipelines(), bySource, brewers, reasons)
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
func mergeStatsLists(out *StatsReport, ps dlq.Pipelines, bySource map[string]SourceQueueCount, brewers map[string]int64, reasons map[string]*dlq.ReasonCount) {
	out.BySourceQueue = []SourceQueueCount{}
	for _, c := range bySource {
		out.BySourceQueue = append(out.BySourceQueue, c)
	}
	slices.SortFunc(out.BySourceQueue, func(a, b SourceQueueCount) int {
		return cmp.Or(cmp.Compare(b.Total, a.Total), cmp.Compare(a.SourceQueue, b.SourceQueue))
	})
	out.ByPipeline = []PipelineCount{}
	for _, p := range ps.All() {
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
	out.TopFailureReasons = []dlq.ReasonCount{}
	for _, rc := range reasons {
		out.TopFailureReasons = append(out.TopFailureReasons, *rc)
	}
	dlq.SortReasons(out.TopFailureReasons)
	out.TopFailureReasons = out.TopFailureReasons[:min(len(out.TopFailureReasons), statsTop)]
}
