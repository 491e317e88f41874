package dlq

import (
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
	SetPipelines([]config.Pipeline{beers, orders, tickets, lost})
	t.Cleanup(func() { SetPipelines([]config.Pipeline{config.BeerPipeline()}) })
	shared, own := Store{DB: sqlitetest.New(t)}, Store{DB: sqlitetest.New(t)}
	d := NewDatabases(shared, map[string]Store{"ORDERS_DB": own}, Pipelines())
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
	seed(t, db, row{msgID: "m1", beerID: "b", status: "pending", failedAt: time.Now()})
	if got := count(t, db, `SELECT id FROM dlq_messages`); got != b+1 {
		t.Errorf("first row's id %d, want the base + 1 (%d)", got, b+1)
	}
	var seqs int
	if err := db.QueryRow(`SELECT COUNT(*) FROM sqlite_sequence WHERE seq = ?`, b).Scan(&seqs); err != nil || seqs != 2 {
		t.Fatalf("sequences at the base: %d %v", seqs, err)
	}
}
