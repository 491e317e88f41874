// Command redrive is the command-line tool of a redrive worker's admin API:
// list, inspect, replay, acknowledge, edit, run replay tasks, export, read
// the audit log and follow new failures. `redrive --help` says how, and
// which exit codes it uses; docs/cli.md "CLI" has an example per command.
//
//	go install github.com/redrive/redrive/cmd/redrive@latest
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/redrive/redrive/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Main(ctx, os.Args[1:], cli.OSEnv())
	stop()
	os.Exit(code)
}
