// Command migrate applies the migrations to every D1 database a wrangler
// environment binds, then gives each database other than the shared DB its
// id range (dlq.SeedIDsSQL, from dlq.IDBase(binding)): make migrate-local,
// make dev and make deploy run it (internal/d1migrate plans the commands;
// docs/pipelines.md "Its own database"). With -remote it first refuses an
// environment that sets DEV_ROUTES (CheckDeployable of internal/wranglerconfig), so
// make deploy stops before wrangler deploy.
//
//	go run ./cmd/migrate -local -persist-to .wrangler/state
//	go run ./cmd/migrate -remote [-env NAME]
//	go run ./cmd/migrate -print   # the commands only
package main

import (
	"flag"
	"fmt"
	"log"
	"os"
	"os/exec"
	"strings"

	"github.com/redrive/redrive/internal/d1migrate"
	"github.com/redrive/redrive/internal/wranglerconfig"
)

func main() {
	cfgPath := flag.String("config", "wrangler.jsonc", "the wrangler configuration")
	env := flag.String("env", "", "the wrangler environment (empty: the top level)")
	local := flag.Bool("local", false, "migrate the local databases (wrangler dev's)")
	remote := flag.Bool("remote", false, "migrate the deployed databases")
	persist := flag.String("persist-to", "", "with -local: wrangler's --persist-to")
	wrangler := flag.String("wrangler", "npx --no-install wrangler", "the wrangler command")
	print := flag.Bool("print", false, "print the commands instead of running them")
	flag.Parse()
	if *local == *remote {
		log.Fatal("migrate: give exactly one of -local and -remote")
	}
	where := []string{"--remote"}
	if *local {
		where = []string{"--local"}
		if *persist != "" {
			where = append(where, "--persist-to", *persist)
		}
	}
	var configArgs []string
	if *cfgPath != "wrangler.jsonc" {
		configArgs = append(configArgs, "--config", *cfgPath)
	}
	if *env != "" {
		configArgs = append(configArgs, "--env", *env)
	}
	cfg, err := wranglerconfig.LoadFile(*cfgPath)
	if err != nil {
		log.Fatalf("migrate: %v", err)
	}
	if *remote {
		// make deploy runs this first: a deploy with DEV_ROUTES stops here.
		if err := cfg.CheckDeployable(*env); err != nil {
			log.Fatalf("migrate: refusing to migrate for a deploy: %v", err)
		}
	}
	steps, err := d1migrate.Plan(cfg, *env, where, configArgs)
	if err != nil {
		log.Fatalf("migrate: %v", err)
	}
	cmd := strings.Fields(*wrangler)
	for _, s := range steps {
		what := "apply the migrations to " + s.Binding
		if s.Seed {
			what = "set the id range of " + s.Binding
		}
		if *print {
			fmt.Printf("# %s\n%s %s\n", what, strings.Join(cmd, " "), quote(s.Args))
			continue
		}
		fmt.Fprintf(os.Stderr, "migrate: %s\n", what)
		c := exec.Command(cmd[0], append(cmd[1:], s.Args...)...)
		c.Stdout, c.Stderr, c.Stdin = os.Stdout, os.Stderr, os.Stdin
		if err := c.Run(); err != nil {
			log.Fatalf("migrate: %s: %v", what, err)
		}
	}
}

// quote renders args for a shell (single quotes around any with spaces or
// quotes), for -print.
func quote(args []string) string {
	out := make([]string, len(args))
	for i, a := range args {
		if strings.ContainsAny(a, " \n'\";*<>") {
			a = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		out[i] = a
	}
	return strings.Join(out, " ")
}
