package enrichment

import (
	"strconv"
	"testing"
	"time"

	"github.com/redrive/redrive/config"
)

// Cost of one waiting beer's own bookkeeping (docs/operations.md "Outages"),
// in queue operations and D1 rows written (a beers row and its
// idx_beers_status_next entry count apart). These are upper bounds.
const (
	queueOpsPerMessage = 3  // a round trip: a send, a read and a delete
	rowsPerPark        = 3  // the park: the row, its index entry out and in
	rowsPerRelease     = 4  // the catch-up's claim (3) and the consumer's track (1)
	rowsPerDeadLetter  = 12 // the last attempt's DLQ row (its indexes and counters) and the beer marked failed
	// A waiting beer sent back as the probe of a transient outage: the
	// round trip and the queue's redelivery after the failed call (a
	// retry is one more read).
	queueOpsPerBeerProbe = 4
	// Its rows: the claim, two tracks, the breaker's claim and verdict, the
	// quota, the attempt (the beer's count, message_attempts and its index)
	// and the park after the redelivery.
	rowsPerBeerProbe = 20
	// The catch-up's own key probe while the key is refused (KeyProbe): no
	// message, the breaker row only (ReopenAfterKeyProbe).
	queueOpsPerKeyProbe = 0
	rowsPerKeyProbe     = 1
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

// shippedInt is a var's default from config.Specs.
func shippedInt(t *testing.T, name string) int {
	t.Helper()
	return int(shippedSeconds(t, name) / time.Second)
}

// outageCost is what one waiting beer costs over an outage of 24 hours.
type outageCost struct {
	firstHourOps      float64 // queue operations in the first hour
	dayOpsPerHour     float64 // queue operations per hour over 24 hours
	dayRowsPerHour    float64 // D1 rows written per hour over 24 hours
	probesOfThisBeer  float64 // probes this beer bears (its share)
	probesInFirstHour float64
}

// costPerWaitingBeer is one waiting beer's cost among waiting beers in an
// outage of cause whose probes are at probes (every one failing until the
// end of the 24 hours):
//
//   - auth (the key refused): the catch-up probes the key itself
//     (KeyProbe), no queue operation and one row each, shared by all the
//     waiting beers; no attempt is spent, so the beer waits all 24 hours
//     and is released at the end.
//   - transient (the provider answers 500): a waiting beer goes back as
//     each probe, rotating; each failed probe spends one of its attempts,
//     so a beer bears at most maxAttempts probes (its share of the
//     schedule when smaller) and is then dead-lettered; counted as if it
//     were both dead-lettered and released.
func costPerWaitingBeer(cause string, waiting, maxAttempts int, probes []time.Duration) outageCost {
	inFirstHour := 0
	for _, p := range probes {
		if p <= time.Hour {
			inFirstHour++
		}
	}
	share := func(n int) float64 { return float64(n) / float64(waiting) }
	var c outageCost
	switch cause {
	case CauseAuth:
		c.probesOfThisBeer, c.probesInFirstHour = share(len(probes)), share(inFirstHour)
		c.firstHourOps = queueOpsPerKeyProbe*c.probesInFirstHour + queueOpsPerMessage // its release
		c.dayOpsPerHour = (queueOpsPerKeyProbe*c.probesOfThisBeer + queueOpsPerMessage) / 24
		c.dayRowsPerHour = (rowsPerPark + rowsPerRelease + rowsPerKeyProbe*c.probesOfThisBeer) / 24
	case CauseTransient:
		c.probesOfThisBeer = min(float64(maxAttempts), share(len(probes)))
		c.probesInFirstHour = min(float64(maxAttempts), share(inFirstHour))
		c.firstHourOps = queueOpsPerBeerProbe*c.probesInFirstHour + queueOpsPerMessage
		c.dayOpsPerHour = (queueOpsPerBeerProbe*c.probesOfThisBeer + queueOpsPerMessage) / 24
		c.dayRowsPerHour = (rowsPerPark + rowsPerRelease + rowsPerDeadLetter + rowsPerBeerProbe*c.probesOfThisBeer) / 24
	}
	return c
}

// At the shipped settings, computed from the schedule: a waiting beer
// costs at most 30 queue operations in an outage's first hour, and on
// average at most 10 queue operations and 10 D1 rows written per hour over
// 24 hours, whatever the number of waiting beers (a lone one included) and
// the cause (a revoked key or 500s). Recovery: every waiting beer is back
// on the queue within 30 minutes of the provider answering again, or of
// the key's fix.
func TestOutageScheduleCostAtShippedSettings(t *testing.T) {
	b := Breaker{Cooldown: shippedSeconds(t, "ENRICHMENT_BREAKER_COOLDOWN_SECONDS"),
		MaxCooldown: shippedSeconds(t, "ENRICHMENT_BREAKER_MAX_COOLDOWN_SECONDS")}
	maxAttempts := shippedInt(t, "ENRICHMENT_MAX_ATTEMPTS")
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
	for _, cause := range []string{CauseAuth, CauseTransient} {
		for _, waiting := range []int{1, 2, 3, 10, 100, 10_000} {
			c := costPerWaitingBeer(cause, waiting, maxAttempts, probes)
			t.Logf("%s, %d waiting: %.1f probes borne (%.1f in the first hour), %.1f queue ops in the first hour; per hour over 24 h: %.2f queue ops, %.2f D1 rows written",
				cause, waiting, c.probesOfThisBeer, c.probesInFirstHour, c.firstHourOps, c.dayOpsPerHour, c.dayRowsPerHour)
			if c.firstHourOps > 30 || c.dayOpsPerHour > 10 || c.dayRowsPerHour > 10 {
				t.Errorf("%s, %d waiting beers: over budget (30 queue ops in the first hour; 10 queue ops and 10 rows an hour over 24 h)", cause, waiting)
			}
		}
	}
	// Recovery, at its worst: the provider answers (or the key is fixed)
	// just after a failed probe at the cap; the next probe is due the
	// longest re-open later and runs on the next tick. The key probe
	// closes the breaker and its own run releases every waiting beer; a
	// beer probe closes it from the consumer and the tick after releases.
	worstAuth, worstTransient := b.ReopenCap(100)+tick, b.ReopenCap(100)+2*tick
	t.Logf("recovery at worst: %s after a key fix, %s after a transient outage", worstAuth, worstTransient)
	if worstAuth > 20*time.Minute || worstTransient > 25*time.Minute {
		t.Fatalf("recovery up to %v (key) and %v (500s), want within 20 and 25 minutes (docs/operations.md)", worstAuth, worstTransient)
	}
	// ENRICHMENT_BREAKER_MAX_COOLDOWN_SECONDS's bound keeps it within 30.
	for _, s := range config.Specs() {
		if s.Name == "ENRICHMENT_BREAKER_MAX_COOLDOWN_SECONDS" && time.Duration(s.Max)*time.Second+2*tick > 30*time.Minute {
			t.Fatalf("the bound %d s allows a recovery over 30 minutes", s.Max)
		}
	}
}

// The cost model itself: a lone beer under a revoked key bears every key
// probe, which costs it no queue operation; without the key probe (a
// waiting beer as the probe, as before KeyProbe) the same beer would be
// over budget, so the test above would catch a regression to it.
func TestOutageCostModelCatchesTheBeerProbeForARevokedKey(t *testing.T) {
	b := Breaker{Cooldown: shippedSeconds(t, "ENRICHMENT_BREAKER_COOLDOWN_SECONDS"),
		MaxCooldown: shippedSeconds(t, "ENRICHMENT_BREAKER_MAX_COOLDOWN_SECONDS")}
	probes := probeSchedule(b, 5*time.Minute, 24*time.Hour)
	lone := costPerWaitingBeer(CauseAuth, 1, 4, probes)
	if lone.probesOfThisBeer != float64(len(probes)) || lone.dayOpsPerHour != queueOpsPerMessage/24.0 {
		t.Fatalf("lone beer under a revoked key: %+v", lone)
	}
	// A beer probe for every key probe, no attempt spent (the old way).
	old := float64(len(probes)) * (queueOpsPerMessage + 0) / 24
	oldRows := float64(len(probes)) * 12 / 24
	t.Logf("a lone beer as the probe of a revoked key: %.1f queue ops and %.1f rows an hour over 24 h", old, oldRows)
	if old <= 10 || oldRows <= 10 {
		t.Fatalf("the old way would be within budget (%.1f ops, %.1f rows): the model lost its teeth", old, oldRows)
	}
	// 500s: the lone beer's attempts bound its probes.
	if c := costPerWaitingBeer(CauseTransient, 1, 4, probes); c.probesOfThisBeer != 4 {
		t.Fatalf("lone beer under 500s bears %.1f probes, want its 4 attempts", c.probesOfThisBeer)
	}
}

func slicesMax(xs []int) int {
	m := 0
	for _, x := range xs {
		m = max(m, x)
	}
	return m
}
