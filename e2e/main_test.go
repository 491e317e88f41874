//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"testing"

	"github.com/redrive/redrive/internal/sqlitetest"
)

// shared is the worker most tests use; tests that need other vars start their own.
var shared *Worker

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	root, err := sqlitetest.Root()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	build := exec.Command("make", "build")
	build.Dir, build.Stdout, build.Stderr = root, os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "make build:", err)
		return 1
	}
	// The JavaScript consumer runs beside it: the replay tests count what
	// reaches its queue (every delivery is recorded), not provider calls.
	shared, err = StartWorker(Options{ExtraConfigs: []string{jsConsumerConfig}})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	code := m.Run()
	if !contractReport() {
		code = 1
	}
	if code != 0 {
		fmt.Fprintf(os.Stderr, "--- shared worker log (tail) ---\n%s\n", tail(shared.Log(), 8000))
	}
	shared.Stop()
	return code
}
