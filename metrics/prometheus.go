package metrics

import (
	"bufio"
	"context"
	"database/sql"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
)

// ExpiredLeftCountMax is where retention jobs stop counting the expired
// rows they leave behind (expired_left in their summary, the
// redrive_retention_expired_left gauge; see upkeep.ExpiredLeftCountMax).
const ExpiredLeftCountMax = 100_000

// ContentType is the Prometheus text exposition format's media type.
const ContentType = "text/plain; version=0.0.4; charset=utf-8"

// Snapshot is everything /admin/metrics reports, read from D1 in one query.
type Snapshot struct {
	// DLQ counts dlq_messages rows by status and source queue.
	DLQ []DLQCount
	// Pipelines names the configured pipeline of each main queue (var
	// PIPELINES): its rows' samples carry a pipeline label. Not read from D1.
	Pipelines map[string]string
	// OldestPendingFailedAt is the failed_at (epoch ms) of the oldest pending row; 0 when none.
	OldestPendingFailedAt int64
	// Counters is every row of the counters table.
	Counters map[string]int64
	// Alerts is every row of alert_state.
	Alerts []AlertState
	// Jobs is every row of job_runs.
	Jobs []JobRun
	// Gauges holds each declared gauge's value (DeclareGauge), by name;
	// a gauge whose SQL gave NULL is absent.
	Gauges map[string]int64
	// D1 is the flushed D1 usage by operation (see Meter).
	D1 map[string]Usage
}

// DLQCount is the number of DLQ rows with one status from one source queue.
type DLQCount struct {
	Status, SourceQueue string
	Rows                int64
}

// AlertState is whether an alert condition is firing.
type AlertState struct {
	Name   string
	Firing bool
}

// JobRun is a scheduled job's last run and its totals.
type JobRun struct {
	Job                     string
	LastRunAt, LastDuration int64 // epoch ms, ms
	LastOK                  bool
	Runs, Failures          int64
	// LastMore is the last run's "more": it left work for the next run.
	LastMore bool
	// ExpiredLeft is a retention job's last "expired_left": expired rows
	// still there after its last run, counted up to a cap (see
	// upkeep.ExpiredLeftCountMax); -1 for jobs that do not report it.
	ExpiredLeft int64
}

// ReadSnapshot reads the snapshot with one statement (a UNION ALL of small
// aggregates), not one query per metric. D1 allows at most 5 terms in a
// compound SELECT (SQLite's default is 500, so native tests do not notice):
// single values go into the columns of the one 'scalars' row instead of
// terms of their own, and the counters (the counters table,
// dlq_captured_total, the D1 usage) and the declared gauges are one term of
// their own compound.
// Nothing here reads dlq_messages beyond one index entry: the row counts are
// dlq_tally's (migrations/0012), so a scrape costs the same at any backlog.
func ReadSnapshot(ctx context.Context, db *sql.DB) (Snapshot, error) {
	gs := declaredGauges()
	rows, err := db.QueryContext(ctx, `
		SELECT 'dlq' AS kind, status AS a, source_queue AS b, SUM(n) AS n1, 0 AS n2, 0 AS n3, 0 AS n4, 0 AS n5,
			0 AS n6, 0 AS n7
			FROM dlq_tally GROUP BY status, source_queue HAVING SUM(n) <> 0
		UNION ALL SELECT 'scalars', '', '', COALESCE((SELECT MIN(failed_at) FROM dlq_messages WHERE status = 'pending'), 0),
			0, 0, 0, 0, 0, 0
		UNION ALL SELECT * FROM (
			SELECT 'counter', name, '', value, 0, 0, 0, 0, 0, 0 FROM counters
			UNION ALL SELECT 'counter', '`+CapturedTotal+`', '', SUM(events), 0, 0, 0, 0, 0, 0 FROM dlq_activity WHERE kind = 'failed' HAVING COUNT(*) > 0
			UNION ALL SELECT 'd1', j.key, '', j.value ->> 0, j.value ->> 1, j.value ->> 2, 0, 0, 0, 0 FROM d1_usage, json_each(d1_usage.ops) AS j`+
		gaugesTerm(gs)+`)
		UNION ALL SELECT 'alert', name, '', firing, 0, 0, 0, 0, 0, 0 FROM alert_state
		UNION ALL SELECT 'job', job, '', last_run_at, last_duration_ms, last_ok, runs, failures,
			CASE WHEN json_valid(last_summary) THEN COALESCE(last_summary ->> '$.more', 0) = 1 ELSE 0 END,
			CASE WHEN json_valid(last_summary) THEN COALESCE(CAST(last_summary ->> '$.expired_left' AS INTEGER), -1) ELSE -1 END
			FROM job_runs`)
	if err != nil {
		return Snapshot{}, fmt.Errorf("metrics snapshot: %w", err)
	}
	defer rows.Close()
	s := Snapshot{Counters: map[string]int64{}, D1: map[string]Usage{}, Gauges: map[string]int64{}}
	for rows.Next() {
		var kind, a, b string
		var n1, n2, n3, n4, n5, n6, n7 int64
		if err := rows.Scan(&kind, &a, &b, &n1, &n2, &n3, &n4, &n5, &n6, &n7); err != nil {
			return Snapshot{}, fmt.Errorf("metrics snapshot: %w", err)
		}
		switch kind {
		case "dlq":
			s.DLQ = append(s.DLQ, DLQCount{Status: a, SourceQueue: b, Rows: n1})
		case "scalars":
			s.OldestPendingFailedAt = n1
		case "gauge":
			s.Gauges[a] = n1
		case "counter":
			s.Counters[a] = n1
		case "d1":
			s.D1[a] = Usage{Statements: n1, RowsRead: n2, RowsWritten: n3}
		case "alert":
			s.Alerts = append(s.Alerts, AlertState{Name: a, Firing: n1 != 0})
		case "job":
			s.Jobs = append(s.Jobs, JobRun{Job: a, LastRunAt: n1, LastDuration: n2, LastOK: n3 != 0, Runs: n4, Failures: n5,
				LastMore: n6 != 0, ExpiredLeft: n7})
		}
	}
	if err := rows.Err(); err != nil {
		return Snapshot{}, fmt.Errorf("metrics snapshot: %w", err)
	}
	return s, nil
}

// MetricName turns a counters-table name into a Prometheus metric name:
// redrive_ prefix, every character but [a-zA-Z0-9_:] replaced by '_'.
func MetricName(counter string) string {
	return "redrive_" + strings.Map(func(r rune) rune {
		if 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || r == '_' || r == ':' {
			return r
		}
		return '_'
	}, counter)
}

// dlqStatuses are always reported for every source queue seen, zeros included.
var dlqStatuses = []string{"pending", "replaying", "replayed", "acknowledged"}

// WritePrometheus renders s in the Prometheus text format (version 0.0.4),
// with HELP and TYPE lines, at now (for ages).
func WritePrometheus(out io.Writer, s Snapshot, now time.Time) error {
	w := promWriter{bufio.NewWriter(out)}
	w.writeDLQ(s, now)
	w.writeCounters(s)
	w.writeD1(s)
	w.writeGauges(s)
	w.writeAlerts(s)
	w.writeJobs(s)
	return w.Flush()
}

// promWriter writes the Prometheus text format to a buffered writer; the
// first write error is kept by the bufio.Writer and returned by Flush.
type promWriter struct{ *bufio.Writer }

// family writes the HELP and TYPE lines of metric name.
func (w promWriter) family(name, typ, text string) {
	fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s %s\n", name, escapeHelp(text), name, typ)
}

// sample writes one sample line of metric name with value v and labels
// given as name, value pairs (values escaped).
func (w promWriter) sample(name string, v float64, labels ...string) {
	w.WriteString(name)
	if len(labels) > 0 {
		w.WriteByte('{')
		for i := 0; i < len(labels); i += 2 {
			if i > 0 {
				w.WriteByte(',')
			}
			fmt.Fprintf(w, "%s=\"%s\"", labels[i], escapeLabel(labels[i+1]))
		}
		w.WriteByte('}')
	}
	w.WriteByte(' ')
	w.WriteString(strconv.FormatFloat(v, 'f', -1, 64))
	w.WriteByte('\n')
}

// writeDLQ writes s.DLQ's row counts (every known status for every source
// queue present, zeros included, labelled with s.Pipelines) and the age of
// the oldest pending row at now.
func (w promWriter) writeDLQ(s Snapshot, now time.Time) {
	// DLQ rows: every known status for every source queue present.
	counts := map[[2]string]int64{}
	sources := map[string]bool{}
	statuses := append([]string(nil), dlqStatuses...)
	for _, c := range s.DLQ {
		counts[[2]string{c.SourceQueue, c.Status}] += c.Rows
		sources[c.SourceQueue] = true
		if !slices.Contains(statuses, c.Status) {
			statuses = append(statuses, c.Status)
		}
	}
	w.family("redrive_dlq_messages", "gauge", "DLQ rows (dlq_messages) by status and source queue, and pipeline when one names the queue.")
	for _, src := range slices.Sorted(maps.Keys(sources)) {
		for _, st := range statuses {
			labels := []string{"source_queue", src, "status", st}
			if p, ok := s.Pipelines[src]; ok {
				labels = append([]string{"pipeline", p}, labels...)
			}
			w.sample("redrive_dlq_messages", float64(counts[[2]string{src, st}]), labels...)
		}
	}
	w.family("redrive_dlq_oldest_pending_age_seconds", "gauge", "Seconds since the oldest pending DLQ row failed (0 when none is pending).")
	age := 0.0
	if s.OldestPendingFailedAt > 0 {
		age = max(0, float64(now.UnixMilli()-s.OldestPendingFailedAt)/1000)
	}
	w.sample("redrive_dlq_oldest_pending_age_seconds", age)
}

// writeCounters writes s.Counters, one counter family each, sorted by name.
func (w promWriter) writeCounters(s Snapshot) {
	for _, n := range slices.Sorted(maps.Keys(s.Counters)) {
		text, ok := Declared(n)
		if !ok {
			text = "Counter " + n + " (counters table)."
		}
		w.family(MetricName(n), "counter", text)
		w.sample(MetricName(n), float64(s.Counters[n]))
	}
}

// writeD1 writes s.D1's rows read, rows written and statements by
// operation, when there are any.
func (w promWriter) writeD1(s Snapshot) {
	if len(s.D1) == 0 {
		return
	}
	ops := slices.Sorted(maps.Keys(s.D1))
	for _, f := range []struct {
		name, help string
		v          func(Usage) int64
	}{
		{"redrive_d1_rows_read_total", "D1 rows read (what D1 bills) by the statements of each operation: HTTP route, queue, cron job.", func(u Usage) int64 { return u.RowsRead }},
		{"redrive_d1_rows_written_total", "D1 rows written (what D1 bills; every index entry counts) by the statements of each operation.", func(u Usage) int64 { return u.RowsWritten }},
		{"redrive_d1_statements_total", "D1 statements run by each operation.", func(u Usage) int64 { return u.Statements }},
	} {
		w.family(f.name, "counter", f.help)
		for _, op := range ops {
			w.sample(f.name, float64(f.v(s.D1[op])), "op", op)
		}
	}
}

// writeGauges writes the declared gauges present in s.Gauges, scaled.
func (w promWriter) writeGauges(s Snapshot) {
	for _, g := range declaredGauges() {
		v, ok := s.Gauges[g.Name]
		if !ok {
			continue
		}
		scale := g.Scale
		if scale == 0 {
			scale = 1
		}
		w.family("redrive_"+g.Name, "gauge", g.Help)
		w.sample("redrive_"+g.Name, float64(v)*scale)
	}
}

// writeAlerts writes whether each of s.Alerts is firing, when there are any.
func (w promWriter) writeAlerts(s Snapshot) {
	if len(s.Alerts) > 0 {
		w.family("redrive_alert_firing", "gauge", "1 while the alert condition is firing, 0 once resolved (alert_state).")
		for _, a := range s.Alerts {
			w.sample("redrive_alert_firing", b2f(a.Firing), "alert", a.Name)
		}
	}
}

// writeJobs writes the last run of each of s.Jobs (when there are any) and
// the expired rows the retention jobs left behind.
func (w promWriter) writeJobs(s Snapshot) {
	if len(s.Jobs) == 0 {
		return
	}
	type jf struct {
		name, typ, help string
		v               func(JobRun) float64
	}
	for _, f := range []jf{
		{"redrive_job_last_run_timestamp_seconds", "gauge", "Scheduled time of the job's last run (Unix seconds).", func(j JobRun) float64 { return float64(j.LastRunAt) / 1000 }},
		{"redrive_job_last_duration_seconds", "gauge", "Wall time of the job's last run.", func(j JobRun) float64 { return float64(j.LastDuration) / 1000 }},
		{"redrive_job_last_success", "gauge", "1 when the job's last run succeeded, 0 when it failed.", func(j JobRun) float64 { return b2f(j.LastOK) }},
		{"redrive_job_last_more", "gauge", "1 when the job's last run ran out of budget with work left (its next run continues; retention jobs are then continued by the 5-minute cron), 0 when it finished.", func(j JobRun) float64 { return b2f(j.LastMore) }},
		{"redrive_job_runs_total", "counter", "Runs of the job.", func(j JobRun) float64 { return float64(j.Runs) }},
		{"redrive_job_failures_total", "counter", "Failed runs of the job.", func(j JobRun) float64 { return float64(j.Failures) }},
	} {
		w.family(f.name, f.typ, f.help)
		for _, j := range s.Jobs {
			w.sample(f.name, f.v(j), "job", j.Job)
		}
	}
	first := true
	for _, j := range s.Jobs {
		if j.ExpiredLeft < 0 {
			continue
		}
		if first {
			w.family("redrive_retention_expired_left", "gauge", "Rows past their retention that the retention job's last run left behind "+
				"(DLQ rows for dlq_retention, audit records for audit_retention): counted up to "+strconv.Itoa(ExpiredLeftCountMax)+
				" when the run ran out of budget (that value means at least as many), 0 when it finished.")
			first = false
		}
		w.sample("redrive_retention_expired_left", float64(j.ExpiredLeft), "job", j.Job)
	}
}

func escapeHelp(s string) string {
	return strings.NewReplacer(`\`, `\\`, "\n", `\n`).Replace(s)
}

func escapeLabel(s string) string {
	return strings.NewReplacer(`\`, `\\`, "\n", `\n`, `"`, `\"`).Replace(s)
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
