package dlq

import "time"

// HourMS is the width of a dlq_activity bucket.
const HourMS = int64(time.Hour / time.Millisecond)

// SeriesHours is the window of GET /admin/dlq/timeseries: 192 hourly buckets
// (8 days), enough for the last 24 hours by hour and the last 7 days by day
// in any time zone.
const SeriesHours = 192
