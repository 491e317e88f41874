package dlq

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"
	"time"
)

// SeriesHours is the window of GET /admin/dlq/timeseries: 192 hourly buckets
// (8 days), enough for the last 24 hours by hour and the last 7 days by day
// in any time zone.
const SeriesHours = 192

// hourMillis is one bucket.
const hourMillis = int64(time.Hour / time.Millisecond)

// TimeSeries reads failures per hour from dlq_failures_hourly (kept by the
// capture triggers, migrations/0013), never from dlq_messages: a call reads
// at most SeriesHours rows per source queue, however large the backlog.
type TimeSeries struct {
	DB *sql.DB
	// Now is the clock; time.Now when nil.
	Now func() time.Time
}

// Series is the timeseries response (handlers/openapi.json).
type Series struct {
	// BucketMS is the width of a bucket (one hour).
	BucketMS int64 `json:"bucket_ms"`
	// From is the start of the first bucket (a UTC hour, epoch ms); To is the
	// end of the last one (exclusive): the current hour is the last bucket.
	From int64 `json:"from"`
	To   int64 `json:"to"`
	// SourceQueue is the filter, "" for every queue.
	SourceQueue string `json:"source_queue"`
	// Hourly has one entry per hour of the window, oldest first, zeros included.
	Hourly []Bucket `json:"hourly"`
	// BySourceQueue counts the window's failures per source queue, busiest first.
	BySourceQueue []QueueFailures `json:"by_source_queue"`
	// Total counts every failure of the window.
	Total int64 `json:"total"`
}

// Bucket is one hour.
type Bucket struct {
	// Start is the start of the hour, epoch ms.
	Start int64 `json:"start"`
	// Failures counts the failures captured in it (new DLQ rows and replayed
	// messages that failed again).
	Failures int64 `json:"failures"`
}

// QueueFailures is one entry of by_source_queue.
type QueueFailures struct {
	SourceQueue string `json:"source_queue"`
	Failures    int64  `json:"failures"`
}

// timeseriesSQL returns the window's buckets as one JSON array (one value
// crosses from D1). It reads the primary key (hour, source_queue) from ?1 on:
// at most SeriesHours rows per source queue. The queue filter is applied to
// the rows read (an empty ?2 keeps all).
const timeseriesSQL = `SELECT json_group_array(json_array(hour, source_queue, failures)) AS buckets
	FROM dlq_failures_hourly WHERE hour >= ?1 AND (?2 = '' OR source_queue = ?2)`

// Read returns the last SeriesHours hours (the current one included),
// optionally for one source queue.
func (s TimeSeries) Read(ctx context.Context, sourceQueue string) (Series, error) {
	if len(sourceQueue) > MaxFilterText {
		return Series{}, inputErr("INVALID_FILTER", "source_queue is longer than %d bytes", MaxFilterText)
	}
	now := time.Now()
	if s.Now != nil {
		now = s.Now()
	}
	current := now.UnixMilli() - now.UnixMilli()%hourMillis
	from := current - (SeriesHours-1)*hourMillis
	out := Series{BucketMS: hourMillis, From: from, To: current + hourMillis, SourceQueue: sourceQueue,
		Hourly: make([]Bucket, SeriesHours), BySourceQueue: []QueueFailures{}}
	for i := range out.Hourly {
		out.Hourly[i].Start = from + int64(i)*hourMillis
	}
	var js string
	if err := s.DB.QueryRowContext(ctx, timeseriesSQL, from, sourceQueue).Scan(&js); err != nil {
		return Series{}, fmt.Errorf("dlq timeseries: %w", err)
	}
	var rows [][3]json.RawMessage
	if err := json.Unmarshal([]byte(js), &rows); err != nil {
		return Series{}, fmt.Errorf("dlq timeseries decode: %w", err)
	}
	byQueue := map[string]int64{}
	for _, r := range rows {
		var hour, n float64 // D1 may hand integers back as REAL
		var queue string
		if json.Unmarshal(r[0], &hour) != nil || json.Unmarshal(r[1], &queue) != nil || json.Unmarshal(r[2], &n) != nil {
			return Series{}, fmt.Errorf("dlq timeseries decode: bad bucket %s", r)
		}
		i := (int64(hour) - from) / hourMillis
		if i < 0 || i >= SeriesHours {
			continue // a bucket of the future (a clock ahead of this one)
		}
		out.Hourly[i].Failures += int64(n)
		byQueue[queue] += int64(n)
		out.Total += int64(n)
	}
	for q, n := range byQueue {
		out.BySourceQueue = append(out.BySourceQueue, QueueFailures{SourceQueue: q, Failures: n})
	}
	sortQueueFailures(out.BySourceQueue)
	return out, nil
}

func sortQueueFailures(qs []QueueFailures) {
	slices.SortFunc(qs, func(a, b QueueFailures) int {
		return cmp.Or(cmp.Compare(b.Failures, a.Failures), cmp.Compare(a.SourceQueue, b.SourceQueue))
	})
}
