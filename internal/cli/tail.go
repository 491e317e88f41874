package cli

import (
	"context"
	"encoding/json"
	"errors"
	"sort"
	"time"

	"github.com/spf13/cobra"

	"github.com/redrive/redrive/client"
)

func (a *app) tailCmd() *cobra.Command {
	t := tailer{a: a}
	var since string
	cmd := &cobra.Command{
		Use:   "tail",
		Short: "Print new failures as they arrive (until interrupted)",
		Long: `tail polls the list (every status) for rows whose latest failure is newer than
the last one printed, and prints each once per failure, oldest first: a
replayed row that fails again is printed again. --since sets the start
(default: now, by this machine's clock). Once the worker has answered, a
429, a 5xx or a dropped connection is reported on stderr and tried again
after a wait that doubles from the interval up to a minute.`,
		Example: "  redrive tail --source-queue beer-enrichment --json",
		Args:    args(cobra.NoArgs),
		RunE:    func(cmd *cobra.Command, _ []string) error { return t.run(cmd.Context(), since) },
	}
	t.f.register(cmd.Flags(), "")
	cmd.Flags().StringVar(&since, "since", "", "start from: epoch ms, RFC 3339 or a duration ago (default now)")
	cmd.Flags().DurationVar(&t.interval, "interval", 0, "poll interval (default 2s)")
	cmd.Flags().IntVar(&t.count, "count", 0, "exit after this many failures (0: run until interrupted)")
	return cmd
}

// tailer is tail's state: its flags, the failures printed, the start of
// the next poll.
type tailer struct {
	a        *app
	f        filterFlags
	interval time.Duration
	count    int // --count: stop after this many (0: never)

	c       *client.ClientWithResponses
	from    int64             // the next poll's failed_after
	seen    map[[2]int64]bool // the failures (id, failed_at) printed at from or later
	printed int               // how many were printed
	t       *table            // the table, without --json
	retry   retrier
}

// errInterrupted ends a poll whose context ended: a normal end of tail.
var errInterrupted = errors.New("interrupted")

func (t *tailer) run(ctx context.Context, since string) error {
	var err error
	if t.c, err = t.a.api(); err != nil {
		return err
	}
	t.from = time.Now().UnixMilli()
	if since != "" {
		p, err := when("since", since)
		if err != nil {
			return err
		}
		t.from = int64(*p)
	}
	if t.interval <= 0 {
		t.interval = t.a.env.Poll
	}
	t.seen, t.retry = map[[2]int64]bool{}, retrier{stderr: t.a.env.Stderr}
	if !t.a.json {
		t.t = newTable(t.a.env.Stdout, messageHeader()...)
		_ = t.t.flush()
	}
	for {
		fresh, err := t.poll(ctx)
		if errors.Is(err, errInterrupted) {
			return nil
		}
		if err != nil {
			return err
		}
		if done, err := t.print(fresh); done || err != nil {
			return err
		}
		if err := sleep(ctx, t.interval); err != nil {
			return nil // interrupted: a normal end
		}
	}
}

// poll gets every page of the failures since from and returns those not
// printed yet, oldest first.
func (t *tailer) poll(ctx context.Context) ([]tailed, error) {
	p, err := t.f.listParams()
	if err != nil {
		return nil, err
	}
	all := client.ListDLQParamsStatus("all")
	after := int(t.from)
	p.Status, p.FailedAfter = &all, &after
	var fresh []tailed
	_, err = follow(true, func() (page, error) {
		var pg page
		err := t.retry.try(ctx, t.interval, func() error {
			pg = page{}
			_, err := into(&pg)(t.c.ListDLQ(ctx, p))
			return err
		})
		if err != nil && ctx.Err() != nil {
			return pg, errInterrupted
		}
		if err == nil {
			fresh, err = t.unseen(fresh, pg.Messages)
		}
		return pg, err
	}, func(next *string) { p.Cursor = next })
	sort.SliceStable(fresh, func(i, j int) bool {
		a, b := fresh[i], fresh[j]
		return a.FailedAt < b.FailedAt || (a.FailedAt == b.FailedAt && a.ID < b.ID)
	})
	return fresh, err
}

// tailed is a failure tail found: the row and its JSON.
type tailed struct {
	message
	raw json.RawMessage
}

// unseen appends to fresh the rows of raws not printed yet.
func (t *tailer) unseen(fresh []tailed, raws []json.RawMessage) ([]tailed, error) {
	for _, raw := range raws {
		var m message
		if err := json.Unmarshal(raw, &m); err != nil {
			return fresh, err
		}
		if !t.seen[[2]int64{m.ID, m.FailedAt}] {
			fresh = append(fresh, tailed{m, raw})
		}
	}
	return fresh, nil
}

// print prints the fresh failures, oldest first, and moves from on; done
// once --count of them were printed.
func (t *tailer) print(fresh []tailed) (done bool, err error) {
	for _, m := range fresh {
		t.seen[[2]int64{m.ID, m.FailedAt}] = true
		if err := t.printRow(m.raw); err != nil {
			return true, err
		}
		if m.FailedAt > t.from {
			t.from = m.FailedAt // rows at exactly from stay in the query: seen dedupes them
		}
		t.printed++
		if t.count > 0 && t.printed >= t.count {
			return true, nil
		}
	}
	for k := range t.seen { // the query returns failed_at >= from only
		if k[1] < t.from {
			delete(t.seen, k)
		}
	}
	return false, nil
}

// printRow prints one failure: a JSON line, or a row of the table.
func (t *tailer) printRow(raw json.RawMessage) error {
	if t.a.json {
		var v any
		_ = json.Unmarshal(raw, &v)
		enc := json.NewEncoder(t.a.env.Stdout)
		enc.SetEscapeHTML(false)
		return enc.Encode(v)
	}
	cells, err := messageCells(raw)
	if err != nil {
		return err
	}
	t.t.row(cells...)
	_ = t.t.flush()
	return nil
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
