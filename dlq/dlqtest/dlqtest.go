// Package dlqtest holds the helpers the tests of dlq's rooms share: counts
// read from a SQLite database, the tally and activity checks, a clock that
// moves only when told, a database that fails like an unavailable D1, and
// a job run recorded as the cron router records it.
package dlqtest

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redrive/redrive/config"
	"github.com/redrive/redrive/internal/sqlitetest"
	"github.com/redrive/redrive/metrics"
)

// SchemaFile returns a file database with schema.sql applied and its DSN,
// for a test that opens it a second time through a wrapping driver.
func SchemaFile(t *testing.T) (*sql.DB, string) {
	t.Helper()
	dsn := "file:" + filepath.Join(t.TempDir(), "db.sqlite") + "?_pragma=busy_timeout(5000)"
	plain, err := sql.Open("sqlite", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { plain.Close() })
	root, _ := sqlitetest.Root()
	schema, err := os.ReadFile(filepath.Join(root, "schema.sql"))
	if err != nil {
		t.Fatal(err)
	}
	MustExec(t, plain, string(schema))
	return plain, dsn
}

// FlakyDB returns a SQLite database twice: plain, and through a driver whose
// statements fail (like an unavailable D1) once ok statements have run; and
// the number of statements the flaky one was asked to run.
func FlakyDB(t *testing.T, ok int64) (*sql.DB, *sql.DB, *atomic.Int64) {
	t.Helper()
	plain, dsn := SchemaFile(t)
	stmts := &atomic.Int64{}
	flaky := sql.OpenDB(flakyConnector{drv: plain.Driver(), dsn: dsn, ok: ok, n: stmts})
	t.Cleanup(func() { flaky.Close() })
	return plain, flaky, stmts
}

type flakyConnector struct {
	drv driver.Driver
	dsn string
	ok  int64
	n   *atomic.Int64
}

func (c flakyConnector) Connect(context.Context) (driver.Conn, error) {
	conn, err := c.drv.Open(c.dsn)
	if err != nil {
		return nil, err
	}
	return &flakyConn{Conn: conn, c: c}, nil
}

func (c flakyConnector) Driver() driver.Driver { return c.drv }

// flakyConn counts D1 round trips and fails every one after the first ok:
// a statement, or a transaction (how sqlbatch.Tx runs what the worker sends
// as one D1 batch) as a whole.
type flakyConn struct {
	driver.Conn
	c    flakyConnector
	inTx bool
}

func (f *flakyConn) trip() error {
	if f.c.n.Add(1) > f.c.ok {
		return errors.New("D1_ERROR: Network connection lost")
	}
	return nil
}

func (f *flakyConn) Prepare(query string) (driver.Stmt, error) {
	if !f.inTx {
		if err := f.trip(); err != nil {
			return nil, err
		}
	}
	return f.Conn.Prepare(query)
}

func (f *flakyConn) Begin() (driver.Tx, error) {
	if err := f.trip(); err != nil {
		return nil, err
	}
	tx, err := f.Conn.Begin() //nolint:staticcheck // the wrapped driver's Begin is what database/sql calls
	if err != nil {
		return nil, err
	}
	f.inTx = true
	return flakyTx{tx, f}, nil
}

type flakyTx struct {
	driver.Tx
	f *flakyConn
}

func (t flakyTx) Commit() error { t.f.inTx = false; return t.Tx.Commit() }

func (t flakyTx) Rollback() error { t.f.inTx = false; return t.Tx.Rollback() }

// Count runs query, which counts something, and returns the count.
func Count(t *testing.T, db *sql.DB, query string, args ...any) int64 {
	t.Helper()
	var n int64
	if err := db.QueryRow(query, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return n
}

// Counter is the value of the durable counter name (0 when unset).
func Counter(t *testing.T, db *sql.DB, name string) int64 {
	return Count(t, db, `SELECT COALESCE((SELECT value FROM counters WHERE name = ?), 0)`, name)
}

// TaskClock is a test clock that moves only when told (as the Workers
// runtime's clock moves only across I/O).
type TaskClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *TaskClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Set moves the clock to t.
func (c *TaskClock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}

// Add moves the clock on by d.
func (c *TaskClock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// RunRecorded runs job at now and records the run in job_runs, as the cron
// router does: the next run reads its backlog state from there.
func RunRecorded(t *testing.T, job interface {
	Name() string
	Run(context.Context, time.Time) (map[string]any, error)
}, db *sql.DB, now time.Time) map[string]any {
	t.Helper()
	sum, err := job.Run(context.Background(), now)
	if rerr := (metrics.JobRuns{DB: db}).RecordRun(context.Background(), job.Name(), now, time.Second, err, sum); rerr != nil {
		t.Fatal(rerr)
	}
	if err != nil {
		t.Fatalf("run at %s: %v (summary %v)", now, err, sum)
	}
	return sum
}

// MustExec runs query and fails the test on an error.
func MustExec(t *testing.T, db *sql.DB, query string, args ...any) {
	t.Helper()
	if _, err := db.Exec(query, args...); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
}

// TallyRows reads dlq_tally without its zero counts.
func TallyRows(t *testing.T, db *sql.DB) map[string]int64 {
	t.Helper()
	return Keyed(t, db, `SELECT status || '|' || source_queue || '|' || label_key, n FROM dlq_tally WHERE n <> 0`)
}

// WantTally counts dlq_tally's rows from dlq_messages.
func WantTally(t *testing.T, db *sql.DB) map[string]int64 {
	t.Helper()
	return Keyed(t, db, `SELECT status || '|' || source_queue || '|' || CASE WHEN status = 'pending' AND label_2 IS NOT NULL THEN '=' || label_2 ELSE '' END, COUNT(*)
		FROM dlq_messages GROUP BY 1`)
}

// ActivityRows reads dlq_activity's row counts (n) of the hours from hour on,
// per kind, hour and source queue.
func ActivityRows(t *testing.T, db *sql.DB, hour int64) map[string]int64 {
	t.Helper()
	return Keyed(t, db, `SELECT kind || '@' || hour || '@' || source_queue, n FROM dlq_activity WHERE n <> 0 AND hour >= ?`, hour)
}

// WantActivity counts dlq_activity's n from dlq_messages, from hour on.
func WantActivity(t *testing.T, db *sql.DB, hour int64) map[string]int64 {
	t.Helper()
	return Keyed(t, db, `SELECT k, COUNT(*) FROM (
			SELECT 'failed@' || (failed_at / 3600000) || '@' || source_queue AS k, failed_at / 3600000 AS h FROM dlq_messages
			UNION ALL SELECT 'replayed@' || (replayed_at / 3600000) || '@' || source_queue, replayed_at / 3600000 FROM dlq_messages WHERE status = 'replayed' AND replayed_at IS NOT NULL
			UNION ALL SELECT 'acknowledged@' || (acknowledged_at / 3600000) || '@' || source_queue, acknowledged_at / 3600000 FROM dlq_messages WHERE status = 'acknowledged' AND acknowledged_at IS NOT NULL)
		WHERE h >= ? GROUP BY k`, hour)
}

// Keyed runs query, whose rows are a key and a count, and returns them as a map.
func Keyed(t *testing.T, db *sql.DB, query string, args ...any) map[string]int64 {
	t.Helper()
	rows, err := db.Query(query, args...)
	if err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	defer rows.Close()
	out := map[string]int64{}
	for rows.Next() {
		var k string
		var n int64
		if err := rows.Scan(&k, &n); err != nil {
			t.Fatal(err)
		}
		out[k] = n
	}
	return out
}

// CheckCounts fails unless dlq_tally, and dlq_activity from hour on, match the rows.
func CheckCounts(t *testing.T, db *sql.DB, hour int64, step string) {
	t.Helper()
	if got, want := TallyRows(t, db), WantTally(t, db); !reflect.DeepEqual(got, want) {
		t.Fatalf("after %s: dlq_tally\n got %v\nwant %v", step, got, want)
	}
	if got, want := ActivityRows(t, db, hour), WantActivity(t, db, hour); !reflect.DeepEqual(got, want) {
		t.Fatalf("after %s: dlq_activity\n got %v\nwant %v", step, got, want)
	}
}

// NewTaskClock returns a TaskClock at t.
func NewTaskClock(t time.Time) *TaskClock { return &TaskClock{t: t} }

// HistoryOf reads the history (as E entries), dropped count, signature and
// version of the row where is true of.
func HistoryOf[E any](t *testing.T, db *sql.DB, where string, args ...any) (entries []E, dropped int64, sig, version string) {
	t.Helper()
	var h, s, v *string
	if err := db.QueryRow(`SELECT history, history_dropped, signature, version FROM dlq_messages WHERE `+where, args...).Scan(&h, &dropped, &s, &v); err != nil {
		t.Fatal(err)
	}
	if h != nil {
		if err := json.Unmarshal([]byte(*h), &entries); err != nil {
			t.Fatalf("history %s: %v", *h, err)
		}
	}
	if s != nil {
		sig = *s
	}
	if v != nil {
		version = *v
	}
	return entries, dropped, sig, version
}

// Row is a dlq_messages row for seeding tests; zero times are NULL.
type Row struct {
	MsgID, Key, Status          string
	FailedAt, AckAt, ReplayedAt time.Time
	ReplayingAt                 time.Time
	ReplayCount                 int
}

func ms(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UnixMilli()
}

// Seed inserts rows into dlq_messages.
func Seed(t *testing.T, db *sql.DB, rows ...Row) {
	t.Helper()
	for _, r := range rows {
		_, err := db.Exec(`INSERT INTO dlq_messages(message_id, row_key, status, failed_at, acknowledged_at, replayed_at, replaying_at, replay_count, last_message_id)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`, r.MsgID, r.Key, r.Status, r.FailedAt.UnixMilli(), ms(r.AckAt), ms(r.ReplayedAt), ms(r.ReplayingAt), r.ReplayCount, r.MsgID)
		if err != nil {
			t.Fatal(err)
		}
	}
}

// FakeClock returns t and then advances it by step on every call.
type FakeClock struct {
	T    time.Time
	Step time.Duration
}

func (c *FakeClock) Now() time.Time {
	now := c.T
	c.T = c.T.Add(c.Step)
	return now
}

// AdminRow is a dlq_messages row to insert in the admin API tests.
type AdminRow struct {
	Key, Label1, Label2, Source, Status, Reason, Raw string
	FailedAt, ReplayCount                            int64
	Encoding                                         string
	// ContentType is stored as given; empty leaves it NULL (a row captured
	// before content types were recorded).
	ContentType string
}

// Insert adds rows and returns their ids in order.
func Insert(t *testing.T, db *sql.DB, rows ...AdminRow) []int64 {
	t.Helper()
	ids := make([]int64, len(rows))
	for i, r := range rows {
		if r.Source == "" {
			r.Source = "beer-enrichment"
		}
		if r.Status == "" {
			r.Status = "pending"
		}
		if r.Encoding == "" {
			r.Encoding = "text"
		}
		if r.Raw == "" {
			r.Raw = fmt.Sprintf(`{"beer_id":%q,"beer_name":%q,"brewer":%q}`, r.Key, r.Label1, r.Label2)
		}
		var label1, label2, reason, ct any
		if r.ContentType != "" {
			ct = r.ContentType
		}
		if r.Label1 != "" {
			label1 = r.Label1
		}
		if r.Label2 != "" {
			label2 = r.Label2
		}
		if r.Reason != "" {
			reason = r.Reason
		}
		err := db.QueryRow(`INSERT INTO dlq_messages(message_id, row_key, label_1, label_2, failed_at, failure_reason,
				source_queue, status, replay_count, raw_message, raw_encoding, content_type, first_failed_at, updated_at)
			VALUES (lower(hex(randomblob(8))), ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`,
			r.Key, label1, label2, r.FailedAt, reason, r.Source, r.Status, r.ReplayCount, r.Raw, r.Encoding, ct, r.FailedAt, r.FailedAt).Scan(&ids[i])
		if err != nil {
			t.Fatalf("insert: %v", err)
		}
	}
	return ids
}

// Generate inserts n pending rows in one statement (as the e2e tests do):
// row_key gen-<i>, label_1 <prefix>-<i>, failed_at base - (i / ties) so
// that groups of ties rows share failed_at.
func Generate(t *testing.T, db *sql.DB, prefix string, n, ties int, base int64) {
	t.Helper()
	_, err := db.Exec(`INSERT INTO dlq_messages(message_id, row_key, label_1, label_2, failed_at, failure_reason,
			source_queue, raw_message, first_failed_at, updated_at)
		WITH RECURSIVE seq(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM seq WHERE i + 1 < ?1)
		SELECT ?2 || '-m-' || i, 'gen-' || i, printf('%s-%05d', ?2, i), 'Brewer ' || (i % 7), ?3 - (i / CAST(?4 AS INTEGER)),
			'reason ' || (i % 3), 'beer-enrichment',
			json_object('beer_id', 'gen-' || i, 'beer_name', printf('%s-%05d', ?2, i)), ?3, ?3
		FROM seq`, n, prefix, base, ties)
	if err != nil {
		t.Fatalf("generate: %v", err)
	}
}

// FixedClock is a clock that always reads the same time.
func FixedClock() time.Time { return time.UnixMilli(1_750_000_000_000) }

// PipelinesJSON is the e2e environment's pipelines, with a third one
// whose key is escaped (RFC 6901 ~0 and ~1) and labels reversed.
const PipelinesJSON = `[
{"name":"beers","queue":"beer-enrichment","dlq":"beer-enrichment-dlq","producer":"ENRICHMENT_QUEUE","key":"/beer_id","labels":[{"name":"beer_name","pointer":"/beer_name"},{"name":"brewer","pointer":"/brewer"}],"consumer":"redrive"},
{"name":"orders","queue":"orders","dlq":"orders-dlq","producer":"ORDERS","key":"/order/id","labels":[{"name":"customer","pointer":"/order/customer"}],"consumer":"external","alert_pending_threshold":2,"alert_oldest_hours":1,"retention_days":2},
{"name":"odd","queue":"odd","dlq":"odd-dlq","producer":"ODD","key":"/a~1b/~0","labels":[{"name":"second","pointer":"/2"},{"name":"first","pointer":"/1"}],"consumer":"external"}]`

// Pipelines returns the pipelines of PipelinesJSON, for a test to give
// what it builds (there is no package-wide configuration to set).
func Pipelines(t testing.TB) []config.Pipeline {
	t.Helper()
	ps, problems := config.ParsePipelines(PipelinesJSON, 100, 24*3600e9, 30*24*3600e9)
	if len(problems) != 0 || len(ps) != 3 {
		t.Fatalf("pipelines %v %v", ps, problems)
	}
	return ps
}
