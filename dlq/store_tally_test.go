package dlq

import (
	"fmt"
	"testing"
)

// tallyOf counts a batch with the statements without GROUP BY (whose
// sorter D1 bills as a second row read per row) exactly when Go knows the
// one group (dlq_tally: source queue and brewer) or the one hour and
// source queue (dlq_activity) of all its new rows; else with the grouped
// ones, which count each group and hour apart.
func TestTallyOfUsesTheOneGroupStatementsOnlyForOneGroup(t *testing.T) {
	enc := func(source, brewer string, hour int64) encoded {
		g := source + "\x00"
		if brewer != "" {
			g += "=" + brewer
		}
		return encoded{group: g, hour: hour}
	}
	for _, c := range []struct {
		name string
		encs []encoded
		want string // tally, activity: one or new
	}{
		{"alone", []encoded{enc("q", "A", 5)}, "one [q =A], one [5 q]"},
		{"same group and hour", []encoded{enc("q", "A", 5), enc("q", "A", 5), enc("q", "A", 5)}, "one [q =A], one [5 q]"},
		{"two hours", []encoded{enc("q", "A", 5), enc("q", "A", 5), enc("q", "A", 6)}, "one [q =A], new []"},
		{"two brewers", []encoded{enc("q", "A", 5), enc("q", "", 5)}, "new [], one [5 q]"},
		{"two queues", []encoded{enc("q", "A", 5), enc("r", "A", 5)}, "new [], new []"},
		{"two queues, no brewer", []encoded{enc("q", "", 5), enc("r", "", 5)}, "new [], new []"},
	} {
		tally, activity := tallyOf(c.encs)
		kind := func(sql, one, grouped string) string {
			switch sql {
			case one:
				return "one"
			case grouped:
				return "new"
			}
			return "?"
		}
		got := fmt.Sprintf("%s %v, %s %v", kind(tally.SQL, tallyOneSQL, tallyNewSQL), tally.Args,
			kind(activity.SQL, activityOneSQL, activityNewSQL), activity.Args)
		if got != c.want {
			t.Errorf("%s: %s, want %s", c.name, got, c.want)
		}
	}
}

// joinJSON builds the array in one allocation of at least its size (a
// batch parameter can be megabytes; growing it by appends would copy it
// again).
func TestJoinJSONAllocatesItsSizeOnce(t *testing.T) {
	elems := [][]byte{[]byte(`{"a":1}`), []byte(`{"b":22}`), []byte(`{}`)}
	want := `[{"a":1},{"b":22},{}]`
	var got []byte
	if n := testing.AllocsPerRun(20, func() { got = joinJSON(elems) }); n != 1 {
		t.Errorf("allocations = %v, want 1", n)
	}
	if string(got) != want || cap(got) < len(want) {
		t.Errorf("joinJSON = %s (cap %d), want %s (cap at least %d)", got, cap(got), want, len(want))
	}
	if got := string(joinJSON(nil)); got != "[]" {
		t.Errorf("joinJSON(nil) = %s", got)
	}
}
