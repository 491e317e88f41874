package dlq

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"time"
)

// Stats computes GET /admin/dlq/stats.
type Stats struct {
	DB *sql.DB
	// Now is the clock; time.Now when nil.
	Now func() time.Time
}

// StatsReport is the stats response (handlers/openapi.json): the original
// worker's shape plus by_source_queue and top_failure_reasons.
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
	// TopFailureReasons: the 10 most frequent failure reasons among pending rows.
	TopFailureReasons []ReasonCount `json:"top_failure_reasons"`
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

// RepeatFailure is one entry of repeat_failures (id is an addition).
type RepeatFailure struct {
	BeerID      string  `json:"beer_id"`
	BeerName    *string `json:"beer_name"`
	ReplayCount int64   `json:"replay_count"`
	ID          int64   `json:"id"`
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

// ReasonCount is one entry of top_failure_reasons (and of a dry run's by_failure_reason).
type ReasonCount struct {
	FailureReason *string `json:"failure_reason"`
	Count         int64   `json:"count"`
}

// statsTop is the length of each top-N list.
const statsTop = 10

// statsSQL computes every figure in one statement (one D1 round trip); each
// part reads one index (see migrations/0004_admin.sql), none the table. The
// first part counts rows per (status, source_queue) in the order of
// idx_dlq_status_source_failed: by_status and by_source_queue both come from it.
const statsSQL = `SELECT
	(SELECT json_group_array(json_object('status', status, 'source_queue', source_queue, 'count', n)) FROM (
		SELECT status, source_queue, COUNT(*) AS n FROM dlq_messages GROUP BY status, source_queue)),
	(SELECT MIN(failed_at) FROM dlq_messages WHERE status = 'pending'),
	(SELECT json_group_array(json_object('brewer', brewer, 'count', n)) FROM (
		SELECT brewer, COUNT(*) AS n FROM dlq_messages WHERE status = 'pending' AND brewer IS NOT NULL
		GROUP BY brewer ORDER BY n DESC, brewer LIMIT ?1)),
	(SELECT json_group_array(json_object('beer_id', beer_id, 'beer_name', beer_name, 'replay_count', replay_count, 'id', id)) FROM (
		SELECT id, beer_id, beer_name, replay_count FROM dlq_messages WHERE status = 'pending' AND replay_count > 0
		ORDER BY replay_count DESC, id DESC LIMIT ?1)),
	(SELECT COUNT(*) FROM dlq_messages WHERE status = 'replayed' AND replayed_at > ?2),
	(SELECT COUNT(*) FROM dlq_messages WHERE status = 'acknowledged' AND acknowledged_at > ?2),
	(SELECT COUNT(*) FROM dlq_messages WHERE failed_at > ?2),
	(SELECT json_group_array(json_object('failure_reason', failure_reason, 'count', n)) FROM (
		SELECT failure_reason, COUNT(*) AS n FROM dlq_messages WHERE status = 'pending'
		GROUP BY failure_reason ORDER BY n DESC, failure_reason LIMIT ?1))`

// Report computes the stats at the current time.
func (s Stats) Report(ctx context.Context) (StatsReport, error) {
	now := time.Now()
	if s.Now != nil {
		now = s.Now()
	}
	var groups, brewers, repeats, reasons string
	var oldest sql.NullInt64
	var r StatsReport
	err := s.DB.QueryRowContext(ctx, statsSQL, int64(statsTop), now.Add(-24*time.Hour).UnixMilli()).Scan(
		&groups, &oldest, &brewers, &repeats, &r.Last24h.Replayed24h, &r.Last24h.Acknowledged24h,
		&r.Last24h.NewFailures24h, &reasons)
	if err != nil {
		return StatsReport{}, fmt.Errorf("dlq stats: %w", err)
	}
	var byGroup []struct {
		Status      string `json:"status"`
		SourceQueue string `json:"source_queue"`
		Count       int64  `json:"count"`
	}
	for _, part := range []struct {
		js string
		v  any
	}{{groups, &byGroup}, {brewers, &r.TopFailingBrewers}, {repeats, &r.RepeatFailures}, {reasons, &r.TopFailureReasons}} {
		if err := json.Unmarshal([]byte(part.js), part.v); err != nil {
			return StatsReport{}, fmt.Errorf("dlq stats decode: %w", err)
		}
	}
	bySource := map[string]*SourceQueueCount{}
	r.BySourceQueue = []SourceQueueCount{}
	for _, g := range byGroup {
		switch g.Status {
		case StatusPending:
			r.ByStatus.Pending += g.Count
		case StatusReplaying:
			r.ByStatus.Replaying += g.Count
		case StatusReplayed:
			r.ByStatus.Replayed += g.Count
		case StatusAcknowledged:
			r.ByStatus.Acknowledged += g.Count
		}
		sq := bySource[g.SourceQueue]
		if sq == nil {
			sq = &SourceQueueCount{SourceQueue: g.SourceQueue}
			bySource[g.SourceQueue] = sq
		}
		sq.Total += g.Count
		if g.Status == StatusPending {
			sq.Pending += g.Count
		}
	}
	for _, sq := range bySource {
		r.BySourceQueue = append(r.BySourceQueue, *sq)
	}
	if oldest.Valid {
		hours := float64(now.UnixMilli()-oldest.Int64) / float64(time.Hour.Milliseconds())
		r.OldestPendingAgeHours = math.Max(0, math.Round(hours*10)/10)
	}
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
	sortReasons(r.TopFailureReasons)
	return r, nil
}

func sortReasons(rs []ReasonCount) {
	slices.SortStableFunc(rs, func(a, b ReasonCount) int {
		return cmp.Or(cmp.Compare(b.Count, a.Count), cmp.Compare(deref(a.FailureReason), deref(b.FailureReason)))
	})
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
