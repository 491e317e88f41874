package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/spf13/pflag"

	"github.com/redrive/redrive/client"
)

// preview is a dry run's answer.
type preview struct {
	MatchedCount       int               `json:"matched_count"`
	NotReplayableCount int               `json:"not_replayable_count"`
	Sample             []json.RawMessage `json:"sample"`
	ByFailureReason    []struct {
		FailureReason *string `json:"failure_reason"`
		Count         int     `json:"count"`
	} `json:"by_failure_reason"`
}

// dryRun reads a dry run's answer: its data and its preview.
func dryRun(resp *http.Response, err error) (json.RawMessage, preview, error) {
	var p preview
	data, err := into(&p)(resp, err)
	return data, p, err
}

// selection is the ids or the filter of a bulk action.
type selection struct {
	ids    []int
	filter *client.Filter
}

func (a *app) selection(argv []string, f *filterFlags, max int) (selection, error) {
	var sel selection
	if len(argv) > 0 && !f.empty() {
		return sel, usagef("name ids or filter flags, not both")
	}
	if len(argv) == 0 && f.empty() {
		return sel, usagef("name ids, or filter flags (--status pending selects every pending row)")
	}
	for _, s := range argv {
		id, err := rowID(s)
		if err != nil {
			return sel, err
		}
		sel.ids = append(sel.ids, id)
	}
	if len(sel.ids) > max {
		return sel, usagef("at most %d ids per call", max)
	}
	if len(argv) == 0 {
		var err error
		if sel.filter, err = f.filter(); err != nil {
			return sel, err
		}
	}
	return sel, nil
}

// printPreview writes a dry run's count and reasons (to stderr before a
// confirmation, to stdout for --dry-run).
func (a *app) printPreview(p preview, verb string, toStdout bool) error {
	w := a.env.Stderr
	if toStdout {
		w = a.env.Stdout
	}
	fmt.Fprintf(w, "%d pending rows would be %s", p.MatchedCount, verb)
	if p.NotReplayableCount > 0 {
		fmt.Fprintf(w, " (%d cannot be replayed as produced: acknowledge them)", p.NotReplayableCount)
	}
	fmt.Fprintln(w)
	if len(p.ByFailureReason) > 0 {
		t := newTable(w, "COUNT", "FAILURE REASON")
		for _, r := range p.ByFailureReason {
			t.row(r.Count, r.FailureReason)
		}
		return t.flush()
	}
	return nil
}

// confirm asks on stderr and reads y or yes from stdin.
func (a *app) confirm(question string) error {
	fmt.Fprintf(a.env.Stderr, "%s [y/N] ", question)
	line, err := bufio.NewReader(a.env.Stdin).ReadString('\n')
	if err != nil && line == "" {
		fmt.Fprintln(a.env.Stderr)
		return errors.New("not confirmed (no answer on stdin; pass --yes to skip the question)")
	}
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		return nil
	}
	return errors.New("not confirmed: nothing changed")
}

// bulkFlags are the flags of replay and ack: the selection's filter,
// --dry-run and --yes.
type bulkFlags struct {
	filter      filterFlags
	dryRun, yes bool
}

func (b *bulkFlags) register(fs *pflag.FlagSet, verb string) {
	b.filter.register(fs, "pending: bulk actions take pending rows only")
	fs.BoolVar(&b.dryRun, "dry-run", false, "only show what would be "+verb)
	fs.BoolVarP(&b.yes, "yes", "y", false, "do not ask for confirmation")
}

// bulk is a bulk action (replay, ack) for runBulk: its requests, and the
// totals of their answers.
type bulk interface {
	// dryRun sends the action's dry run.
	dryRun(ctx context.Context) (*http.Response, error)
	// question asks to act on the matched rows.
	question(matched int) string
	// none ends an action by filter that matched no row.
	none() error
	// send sends the action's next request and adds its answer to the
	// totals; more: the action needs another request.
	send(ctx context.Context) (more bool, err error)
	// cut is the command's error when a request failed with err.
	cut(err error) error
	// done prints the totals and returns the command's error.
	done() error
}

// runBulk runs a bulk action: its dry run, printed (only that, with
// --dry-run); the confirmation unless --yes; then its requests until it is
// done. verb is what the preview says the rows would be.
func (a *app) runBulk(ctx context.Context, f *bulkFlags, verb string, byFilter bool, b bulk) error {
	data, p, err := dryRun(b.dryRun(ctx))
	if err != nil {
		return err
	}
	if f.dryRun {
		if a.json {
			return a.printJSON(data)
		}
		return a.printPreview(p, verb, true)
	}
	if err := a.printPreview(p, verb, false); err != nil {
		return err
	}
	if p.MatchedCount == 0 && byFilter {
		return b.none()
	}
	// Ids none of which is pending are sent without a question: the answer
	// says why each was skipped.
	if !f.yes && p.MatchedCount > 0 {
		if err := a.confirm(b.question(p.MatchedCount)); err != nil {
			return err
		}
	}
	for more := true; more; {
		if more, err = b.send(ctx); err != nil {
			return b.cut(err)
		}
	}
	return b.done()
}
