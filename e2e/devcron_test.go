//go:build e2e

package e2e

import (
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/redrive/redrive/dlq/upkeep"
	"github.com/redrive/redrive/internal/sqlitetest"
	"github.com/redrive/redrive/metrics"
)

// make dev's ticker (cmd/devcron) runs the worker's crons through the
// runtime's scheduled event: at 3000x the 5-minute jobs run every 100 ms and
// the daily ones every 29 s, so both show in GET /admin/jobs.
func TestDevCronTickerRunsBothCrons(t *testing.T) {
	root, err := sqlitetest.Root()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "devcron")
	build := exec.Command("go", "build", "-o", bin, "./cmd/devcron")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/devcron: %v\n%s", err, out)
	}
	w := startWorkerWith(t, Options{})
	ticker := exec.Command(bin, "-url", w.URL, "-root", root, "-speed", "3000")
	ticker.Stdout, ticker.Stderr = os.Stderr, os.Stderr
	ticker.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := ticker.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		syscall.Kill(-ticker.Process.Pid, syscall.SIGTERM)
		ticker.Wait()
	}()
	runs := func() map[string]int64 {
		r := w.Admin(t, http.MethodGet, "/admin/jobs", nil)
		var l metrics.JobList
		r.Decode(t, &l)
		m := map[string]int64{}
		for _, j := range l.Jobs {
			m[j.Job] = j.Runs
		}
		return m
	}
	Eventually(t, 90*time.Second, "the 5-minute and the daily jobs ran", func() bool {
		m := runs()
		return m["dlq_rescue"] >= 3 && m[upkeep.RetentionJobName] >= 1 && m[upkeep.TallyJobName] >= 1
	})
}
