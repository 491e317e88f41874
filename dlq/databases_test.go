package dlq

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/config"
	"github.com/redrive/redrive/internal/sqlitetest"
)

func TestDatabasesRouteEachPipeline(t *testing.T) {
	beers := config.BeerPipeline()
	orders := config.Pipeline{Name: "orders", Queue: "orders", Database: "ORDERS_DB"}
	tickets := config.Pipeline{Name: "tickets", Queue: "tickets", Database: "ORDERS_DB"}
	lost := config.Pipeline{Name: "lost", Queue: "lost", Database: "NOT_BOUND"}
	ps := []config.Pipeline{beers, orders, tickets, lost}
	shared, own := Store{DB: sqlitetest.New(t)}, Store{DB: sqlitetest.New(t)}
	d := NewDatabases(shared, map[string]Store{"ORDERS_DB": own}, ps)
	if len(d.All) != 2 || !d.Many() || d.Shared().Name != config.SharedDatabase || d.All[1].Name != "ORDERS_DB" {
		t.Fatalf("databases %+v", d.All)
	}
	for q, want := range map[string]Store{"orders": own, "tickets": own, config.BeerQueue: shared, "lost": shared, "elsewhere": shared} {
		if d.Of(q).DB != want.DB {
			t.Errorf("queue %s: wrong database", q)
		}
	}
	if d.OfPipeline("tickets").Name != "ORDERS_DB" || d.OfPipeline("beers").Name != config.SharedDatabase || d.OfPipeline("").Name != config.SharedDatabase {
		t.Error("OfPipeline")
	}
	if Single(shared).Many() {
		t.Error("Single is many")
	}
}

func TestIDBaseSeparatesDatabases(t *testing.T) {
	if IDBase(config.SharedDatabase) != 0 || SeedIDsSQL(config.SharedDatabase) != "" {
		t.Fatal("the shared database keeps its ids")
	}
	b := IDBase("ORDERS_DB")
	if b < 1<<40 || b > 4095<<40 || b%(1<<40) != 0 || IDBase("ORDERS_DB2") == b {
		t.Fatalf("base %d", b)
	}
	db := sqlitetest.New(t)
	seedSQL := SeedIDsSQL("ORDERS_DB")
	for i := 0; i < 2; i++ { // idempotent
		if _, err := db.Exec(seedSQL); err != nil {
			t.Fatal(err)
		}
	}
	seed(t, db, row{MsgID: "m1", Key: "b", Status: "pending", FailedAt: time.Now()})
	if got := count(t, db, `SELECT id FROM dlq_messages`); got != b+1 {
		t.Errorf("first row's id %d, want the base + 1 (%d)", got, b+1)
	}
	var seqs int
	if err := db.QueryRow(`SELECT COUNT(*) FROM sqlite_sequence WHERE seq = ?`, b).Scan(&seqs); err != nil || seqs != 2 {
		t.Fatalf("sequences at the base: %d %v", seqs, err)
	}
}

// Two bindings whose names hash to the same range (BILLING_D1 and
// CHECKOUT_D1) are found and named; bindings that do not collide are not,
// and keep their ranges.
func TestIDRangeCollisionsAreFound(t *testing.T) {
	if IDBase("BILLING_D1") != IDBase("CHECKOUT_D1") {
		t.Fatal("the example no longer collides")
	}
	got := IDRangeCollisions([]string{config.SharedDatabase, "TICKETS_DB", "BILLING_D1", "CHECKOUT_D1", "BILLING_D1"})
	if len(got) != 2 || len(got["BILLING_D1"]) != 1 || got["BILLING_D1"][0] != "CHECKOUT_D1" || got["CHECKOUT_D1"][0] != "BILLING_D1" {
		t.Fatalf("collisions %v", got)
	}
	err := CheckIDRanges([]string{"CHECKOUT_D1", "BILLING_D1"})
	if err == nil || !strings.Contains(err.Error(), "BILLING_D1 and CHECKOUT_D1 (both from 3216071511244800)") {
		t.Fatalf("check: %v", err)
	}
	if c := IDRangeCollisions([]string{config.SharedDatabase, "TICKETS_DB", "ORDERS_DB", "TICKETS_DB"}); c != nil {
		t.Fatalf("no collision expected: %v", c)
	}
	if err := CheckIDRanges([]string{config.SharedDatabase, "TICKETS_DB"}); err != nil {
		t.Fatal(err)
	}
}

// The documented base of TICKETS_DB (docs/pipelines.md "Its own database").
func TestIDBaseOfTicketsDB(t *testing.T) {
	if got := IDBase("TICKETS_DB"); got != 3_340_316_325_183_488 {
		t.Fatalf("IDBase(TICKETS_DB) = %d", got)
	}
}

// Holding finds the one database that holds ids (the shared one when no
// other does), refuses ids of two databases, and OfFilter a bulk filter
// naming no pipeline when several databases are bound.
func TestHoldingAndOfFilterRouteOrRefuse(t *testing.T) {
	orders := config.Pipeline{Name: "orders", Queue: "orders", Database: "ORDERS_DB"}
	tickets := config.Pipeline{Name: "tickets", Queue: "tickets", Database: "TICKETS_DB"}
	ps := []config.Pipeline{config.BeerPipeline(), orders, tickets}
	ctx := context.Background()
	shared, o, tk := sqlitetest.New(t), sqlitetest.New(t), sqlitetest.New(t)
	for db, name := range map[*sql.DB]string{o: "ORDERS_DB", tk: "TICKETS_DB"} {
		if _, err := db.Exec(SeedIDsSQL(name)); err != nil {
			t.Fatal(err)
		}
	}
	now := time.Now()
	seed(t, shared, row{MsgID: "s1", Key: "b", Status: "pending", FailedAt: now})
	seed(t, o, row{MsgID: "o1", Key: "b", Status: "pending", FailedAt: now}, row{MsgID: "o2", Key: "b", Status: "pending", FailedAt: now})
	seed(t, tk, row{MsgID: "t1", Key: "b", Status: "pending", FailedAt: now})
	s1 := count(t, shared, `SELECT id FROM dlq_messages`)
	o1, o2 := count(t, o, `SELECT MIN(id) FROM dlq_messages`), count(t, o, `SELECT MAX(id) FROM dlq_messages`)
	t1 := count(t, tk, `SELECT id FROM dlq_messages`)
	d := NewDatabases(Store{DB: shared}, map[string]Store{"ORDERS_DB": {DB: o}, "TICKETS_DB": {DB: tk}}, ps)
	for _, c := range []struct {
		ids  []int64
		want string // a database, or an error code
	}{
		{[]int64{o1, o2}, "ORDERS_DB"},
		{[]int64{o1, o1, o2}, "ORDERS_DB"}, // repeated ids count once
		{[]int64{o1, 999}, "ORDERS_DB"},    // the missing one is the service's to report
		{[]int64{t1}, "TICKETS_DB"},
		{[]int64{s1}, "DB"},
		{[]int64{999}, "DB"},
		{[]int64{o1, s1}, "IDS_IN_SEVERAL_DATABASES"},
		{[]int64{o1, t1}, "IDS_IN_SEVERAL_DATABASES"},
		{[]int64{t1, o2}, "IDS_IN_SEVERAL_DATABASES"},
	} {
		got, err := d.Holding(ctx, "dlq_messages", c.ids)
		var ie *InputError
		switch {
		case errors.As(err, &ie):
			if ie.Code != c.want {
				t.Errorf("%v: error %s, want %s", c.ids, ie.Code, c.want)
			}
		case err != nil:
			t.Fatalf("%v: %v", c.ids, err)
		case got.Name != c.want:
			t.Errorf("%v: %s, want %s", c.ids, got.Name, c.want)
		}
	}
	// What it reads: the shared database only when another holds some of
	// the ids, not all; nothing for no ids (closed databases would fail).
	closed := sqlitetest.New(t)
	closed.Close()
	if got, err := NewDatabases(Store{DB: closed}, map[string]Store{"ORDERS_DB": {DB: o}}, ps).
		Holding(ctx, "dlq_messages", []int64{o1, o2}); err != nil || got.Name != "ORDERS_DB" {
		t.Errorf("ids all in ORDERS_DB read the shared database: %+v %v", got, err)
	}
	if got, err := NewDatabases(Store{DB: shared}, map[string]Store{"ORDERS_DB": {DB: closed}}, ps).
		Holding(ctx, "dlq_messages", nil); err != nil || got.DB != shared {
		t.Errorf("no ids read another database: %+v %v", got, err)
	}
	if got, err := Single(Store{DB: o}).Holding(ctx, "dlq_messages", []int64{t1}); err != nil || got.DB != o {
		t.Error("one database: Holding reads nothing and gives it")
	}
	// An action by ids: rows of a pipeline stored in another database (the
	// seeded rows are beer-enrichment's, stored in DB) are frozen where
	// they lie (409 ROWS_MOVING); a pipeline's own rows are not.
	var ie *InputError
	if _, err := d.OfSelection(ctx, Selection{IDs: []int64{t1}}); !errors.As(err, &ie) || ie.Code != "ROWS_MOVING" || ie.Status != 409 {
		t.Errorf("OfSelection by ids of beer rows in TICKETS_DB: %v, want 409 ROWS_MOVING", err)
	}
	if _, err := tk.Exec(`UPDATE dlq_messages SET source_queue = 'tickets'`); err != nil {
		t.Fatal(err)
	}
	if got, err := d.OfSelection(ctx, Selection{IDs: []int64{t1}}); err != nil || got.Name != "TICKETS_DB" {
		t.Errorf("OfSelection by ids: %+v %v", got, err)
	}
	if got, err := d.OfSelection(ctx, Selection{IDs: []int64{s1}}); err != nil || got.Name != "DB" {
		t.Errorf("OfSelection by ids of DB's own rows: %+v %v", got, err)
	}
	for _, c := range []struct {
		f    *Filter
		want string
	}{
		{&Filter{Pipeline: "orders"}, "ORDERS_DB"},
		{&Filter{Pipeline: "beers"}, "DB"},
		{&Filter{SourceQueue: "tickets"}, "TICKETS_DB"},
		{&Filter{SourceQueue: "elsewhere"}, "DB"},
		{&Filter{Status: "pending"}, "PIPELINE_REQUIRED"},
		{nil, "PIPELINE_REQUIRED"},
	} {
		got, err := d.OfSelection(ctx, Selection{Filter: c.f})
		var ie *InputError
		if errors.As(err, &ie) {
			if ie.Code != c.want {
				t.Errorf("%+v: error %s, want %s", c.f, ie.Code, c.want)
			}
			continue
		}
		if err != nil || got.Name != c.want {
			t.Errorf("%+v: %s %v, want %s", c.f, got.Name, err, c.want)
		}
	}
	if got, err := Single(Store{DB: shared}).OfFilter(nil); err != nil || got.DB != shared {
		t.Error("one database: every filter is the shared one's")
	}
}
