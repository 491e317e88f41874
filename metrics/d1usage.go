package metrics

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/redrive/redrive/clock"
)

// Usage is what D1 bills for statements: the rows they read and wrote
// (every index entry a write touches is a row written), with their number.
type Usage struct {
	Statements  int64 `json:"statements"`
	RowsRead    int64 `json:"rows_read"`
	RowsWritten int64 `json:"rows_written"`
}

func (u *Usage) add(o Usage) {
	u.Statements += o.Statements
	u.RowsRead += o.RowsRead
	u.RowsWritten += o.RowsWritten
}

// Operation names: one per HTTP route pattern ("GET /admin/dlq"), per queue
// ("queue beer-enrichment-dlq"), per cron job ("cron dlq_rescue"). Statements
// run outside any operation count as OpOther; the meter's own flush as OpMeter.
const (
	OpOther = "other"
	OpMeter = "d1_usage"
)

// QueueOp and CronOp name the operation of a queue batch and of a cron job.
func QueueOp(queue string) string { return "queue " + queue }
func CronOp(job string) string    { return "cron " + job }

// Operation is one run of something redrive does (a request, a queue batch,
// a cron job): the D1 usage of every statement run with its context.
type Operation struct {
	Name string

	mu    sync.Mutex
	usage Usage
}

type operationKey struct{}

// Start returns ctx carrying a new operation called name: statements run
// with it are added to it (Meter.Observe).
func Start(ctx context.Context, name string) (context.Context, *Operation) {
	op := &Operation{Name: name}
	return context.WithValue(ctx, operationKey{}, op), op
}

// OperationOf returns ctx's operation, nil when there is none.
func OperationOf(ctx context.Context) *Operation {
	op, _ := ctx.Value(operationKey{}).(*Operation)
	return op
}

// Usage returns what the operation's statements used so far (zero for nil).
func (o *Operation) Usage() Usage {
	if o == nil {
		return Usage{}
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.usage
}

// LogAttrs are the operation's usage as log attributes
// (d1_rows_read, d1_rows_written, d1_statements).
func (o *Operation) LogAttrs() []any {
	u := o.Usage()
	return []any{"d1_rows_read", u.RowsRead, "d1_rows_written", u.RowsWritten, "d1_statements", u.Statements}
}

// DefaultFlushInterval is Meter.Interval's default (D1_USAGE_FLUSH_SECONDS).
const DefaultFlushInterval = time.Minute

// Meter counts D1's rows read and written per operation. Observe is the D1
// driver's observer (platform.OpenD1): every statement's usage goes to its
// operation and to this isolate's totals. Flush adds those totals to the
// d1_usage row, at most once per Interval, in one statement (one row
// written however many operations ran), piggy-backed on whatever operation
// calls it; /admin/metrics exports the sums as
// redrive_d1_rows_read_total{op=...} and redrive_d1_rows_written_total{op=...}.
// An isolate that is evicted loses what it had not flushed yet: at most one
// Interval of its operations.
type Meter struct {
	DB *sql.DB
	// Interval is the least time between two flushes; 0 flushes after every
	// operation (the e2e budget tests use that).
	Interval time.Duration
	Log      *slog.Logger
	// Now is the clock; time.Now when nil.
	Clock clock.Clock

	mu       sync.Mutex
	pending  map[string]Usage
	last     time.Time
	flushing bool
}

// Observe adds one statement's usage to ctx's operation and to the totals.
func (m *Meter) Observe(ctx context.Context, u Usage) {
	name := OpOther
	if op := OperationOf(ctx); op != nil {
		op.mu.Lock()
		op.usage.add(u)
		op.mu.Unlock()
		name = op.Name
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.pending == nil {
		m.pending = map[string]Usage{}
	}
	p := m.pending[name]
	p.add(u)
	m.pending[name] = p
}

// Pending returns the totals not flushed yet, by operation.
func (m *Meter) Pending() map[string]Usage {
	m.mu.Lock()
	defer m.mu.Unlock()
	return maps.Clone(m.pending)
}

// flushSQL adds the JSON object ?1 ({op: [statements, rows_read,
// rows_written]}) to the one d1_usage row.
const flushSQL = `INSERT INTO d1_usage(id, ops) VALUES (1, json(?1))
	ON CONFLICT(id) DO UPDATE SET ops = (
		SELECT json_group_object(op, json_array(s, r, w)) FROM (
			SELECT op, SUM(s) AS s, SUM(r) AS r, SUM(w) AS w FROM (
				SELECT key AS op, value ->> 0 AS s, value ->> 1 AS r, value ->> 2 AS w FROM json_each(d1_usage.ops)
				UNION ALL SELECT key, value ->> 0, value ->> 1, value ->> 2 FROM json_each(excluded.ops))
			GROUP BY op))`

// Flush writes the totals when Interval has passed since the last flush
// (and there is something to write). A failed flush keeps its totals for
// the next one; its error is logged and returned.
func (m *Meter) Flush(ctx context.Context) error {
	if m == nil || m.DB == nil {
		return nil
	}
	now := m.Clock.Now()
	m.mu.Lock()
	if m.flushing || len(m.pending) == 0 || (!m.last.IsZero() && now.Sub(m.last) < m.Interval) {
		m.mu.Unlock()
		return nil
	}
	batch := m.pending
	m.pending, m.flushing, m.last = nil, true, now
	m.mu.Unlock()

	ops := make(map[string][3]int64, len(batch))
	for _, name := range slices.Sorted(maps.Keys(batch)) {
		u := batch[name]
		ops[name] = [3]int64{u.Statements, u.RowsRead, u.RowsWritten}
	}
	js, err := json.Marshal(ops)
	if err == nil {
		fctx, _ := Start(context.WithoutCancel(ctx), OpMeter)
		_, err = m.DB.ExecContext(fctx, flushSQL, string(js))
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.flushing = false
	if err != nil {
		for name, u := range batch {
			p := m.pending[name]
			p.add(u)
			if m.pending == nil {
				m.pending = map[string]Usage{}
			}
			m.pending[name] = p
		}
		if m.Log != nil {
			m.Log.WarnContext(ctx, "metrics: could not write D1 usage; kept for the next flush", "error", err.Error())
		}
		return fmt.Errorf("d1 usage flush: %w", err)
	}
	return nil
}

// ReadD1Usage returns the flushed totals by operation.
func ReadD1Usage(ctx context.Context, db *sql.DB) (map[string]Usage, error) {
	rows, err := db.QueryContext(ctx, `SELECT j.key AS op, j.value ->> 0 AS statements,
		j.value ->> 1 AS rows_read, j.value ->> 2 AS rows_written FROM d1_usage, json_each(d1_usage.ops) AS j`)
	if err != nil {
		return nil, fmt.Errorf("d1 usage: %w", err)
	}
	defer rows.Close()
	out := map[string]Usage{}
	for rows.Next() {
		var name string
		var u Usage
		if err := rows.Scan(&name, &u.Statements, &u.RowsRead, &u.RowsWritten); err != nil {
			return nil, fmt.Errorf("d1 usage: %w", err)
		}
		out[name] = u
	}
	return out, rows.Err()
}
