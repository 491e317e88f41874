//go:build e2e

package e2e

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/config"
	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/internal/sqlitetest"
	"github.com/redrive/redrive/internal/wranglerconfig"
)

// benchEnv is wrangler.jsonc's environment of the capture-scaling bench:
// pipelines bench1..bench4, each with its own DLQ, and the D1 bindings
// benchBindings beside DB.
const benchEnv = "bench"

// benchBindings are the D1 bindings of the bench environment's pipelines
// bench1..bench4 when each is on its own database.
var benchBindings = []string{"BENCH1_DB", "BENCH2_DB", "BENCH3_DB", "BENCH4_DB"}

// benchPipelinesVar is PIPELINES of wrangler.jsonc's bench environment,
// with pipeline benchN in database BENCHN_DB: the one var that tells the
// "each on its own database" worker from the "all on one" worker, which
// runs the environment as written.
func benchPipelinesVar(t *testing.T) string {
	t.Helper()
	root, err := sqlitetest.Root()
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := wranglerconfig.Load(root)
	if err != nil {
		t.Fatal(err)
	}
	var entries []map[string]any
	if err := json.Unmarshal([]byte(cfg.Envs[benchEnv].Vars["PIPELINES"]), &entries); err != nil {
		t.Fatalf("env %s PIPELINES: %v", benchEnv, err)
	}
	moved := 0
	for _, e := range entries {
		for i, b := range benchBindings {
			if e["name"] == fmt.Sprintf("bench%d", i+1) {
				e["database"] = b
				moved++
			}
		}
	}
	if moved != len(benchBindings) {
		t.Fatalf("env %s PIPELINES has %d of the pipelines bench1..bench%d", benchEnv, moved, len(benchBindings))
	}
	js, err := json.Marshal(entries)
	if err != nil {
		t.Fatal(err)
	}
	return string(js)
}

// d1File is one local D1 database of a worker: its SQLite file under
// --persist-to, opened read-only.
type d1File struct {
	Binding string
	Path    string
	DB      *sql.DB
}

// benchD1Files opens every local D1 file of w and names each by its
// binding: BENCHn_DB's file is the one whose dlq_messages ids count from
// dlq.IDBase("BENCHn_DB") (the harness seeded it), DB's the one whose
// ids count from 0. The files are closed when the test ends.
func benchD1Files(t *testing.T, w *Worker) map[string]*d1File {
	t.Helper()
	paths, _ := filepath.Glob(filepath.Join(w.persist, "v3", "d1", "miniflare-D1DatabaseObject", "*.sqlite"))
	out := map[string]*d1File{}
	for _, p := range paths {
		if filepath.Base(p) == "metadata.sqlite" {
			continue
		}
		db, err := sql.Open("sqlite", "file:"+p+"?mode=ro&_pragma=busy_timeout(5000)")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		var seq int64
		if err := db.QueryRow(`SELECT COALESCE((SELECT seq FROM sqlite_sequence WHERE name = 'dlq_messages'), 0)`).Scan(&seq); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		binding := config.SharedDatabase
		if seq >= 1<<40 {
			binding = ""
			for _, b := range benchBindings {
				if base := dlq.IDBase(b); seq >= base && seq < base+1<<40 {
					binding = b
				}
			}
		}
		if binding == "" || out[binding] != nil {
			t.Fatalf("local D1 file %s (ids from %d) is no binding's, or a second one's: %v", p, seq, out)
		}
		out[binding] = &d1File{Binding: binding, Path: p, DB: db}
	}
	if len(out) != len(benchBindings)+1 {
		t.Fatalf("%d local D1 files under %s, want DB and %v", len(out), w.persist, benchBindings)
	}
	return out
}

// int64Of runs a query returning one integer on f.
func (f *d1File) int64Of(t *testing.T, q string, args ...any) int64 {
	t.Helper()
	var n sql.NullInt64
	if err := f.DB.QueryRow(q, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %s: %v", f.Binding, q, err)
	}
	return n.Int64
}

// usedBytes is the bytes of f's pages in use ((page_count - freelist_count)
// × page_size, the write-ahead log's pages included: what D1 counts as the
// database's size, indexes and all) and, per table and index, the bytes of
// its pages (dbstat).
func (f *d1File) usedBytes(t *testing.T) (int64, map[string]int64) {
	t.Helper()
	used := f.int64Of(t, `SELECT (SELECT page_count FROM pragma_page_count) - (SELECT freelist_count FROM pragma_freelist_count)`) *
		f.int64Of(t, `SELECT page_size FROM pragma_page_size`)
	rows, err := f.DB.Query(`SELECT name, SUM(pgsize) FROM dbstat GROUP BY name`)
	if err != nil {
		t.Fatalf("%s: dbstat: %v", f.Binding, err)
	}
	defer rows.Close()
	by := map[string]int64{}
	for rows.Next() {
		var name string
		var n int64
		if err := rows.Scan(&name, &n); err != nil {
			t.Fatal(err)
		}
		by[name] = n
	}
	return used, by
}

// meanRaw is the mean length in bytes of the stored messages of f.
func (f *d1File) meanRaw(t *testing.T) float64 {
	t.Helper()
	var m sql.NullFloat64
	if err := f.DB.QueryRow(`SELECT AVG(length(CAST(raw_message AS BLOB))) FROM dlq_messages`).Scan(&m); err != nil {
		t.Fatalf("%s: %v", f.Binding, err)
	}
	return m.Float64
}

// scaleQueueLine is the local Queues broker's line after each batch of a
// bench DLQ it delivered (see brokerLine).
var scaleQueueLine = regexp.MustCompile(`QUEUE (bench\d-dlq) (\d+)/(\d+) \((\d+)ms\)`)

// scaleBrokerBatches returns, per bench DLQ, the settle times (ms) of the
// batches w's broker delivered so far, and the messages of them it reported
// acked and delivered.
func scaleBrokerBatches(w *Worker) (ms map[string][]float64, acked, total map[string]int) {
	ms, acked, total = map[string][]float64{}, map[string]int{}, map[string]int{}
	for _, m := range scaleQueueLine.FindAllStringSubmatch(ansi.ReplaceAllString(w.Log(), ""), -1) {
		a, _ := strconv.Atoi(m[2])
		n, _ := strconv.Atoi(m[3])
		d, _ := strconv.ParseFloat(m[4], 64)
		ms[m[1]] = append(ms[m[1]], d)
		acked[m[1]] += a
		total[m[1]] += n
	}
	return ms, acked, total
}

// workerdTicks returns the CPU time (clock ticks, user + system) of every
// thread of the workerd processes in w's process group, by thread id: how
// many cores the runtime used during a drain, and whether one thread did
// the work.
func workerdTicks(w *Worker) map[string]int64 {
	out := map[string]int64{}
	if w.cmd == nil || w.cmd.Process == nil {
		return out
	}
	pgid := strconv.Itoa(w.cmd.Process.Pid)
	stat := func(path string) (comm string, fields []string) {
		b, err := os.ReadFile(path)
		if err != nil {
			return "", nil
		}
		s := string(b)
		lp, rp := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if lp < 0 || rp < lp {
			return "", nil
		}
		return s[lp+1 : rp], strings.Fields(s[rp+1:])
	}
	procs, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, p := range procs {
		comm, f := stat(p)
		// After the comm: state, ppid, pgrp (f[2]), ..., utime (f[11]), stime (f[12]).
		if comm != "workerd" || len(f) < 13 || f[2] != pgid {
			continue
		}
		tasks, _ := filepath.Glob(filepath.Join(filepath.Dir(p), "task", "[0-9]*", "stat"))
		for _, tp := range tasks {
			if _, tf := stat(tp); len(tf) >= 13 {
				u, _ := strconv.ParseInt(tf[11], 10, 64)
				s, _ := strconv.ParseInt(tf[12], 10, 64)
				out[tp] = u + s
			}
		}
	}
	return out
}

// cpuShare is the cores workerd used between two workerdTicks samples over
// wall, in all and on its busiest thread (at 100 ticks a second).
func cpuShare(before, after map[string]int64, wall time.Duration) (all, busiest float64) {
	var sum, top int64
	for tid, n := range after {
		d := n - before[tid]
		sum += d
		top = max(top, d)
	}
	return float64(sum) / 100 / wall.Seconds(), float64(top) / 100 / wall.Seconds()
}

// scaleWorker is one worker of the bench environment and its D1 files.
type scaleWorker struct {
	Mode  string // "shared" (all on DB) or "own" (benchN on BENCHN_DB)
	w     *Worker
	files map[string]*d1File
}

// fileOf is the D1 file pipeline benchN's rows belong in.
func (s *scaleWorker) fileOf(n int) *d1File {
	if s.Mode == "own" {
		return s.files[benchBindings[n-1]]
	}
	return s.files[config.SharedDatabase]
}

// drain puts perPipeline new messages on each DLQ of bench1..benchK (in
// sendBatch calls of 100 through /__dev/send, four senders at once, every
// message delayed so that the consumers start on a full backlog, all DLQs
// at once), waits until every message is stored, checks that each is
// stored once, in its pipeline's database, and that the broker settled
// every batch with every message acked. It returns the stored messages per
// second (from the first row stored to the last seen), and the broker's
// settle time of each batch.
func (s *scaleWorker) drain(t *testing.T, k, perPipeline int) (rate float64, settled []float64, cores, busiest float64) {
	t.Helper()
	w := s.w
	prefix := unique(fmt.Sprintf("scale-%s-%d", s.Mode, k))
	before := map[string]int64{}
	for b, f := range s.files {
		before[b] = f.int64Of(t, `SELECT COALESCE(MAX(id), 0) FROM dlq_messages`)
	}
	msBefore, _, totalBefore := scaleBrokerBatches(w)

	// Each message waits delay after its send: longer than the sends take
	// (checked below), so the drain is the consumers' alone.
	delay := 4 + 2*k
	type chunk struct {
		queue string
		msgs  []map[string]any
	}
	var chunks []chunk
	for c := 0; c < perPipeline/100; c++ {
		for n := 1; n <= k; n++ {
			msgs := make([]map[string]any, 100)
			for j := range msgs {
				msgs[j] = map[string]any{"body": beerBody(t, fmt.Sprintf("%s-%d-%05d", prefix, n, c*100+j), "Scale Beer", nil), "delay_seconds": delay}
			}
			chunks = append(chunks, chunk{fmt.Sprintf("bench%d-dlq", n), msgs})
		}
	}
	work := make(chan chunk, len(chunks))
	for _, c := range chunks {
		work <- c
	}
	close(work)
	errs := make(chan error, 4)
	for range 4 {
		go func() {
			for c := range work {
				r, err := w.Do(http.MethodPost, "/__dev/send", map[string]any{"queue": c.queue, "messages": c.msgs}, AdminHeaders())
				if err == nil && r.Status != http.StatusOK {
					err = fmt.Errorf("send to %s: %d %s", c.queue, r.Status, r.Raw)
				}
				if err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range 4 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	sent := time.Now()
	ticks := workerdTicks(w)

	want := int64(k * perPipeline)
	stored := func() int64 {
		var n int64
		for b, f := range s.files {
			n += f.int64Of(t, `SELECT COUNT(*) FROM dlq_messages WHERE id > ?`, before[b])
		}
		return n
	}
	if err := pollFast(5*time.Minute, func() bool { return stored() >= want }); err != nil {
		t.Fatalf("%s, %d pipelines: %d of %d messages stored: %v", s.Mode, k, stored(), want, err)
	}
	done := time.Now()
	ticksAfter := workerdTicks(w)

	// Each message once, in its pipeline's database, nothing anywhere else.
	if got := stored(); got != want {
		t.Fatalf("%s, %d pipelines: %d rows stored for %d messages", s.Mode, k, got, want)
	}
	var first int64
	for n := 1; n <= k; n++ {
		f := s.fileOf(n)
		var rows, ids, keys, lo, hi, firstAt int64
		if err := f.DB.QueryRow(`SELECT COUNT(*), COUNT(DISTINCT message_id), COUNT(DISTINCT row_key), MIN(id), MAX(id), MIN(failed_at)
			FROM dlq_messages WHERE id > ? AND source_queue = ? AND row_key LIKE ?`,
			before[f.Binding], fmt.Sprintf("bench%d", n), fmt.Sprintf("%s-%d-%%", prefix, n)).Scan(&rows, &ids, &keys, &lo, &hi, &firstAt); err != nil {
			t.Fatal(err)
		}
		base := dlq.IDBase(f.Binding)
		if rows != int64(perPipeline) || ids != rows || keys != rows || lo < base || hi >= base+1<<40 {
			t.Fatalf("%s: pipeline bench%d in %s: %d rows, %d message ids, %d keys, ids %d..%d (want %d each, ids from %d)",
				s.Mode, n, f.Binding, rows, ids, keys, lo, hi, perPipeline, base)
		}
		if first == 0 || firstAt < first {
			first = firstAt
		}
	}
	if firstStored := time.UnixMilli(first); firstStored.Before(sent) {
		t.Fatalf("%s, %d pipelines: the first message was stored %s before the last send returned: the delay (%d s) is too short for the sends",
			s.Mode, k, sent.Sub(firstStored), delay)
	}

	// The broker's report of every batch: all acked, each message once.
	var ms map[string][]float64
	var acked, total map[string]int
	err := Poll(30*time.Second, func() (bool, error) {
		ms, acked, total = scaleBrokerBatches(w)
		for n := 1; n <= k; n++ {
			q := fmt.Sprintf("bench%d-dlq", n)
			if total[q]-totalBefore[q] < perPipeline {
				return false, nil
			}
		}
		return true, nil
	})
	for n := 1; n <= k; n++ {
		q := fmt.Sprintf("bench%d-dlq", n)
		if err != nil || acked[q] != total[q] || total[q] != totalBefore[q]+perPipeline {
			t.Fatalf("%s: %s: broker reported %d of %d acked after this drain of %d (%d before): %v", s.Mode, q, acked[q], total[q], perPipeline, totalBefore[q], err)
		}
		settled = append(settled, ms[q][len(msBefore[q]):]...)
	}
	// workerd is idle from the sends to the first delivery (the delay), so
	// its CPU of the whole wait is the drain's.
	cores, busiest = cpuShare(ticks, ticksAfter, done.Sub(time.UnixMilli(first)))
	return float64(want) / done.Sub(time.UnixMilli(first)).Seconds(), settled, cores, busiest
}

// scaleFigure is one configuration's figures: capture throughput with k
// pipelines, all on one database (shared) or each on its own (own).
type scaleFigure struct {
	Mode      string    `json:"mode"`
	Pipelines int       `json:"pipelines"`
	Messages  int       `json:"messages_per_drain"`
	Rates     []float64 `json:"rates_msg_per_s"`
	Median    float64   `json:"median_msg_per_s"`
	// SettledMedian is the median of the broker's settle time per batch
	// of 100 over every drain (ms).
	SettledMedian float64 `json:"settled_median_ms"`
	SettledP90    float64 `json:"settled_p90_ms"`
	Batches       int     `json:"batches"`
	// Cores and BusiestThread are the median cores workerd used during a
	// drain, in all and on its busiest thread (from /proc).
	Cores         float64 `json:"workerd_cores"`
	BusiestThread float64 `json:"workerd_busiest_thread_cores"`
	// PerCPUSecond is the median over the drains of messages stored per
	// second of workerd's CPU (rate ÷ cores): the throughput with the
	// machine's other load taken out, as far as CPU time does.
	PerCPUSecond float64 `json:"median_msg_per_workerd_cpu_s"`
}

// rowBytes is the bytes per row of a local D1 file: (used bytes after −
// before) / rows, with the tables and indexes that grew the most.
type rowBytes struct {
	What   string  `json:"what"`
	Rows   int64   `json:"rows"`
	Bytes  int64   `json:"bytes"`
	PerRow float64 `json:"bytes_per_row"`
	// RawBytes is the mean length of a row's stored message (raw_message).
	RawBytes float64          `json:"mean_raw_message_bytes"`
	ByObject map[string]int64 `json:"bytes_by_table_or_index"`
}

// scaleReport is bench-results/capture_scaling.json.
type scaleReport struct {
	When    time.Time     `json:"when"`
	Nproc   string        `json:"nproc"`
	NumCPU  int           `json:"go_numcpu"`
	Load    []string      `json:"loadavg_before_after"`
	Figures []scaleFigure `json:"figures"`
	Ratios  []float64     `json:"own_over_shared_by_pipelines"`
	// CPURatios are the ratios of the messages per workerd CPU-second.
	CPURatios []float64  `json:"own_over_shared_per_cpu_s_by_pipelines"`
	RowBytes  []rowBytes `json:"row_bytes"`
}

func loadavg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	return strings.TrimSpace(string(b))
}

// TestBenchCaptureScaling measures capture throughput with 1, 2 and 4
// pipelines draining their DLQs at once, each pipeline on
// its own local D1 database against all of them on the one shared
// database, in the same run (two workers of wrangler.jsonc's bench
// environment, alternating drain by drain; they differ only in PIPELINES),
// with the machine's core count. After the drains it measures the bytes a
// row takes in a local D1 file, for the capacity model
// (docs/benchmarks.md "Capture scaling and the capacity model"): the captured rows of each own
// database, and 100,000 rows of the e2e seed shape (seedCapturedSQL).
// Runs with REDRIVE_BENCH=1 only; writes bench-results/capture_scaling.json.
// Reported, never asserted.
func TestBenchCaptureScaling(t *testing.T) {
	if os.Getenv("REDRIVE_BENCH") == "" {
		t.Skip("benchmarks run with `make bench` (REDRIVE_BENCH=1)")
	}
	rounds, perPipeline := 5, 2000
	if n, err := strconv.Atoi(os.Getenv("REDRIVE_BENCH_ROUNDS")); err == nil && n > 0 {
		rounds = n
	}
	if n, err := strconv.Atoi(os.Getenv("REDRIVE_BENCH_SCALE_MESSAGES")); err == nil && n >= 100 {
		perPipeline = n / 100 * 100
	}
	nproc, _ := exec.Command("nproc").Output()
	rep := &scaleReport{When: time.Now().UTC(), Nproc: strings.TrimSpace(string(nproc)), NumCPU: runtime.NumCPU(), Load: []string{loadavg()}}

	start := func(mode string, vars map[string]string) *scaleWorker {
		w, err := StartWorker(Options{Env: benchEnv, OwnDatabases: true, Vars: vars})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(w.Stop)
		return &scaleWorker{Mode: mode, w: w, files: benchD1Files(t, w)}
	}
	shared := start("shared", nil)
	own := start("own", map[string]string{"PIPELINES": benchPipelinesVar(t)})
	emptyOwn, emptyOwnBy := map[string]int64{}, map[string]map[string]int64{}
	for _, b := range benchBindings {
		emptyOwn[b], emptyOwnBy[b] = own.files[b].usedBytes(t)
	}

	// Warm-up: both workers, every pipeline, not counted.
	for _, s := range []*scaleWorker{shared, own} {
		s.drain(t, 4, 500) // the warm-up: its figures are not kept
	}
	ks := []int{1, 2, 4}
	type key struct {
		mode string
		k    int
	}
	rates, settled, cores, busiest, perCPU := map[key][]float64{}, map[key][]float64{}, map[key][]float64{}, map[key][]float64{}, map[key][]float64{}
	for r := 0; r < rounds; r++ {
		for i, k := range ks {
			pair := []*scaleWorker{shared, own}
			if (r+i)%2 == 1 {
				pair = []*scaleWorker{own, shared}
			}
			for _, s := range pair {
				rate, st, c, bt := s.drain(t, k, perPipeline)
				kk := key{s.Mode, k}
				rates[kk], settled[kk] = append(rates[kk], rate), append(settled[kk], st...)
				cores[kk], busiest[kk] = append(cores[kk], c), append(busiest[kk], bt)
				if c > 0 {
					perCPU[kk] = append(perCPU[kk], rate/c)
				}
				fmt.Fprintf(os.Stderr, "bench: capture scaling round %d, %d pipelines, %s: %.0f msg/s (%d batches, settled median %.0f ms; workerd %.2f cores, busiest thread %.2f) | load %s\n",
					r+1, k, s.Mode, rate, len(st), median(st), c, bt, loadavg())
			}
		}
	}
	rep.Load = append(rep.Load, loadavg())

	var b strings.Builder
	fmt.Fprintf(&b, "\ncapture scaling, nproc %s, %d drains of %d messages per pipeline per configuration, load %s → %s\n\n",
		rep.Nproc, rounds, perPipeline, rep.Load[0], rep.Load[1])
	b.WriteString("| pipelines | all on one database: msg/s (settled ms/batch; workerd cores, busiest thread; msg per workerd CPU-s) | each on its own | own / one | own / one per CPU-s |\n| --- | --- | --- | --- | --- |\n")
	for _, k := range ks {
		var row [2]scaleFigure
		for j, mode := range []string{"shared", "own"} {
			st := settled[key{mode, k}]
			sm, sp := quantiles(st)
			kk := key{mode, k}
			row[j] = scaleFigure{Mode: mode, Pipelines: k, Messages: k * perPipeline, Rates: rates[kk],
				Median: median(rates[kk]), SettledMedian: sm, SettledP90: sp, Batches: len(st),
				Cores: median(cores[kk]), BusiestThread: median(busiest[kk]), PerCPUSecond: median(perCPU[kk])}
			rep.Figures = append(rep.Figures, row[j])
		}
		ratio := row[1].Median / row[0].Median
		rep.Ratios = append(rep.Ratios, ratio)
		rep.CPURatios = append(rep.CPURatios, row[1].PerCPUSecond/row[0].PerCPUSecond)
		cell := func(f scaleFigure) string {
			return fmt.Sprintf("%.0f (%.0f ms; %.2f, %.2f; %.0f)", f.Median, f.SettledMedian, f.Cores, f.BusiestThread, f.PerCPUSecond)
		}
		fmt.Fprintf(&b, "| %d | %s | %s | %.2f× | %.2f× |\n", k, cell(row[0]), cell(row[1]), ratio, rep.CPURatios[len(rep.CPURatios)-1])
	}

	// Bytes per row. The captured rows of each own database (the drains'
	// rows alone: that database holds nothing else) ...
	for _, bnd := range benchBindings {
		f := own.files[bnd]
		used, by := f.usedBytes(t)
		for name, n := range emptyOwnBy[bnd] {
			by[name] -= n
		}
		rows := f.int64Of(t, `SELECT COUNT(*) FROM dlq_messages`)
		rep.RowBytes = append(rep.RowBytes, rowBytes{What: "captured rows, " + bnd, Rows: rows, Bytes: used - emptyOwn[bnd],
			PerRow: float64(used-emptyOwn[bnd]) / float64(rows), ByObject: by, RawBytes: f.meanRaw(t)})
	}
	// ... and 100,000 rows of the e2e seed shape (TestD1RowsBudget's: as
	// captured, 12 signatures) in the own worker's DB, untouched by the drains.
	const seeded = 100_000
	f := own.files[config.SharedDatabase]
	if n := f.int64Of(t, `SELECT COUNT(*) FROM dlq_messages`); n != 0 {
		t.Fatalf("own worker's DB holds %d rows before the seed", n)
	}
	emptyUsed, emptyBy := f.usedBytes(t)
	own.w.Exec(t, seedCapturedSQL(seeded, time.Now().UnixMilli()))
	own.w.Exec(t, seedSignaturesSQL)
	if n := f.int64Of(t, `SELECT COUNT(*) FROM dlq_messages`); n != seeded {
		t.Fatalf("seeded %d rows, want %d", n, seeded)
	}
	used, by := f.usedBytes(t)
	for name, n := range emptyBy {
		by[name] -= n
	}
	rep.RowBytes = append(rep.RowBytes, rowBytes{What: "100,000 rows of the e2e seed shape (seedCapturedSQL), DB", Rows: seeded,
		Bytes: used - emptyUsed, PerRow: float64(used-emptyUsed) / seeded, ByObject: by, RawBytes: f.meanRaw(t)})

	b.WriteString("\n| bytes per row | rows | bytes | per row | raw_message | largest parts, bytes per row |\n| --- | --- | --- | --- | --- | --- |\n")
	for _, r := range rep.RowBytes {
		type part struct {
			name string
			n    int64
		}
		var parts []part
		for name, n := range r.ByObject {
			parts = append(parts, part{name, n})
		}
		sort.Slice(parts, func(i, j int) bool { return parts[i].n > parts[j].n })
		var top []string
		for _, p := range parts[:min(5, len(parts))] {
			top = append(top, fmt.Sprintf("%s %.0f", p.name, float64(p.n)/float64(r.Rows)))
		}
		fmt.Fprintf(&b, "| %s | %d | %d | %.0f | %.0f | %s |\n", r.What, r.Rows, r.Bytes, r.PerRow, r.RawBytes, strings.Join(top, ", "))
	}
	fmt.Fprintln(os.Stderr, b.String())

	root, _ := sqlitetest.Root()
	out := filepath.Join(root, "bench-results")
	os.MkdirAll(out, 0o755)
	js, _ := json.MarshalIndent(rep, "", "  ")
	if err := os.WriteFile(filepath.Join(out, "capture_scaling.json"), js, 0o644); err != nil {
		t.Fatal(err)
	}
}

// median is the median of xs (0 for none).
func median(xs []float64) float64 {
	m, _ := quantiles(xs)
	return m
}
