package d1migrate

import (
	"fmt"
	"strings"
	"testing"

	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/internal/sqlitetest"
	"github.com/redrive/redrive/internal/wranglerconfig"
)

// The plan of the repository's wrangler.jsonc: the top level migrates DB
// only (as make migrate-local and make deploy did before); the e2e
// environment DB, then TICKETS_DB and its id range from dlq.IDBase.
func TestPlanMigratesEveryBinding(t *testing.T) {
	root, err := sqlitetest.Root()
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := wranglerconfig.Load(root)
	if err != nil {
		t.Fatal(err)
	}
	render := func(steps []Step) string {
		var lines []string
		for _, s := range steps {
			a := s.Args
			if s.Seed {
				a = a[:len(a)-1] // the SQL, checked below
			}
			lines = append(lines, strings.Join(a, " "))
		}
		return strings.Join(lines, "\n")
	}
	top, err := Plan(cfg, "", []string{"--remote"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := render(top); got != "d1 migrations apply DB --remote" {
		t.Errorf("top level:\n%s", got)
	}
	e2e, err := Plan(cfg, "e2e", []string{"--local", "--persist-to", "S"}, []string{"--env", "e2e"})
	if err != nil {
		t.Fatal(err)
	}
	want := "d1 migrations apply DB --local --persist-to S --env e2e\n" +
		"d1 migrations apply TICKETS_DB --local --persist-to S --env e2e\n" +
		"d1 execute TICKETS_DB --local --persist-to S --env e2e --command"
	if got := render(e2e); got != want {
		t.Errorf("e2e:\n%s\nwant\n%s", got, want)
	}
	seed := e2e[len(e2e)-1]
	if !seed.Seed || seed.Args[len(seed.Args)-1] != dlq.SeedIDsSQL("TICKETS_DB") ||
		!strings.Contains(seed.Args[len(seed.Args)-1], fmt.Sprint(dlq.IDBase("TICKETS_DB"))) {
		t.Errorf("seed step %+v", seed)
	}
}

func TestPlanRefusesWhatItCannotMigrate(t *testing.T) {
	cfg := wranglerconfig.Config{Envs: map[string]wranglerconfig.Env{"x": {D1Databases: []wranglerconfig.D1Database{{Binding: "OTHER"}}}}}
	if _, err := Plan(cfg, "nope", nil, nil); err == nil || !strings.Contains(err.Error(), `no environment "nope"`) {
		t.Errorf("unknown environment: %v", err)
	}
	if _, err := Plan(cfg, "x", nil, nil); err == nil || !strings.Contains(err.Error(), "binds no D1 database DB") {
		t.Errorf("no DB: %v", err)
	}
	clash := wranglerconfig.Config{Envs: map[string]wranglerconfig.Env{"x": {D1Databases: []wranglerconfig.D1Database{
		{Binding: "DB"}, {Binding: "BILLING_D1"}, {Binding: "CHECKOUT_D1"}}}}}
	if _, err := Plan(clash, "x", nil, nil); err == nil || !strings.Contains(err.Error(), "BILLING_D1 and CHECKOUT_D1") {
		t.Errorf("colliding id ranges planned: %v", err)
	}
	if _, err := Plan(cfg, "", nil, nil); err == nil {
		t.Error("a top level without d1_databases planned")
	}
}
