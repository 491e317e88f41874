//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/redrive/redrive/internal/sqlitetest"
)

// d1Meter is what a metered worker's D1 binding did (bench/d1meta): the
// statements it ran and D1's rows_read and rows_written, summed from the
// meta of each result in workerd.
type d1Meter struct {
	Statements  int64 `json:"statements"`
	RowsRead    int64 `json:"rows_read"`
	RowsWritten int64 `json:"rows_written"`
}

// meterClient gives up on a meter request after a while: after a long
// cron run, wrangler dev sometimes left the next request to the worker
// unanswered until yet another request arrived (seen with the range-delete
// retention and the one before it alike, outside the measured cron calls).
var meterClient = &http.Client{Timeout: 20 * time.Second}

// meter returns the worker's D1 totals so far (reset: zeroes them). The
// meter answers in JavaScript, without Go or D1, so nothing is counted
// between two tries: a request that gets no answer is simply sent again.
func (w *Worker) meter(t *testing.T, reset bool) d1Meter {
	t.Helper()
	method, path := http.MethodGet, "/__d1meta"
	if reset {
		method, path = http.MethodPost, "/__d1meta/reset"
	}
	var last error
	for try := 0; try < 5; try++ {
		req, _ := http.NewRequest(method, w.URL+path, nil)
		resp, err := meterClient.Do(req)
		if err != nil {
			last = err
			continue
		}
		var m d1Meter
		err = json.NewDecoder(resp.Body).Decode(&m)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("d1 meter: %d %v", resp.StatusCode, err)
		}
		return m
	}
	t.Fatalf("d1 meter: %v", last)
	return d1Meter{}
}

// fireTimed fires cron at `when` and returns the time until the cron's
// last job (audit_retention on the daily cron, alerts on the frequent one)
// recorded its run. The scheduled call's own answer is awaited too, but not
// timed: after a long run, wrangler dev sometimes held it until another
// request reached the worker (seen with the range-delete retention and the
// one before it alike), so the worker is sent a request that touches neither Go nor D1
// (the meter's GET) every two seconds until it answers.
func fireTimed(t *testing.T, w *Worker, cron string, when time.Time) time.Duration {
	t.Helper()
	last := "alerts"
	if cron == cronDaily {
		last = "audit_retention"
	}
	answered := make(chan error, 1)
	start := time.Now()
	// FireCronErr: /__dev/cron for redrive (its static assets answer
	// /cdn-cgi/handler/scheduled themselves), the runtime's handler for the
	// reference.
	go func() { answered <- w.FireCronErr(cron, when) }()
	var fireErr error
	if err := pollFast(30*time.Minute, func() bool {
		select {
		case err := <-answered:
			if err != nil {
				fireErr = err
				return true
			}
			answered <- nil // answered: keep it for the wait below
		default:
		}
		return w.Int(t, `SELECT COUNT(*) FROM job_runs WHERE job = ? AND last_run_at = ?`, last, when.UnixMilli()) == 1
	}); err != nil || fireErr != nil {
		t.Fatalf("cron %q at %s: %s not recorded: %v %v", cron, when, last, err, fireErr)
	}
	took := time.Since(start)
	for {
		select {
		case err := <-answered:
			if err != nil {
				t.Fatalf("cron %q at %s: %v", cron, when, err)
			}
			return took
		case <-time.After(2 * time.Second):
			w.meter(t, false)
		}
	}
}

// retentionRun is one scheduled run of redrive's dlq_retention in the bench.
type retentionRun struct {
	Cron        string  `json:"cron"`
	Seconds     float64 `json:"seconds"` // the whole cron (every job of it), until its last job recorded its run
	Deleted     int64   `json:"deleted"`
	ExpiredLeft int64   `json:"expired_left"`
	More        bool    `json:"more"`
}

// TestBenchRetention1M is the retention figure at a million expired rows
// (`make bench-retention`; also part of `make bench`): 1,000,000 expired
// terminal rows (acknowledged/replayed 60 days ago, 5,000 beer ids) plus
// 1,000 pending rows, seeded in SQL on each worker, each with its D1
// binding metered (bench/d1meta: D1's rows_read/rows_written of every
// statement, in workerd). redrive: the daily cron once, then the frequent
// cron (5 minutes of scheduled time apart) while its last run says more,
// with the shipped settings (20 s budget, batches of 10,000) and again with
// a 5 s budget, so that the backlog outlasts the daily run; the reference:
// its daily cleanup, once. Reported: runs, time until no expired row is
// left, rows read and written in total, and redrive's throughput per hour
// of scheduled runs.
func TestBenchRetention1M(t *testing.T) {
	if os.Getenv("REDRIVE_BENCH") == "" {
		t.Skip("benchmarks run with `make bench` or `make bench-retention` (REDRIVE_BENCH=1)")
	}
	rows, pending := 1_000_000, 1000
	if n, err := strconv.Atoi(os.Getenv("REDRIVE_BENCH_RETENTION_ROWS")); err == nil && n > 0 && n%4 == 0 {
		rows = n // a smaller backlog, to try the scenario out
	}
	root, _ := sqlitetest.Root()
	rep := &benchReport{When: time.Now().UTC(), Machine: fmt.Sprintf("%s/%s, %d CPUs, %s", runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.Version())}
	at := cronTime()
	terminal := `SELECT COUNT(*) FROM dlq_messages WHERE status IN ('acknowledged', 'replayed')`
	seed := func(x *Worker, redrive bool) {
		start := time.Now()
		for part := 0; part < 4; part++ { // four statements of rows/4 (each one wrangler call)
			x.Exec(t, seedExpiredSQL(fmt.Sprintf("r1m%d", part), at.UnixMilli(), rows/4, redrive))
		}
		cols, vals := "message_id, "+x.KeyColumn(), "'p-' || i, 'p-' || (i % 100)"
		if redrive {
			cols, vals = cols+", last_message_id", vals+", ''"
		}
		x.Exec(t, fmt.Sprintf(`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < %d)
			INSERT INTO dlq_messages(%s, status, failed_at) SELECT %s, 'pending', %d FROM n`, pending, cols, vals, at.Add(-400*24*time.Hour).UnixMilli()))
		if got := x.Int(t, `SELECT COUNT(*) FROM dlq_messages`); got != int64(rows+pending) {
			t.Fatalf("seeded %d rows on %s", got, x.URL)
		}
		fmt.Fprintf(os.Stderr, "bench: seeded %d rows on %s in %s\n", rows+pending, x.URL, time.Since(start).Round(time.Second))
	}

	type outcome struct {
		runs  []retentionRun
		took  time.Duration
		meter d1Meter
	}
	// catchUp fires the daily cron at `at`, then the frequent cron every 5
	// minutes of scheduled time while dlq_retention's last run says more.
	catchUp := func(w *Worker, label string) outcome {
		var o outcome
		w.meter(t, true)
		for cron, when := cronDaily, at; ; cron, when = cronFrequent, when.Add(5*time.Minute) {
			el := fireTimed(t, w, cron, when)
			o.took += el
			var r retentionRun
			var more int64
			if err := w.DB(t).QueryRow(`SELECT last_summary ->> '$.deleted_age', COALESCE(last_summary ->> '$.expired_left', -1),
				last_summary ->> '$.more' FROM job_runs WHERE job = 'dlq_retention' AND last_run_at = ?`, when.UnixMilli()).Scan(&r.Deleted, &r.ExpiredLeft, &more); err != nil {
				t.Fatalf("%s: dlq_retention run at %s not recorded: %v", label, when, err)
			}
			r.Cron, r.Seconds, r.More = cron, el.Seconds(), more == 1
			o.runs = append(o.runs, r)
			fmt.Fprintf(os.Stderr, "bench: redrive (%s) %s run %d: %.1f s, deleted %d, expired_left %d, more %v\n",
				label, cron, len(o.runs), r.Seconds, r.Deleted, r.ExpiredLeft, r.More)
			if !r.More {
				break
			}
			if len(o.runs) > 13 {
				t.Fatalf("%s: retention still behind after the daily run and 12 frequent runs (one hour): %+v", label, o.runs)
			}
		}
		o.meter = w.meter(t, false)
		if left := w.Int(t, terminal); left != 0 {
			t.Fatalf("%s: redrive left %d expired rows", label, left)
		}
		if n := w.Int(t, `SELECT COUNT(*) FROM dlq_messages WHERE status = 'pending'`); n != int64(pending) {
			t.Fatalf("%s: %d pending rows, want %d untouched", label, n, pending)
		}
		return o
	}
	runsNote := func(o outcome) string {
		note := fmt.Sprintf("daily + %d frequent runs; deleted per run:", len(o.runs)-1)
		for _, r := range o.runs {
			note += fmt.Sprintf(" %d (%.1f s)", r.Deleted, r.Seconds)
		}
		return note
	}

	// The reference: its own daily auto-cleanup, awaited by /__scheduled.
	ref, err := StartWorker(Options{Config: referenceOptions.Config, ReadyPath: referenceOptions.ReadyPath, Main: "bench/d1meta/reference.mjs"})
	if err != nil {
		t.Fatal(err)
	}
	defer ref.Stop()
	seed(ref, false)
	ref.meter(t, true)
	start := time.Now()
	resp, err := http.Get(ref.URL + "/__scheduled?cron=" + url.QueryEscape(referenceCleanupCron))
	if err != nil {
		t.Fatalf("reference cleanup: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("reference cleanup: %d %s", resp.StatusCode, body)
	}
	if err := pollFast(10*time.Minute, func() bool { return ref.Int(t, terminal) == 0 }); err != nil {
		t.Fatalf("reference cleanup left %d rows: %v", ref.Int(t, terminal), err)
	}
	refTook := time.Since(start)
	refM := ref.meter(t, false)
	ref.Stop()
	refRuns := &benchSide{Median: 1, N: 1, Note: "one run of its daily cleanup"}

	// redrive with the shipped settings.
	w, err := StartWorker(Options{Main: "bench/d1meta/redrive.mjs"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	seed(w, true)
	shipped := catchUp(w, "shipped settings")
	name := fmt.Sprintf("retention %dk expired (+%d pending)", rows/1000, pending)
	rep.add(benchFigure{Name: name + ": runs until none left", Unit: "runs", Median: float64(len(shipped.runs)), N: 1,
		Target: "within one hour of scheduled runs (daily + 12 frequent)", Note: runsNote(shipped), Reference: refRuns})
	rep.add(benchFigure{Name: name + ": time until none left", Unit: "s", Median: shipped.took.Seconds(), N: 1,
		Note:      "from each fire until the cron's last job recorded its run, summed (frequent runs include rescue, catch-up, alerts)",
		Reference: &benchSide{Median: refTook.Seconds(), N: 1, Note: "seed §5 cleanup via /__scheduled, until no row is left"}})
	rep.add(benchFigure{Name: name + ": D1 rows read", Unit: "rows", Median: float64(shipped.meter.RowsRead), N: 1,
		Note:      fmt.Sprintf("%d statements, every job of every cron call", shipped.meter.Statements),
		Reference: &benchSide{Median: float64(refM.RowsRead), N: 1, Note: fmt.Sprintf("%d statements", refM.Statements)}})
	rep.add(benchFigure{Name: name + ": D1 rows written", Unit: "rows", Median: float64(shipped.meter.RowsWritten), N: 1,
		Reference: &benchSide{Median: float64(refM.RowsWritten), N: 1}})

	// What a later run costs with nothing left to delete (the daily case),
	// and what a frequent tick costs once retention has caught up (the
	// whole frequent cron: rescue, catch-up and alerts included).
	w.meter(t, true)
	fireTimed(t, w, cronDaily, at.Add(24*time.Hour))
	idle := w.meter(t, false)
	w.meter(t, true)
	fireTimed(t, w, cronFrequent, at.Add(24*time.Hour+5*time.Minute))
	tick := w.meter(t, false)
	w.Stop()
	rep.add(benchFigure{Name: "daily run with nothing expired: D1 rows read", Unit: "rows", Median: float64(idle.RowsRead), N: 1,
		Note: fmt.Sprintf("%d statements, %d rows written (job_runs, counters)", idle.Statements, idle.RowsWritten)})
	rep.add(benchFigure{Name: "frequent cron once caught up: D1 rows read", Unit: "rows", Median: float64(tick.RowsRead), N: 1,
		Note: fmt.Sprintf("%d statements: rescue, catch-up, alerts (1,000 pending rows counted) and the two skipped retention checks", tick.Statements)})

	// redrive with a 5 s budget: the same backlog outlasts the daily run.
	w5, err := StartWorker(Options{Main: "bench/d1meta/redrive.mjs", Vars: map[string]string{"CRON_JOB_BUDGET_SECONDS": "5"}})
	if err != nil {
		t.Fatal(err)
	}
	defer w5.Stop()
	seed(w5, true)
	short := catchUp(w5, "5 s budget")
	rep.add(benchFigure{Name: name + ", CRON_JOB_BUDGET_SECONDS=5: runs until none left", Unit: "runs", Median: float64(len(short.runs)), N: 1,
		Target: "within one hour of scheduled runs", Note: runsNote(short), Reference: refRuns})
	rep.add(benchFigure{Name: name + ", CRON_JOB_BUDGET_SECONDS=5: time until none left", Unit: "s", Median: short.took.Seconds(), N: 1,
		Reference: &benchSide{Median: refTook.Seconds(), N: 1}})
	rep.add(benchFigure{Name: name + ", CRON_JOB_BUDGET_SECONDS=5: D1 rows read", Unit: "rows", Median: float64(short.meter.RowsRead), N: 1,
		Note:      fmt.Sprintf("%d statements; %d rows written", short.meter.Statements, short.meter.RowsWritten),
		Reference: &benchSide{Median: float64(refM.RowsRead), N: 1}})

	// Throughput: rows deleted per second of retention run (the whole cron),
	// times the retention time of an hour of scheduled runs with the
	// shipped settings: 12 frequent runs of CRON_JOB_BUDGET_SECONDS (20 s).
	var deleted int64
	var secs float64
	for _, o := range []outcome{shipped, short} {
		for _, r := range o.runs {
			deleted += r.Deleted
			secs += r.Seconds
		}
	}
	rep.add(benchFigure{Name: "retention throughput, shipped settings", Unit: "rows/h", Median: float64(deleted) / secs * 20 * 12, N: 1,
		Note: fmt.Sprintf("%d rows in %.1f s of runs (%.0f rows/s) x 20 s x 12 frequent runs an hour", deleted, secs, float64(deleted)/secs)})

	out := filepath.Join(root, "bench-results")
	os.MkdirAll(out, 0o755)
	js, _ := json.MarshalIndent(struct {
		*benchReport
		Shipped []retentionRun `json:"redrive_runs_shipped"`
		Short   []retentionRun `json:"redrive_runs_5s_budget"`
	}{rep, shipped.runs, short.runs}, "", "  ")
	if err := os.WriteFile(filepath.Join(out, "retention1m.json"), js, 0o644); err != nil {
		t.Fatal(err)
	}
	fmt.Fprintln(os.Stderr, rep.table())
	fmt.Fprintf(os.Stderr, "bench: wrote %s\n", filepath.Join(out, "retention1m.json"))
}
