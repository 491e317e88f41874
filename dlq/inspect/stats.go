package inspect

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/redrive/redrive/clock"
	"github.com/redrive/redrive/dlq"
)

// Stats computes GET /admin/dlq/stats.
type Stats struct {
	// DBs are the databases of the rows: a pipeline filter reads its
	// database; without one, more than one database are each read and
	// their figures added up (mergeStats).
	DBs dlq.Databases
	// Now is the clock; time.Now when nil.
	Clock clock.Clock
	// Pipeline, when not empty, is a configured pipeline's name: the parts
	// kept per source queue (by_status, by_source_queue, by_pipeline,
	// top_failing_brewers, last_24h) count only its queue's rows, and NotFiltered names
	// the parts that still cover every pipeline. An unknown name is
	// UNKNOWN_PIPELINE.
	Pipeline string
}

// statsNotFiltered are the parts of the stats a pipeline filter does not
// narrow: each would read rows of every pipeline to find one pipeline's
// (oldest_pending_age_hours and repeat_failures walk indexes without
// source_queue). docs/pipelines.md "Not yet".
var statsNotFiltered = []string{"oldest_pending_age_hours", "repeat_failures"}

// StatsReport is the stats response (handlers/openapi.json): the original
// worker's shape plus by_source_queue, top_failure_reasons and
// top_failure_reasons_sample.
type StatsReport struct {
	ByStatus ByStatus `json:"by_status"`
	// OldestPendingAgeHours is the age of the oldest pending failure, one decimal; 0 when none.
	OldestPendingAgeHours float64 `json:"oldest_pending_age_hours"`
	// TopFailingBrewers: the 10 brewers with most pending rows.
	TopFailingBrewers []BrewerCount `json:"top_failing_brewers"`
	// RepeatFailures: the 10 pending rows replayed most often (replay_count > 0).
	RepeatFailures []RepeatFailure `json:"repeat_failures"`
	Last24h        Last24h         `json:"last_24h"`
	// BySourceQueue: rows per source queue (pending and total), busiest first.
	BySourceQueue []SourceQueueCount `json:"by_source_queue"`
	// ByPipeline: rows per configured pipeline, in configuration order
	// (every pipeline, 0 when it has none).
	ByPipeline []PipelineCount `json:"by_pipeline"`
	// TopFailureReasons: the 10 most frequent failure reasons among the
	// TopFailureReasonsSample newest pending rows.
	TopFailureReasons []dlq.ReasonCount `json:"top_failure_reasons"`
	// TopFailureReasonsSample is how many pending rows (the newest failures)
	// TopFailureReasons counts: every pending row while there are at most
	// StatsReasonSample of them, else that many.
	TopFailureReasonsSample int64 `json:"top_failure_reasons_sample"`
	// CurrentVersion is the version live now (set by the handler; absent
	// without one): filter
	// {"version_not": current_version.stamp} selects every failure of older code.
	CurrentVersion *CurrentVersion `json:"current_version,omitempty"`
	// Pipeline is the pipeline filter's name (absent without one).
	Pipeline *string `json:"pipeline,omitempty"`
	// NotFiltered, with a pipeline filter, names the parts that still cover
	// every pipeline of its database (absent without one). With a filter,
	// top_failure_reasons counts that pipeline's rows among the
	// StatsReasonSample newest pending rows of every pipeline, and
	// top_failure_reasons_sample is how many they are.
	NotFiltered []string `json:"not_filtered,omitempty"`
}

// CurrentVersion is the running worker's version in the stats.
type CurrentVersion struct {
	// Stamp is what failures of this version are stamped with (the version
	// filter's value): the version id, else the build's version string.
	Stamp     string `json:"stamp"`
	ID        string `json:"id"`
	Tag       string `json:"tag"`
	Timestamp string `json:"timestamp"`
	Build     string `json:"build"`
}

// ByStatus counts rows per status.
type ByStatus struct {
	Pending      int64 `json:"pending"`
	Replaying    int64 `json:"replaying"`
	Replayed     int64 `json:"replayed"`
	Acknowledged int64 `json:"acknowledged"`
}

// BrewerCount is one entry of top_failing_brewers.
type BrewerCount struct {
	Brewer string `json:"brewer"`
	Count  int64  `json:"count"`
}

// RepeatFailure is one entry of repeat_failures (id, pipeline, key and
// labels are additions: see Message).
type RepeatFailure struct {
	BeerID      string             `json:"beer_id"`
	BeerName    *string            `json:"beer_name"`
	ReplayCount int64              `json:"replay_count"`
	ID          int64              `json:"id"`
	Pipeline    *string            `json:"pipeline"`
	Key         string             `json:"key"`
	Labels      map[string]*string `json:"labels"`
}

// PipelineCount is one entry of by_pipeline: a configured pipeline's rows
// (those of its queue in by_source_queue).
type PipelineCount struct {
	Pipeline string `json:"pipeline"`
	Queue    string `json:"queue"`
	Pending  int64  `json:"pending"`
	Total    int64  `json:"total"`
}

// rowPipeline is a row's pipeline, key and labels (see Message) from its
// source queue and columns, as pipelineFieldsSQL builds them in SQL.
func rowPipeline(ps dlq.Pipelines, sourceQueue string, label1, label2 *string) (*string, map[string]*string) {
	labels := map[string]*string{}
	p, ok := ps.OfQueue(sourceQueue)
	if !ok {
		return nil, labels
	}
	for i, l := range p.Labels {
		labels[l.Name] = []*string{label1, label2}[i]
	}
	return &p.Name, labels
}

// Last24h is recent activity.
type Last24h struct {
	Replayed24h     int64 `json:"replayed_24h"`
	Acknowledged24h int64 `json:"acknowledged_24h"`
	NewFailures24h  int64 `json:"new_failures_24h"`
}

// SourceQueueCount is one entry of by_source_queue.
type SourceQueueCount struct {
	SourceQueue string `json:"source_queue"`
	Pending     int64  `json:"pending"`
	Total       int64  `json:"total"`
}

// statsTop is the length of each top-N list.
const statsTop = 10

// StatsReasonSample is how many of the newest pending rows top_failure_reasons
// counts. Failure reasons are free text, often one per message, so no count
// per reason is kept (it would cost a row written per capture); the newest
// rows are what an operator acts on.
const StatsReasonSample = 3000

// statsSQL computes every figure in one statement (one D1 round trip), and
// what it reads does not grow with the backlog (docs/costs.md "What it costs"):
//   - by_status, by_source_queue, top_failing_brewers: dlq_tally (a row per
//     status and source queue, pending rows also per label_2, the brewer), kept by
//     triggers and by the statements that move rows (migrations/0012);
//   - oldest_pending_age_hours: the first entry of idx_dlq_status_failed;
//   - repeat_failures: idx_dlq_pending_replay_count (pending rows replayed
//     before; INDEXED BY: without statistics SQLite would rather visit every
//     pending row through idx_dlq_status_failed and sort them);
//   - last_24h: dlq_activity's hourly counts for the hours after the one
//     24 h ago (?3), plus the rows of that hour after ?2 counted one by one;
//   - top_failure_reasons: the StatsReasonSample newest pending rows (?4).
//
// ?5 is the pipeline filter's queue (NULL: every queue). It narrows the
// dlq_tally parts, last_24h (dlq_activity keeps its hours per queue; the
// edge hour's rows are counted from the same index ranges, covering without
// a filter, each row visited with one) and
// top_failure_reasons (to the queue's rows among the
// StatsReasonSample newest pending rows of every queue; sampled counts them,
// reading nothing without a filter), not the parts in statsNotFiltered.
const statsSQL = `SELECT
	(SELECT json_group_array(json_object('status', status, 'source_queue', source_queue, 'count', n)) FROM (
		SELECT status, source_queue, SUM(n) AS n FROM dlq_tally WHERE ?5 IS NULL OR source_queue = ?5
		GROUP BY status, source_queue HAVING SUM(n) <> 0)) AS groups,
	(SELECT MIN(failed_at) FROM dlq_messages WHERE status = 'pending') AS oldest,
	(SELECT json_group_array(json_object('brewer', label_2, 'count', n)) FROM (
		SELECT substr(label_key, 2) AS label_2, SUM(n) AS n FROM dlq_tally WHERE status = 'pending' AND label_key <> ''
			AND (?5 IS NULL OR source_queue = ?5)
		GROUP BY label_key HAVING SUM(n) > 0 ORDER BY n DESC, label_2 LIMIT ?1)) AS brewers,
	(SELECT json_group_array(json_object('beer_id', row_key, 'beer_name', label_1, 'replay_count', replay_count, 'id', id,
			'source_queue', source_queue, 'brewer', label_2)) FROM (
		SELECT id, row_key, label_1, replay_count, source_queue, label_2 FROM dlq_messages INDEXED BY idx_dlq_pending_replay_count
		WHERE status = 'pending' AND replay_count > 0 ORDER BY replay_count DESC, id DESC LIMIT ?1)) AS repeats,
	(SELECT COALESCE(SUM(n), 0) FROM dlq_activity WHERE kind = 'replayed' AND hour > ?3 AND (?5 IS NULL OR source_queue = ?5))
		+ (SELECT COUNT(*) FROM dlq_messages WHERE ?5 IS NULL AND status = 'replayed' AND replayed_at > ?2 AND replayed_at < (?3 + 1) * 3600000)
		+ (SELECT COUNT(*) FROM dlq_messages WHERE ?5 IS NOT NULL AND status = 'replayed' AND replayed_at > ?2 AND replayed_at < (?3 + 1) * 3600000
			AND source_queue = ?5) AS replayed,
	(SELECT COALESCE(SUM(n), 0) FROM dlq_activity WHERE kind = 'acknowledged' AND hour > ?3 AND (?5 IS NULL OR source_queue = ?5))
		+ (SELECT COUNT(*) FROM dlq_messages WHERE ?5 IS NULL AND status = 'acknowledged' AND acknowledged_at > ?2 AND acknowledged_at < (?3 + 1) * 3600000)
		+ (SELECT COUNT(*) FROM dlq_messages WHERE ?5 IS NOT NULL AND status = 'acknowledged' AND acknowledged_at > ?2 AND acknowledged_at < (?3 + 1) * 3600000
			AND source_queue = ?5) AS acknowledged,
	(SELECT COALESCE(SUM(n), 0) FROM dlq_activity WHERE kind = 'failed' AND hour > ?3 AND (?5 IS NULL OR source_queue = ?5))
		+ (SELECT COUNT(*) FROM dlq_messages WHERE ?5 IS NULL AND status IN ('pending', 'replaying', 'replayed', 'acknowledged') AND failed_at > ?2 AND failed_at < (?3 + 1) * 3600000)
		+ (SELECT COUNT(*) FROM dlq_messages WHERE ?5 IS NOT NULL AND status IN ('pending', 'replaying', 'replayed', 'acknowledged') AND failed_at > ?2 AND failed_at < (?3 + 1) * 3600000
			AND source_queue = ?5) AS failures,
	(SELECT json_group_array(json_object('failure_reason', failure_reason, 'count', n)) FROM (
		SELECT failure_reason, COUNT(*) AS n FROM (
			SELECT failure_reason, source_queue FROM dlq_messages WHERE status = 'pending' ORDER BY failed_at DESC, id DESC LIMIT ?4)
		WHERE ?5 IS NULL OR source_queue = ?5
		GROUP BY failure_reason ORDER BY n DESC, failure_reason LIMIT ?1)) AS reasons,
	(SELECT COUNT(*) FROM (
		SELECT source_queue FROM dlq_messages WHERE ?5 IS NOT NULL AND status = 'pending' ORDER BY failed_at DESC, id DESC LIMIT ?4)
		WHERE source_queue = ?5) AS sampled`

// Report computes the stats at the current time: of the database of the
// pipeline filter, or of every database added up (reportMerged).
func (s Stats) Report(ctx context.Context) (StatsReport, error) {
	if s.DBs.Many() && s.Pipeline == "" {
		return s.reportMerged(ctx)
	}
	if _, err := s.DBs.Pipelines().Queue(s.Pipeline); err != nil {
		return StatsReport{}, err
	}
	return s.report(ctx, s.DBs.OfPipeline(s.Pipeline).DB)
}

// report computes the stats of db.
func (s Stats) report(ctx context.Context, db *sql.DB) (StatsReport, error) {
	now := s.Clock.Now()
	queue, err := s.DBs.Pipelines().Queue(s.Pipeline)
	if err != nil {
		return StatsReport{}, err
	}
	var r StatsReport
	cols, err := queryStats(ctx, db, now, queue, &r.Last24h)
	if err != nil {
		return StatsReport{}, err
	}
	byGroup, repeatRows, err := cols.decode(&r)
	if err != nil {
		return StatsReport{}, err
	}
	bySource := r.tallyGroups(byGroup)
	r.ByPipeline = s.pipelineCounts(bySource)
	r.RepeatFailures = repeatFailures(s.DBs.Pipelines(), repeatRows)
	if s.Pipeline != "" {
		r.Pipeline = &s.Pipeline
		r.NotFiltered = statsNotFiltered
		r.TopFailureReasonsSample = cols.sampled
	} else {
		r.TopFailureReasonsSample = min(r.ByStatus.Pending, StatsReasonSample)
	}
	if cols.oldest.Valid {
		hours := float64(now.UnixMilli()-cols.oldest.Int64) / float64(time.Hour.Milliseconds())
		r.OldestPendingAgeHours = math.Max(0, math.Round(hours*10)/10)
	}
	r.sortLists()
	return r, nil
}

// statsColumns are statsSQL's columns other than last_24h's, as read: the
// lists (groups, brewers, repeats, reasons) still JSON arrays.
type statsColumns struct {
	groups, brewers, repeats, reasons string
	// oldest is the oldest pending row's failed_at (NULL when none).
	oldest sql.NullInt64
	// sampled is how many of the sampled pending rows are the pipeline
	// filter's queue's (0 without one).
	sampled int64
}

// statsGroup is one entry of statsSQL's groups: the rows of a status and
// source queue.
type statsGroup struct {
	Status      string `json:"status"`
	SourceQueue string `json:"source_queue"`
	Count       int64  `json:"count"`
}

// repeatRow is one entry of statsSQL's repeats: a repeat failure with what
// gives its pipeline and labels.
type repeatRow struct {
	RepeatFailure
	SourceQueue string  `json:"source_queue"`
	Brewer      *string `json:"brewer"`
}

// queryStats runs statsSQL on db at now, narrowed to queue when not
// empty: it scans last_24h into last24h and returns the other columns.
func queryStats(ctx context.Context, db *sql.DB, now time.Time, queue string, last24h *Last24h) (statsColumns, error) {
	var c statsColumns
	dayAgo := now.Add(-24 * time.Hour).UnixMilli()
	err := db.QueryRowContext(ctx, statsSQL, int64(statsTop), dayAgo, dayAgo/dlq.HourMS, int64(StatsReasonSample), dlq.NullIfEmpty(queue)).Scan(
		&c.groups, &c.oldest, &c.brewers, &c.repeats, &last24h.Replayed24h, &last24h.Acknowledged24h,
		&last24h.NewFailures24h, &c.reasons, &c.sampled)
	if err != nil {
		return statsColumns{}, fmt.Errorf("dlq stats: %w", err)
	}
	return c, nil
}

// decode decodes c's JSON lists, in column order: the top brewers and
// failure reasons into r, the groups and repeat rows returned.
func (c statsColumns) decode(r *StatsReport) ([]statsGroup, []repeatRow, error) {
	var repeatRows []repeatRow
	var byGroup []statsGroup
	for _, part := range []struct {
		js string
		v  any
	}{{c.groups, &byGroup}, {c.brewers, &r.TopFailingBrewers}, {c.repeats, &repeatRows}, {c.reasons, &r.TopFailureReasons}} {
		if err := json.Unmarshal([]byte(part.js), part.v); err != nil {
			return nil, nil, fmt.Errorf("dlq stats decode: %w", err)
		}
	}
	return byGroup, repeatRows, nil
}

// tallyGroups adds the groups up into r's by_status and by_source_queue
// (not yet sorted), and returns each source queue's counts by its name.
func (r *StatsReport) tallyGroups(byGroup []statsGroup) map[string]*SourceQueueCount {
	bySource := map[string]*SourceQueueCount{}
	r.BySourceQueue = []SourceQueueCount{}
	for _, g := range byGroup {
		switch g.Status {
		case dlq.StatusPending:
			r.ByStatus.Pending += g.Count
		case dlq.StatusReplaying:
			r.ByStatus.Replaying += g.Count
		case dlq.StatusReplayed:
			r.ByStatus.Replayed += g.Count
		case dlq.StatusAcknowledged:
			r.ByStatus.Acknowledged += g.Count
		}
		sq := bySource[g.SourceQueue]
		if sq == nil {
			sq = &SourceQueueCount{SourceQueue: g.SourceQueue}
			bySource[g.SourceQueue] = sq
		}
		sq.Total += g.Count
		if g.Status == dlq.StatusPending {
			sq.Pending += g.Count
		}
	}
	for _, sq := range bySource {
		r.BySourceQueue = append(r.BySourceQueue, *sq)
	}
	return bySource
}

// pipelineCounts is by_pipeline: each configured pipeline (only the
// filter's, with one) with its queue's counts in bySource, in
// configuration order.
func (s Stats) pipelineCounts(bySource map[string]*SourceQueueCount) []PipelineCount {
	byPipeline := []PipelineCount{}
	for _, p := range s.DBs.Pipelines().All() {
		if s.Pipeline != "" && p.Name != s.Pipeline {
			continue
		}
		c := PipelineCount{Pipeline: p.Name, Queue: p.Queue}
		if sq := bySource[p.Queue]; sq != nil {
			c.Pending, c.Total = sq.Pending, sq.Total
		}
		byPipeline = append(byPipeline, c)
	}
	return byPipeline
}

// repeatFailures is repeat_failures from the repeat rows: each keyed by
// its beer_id, with its pipeline and labels (rowPipeline).
func repeatFailures(ps dlq.Pipelines, rows []repeatRow) []RepeatFailure {
	out := make([]RepeatFailure, len(rows))
	for i, row := range rows {
		rf := row.RepeatFailure
		rf.Key = rf.BeerID
		rf.Pipeline, rf.Labels = rowPipeline(ps, row.SourceQueue, rf.BeerName, row.Brewer)
		out[i] = rf
	}
	return out
}

// sortLists sorts r's lists: top_failing_brewers, repeat_failures,
// by_source_queue and top_failure_reasons.
func (r *StatsReport) sortLists() {
	// json_group_array keeps the subquery's order in practice; sort anyway,
	// since SQL does not promise it.
	slices.SortStableFunc(r.TopFailingBrewers, func(a, b BrewerCount) int {
		return cmp.Or(cmp.Compare(b.Count, a.Count), cmp.Compare(a.Brewer, b.Brewer))
	})
	slices.SortStableFunc(r.RepeatFailures, func(a, b RepeatFailure) int {
		return cmp.Or(cmp.Compare(b.ReplayCount, a.ReplayCount), cmp.Compare(b.ID, a.ID))
	})
	slices.SortStableFunc(r.BySourceQueue, func(a, b SourceQueueCount) int {
		return cmp.Or(cmp.Compare(b.Total, a.Total), cmp.Compare(a.SourceQueue, b.SourceQueue))
	})
	dlq.SortReasons(r.TopFailureReasons)
}
