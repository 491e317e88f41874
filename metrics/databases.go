package metrics

import (
	"context"
	"database/sql"
	"fmt"
)

// AddDLQ adds the DLQ figures of another database (one a pipeline keeps
// its rows in) to s: its dlq_tally row counts, its oldest pending row when
// older than s's, its captured messages to CapturedTotal, and every row of
// its counters table to the counter of the same name (the acknowledges,
// replays, poison rows, rescues and retention deletions of the pipelines
// it holds are counted there, by the statements that act on its rows).
// One statement of 4 compound terms, which reads what ReadSnapshot reads
// of the same tables: dlq_tally's rows, one index entry, dlq_activity's
// failed hours and the counters table (a row per counter ever written in
// that database: a dozen at most).
func (s *Snapshot) AddDLQ(ctx context.Context, db *sql.DB) error {
	rows, err := db.QueryContext(ctx, `
		SELECT 'dlq' AS kind, status AS a, source_queue AS b, SUM(n) AS n1
			FROM dlq_tally GROUP BY status, source_queue HAVING SUM(n) <> 0
		UNION ALL SELECT 'oldest', '', '', COALESCE((SELECT MIN(failed_at) FROM dlq_messages WHERE status = 'pending'), 0)
		UNION ALL SELECT 'captured', '', '', COALESCE(SUM(events), 0) FROM dlq_activity WHERE kind = 'failed'
		UNION ALL SELECT 'counter', name, '', value FROM counters`)
	if err != nil {
		return fmt.Errorf("metrics snapshot: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var kind, a, b string
		var n int64
		if err := rows.Scan(&kind, &a, &b, &n); err != nil {
			return fmt.Errorf("metrics snapshot: %w", err)
		}
		switch {
		case kind == "dlq":
			s.DLQ = append(s.DLQ, DLQCount{Status: a, SourceQueue: b, Rows: n})
		case kind == "oldest" && n > 0 && (s.OldestPendingFailedAt == 0 || n < s.OldestPendingFailedAt):
			s.OldestPendingFailedAt = n
		case kind == "captured" && n > 0:
			s.addCounter(CapturedTotal, n)
		case kind == "counter":
			s.addCounter(a, n)
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("metrics snapshot: %w", err)
	}
	return nil
}

// addCounter adds n to the counter name.
func (s *Snapshot) addCounter(name string, n int64) {
	if s.Counters == nil {
		s.Counters = map[string]int64{}
	}
	s.Counters[name] += n
}
