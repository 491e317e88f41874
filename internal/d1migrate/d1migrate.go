// Package d1migrate plans the migration of every D1 database a wrangler
// environment binds: `wrangler d1 migrations apply` for each binding, then,
// for each binding but the shared DB, dlq.SeedIDsSQL so its ids count from
// dlq.IDBase (docs/pipelines.md "Its own database"). cmd/migrate runs the
// plan for make migrate-local, make dev and make deploy; the e2e harness
// runs the same plan.
package d1migrate

import (
	"fmt"

	"github.com/redrive/redrive/config"
	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/internal/wranglerconfig"
)

// Step is one wrangler command of the plan: `wrangler <Args...>`.
type Step struct {
	// Binding is the D1 binding it changes.
	Binding string
	// Seed says the step sets the binding's id range (not a migration).
	Seed bool
	// Args are wrangler's arguments.
	Args []string
}

// Plan is the steps that migrate every D1 binding of environment env
// ("" is the top level) of cfg: per binding, its migrations, then (every
// binding but the shared one) its id range. where selects the databases
// (--local [--persist-to DIR], or --remote); configArgs select the
// configuration and environment as wrangler takes them (--env e2e,
// --config path). An environment without a D1 binding is an error, as is
// one without the shared binding, and one whose bindings share an id range
// (dlq.CheckIDRanges): seeding them would give two databases the same ids.
func Plan(cfg wranglerconfig.Config, env string, where, configArgs []string) ([]Step, error) {
	e, err := cfg.Environment(env)
	if err != nil {
		return nil, err
	}
	bindings := e.D1Bindings()
	shared := false
	for _, b := range bindings {
		shared = shared || b == config.SharedDatabase
	}
	if !shared {
		return nil, fmt.Errorf("environment %q binds no D1 database %s", env, config.SharedDatabase)
	}
	if err := dlq.CheckIDRanges(bindings); err != nil {
		return nil, fmt.Errorf("environment %q: %w", env, err)
	}
	args := func(head ...string) []string {
		out := append(append(head, where...), configArgs...)
		return out
	}
	var steps []Step
	for _, b := range bindings {
		steps = append(steps, Step{Binding: b, Args: args("d1", "migrations", "apply", b)})
		if seed := dlq.SeedIDsSQL(b); seed != "" {
			steps = append(steps, Step{Binding: b, Seed: true, Args: append(args("d1", "execute", b), "--command", seed)})
		}
	}
	return steps, nil
}
