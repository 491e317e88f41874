package inspect

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"github.com/redrive/redrive/clock"
	"github.com/redrive/redrive/dlq"
)

// hourMillis is one bucket.
const hourMillis = int64(time.Hour / time.Millisecond)

// TimeSeries reads failures per hour from dlq_activity's capture events
// (kind failed, kept by the capture triggers, migrations/0012), never from
// dlq_messages: a call reads at most SeriesHours rows, however large the
// backlog. The dlq_tally job keeps those hours for activityKeep.
type TimeSeries struct {
	// DBs are the databases of the rows: a pipeline filter reads its
	// database; without one, every database's hours are added up.
	DBs dlq.Databases
	// Now is the clock; time.Now when nil.
	Clock clock.Clock
	// Pipeline, when set, counts only that configured pipeline's failures
	// (its source queue's hours: at most SeriesHours rows still).
	Pipeline string
}

// Series is the timeseries response (handlers/openapi.json).
type Series struct {
	// BucketMS is the width of a bucket (one hour).
	BucketMS int64 `json:"bucket_ms"`
	// From is the start of the first bucket (a UTC hour, epoch ms); To is the
	// end of the last one (exclusive): the current hour is the last bucket.
	From int64 `json:"from"`
	To   int64 `json:"to"`
	// Hourly has one entry per hour of the window, oldest first, zeros included.
	Hourly []Bucket `json:"hourly"`
	// Total counts every failure of the window.
	Total int64 `json:"total"`
	// Pipeline is the pipeline filter (omitted: every pipeline).
	Pipeline string `json:"pipeline,omitempty"`
}

// Bucket is one hour.
type Bucket struct {
	// Start is the start of the hour, epoch ms.
	Start int64 `json:"start"`
	// Failures counts the failures captured in it (new DLQ rows and replayed
	// messages that failed again).
	Failures int64 `json:"failures"`
}

// timeseriesSQL returns the window's hours as one JSON array (one value
// crosses from D1), of every source queue or of queue ?2. It reads the
// primary key (kind, hour, source_queue) from hour ?1 on: at most
// SeriesHours rows per queue that failed in the window.
const timeseriesSQL = `SELECT json_group_array(json_array(hour, events)) AS buckets
	FROM dlq_activity WHERE kind = 'failed' AND hour >= ?1 AND (?2 IS NULL OR source_queue = ?2)`

// Read returns the last SeriesHours hours, the current one included.
func (s TimeSeries) Read(ctx context.Context) (Series, error) {
	queue, err := s.DBs.Pipelines().Queue(s.Pipeline)
	if err != nil {
		return Series{}, err
	}
	now := s.Clock.Now()
	current := now.UnixMilli() - now.UnixMilli()%hourMillis
	from := current - (dlq.SeriesHours-1)*hourMillis
	out := Series{BucketMS: hourMillis, From: from, To: current + hourMillis, Hourly: make([]Bucket, dlq.SeriesHours), Pipeline: s.Pipeline}
	for i := range out.Hourly {
		out.Hourly[i].Start = from + int64(i)*hourMillis
	}
	dbs := []*sql.DB{s.DBs.OfQueue(queue).DB}
	if queue == "" {
		dbs = dbs[:0]
		for _, d := range s.DBs.All {
			dbs = append(dbs, d.DB)
		}
	}
	for _, db := range dbs {
		if err := readSeries(ctx, db, queue, &out); err != nil {
			return Series{}, err
		}
	}
	return out, nil
}

// readSeries adds db's failures per hour of out's window to out.
func readSeries(ctx context.Context, db *sql.DB, queue string, out *Series) error {
	from := out.From
	var js string
	if err := db.QueryRowContext(ctx, timeseriesSQL, from/hourMillis, dlq.NullIfEmpty(queue)).Scan(&js); err != nil {
		return fmt.Errorf("dlq timeseries: %w", err)
	}
	var rows [][2]float64 // D1 may hand integers back as REAL
	if err := json.Unmarshal([]byte(js), &rows); err != nil {
		return fmt.Errorf("dlq timeseries decode: %w", err)
	}
	for _, r := range rows {
		i := int64(r[0]) - from/hourMillis
		if i < 0 || i >= dlq.SeriesHours {
			continue // an hour of the future (a clock ahead of this one)
		}
		out.Hourly[i].Failures += int64(r[1])
		out.Total += int64(r[1])
	}
	return nil
}
