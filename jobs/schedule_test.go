package jobs

import (
	"slices"
	"testing"

	"github.com/redrive/redrive/internal/sqlitetest"
	"github.com/redrive/redrive/internal/wranglerconfig"
)

// Every environment of wrangler.jsonc triggers exactly the crons main
// registers jobs for.
func TestWranglerCronsMatchTheJobs(t *testing.T) {
	root, err := sqlitetest.Root()
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := wranglerconfig.Load(root)
	if err != nil {
		t.Fatal(err)
	}
	for name, env := range cfg.All() {
		got := slices.Sorted(slices.Values(env.Triggers.Crons))
		want := slices.Sorted(slices.Values(Crons))
		if !slices.Equal(got, want) {
			t.Errorf("env %q: triggers.crons %q, the worker's jobs run on %q", name, got, want)
		}
	}
}
