package metrics

import (
	"strings"
	"testing"
	"time"
)

// A declared counter's help text is the HELP line of its metric; an
// undeclared row of the counters table still gets one; a name declared twice
// panics at start rather than describing a metric two ways.
func TestDeclaredHelpIsExported(t *testing.T) {
	name := Declare("test_declared_total", "A counter declared by this test.")
	var b strings.Builder
	if err := WritePrometheus(&b, Snapshot{Counters: map[string]int64{name: 3, "undeclared_total": 1}}, time.Now()); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"# HELP redrive_test_declared_total A counter declared by this test.\n# TYPE redrive_test_declared_total counter\nredrive_test_declared_total 3\n",
		"# HELP redrive_undeclared_total Counter undeclared_total (counters table).",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	defer func() {
		if recover() == nil {
			t.Error("declaring a counter twice did not panic")
		}
	}()
	Declare(name, "again")
}
