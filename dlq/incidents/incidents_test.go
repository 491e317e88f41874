package incidents

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/alerts"
	"github.com/redrive/redrive/alerts/alertstest"
	"github.com/redrive/redrive/config"
	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/internal/sqlitetest"
	"github.com/redrive/redrive/sqlbatch"
)

var (
	ctx = context.Background()
	t0  = time.Date(2030, 6, 1, 10, 0, 0, 0, time.UTC)
	by  = dlq.Requester{RequestID: "r", Principal: "key:alice"}
)

// fixture is one database with its groups' lifecycle and status changes.
type fixture struct {
	db     *sql.DB
	outbox *alerts.Outbox
	life   Lifecycle
	groups Groups
	now    time.Time
}

func newFixture(t *testing.T) *fixture {
	db := sqlitetest.New(t)
	f := &fixture{db: db, outbox: alertstest.Outbox(db, &alertstest.Slack{}), now: t0}
	f.outbox.Channels = nil // events are recorded; delivery is the outbox's own tests
	dbs := dlq.Single(dlq.Store{DB: db})
	f.life = Lifecycle{DB: db, Batch: sqlbatch.Tx{DB: db}, Database: "DB", Pipelines: dbs.Pipelines(), AutoResolve: time.Hour}
	f.groups = Groups{DBs: dbs, Outbox: f.outbox, Audit: dlq.Audit{DB: db, DBs: dbs, Cursors: dlq.NewCursors("s"),
		Clock: func() time.Time { return f.now }}}
	return f
}

// fail is a capture's effect on a group: a new pending row failed at now.
func (f *fixture) fail(t *testing.T, sig string) {
	t.Helper()
	if _, err := f.db.Exec(`INSERT INTO dlq_signatures(signature, class, text, pending, first_seen, last_seen, source_queue)
		VALUES (?1, 'permanent', 'status <n>', 1, ?2, ?2, 'beer-enrichment')
		ON CONFLICT(signature) DO UPDATE SET pending = pending + 1, last_seen = max(last_seen, excluded.last_seen)`,
		sig, f.now.UnixMilli()); err != nil {
		t.Fatal(err)
	}
}

// settle is acknowledging every pending row of a group.
func (f *fixture) settle(t *testing.T, sig string) {
	t.Helper()
	if _, err := f.db.Exec(`UPDATE dlq_signatures SET acknowledged = acknowledged + pending, pending = 0 WHERE signature = ?`, sig); err != nil {
		t.Fatal(err)
	}
}

func (f *fixture) run(t *testing.T) {
	t.Helper()
	if _, err := f.life.Emit(ctx, f.outbox, f.now); err != nil {
		t.Fatal(err)
	}
}

// events are the recorded events' "type occurrence" in order.
func (f *fixture) events(t *testing.T) []string {
	t.Helper()
	rows, err := f.db.Query(`SELECT type, body ->> '$.data.occurrence', dedup_key FROM alert_events ORDER BY created_at, id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var typ, key string
		var occ int64
		if err := rows.Scan(&typ, &occ, &key); err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprintf("%s %d %s", typ, occ, key))
	}
	return out
}

func (f *fixture) status(t *testing.T, sig string) Incident {
	t.Helper()
	in, err := Read(ctx, f.db, sig)
	if err != nil {
		t.Fatal(err)
	}
	return in
}

// A new group opens once; more failures of it send nothing; resolving it
// tells a resolve with the same dedup key; a failure after that reopens it
// as a new occurrence; once quiet for AutoResolve it resolves itself.
func TestGroupLifecycle(t *testing.T) {
	f := newFixture(t)
	const sig = "0123456789abcdef"
	key := alerts.DedupKey("group:" + sig)
	f.fail(t, sig)
	f.run(t)
	for range 3 {
		f.now = f.now.Add(time.Minute)
		f.fail(t, sig)
		f.run(t)
	}
	if got := f.events(t); !slices.Equal(got, []string{"group.opened 1 " + key}) {
		t.Fatalf("events after four failures: %q", got)
	}
	f.now = f.now.Add(time.Minute)
	res, err := f.groups.Set(ctx, sig, Change{Status: Resolved, Note: ptr("fixed the model name")}, by, f.now)
	if err != nil || res.EventID == nil || res.Incident.Status != Resolved || *res.Incident.Note != "fixed the model name" {
		t.Fatalf("resolve: %+v %v", res, err)
	}
	f.run(t)
	f.now = f.now.Add(time.Minute)
	f.fail(t, sig)
	f.run(t)
	f.run(t)
	want := []string{"group.opened 1 " + key, "group.resolved 1 " + key, "group.reopened 2 " + key}
	if got := f.events(t); !slices.Equal(got, want) {
		t.Fatalf("events\n got %q\nwant %q", got, want)
	}
	if in := f.status(t, sig); in.Status != Open || in.Occurrence != 2 || in.Note != nil {
		t.Fatalf("reopened incident %+v", in)
	}
	f.settle(t, sig)
	f.now = f.now.Add(59 * time.Minute)
	f.run(t)
	if in := f.status(t, sig); in.Status != Open {
		t.Fatalf("resolved before it was quiet for an hour: %+v", in)
	}
	f.now = f.now.Add(2 * time.Minute)
	f.run(t)
	if in := f.status(t, sig); in.Status != Resolved || *in.ResolvedAt != f.now.UnixMilli() {
		t.Fatalf("not resolved once quiet: %+v", in)
	}
	if got := f.events(t); len(got) != 4 || got[3] != "group.resolved 2 "+key {
		t.Fatalf("events %q", got)
	}
	// The audit names who changed it.
	var principal, action string
	if err := f.db.QueryRow(`SELECT principal, action FROM admin_audit`).Scan(&principal, &action); err != nil ||
		principal != "key:alice" || action != dlq.ActionGroupStatus {
		t.Fatalf("audit: %q %q %v", principal, action, err)
	}
}

// A burst of 10,000 failures of one group is one event, and the rows the
// lifecycle writes for it do not grow with the burst.
func TestBurstOfOneGroupIsOneEvent(t *testing.T) {
	f := newFixture(t)
	const sig = "fedcba9876543210"
	if _, err := f.db.Exec(`INSERT INTO dlq_signatures(signature, class, text, pending, first_seen, last_seen, source_queue)
		VALUES (?1, 'transient', 'status <n>', 10000, ?2, ?2, 'beer-enrichment')`, sig, f.now.UnixMilli()); err != nil {
		t.Fatal(err)
	}
	var before, after int64
	f.db.QueryRow(`SELECT total_changes()`).Scan(&before)
	f.run(t)
	f.db.QueryRow(`SELECT total_changes()`).Scan(&after)
	f.now = f.now.Add(5 * time.Minute)
	f.run(t)
	if got := f.events(t); len(got) != 1 {
		t.Fatalf("events %q, want one", got)
	}
	t.Logf("rows the run wrote (event, its deliveries, the group): %d", after-before)
	if after-before > 3 {
		t.Fatalf("the run wrote %d rows, want at most 3", after-before)
	}
}

// Status changes: bad input is a 400 code, an unknown or out-of-scope
// group is not found, and an ignored group is never reopened.
func TestSetChecksItsInput(t *testing.T) {
	f := newFixture(t)
	const sig = "00000000000000aa"
	f.fail(t, sig)
	for _, c := range []struct {
		ch   Change
		code string
	}{
		{Change{Status: "closed"}, "INVALID_STATUS"},
		{Change{Status: Snoozed}, "INVALID_UNTIL"},
		{Change{Status: Snoozed, Until: ptr(f.now.UnixMilli())}, "INVALID_UNTIL"},
		{Change{Status: Snoozed, Until: ptr(f.now.Add(31 * 24 * time.Hour).UnixMilli())}, "INVALID_UNTIL"},
		{Change{Status: Resolved, Until: ptr(f.now.Add(time.Hour).UnixMilli())}, "INVALID_UNTIL"},
		{Change{Status: Acknowledged, Owner: ptr(string(make([]byte, 101)))}, "INVALID_REQUEST"},
		{Change{Status: Acknowledged, Note: ptr("a\x00b")}, "INVALID_REQUEST"},
		{Change{Status: Acknowledged, Note: ptr("\xff")}, "INVALID_REQUEST"},
	} {
		_, err := f.groups.Set(ctx, sig, c.ch, by, f.now)
		var ie *dlq.InputError
		if !errors.As(err, &ie) || ie.Code != c.code {
			t.Errorf("%+v: %v, want %s", c.ch, err, c.code)
		}
	}
	if _, err := f.groups.Set(ctx, "ffffffffffffffff", Change{Status: Resolved}, by, f.now); !errors.Is(err, ErrGroupNotFound) {
		t.Errorf("unknown group: %v", err)
	}
	other := by
	other.Scope = dlq.Scope{Pipelines: []string{"tickets"}}
	if _, err := f.groups.Set(ctx, sig, Change{Status: Resolved}, other, f.now); !errors.Is(err, ErrGroupNotFound) {
		t.Errorf("a group of another pipeline: %v", err)
	}
	if _, err := f.groups.Set(ctx, sig, Change{Status: Ignored}, by, f.now); err != nil {
		t.Fatal(err)
	}
	f.now = f.now.Add(time.Minute)
	f.fail(t, sig)
	f.run(t)
	if in := f.status(t, sig); in.Status != Ignored {
		t.Fatalf("an ignored group changed: %+v", in)
	}
}

// model is what the lifecycle and the status changes should make of the groups.
type model struct {
	status            map[string]string
	seq               map[string]int64
	pending           map[string]int64
	lastSeen          map[string]int64
	resolvedAt, until map[string]int64
	announced         map[string]bool
	events            map[string]bool // "type sig occurrence"
}

func newModel() *model {
	return &model{status: map[string]string{}, seq: map[string]int64{}, pending: map[string]int64{}, lastSeen: map[string]int64{},
		resolvedAt: map[string]int64{}, until: map[string]int64{}, announced: map[string]bool{}, events: map[string]bool{}}
}

func (m *model) fail(sig string, t int64) {
	if _, ok := m.status[sig]; !ok {
		m.status[sig], m.seq[sig] = Open, 1
	}
	m.pending[sig]++
	m.lastSeen[sig] = max(m.lastSeen[sig], t)
}

func (m *model) event(typ, sig string, occ int64) {
	m.events[fmt.Sprintf("%s %s %d", typ, sig, occ)] = true
}

func (m *model) run(sigs []string, t, autoResolve int64) {
	for _, s := range sigs {
		if _, ok := m.status[s]; ok && !m.announced[s] {
			m.announced[s] = true
			m.event(alerts.GroupOpened, s, m.seq[s])
		}
	}
	for _, s := range sigs {
		if m.status[s] == Resolved && m.lastSeen[s] > m.resolvedAt[s] {
			m.status[s] = Open
			m.seq[s]++
			m.event(alerts.GroupReopened, s, m.seq[s])
		}
	}
	for _, s := range sigs {
		if (m.status[s] == Open || m.status[s] == Acknowledged) && m.pending[s] == 0 && m.announced[s] && m.lastSeen[s] <= t-autoResolve {
			m.status[s], m.resolvedAt[s] = Resolved, t
			m.event(alerts.GroupResolved, s, m.seq[s])
		}
	}
	for _, s := range sigs {
		if m.status[s] == Snoozed && m.until[s] <= t {
			m.status[s] = Open
		}
	}
}

func (m *model) set(sig string, c Change, t int64) {
	old := m.status[sig]
	m.status[sig] = c.Status
	m.announced[sig] = true
	if c.Status == Resolved {
		m.resolvedAt[sig] = t
	}
	if c.Status == Snoozed {
		m.until[sig] = *c.Until
	}
	if typ := eventOf(c.Status); typ != "" && c.Status != old {
		m.event(typ, sig, m.seq[sig])
	}
}

// Seeded random interleavings of failures, settled rows, status changes
// and lifecycle runs, checked against the model after every step: each
// group's status and occurrence, and every event recorded (never doubled,
// never missing).
func TestLifecycleMatchesAModel(t *testing.T) {
	sigs := []string{"000000000000000a", "000000000000000b", "000000000000000c", "000000000000000d"}
	for seed := range modelSeeds {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(seed), 48))
			f, m := newFixture(t), newModel()
			auto := f.life.AutoResolve.Milliseconds()
			for step := range 200 {
				f.now = f.now.Add(time.Duration(rng.IntN(40)) * time.Minute)
				now := f.now.UnixMilli()
				sig := sigs[rng.IntN(len(sigs))]
				var did string
				switch op := rng.IntN(10); {
				case op < 3:
					f.fail(t, sig)
					m.fail(sig, now)
					did = "fail " + sig
				case op < 5:
					if _, ok := m.status[sig]; ok {
						f.settle(t, sig)
						m.pending[sig] = 0
					}
					did = "settle " + sig
				case op < 7:
					if _, ok := m.status[sig]; !ok {
						continue
					}
					c := Change{Status: Statuses[rng.IntN(len(Statuses))]}
					if c.Status == Snoozed {
						c.Until = ptr(now + int64(1+rng.IntN(120))*time.Minute.Milliseconds())
					}
					if _, err := f.groups.Set(ctx, sig, c, by, f.now); err != nil {
						t.Fatalf("step %d: set %s %+v: %v", step, sig, c, err)
					}
					m.set(sig, c, now)
					did = fmt.Sprintf("set %s %s", sig, c.Status)
				default:
					f.run(t)
					m.run(sigs, now, auto)
					did = "run"
				}
				for _, s := range sigs {
					want, ok := m.status[s]
					if !ok {
						continue
					}
					if in := f.status(t, s); in.Status != want || in.Occurrence != m.seq[s] {
						t.Fatalf("step %d (%s): %s is %s #%d, model %s #%d", step, did, s, in.Status, in.Occurrence, want, m.seq[s])
					}
				}
				got := map[string]bool{}
				rows, err := f.db.Query(`SELECT type || ' ' || (body ->> '$.data.signature') || ' ' || (body ->> '$.data.occurrence') FROM alert_events`)
				if err != nil {
					t.Fatal(err)
				}
				for rows.Next() {
					var e string
					rows.Scan(&e)
					got[e] = true
				}
				rows.Close()
				if fmt.Sprint(got) != fmt.Sprint(m.events) {
					t.Fatalf("step %d (%s): events\n got %v\nwant %v", step, did, got, m.events)
				}
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

// modelSeeds is how many seeded sequences TestLifecycleMatchesAModel runs
// (fewer under the mutation build tag: mutation_test.go).
var modelSeeds = 40

// What the events say: severity by type, the opened announcement's words
// with a sample row, the owner and note of a change, a resolved group's
// pending count; and the limits of owner and note, exactly.
func TestEventsSayWhatHappened(t *testing.T) {
	f := newFixture(t)
	const sig = "00000000000000bb"
	f.fail(t, sig)
	if _, err := f.db.Exec(`UPDATE dlq_signatures SET sample_ids = '[42.0]' WHERE signature = ?`, sig); err != nil {
		t.Fatal(err)
	}
	f.run(t)
	f.now = f.now.Add(time.Minute)
	if _, err := f.groups.Set(ctx, sig, Change{Status: Acknowledged, Owner: ptr(strings.Repeat("o", MaxOwner)), Note: ptr(strings.Repeat("n", MaxNote))}, by, f.now); err != nil {
		t.Fatal(err)
	}
	f.settle(t, sig)
	f.now = f.now.Add(2 * time.Hour)
	f.run(t)
	rows, err := f.db.Query(`SELECT type, severity, body FROM alert_events ORDER BY created_at`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var got []alerts.Event
	for rows.Next() {
		var typ, sev, body string
		var ev alerts.Event
		if err := rows.Scan(&typ, &sev, &body); err != nil || json.Unmarshal([]byte(body), &ev) != nil || ev.Type != typ || ev.Severity != sev {
			t.Fatalf("event %s %s %s: %v", typ, sev, body, err)
		}
		got = append(got, ev)
	}
	if len(got) != 3 {
		t.Fatalf("%d events", len(got))
	}
	opened, acked, resolved := got[0], got[1], got[2]
	if opened.Type != alerts.GroupOpened || opened.Severity != "error" || opened.Pipeline != "beers" ||
		!strings.HasPrefix(opened.Summary, "NEW dlq_new_failure_signature: new failure signature "+sig+" (permanent) in pipeline beers") ||
		!strings.Contains(opened.Summary, "e.g. row 42") || !strings.HasSuffix(opened.Summary, "replaying it unchanged fails again") ||
		opened.Data["sample_row_id"] != float64(42) || opened.Data["pending"] != float64(1) {
		t.Errorf("opened: %+v", opened)
	}
	if acked.Type != alerts.GroupAcknowledged || acked.Severity != "info" || acked.Data["owner"] != strings.Repeat("o", MaxOwner) ||
		acked.Data["note"] != strings.Repeat("n", MaxNote) || !strings.HasPrefix(acked.Summary, "ACKNOWLEDGED failure group "+sig) {
		t.Errorf("acknowledged: %+v", acked)
	}
	if resolved.Type != alerts.GroupResolved || resolved.Severity != "info" || resolved.Data["pending"] != float64(0) {
		t.Errorf("resolved: %+v", resolved)
	}
	for _, c := range []Change{{Status: Acknowledged, Owner: ptr(strings.Repeat("o", MaxOwner+1))}, {Status: Acknowledged, Note: ptr(strings.Repeat("n", MaxNote+1))}} {
		if _, err := f.groups.Set(ctx, sig, c, by, f.now); err == nil {
			t.Errorf("%d-byte owner, %d-byte note accepted", len(deref(c.Owner)), len(deref(c.Note)))
		}
	}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// With the groups in a database of their own, a change and its event are
// two batches (the event first); every step still records its event once
// and changes the group, as with one database.
func TestLifecycleOfAGroupInItsOwnDatabase(t *testing.T) {
	shared, own := sqlitetest.New(t), sqlitetest.New(t)
	ps := []config.Pipeline{config.BeerPipeline(), {Name: "tickets", Queue: "tickets", Database: "TICKETS_DB"}}
	dbs := dlq.NewDatabases(dlq.Store{DB: shared}, map[string]dlq.Store{"TICKETS_DB": {DB: own}}, ps)
	o := alertstest.Outbox(shared, &alertstest.Slack{})
	now := t0
	life := Lifecycle{DB: own, Batch: sqlbatch.Tx{DB: own}, Database: "TICKETS_DB", Pipelines: dbs.Pipelines(), AutoResolve: time.Hour}
	groups := Groups{DBs: dbs, Outbox: o, Audit: dlq.Audit{DB: shared, DBs: dbs, Cursors: dlq.NewCursors("s"), Clock: func() time.Time { return now }}}
	const sig = "00000000000000cc"
	if _, err := own.Exec(`INSERT INTO dlq_signatures(signature, class, text, pending, first_seen, last_seen, source_queue)
		VALUES (?1, 'transient', 'status <n>', 1, ?2, ?2, 'tickets')`, sig, now.UnixMilli()); err != nil {
		t.Fatal(err)
	}
	if _, err := life.Emit(ctx, o, now); err != nil {
		t.Fatal(err)
	}
	now = now.Add(time.Minute)
	res, err := groups.Set(ctx, sig, Change{Status: Resolved}, by, now)
	if err != nil || res.Incident.Status != Resolved || res.EventID == nil {
		t.Fatalf("resolve in its own database: %+v %v", res, err)
	}
	var types string
	if err := shared.QueryRow(`SELECT group_concat(type || ' ' || COALESCE(pipeline, ''), ',') FROM (SELECT type, pipeline FROM alert_events ORDER BY created_at)`).Scan(&types); err != nil ||
		types != "group.opened tickets,group.resolved tickets" {
		t.Fatalf("events in the shared outbox: %q %v", types, err)
	}
	var announced, incident string
	if err := own.QueryRow(`SELECT CAST(announced_at AS TEXT), incident FROM dlq_signatures WHERE signature = ?`, sig).Scan(&announced, &incident); err != nil ||
		announced == "" || incident != Resolved {
		t.Fatalf("the group in its database: %q %q %v", announced, incident, err)
	}
	var n int64
	own.QueryRow(`SELECT COUNT(*) FROM alert_events`).Scan(&n)
	if n != 0 {
		t.Fatalf("%d events written to the pipeline's own database", n)
	}
}

// A change that lost a race (the group changed after it was read) is 409
// CONFLICT and tells nothing: its event is guarded by the change in the
// same batch. A lifecycle step whose change reaches no group (an operator
// moved it on after the step's read) tells nothing either.
func TestAChangeThatLostARaceTellsNothing(t *testing.T) {
	f := newFixture(t)
	const sig = "00000000000000ab"
	f.fail(t, sig)
	f.run(t)
	d, stale, err := f.groups.find(ctx, sig, dlq.Scope{})
	if err != nil {
		t.Fatal(err)
	}
	f.now = f.now.Add(time.Minute)
	if _, err := f.groups.Set(ctx, sig, Change{Status: Acknowledged}, by, f.now); err != nil {
		t.Fatal(err)
	}
	before := f.events(t)
	f.now = f.now.Add(time.Minute)
	_, err = f.groups.apply(ctx, d, stale, Change{Status: Resolved}, f.now)
	var ie *dlq.InputError
	if !errors.As(err, &ie) || ie.Code != "CONFLICT" {
		t.Fatalf("a stale change: %v, want CONFLICT", err)
	}
	if got := f.events(t); !slices.Equal(got, before) {
		t.Errorf("a change that did not happen told %v (before: %v)", got, before)
	}
	if in := f.status(t, sig); in.Status != Acknowledged {
		t.Errorf("the group is %s, want acknowledged", in.Status)
	}

	// The lifecycle: the group is quiet past AutoResolve, so the resolve
	// step reads it; the operator ignores it just before the step's batch.
	f.settle(t, sig)
	f.now = f.now.Add(2 * time.Hour)
	before = f.events(t)
	life := f.life
	life.Batch = raced{Runner: f.life.Batch, before: func() {
		if _, err := f.groups.Set(ctx, sig, Change{Status: Ignored}, by, f.now); err != nil {
			t.Fatal(err)
		}
	}}
	if _, err := life.Emit(ctx, f.outbox, f.now.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	got := f.events(t)
	if len(got) != len(before)+1 || !strings.HasPrefix(got[len(got)-1], alerts.GroupIgnored) {
		t.Errorf("events %v, want the ignore's alone after %v", got, before)
	}
	if in := f.status(t, sig); in.Status != Ignored {
		t.Errorf("the group is %s, want ignored", in.Status)
	}
}

// raced runs before ahead of each batch it is given.
type raced struct {
	sqlbatch.Runner
	before func()
}

func (r raced) Batch(ctx context.Context, stmts ...sqlbatch.Stmt) ([]json.RawMessage, error) {
	if r.before != nil {
		r.before()
	}
	return r.Runner.Batch(ctx, stmts...)
}
