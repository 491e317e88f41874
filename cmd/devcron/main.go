// Command devcron fires the worker's cron triggers under `make dev`, as
// Cloudflare does in production: wrangler dev never fires them on its own
// schedule. It reads the expressions from wrangler.jsonc's triggers.crons
// and, when one is due, asks wrangler dev for the runtime's scheduled event
// (GET /__scheduled?cron=…, --test-scheduled), so the worker's real
// scheduled entry runs the jobs, as a deployed worker's would.
//
// -speed N runs the schedule N times faster (make dev DEV_CRON_SPEED=60:
// the 5-minute cron every 5 s, the daily one every 24 min); the jobs still
// see the real time.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/redrive/redrive/internal/wranglerconfig"
)

func main() {
	base := flag.String("url", "http://127.0.0.1:8787", "the worker under wrangler dev --test-scheduled")
	root := flag.String("root", ".", "folder of the wrangler.jsonc whose triggers.crons are fired")
	speed := flag.Float64("speed", 1, "run the schedule this many times faster (1: production's times)")
	flag.Parse()
	if err := run(*base, *root, *speed); err != nil {
		log.Fatalf("devcron: %v", err)
	}
}

func run(base, root string, speed float64) error {
	cfg, err := wranglerconfig.Load(root)
	if err != nil {
		return err
	}
	t, err := NewTicker(cfg.Triggers.Crons, speed, time.Now())
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	fmt.Printf("devcron: firing %q on %s at %gx speed\n", cfg.Triggers.Crons, base, speed)
	t.Run(ctx, func(expr string, due time.Time) {
		start := time.Now()
		if err := Fire(ctx, http.DefaultClient, base, expr); err != nil {
			log.Printf("devcron: %q (due %s): %v", expr, due.UTC().Format(time.TimeOnly), err)
			return
		}
		log.Printf("devcron: ran %q (due %s) in %s", expr, due.UTC().Format(time.TimeOnly), time.Since(start).Round(time.Millisecond))
	})
	return nil
}

// Ticker says when each cron expression is next due on a clock that runs
// Speed times faster than the wall clock from Start.
type Ticker struct {
	exprs []string
	specs []cron.Schedule
	speed float64
	start time.Time
	// next holds each expression's next due time on the scaled clock.
	next []time.Time
}

// NewTicker parses the standard five-field expressions; speed must be > 0.
func NewTicker(exprs []string, speed float64, start time.Time) (*Ticker, error) {
	if len(exprs) == 0 {
		return nil, errors.New("no cron expressions (triggers.crons)")
	}
	if !(speed > 0) || speed > 1e6 {
		return nil, fmt.Errorf("speed %g: want a number in (0, 1e6]", speed)
	}
	t := &Ticker{exprs: exprs, speed: speed, start: start}
	for _, e := range exprs {
		s, err := cron.ParseStandard(e)
		if err != nil {
			return nil, fmt.Errorf("cron %q: %w", e, err)
		}
		t.specs = append(t.specs, s)
		t.next = append(t.next, s.Next(start.UTC()))
	}
	return t, nil
}

// Scaled is the scaled clock's time at wall time now.
func (t *Ticker) Scaled(now time.Time) time.Time {
	return t.start.Add(time.Duration(float64(now.Sub(t.start)) * t.speed))
}

// Wall is the wall time at which the scaled clock shows at.
func (t *Ticker) Wall(at time.Time) time.Time {
	return t.start.Add(time.Duration(float64(at.Sub(t.start)) / t.speed))
}

// Due returns the expressions due at wall time now, each with its due time on
// the scaled clock, and advances them; each expression fires at most once per
// call even if the caller slept through several of its times (as a missed
// Cloudflare trigger is not made up either).
func (t *Ticker) Due(now time.Time) (exprs []string, due []time.Time) {
	scaled := t.Scaled(now)
	for i, n := range t.next {
		if n.After(scaled) {
			continue
		}
		exprs, due = append(exprs, t.exprs[i]), append(due, n)
		t.next[i] = t.specs[i].Next(scaled.UTC())
	}
	return exprs, due
}

// NextWall is the wall time at which the earliest expression is next due.
func (t *Ticker) NextWall() time.Time {
	earliest := t.next[0]
	for _, n := range t.next[1:] {
		if n.Before(earliest) {
			earliest = n
		}
	}
	return t.Wall(earliest)
}

// Run calls fire for every due expression, in order, until ctx ends. A run
// that takes longer than the gap to the next one delays it, as in production
// a trigger does not overlap itself here.
func (t *Ticker) Run(ctx context.Context, fire func(expr string, due time.Time)) {
	for {
		timer := time.NewTimer(time.Until(t.NextWall()))
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case <-timer.C:
		}
		exprs, due := t.Due(time.Now())
		for i, e := range exprs {
			fire(e, due[i])
		}
	}
}

// Fire asks wrangler dev (--test-scheduled) for the scheduled event of expr.
func Fire(ctx context.Context, c *http.Client, base, expr string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/__scheduled?"+url.Values{"cron": {expr}}.Encode(), nil)
	if err != nil {
		return err
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status %d: %s", resp.StatusCode, body)
	}
	return nil
}
