package enrichment

import (
	"strconv"
	"testing"
	"time"

	"github.com/redrive/redrive/config"
)

// Cost of one waiting beer's own bookkeeping (docs/operations.md "Outages"),
// in queue operations (a send, a read and a delete per message) and D1 rows
// written (a beers row and its idx_beers_status_next entry).
const (
	queueOpsPerMessage = 3
	rowsPerPark        = 3  // the park: the row, its index entry out and in
	rowsPerRelease     = 4  // the catch-up's claim (3) and the consumer's track (1)
	rowsPerProbe       = 12 // a probe's round trip: claim, track, breaker claim and verdict, quota, the park or attempt
)

// shippedSeconds is a var's default from config.Specs, in seconds.
func shippedSeconds(t *testing.T, name string) time.Duration {
	t.Helper()
	for _, s := range config.Specs() {
		if s.Name == name {
			n, err := strconv.Atoi(s.Default)
			if err != nil {
				t.Fatal(err)
			}
			return time.Duration(n) * time.Second
		}
	}
	t.Fatalf("no var %s", name)
	return 0
}

// probeSchedule is when the breaker's probes happen in an outage that
// opened it at 0 and never ends, at its worst: every re-open as short as
// the schedule allows (max(cooldown, c/2)), a probe at the first catch-up
// run (every tick) at or after the breaker is due.
func probeSchedule(b Breaker, tick, span time.Duration) []time.Duration {
	var probes []time.Duration
	due := b.Cooldown
	for now := tick; now <= span; now += tick {
		if now >= due {
			probes = append(probes, now)
			due = now + max(b.Cooldown, b.ReopenCap(len(probes))/2)
		}
	}
	return probes
}

// At the shipped settings, computed from the schedule: a waiting beer
// costs at most 30 queue operations in an outage's first hour, and on
// average at most 10 queue operations and 10 D1 rows written per hour over
// 24 hours (the probes shared by 10 waiting beers, or more; alone, a beer
// under a revoked key bears every probe: logged). Recovery: every waiting
// beer is back on the queue within 30 minutes of the provider answering
// again.
func TestOutageScheduleCostAtShippedSettings(t *testing.T) {
	b := Breaker{Cooldown: shippedSeconds(t, "ENRICHMENT_BREAKER_COOLDOWN_SECONDS"),
		MaxCooldown: shippedSeconds(t, "ENRICHMENT_BREAKER_MAX_COOLDOWN_SECONDS")}
	tick := 5 * time.Minute // the frequent cron, which runs the catch-up
	probes := probeSchedule(b, tick, 24*time.Hour)
	perHour := make([]int, 24)
	for _, p := range probes {
		perHour[min(23, int((p-1)/time.Hour))]++
	}
	t.Logf("probes per hour of a 24-hour outage: %v (%d in all)", perHour, len(probes))
	if perHour[0] > 8 || slicesMax(perHour[1:]) > 6 {
		t.Fatalf("probes per hour %v: more than docs/operations.md's 8 in the first hour or 6 in a later one", perHour)
	}
	for _, waiting := range []int{1, 10, 10_000} {
		share := func(n int) float64 { return float64(n) / float64(waiting) }
		firstHourOps := queueOpsPerMessage * (share(perHour[0]) + 1) // its probes' share and its release
		dayOps := queueOpsPerMessage * (share(len(probes)) + 1) / 24
		dayRows := (rowsPerPark + rowsPerRelease + rowsPerProbe*share(len(probes))) / 24
		t.Logf("%d waiting: %.1f queue ops in the first hour; per hour over 24 h: %.2f queue ops, %.2f D1 rows written",
			waiting, firstHourOps, dayOps, dayRows)
		if waiting >= 10 && (firstHourOps > 30 || dayOps > 10 || dayRows > 10) {
			t.Fatalf("%d waiting beers: over budget", waiting)
		}
		if waiting == 1 && firstHourOps > 30 {
			t.Fatalf("a lone waiting beer: %.1f queue ops in the first hour", firstHourOps)
		}
	}
	// Recovery, at its worst: the provider answers just after a failed probe
	// at the cap; the next probe is due the longest re-open later, runs on
	// the next tick and closes the breaker; the tick after releases every
	// waiting beer.
	if worst := b.ReopenCap(100) + 2*tick; worst > 25*time.Minute {
		t.Fatalf("recovery up to %v, want within 25 minutes", worst)
	}
	// ENRICHMENT_BREAKER_MAX_COOLDOWN_SECONDS's bound keeps it within 30.
	for _, s := range config.Specs() {
		if s.Name == "ENRICHMENT_BREAKER_MAX_COOLDOWN_SECONDS" && time.Duration(s.Max)*time.Second+2*tick > 30*time.Minute {
			t.Fatalf("the bound %d s allows a recovery over 30 minutes", s.Max)
		}
	}
}

func slicesMax(xs []int) int {
	m := 0
	for _, x := range xs {
		m = max(m, x)
	}
	return m
}
