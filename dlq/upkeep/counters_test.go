package upkeep

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/dlq/resolve"
	"github.com/redrive/redrive/internal/sqlitetest"
	"github.com/redrive/redrive/metrics"
)

// The counters dlq_messages' triggers add to are declared (name and help) by
// this package, like those its Go code adds to: a trigger naming any other
// counter would export an undescribed metric.
func TestTriggerCountersAreDeclared(t *testing.T) {
	root, _ := sqlitetest.Root()
	schema, err := os.ReadFile(filepath.Join(root, "schema.sql"))
	if err != nil {
		t.Fatal(err)
	}
	names := regexp.MustCompile(`INSERT INTO counters\(name, value\)\s+(?:VALUES \(|SELECT )'([a-z0-9_]+)'`).FindAllStringSubmatch(string(schema), -1)
	if len(names) < 3 {
		t.Fatalf("found %d counter names in the triggers of schema.sql; the pattern no longer matches", len(names))
	}
	for _, m := range names {
		if help, ok := metrics.Declared(m[1]); !ok || help == "" {
			t.Errorf("schema.sql adds to counter %q, which no package declares", m[1])
		}
	}
	for _, n := range []string{dlq.CounterCaptured, dlq.CounterDuplicates, dlq.CounterPoison, resolve.CounterAcknowledged, resolve.CounterReplayed,
		CounterRescued, CounterRetentionAge, CounterRetentionCap, CounterAttemptsExpired, CounterAuditExpired} {
		if _, ok := metrics.Declared(n); !ok {
			t.Errorf("counter %q is not declared", n)
		}
	}
}
