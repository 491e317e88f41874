package metrics

import (
	"fmt"
	"slices"
	"strings"
	"sync"
)

// Gauge is a value a domain package reports on /admin/metrics. The package
// that owns the tables the value comes from declares it with its own SQL;
// ReadSnapshot reads every declared gauge in its one statement, so metrics
// never names another package's tables or summary keys.
type Gauge struct {
	// Name is the metric's name without the redrive_ prefix.
	Name string
	// Help is the metric's HELP text.
	Help string
	// SQL is a scalar expression (usually a subquery) giving the value as
	// an integer; NULL leaves the gauge off the page.
	SQL string
	// Scale multiplies the value on the page (0 means 1): 0.001 turns
	// milliseconds into seconds.
	Scale float64
}

var (
	gaugesMu sync.Mutex
	gauges   []Gauge
)

// validGaugeName reports whether name matches ^[a-z][a-z0-9_]*$. A loop,
// not a regexp: gauges are declared at package initialisation, and a
// regexp compiled there is paid by every new instance's first answer.
func validGaugeName(name string) bool {
	for i, c := range []byte(name) {
		if !('a' <= c && c <= 'z' || i > 0 && ('0' <= c && c <= '9' || c == '_')) {
			return false
		}
	}
	return name != ""
}

// DeclareGauge registers g, at package initialisation. A name declared twice
// or not a metric name panics.
func DeclareGauge(g Gauge) {
	gaugesMu.Lock()
	defer gaugesMu.Unlock()
	if !validGaugeName(g.Name) || strings.TrimSpace(g.SQL) == "" {
		panic(fmt.Sprintf("metrics: gauge %q: bad name or no SQL", g.Name))
	}
	if slices.ContainsFunc(gauges, func(d Gauge) bool { return d.Name == g.Name }) {
		panic(fmt.Sprintf("metrics: gauge %q declared twice", g.Name))
	}
	gauges = append(gauges, g)
	slices.SortFunc(gauges, func(a, b Gauge) int { return strings.Compare(a.Name, b.Name) })
}

// declaredGauges returns the declared gauges, sorted by name.
func declaredGauges() []Gauge {
	gaugesMu.Lock()
	defer gaugesMu.Unlock()
	return slices.Clone(gauges)
}

// gaugesTerm is the snapshot's one compound term for every declared gauge:
// a row ('gauge', name, value) per gauge whose value is not NULL. Names are
// checked by DeclareGauge, so they can be SQL literals.
func gaugesTerm(gs []Gauge) string {
	if len(gs) == 0 {
		return ""
	}
	parts := make([]string, 0, 2*len(gs))
	for _, g := range gs {
		parts = append(parts, "'"+g.Name+"'", "("+g.SQL+")")
	}
	return `
			UNION ALL SELECT 'gauge', j.key, '', j.value, 0, 0, 0, 0, 0, 0 FROM json_each(json_object(` + strings.Join(parts, ", ") + `)) AS j
				WHERE j.value IS NOT NULL`
}
