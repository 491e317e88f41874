package metrics

import (
	"fmt"
	"sync"
)

var (
	declaredMu sync.Mutex
	declared   = map[string]string{}
)

// Declare registers a counter of the counters table with the help text
// /admin/metrics gives it, and returns its name. Each counter is declared
// once, at package initialisation, by the package that adds to it (a
// counter a D1 trigger adds to is declared by the package owning the
// trigger's table; a test checks the migrations name no other). Declaring
// a name twice panics.
func Declare(name, help string) string {
	declaredMu.Lock()
	defer declaredMu.Unlock()
	if _, dup := declared[name]; dup {
		panic(fmt.Sprintf("metrics: counter %q declared twice", name))
	}
	declared[name] = help
	return name
}

// Declared returns the help text of a declared counter.
func Declared(name string) (help string, ok bool) {
	declaredMu.Lock()
	defer declaredMu.Unlock()
	help, ok = declared[name]
	return help, ok
}
