package dlq

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/redrive/redrive/config"
)

// Databases are the D1 databases the DLQ rows live in: the shared one
// (config.SharedDatabase) and one per binding a pipeline names as its
// `database`. Each holds the whole schema; a pipeline's rows,
// attempts, groups, replay tasks, audit entries and kept counts live in its
// database, everything else (beers, jobs, alerts, queues no pipeline names)
// in the shared one. Views over every pipeline read each database and merge
// .
type Databases struct {
	// All are the databases, the shared one first, then by binding name.
	All []Database
	// byQueue maps a pipeline's main queue to its index in All (absent:
	// the shared one).
	byQueue map[string]int
	// queues are the configured pipelines' main queues.
	queues []string
	// absent remembers, per isolate, the databases found to hold no row of
	// a queue stored elsewhere (key: binding + "\x00" + queue): once such a
	// database is empty of it, nothing stores a row of it there again
	// until PIPELINES changes, which is a new deployment.
	absent *sync.Map
}

// Database is one D1 database: its binding name and its store.
type Database struct {
	// Name is the binding (config.SharedDatabase for the shared one).
	Name string
	Store
}

// NewDatabases builds the Databases of the pipelines ps: shared is the
// shared database, others the store of each other binding ps name (a
// pipeline naming a binding absent from others stays in shared; main.go
// turns such a pipeline off first).
func NewDatabases(shared Store, others map[string]Store, ps []config.Pipeline) Databases {
	lines := Pipelines(slices.Clone(ps)) // nil stays nil: the beer pipeline
	shared.Pipelines = lines
	d := Databases{All: []Database{{Name: config.SharedDatabase, Store: shared}}, byQueue: map[string]int{}, absent: &sync.Map{}}
	index := map[string]int{}
	for _, p := range ps {
		d.queues = append(d.queues, p.Queue)
		s, ok := others[p.Database]
		if p.Database == config.SharedDatabase || !ok {
			continue
		}
		i, seen := index[p.Database]
		if !seen {
			s.Pipelines = lines
			d.All = append(d.All, Database{Name: p.Database, Store: s})
			i = len(d.All) - 1
			index[p.Database] = i
		}
		d.byQueue[p.Queue] = i
	}
	return d
}

// Single is the Databases of one shared store (native tests, and every
// deployment whose pipelines name no database).
func Single(s Store) Databases {
	return Databases{All: []Database{{Name: config.SharedDatabase, Store: s}}, byQueue: map[string]int{}, absent: &sync.Map{}}
}

// Pipelines are the configured pipelines (those NewDatabases was given;
// nil for the zero Databases: the beer one).
func (d Databases) Pipelines() Pipelines {
	if len(d.All) == 0 {
		return nil
	}
	return d.All[0].Pipelines
}

// Shared is the shared database.
func (d Databases) Shared() Database { return d.All[0] }

// Many reports whether more than one database is bound: views over every
// pipeline then merge.
func (d Databases) Many() bool { return len(d.All) > 1 }

// OfQueue returns the database of source queue q's rows.
func (d Databases) OfQueue(q string) Database {
	if i, ok := d.byQueue[q]; ok {
		return d.All[i]
	}
	return d.All[0]
}

// Of implements Stores: the store of source queue q's rows.
func (d Databases) Of(q string) Store { return d.OfQueue(q).Store }

// OfPipeline returns the database of the configured pipeline named name
// ("" or an unknown name: the shared one; the services refuse an unknown
// name themselves).
func (d Databases) OfPipeline(name string) Database {
	if p, ok := d.Pipelines().ByName(name); ok {
		return d.OfQueue(p.Queue)
	}
	return d.All[0]
}

// IDBase is the first id a database's AUTOINCREMENT tables (dlq_messages,
// replay_tasks, admin_audit) count from, so ids of different databases
// never meet and an id names its row wherever it lives: 0 for the shared
// database, else k·2^40 with k in 1..4095 from the binding's name (at most
// 2^52, an exact JavaScript number and an exact D1 REAL). SeedIDs sets it.
func IDBase(binding string) int64 {
	if binding == config.SharedDatabase {
		return 0
	}
	h := fnv.New32a()
	h.Write([]byte(binding))
	return int64(h.Sum32()%4095+1) << 40
}

// IDRangeCollisions returns, for each of bindings whose id range (IDBase)
// is also another's, the others that share it, sorted: such bindings
// would give the same ids to different rows, and no action by id could
// reach them (IDS_IN_SEVERAL_DATABASES). Nil when every range is its own.
// cmd/migrate refuses to seed colliding bindings (d1migrate.Plan), and the
// worker turns off the pipelines that name one (main.go).
func IDRangeCollisions(bindings []string) map[string][]string {
	byBase := map[int64][]string{}
	seen := map[string]bool{}
	for _, b := range bindings {
		if seen[b] {
			continue
		}
		seen[b] = true
		byBase[IDBase(b)] = append(byBase[IDBase(b)], b)
	}
	var out map[string][]string
	for _, names := range byBase {
		if len(names) < 2 {
			continue
		}
		if out == nil {
			out = map[string][]string{}
		}
		for _, b := range names {
			for _, o := range names {
				if o != b {
					out[b] = append(out[b], o)
				}
			}
			sort.Strings(out[b])
		}
	}
	return out
}

// CheckIDRanges is an error naming the bindings that share an id range
// (IDRangeCollisions), nil when none does.
func CheckIDRanges(bindings []string) error {
	c := IDRangeCollisions(bindings)
	if len(c) == 0 {
		return nil
	}
	names := make([]string, 0, len(c))
	for b := range c {
		names = append(names, b)
	}
	sort.Strings(names)
	var pairs []string
	for _, b := range names {
		for _, o := range c[b] {
			if b < o {
				pairs = append(pairs, fmt.Sprintf("%s and %s (both from %d)", b, o, IDBase(b)))
			}
		}
	}
	return fmt.Errorf("D1 bindings share an id range, so their rows would get the same ids: %s; rename one binding of each pair",
		strings.Join(pairs, ", "))
}

// SeedIDsSQL is the statement that makes a database's AUTOINCREMENT tables
// count from IDBase(binding) (never back): run by `make migrate-local` and
// `make deploy` after the migrations.
func SeedIDsSQL(binding string) string {
	base := IDBase(binding)
	if base == 0 {
		return ""
	}
	return seedIDs(base)
}

// idTables are the tables whose AUTOINCREMENT ids the API names.
var idTables = []string{"dlq_messages", "replay_tasks", "admin_audit"}

func seedIDs(base int64) string {
	var b strings.Builder
	for _, t := range idTables {
		fmt.Fprintf(&b, "UPDATE sqlite_sequence SET seq = %d WHERE name = '%s' AND seq < %d;\n", base, t, base)
		fmt.Fprintf(&b, "INSERT INTO sqlite_sequence (name, seq) SELECT '%s', %d WHERE NOT EXISTS (SELECT 1 FROM sqlite_sequence WHERE name = '%s');\n", t, base, t)
	}
	return b.String()
}

// Named returns the bound database named name (400 UNKNOWN_DATABASE,
// naming the bound ones, otherwise).
func (d Databases) Named(name string) (Database, error) {
	var names []string
	for _, db := range d.All {
		if db.Name == name {
			return db, nil
		}
		names = append(names, db.Name)
	}
	sort.Strings(names)
	return Database{}, InputErr("UNKNOWN_DATABASE", "database must be a bound database (%s); got %q", strings.Join(names, ", "), ClipName(name))
}

// OfFilter returns the database of the rows a bulk filter selects: its
// pipeline's or its source queue's. With more than one database a filter
// naming neither is refused (400 PIPELINE_REQUIRED): a bulk action or a
// replay task runs in one database, atomically there. An unknown pipeline
// gives the shared database; the services refuse it themselves.
func (d Databases) OfFilter(f *Filter) (Database, error) {
	switch {
	case !d.Many():
		return d.Shared(), nil
	case f != nil && f.Pipeline != "":
		return d.OfPipeline(f.Pipeline), nil
	case f != nil && f.SourceQueue != "":
		return d.OfQueue(f.SourceQueue), nil
	}
	return Database{}, InputErr("PIPELINE_REQUIRED",
		"pipelines keep their rows in %d databases: a filter names its pipeline (or source_queue), one pipeline per request", len(d.All))
}

// OfSelection returns the database of a selection's rows (OfFilter, or
// Holding for its ids), for an action on them: ids of rows that lie in a
// database other than their pipeline's (a move under way) are refused
// (409 ROWS_MOVING, see Frozen).
func (d Databases) OfSelection(ctx context.Context, s Selection) (Database, error) {
	if s.IDs == nil {
		return d.OfFilter(s.Filter)
	}
	db, err := d.Holding(ctx, "dlq_messages", s.IDs)
	if err != nil || !d.Many() {
		return db, err
	}
	return db, d.CheckNotMoving(ctx, db, s.IDs)
}

// Frozen are the configured pipelines' queues whose rows in the database
// named name are frozen: those of pipelines stored in another database.
// Such rows lie there only while their pipeline moves (docs/operations.md):
// no action changes them (by id: 409 ROWS_MOVING; replay tasks, rescue and
// claims skip them) until they are imported into their pipeline's
// database, so that what an export copied stays what the old database
// holds, and every action reaches the one row that survives the move.
// Export, import, release and retention still read or delete them. Nil with
// one database.
func (d Databases) Frozen(name string) []string {
	if !d.Many() {
		return nil
	}
	var out []string
	for _, q := range d.queues {
		if d.OfQueue(q).Name != name {
			out = append(out, q)
		}
	}
	return out
}

// CheckNotMoving refuses (409 ROWS_MOVING) an action on rows ids of db
// when one of them belongs to a pipeline stored in another database
// (Frozen). It reads the rows it finds.
func (d Databases) CheckNotMoving(ctx context.Context, db Database, ids []int64) error {
	frozen := d.Frozen(db.Name)
	if len(frozen) == 0 {
		return nil
	}
	list, _ := json.Marshal(ids)
	var q sql.NullString
	err := db.DB.QueryRowContext(ctx, `SELECT source_queue FROM dlq_messages WHERE id IN (SELECT value FROM json_each(?))
		AND source_queue IN (SELECT value FROM json_each(?)) LIMIT 1`, string(list), JSONList(frozen)).Scan(&q)
	if errors.Is(err, sql.ErrNoRows) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("find moving rows: %w", err)
	}
	home := d.OfQueue(q.String).Name
	return &InputError{Status: http.StatusConflict, Code: "ROWS_MOVING",
		Message: fmt.Sprintf("rows of queue %s lie in database %s while their pipeline is stored in %s (a move under way): import them into %s (docs/operations.md, Move a pipeline to its own database), then act on them there",
			ClipName(q.String), db.Name, home, home)}
}

// Elsewhere returns the databases other than q's own that still hold rows
// of source queue q (a move under way). It asks each one whose emptiness of
// q it has not seen yet (dlq_tally, reading q's few count rows there) and
// remembers those that hold none.
func (d Databases) Elsewhere(ctx context.Context, q string) ([]Database, error) {
	if !d.Many() {
		return nil, nil
	}
	own := d.OfQueue(q).Name
	var out []Database
	for _, db := range d.All {
		key := db.Name + "\x00" + q
		if db.Name == own {
			continue
		}
		if d.absent != nil {
			if _, ok := d.absent.Load(key); ok {
				continue
			}
		}
		var held bool
		if err := db.DB.QueryRowContext(ctx, holdsQueueSQL, q).Scan(&held); err != nil {
			return nil, fmt.Errorf("find the rows of %s in %s: %w", q, db.Name, err)
		}
		if !held {
			if d.absent != nil {
				d.absent.Store(key, true)
			}
			continue
		}
		out = append(out, db)
	}
	return out, nil
}

// MovingInto returns the queues of the pipelines stored in the database
// named name whose rows still lie in another one (Elsewhere).
func (d Databases) MovingInto(ctx context.Context, name string) ([]string, error) {
	var out []string
	for _, q := range d.queues {
		if d.OfQueue(q).Name != name {
			continue
		}
		others, err := d.Elsewhere(ctx, q)
		if err != nil {
			return nil, err
		}
		if len(others) > 0 {
			out = append(out, q)
		}
	}
	return out, nil
}

// holdsQueueSQL says whether a database holds a row of source queue ?1:
// its kept counts (dlq_tally, exact per status, queue and label_2), read
// through the primary key, one range per status.
const holdsQueueSQL = `SELECT EXISTS (SELECT 1 FROM dlq_tally WHERE status IN ('pending', 'replaying', 'replayed', 'acknowledged')
	AND source_queue = ?1 AND n > 0)`

// Holding returns the database whose table (dlq_messages or replay_tasks)
// holds the rows ids: ids found in no other database are the shared
// one's (where the services then say which are missing). ids found in two
// databases are refused (400 IDS_IN_SEVERAL_DATABASES). With one database
// it reads nothing; else one COUNT per other database, reading the rows it
// finds (and the shared one's too when another holds only some).
func (d Databases) Holding(ctx context.Context, table string, ids []int64) (Database, error) {
	if !d.Many() || len(ids) == 0 {
		return d.Shared(), nil
	}
	distinct := map[int64]bool{}
	for _, id := range ids {
		distinct[id] = true
	}
	list, _ := json.Marshal(ids)
	found := -1
	var n int64
	for i, db := range d.All[1:] {
		c, err := countIDs(ctx, db, table, list)
		if err != nil {
			return Database{}, err
		}
		if c == 0 {
			continue
		}
		if found >= 0 {
			return Database{}, severalDatabases(d.All[found+1].Name, db.Name)
		}
		found, n = i, c
	}
	if found < 0 {
		return d.Shared(), nil
	}
	if n < int64(len(distinct)) {
		c, err := countIDs(ctx, d.Shared(), table, list)
		if err != nil {
			return Database{}, err
		}
		if c > 0 {
			return Database{}, severalDatabases(d.Shared().Name, d.All[found+1].Name)
		}
	}
	return d.All[found+1], nil
}

// countIDs counts the rows of table in db whose id is in list (a JSON
// array), reading those it finds.
func countIDs(ctx context.Context, db Database, table string, list []byte) (int64, error) {
	var c int64
	err := db.DB.QueryRowContext(ctx, `SELECT COUNT(*) FROM `+table+` WHERE id IN (SELECT value FROM json_each(?))`, string(list)).Scan(&c)
	if err != nil {
		return 0, fmt.Errorf("find the database of %s ids: %w", table, err)
	}
	return c, nil
}

func severalDatabases(a, b string) error {
	return InputErr("IDS_IN_SEVERAL_DATABASES",
		"the ids are in more than one database (%s and %s): send each pipeline's ids in a request of its own", a, b)
}

// JobName is the name a per-database cron job or alert named base records
// under for the database binding: base itself for the shared database (so
// a deployment with one database names nothing differently), else
// base:binding (dlq_retention:TICKETS_DB). job_runs and alert_state,
// where the names are kept, are the shared database's.
func JobName(base, binding string) string {
	if binding == "" || binding == config.SharedDatabase {
		return base
	}
	return base + ":" + binding
}

// RunsDB is the database of job_runs: runs, else db.
func RunsDB(runs, db *sql.DB) *sql.DB {
	if runs != nil {
		return runs
	}
	return db
}
