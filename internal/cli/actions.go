package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

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

type replayTotals struct {
	RequestedCount int               `json:"requested_count"`
	ClaimedCount   int               `json:"claimed_count"`
	ReplayedCount  int               `json:"replayed_count"`
	FailedCount    int               `json:"failed_count"`
	QueuedTo       string            `json:"queued_to"`
	DelaySeconds   int               `json:"delay_seconds"`
	ReplayedIDs    []int64           `json:"replayed_ids"`
	FailedIDs      []int64           `json:"failed_ids"`
	SkippedCount   int               `json:"skipped_count"`
	Skipped        []json.RawMessage `json:"skipped"`
	NextCursor     *string           `json:"next_cursor,omitempty"`
	HasMore        *bool             `json:"has_more,omitempty"`
}

func (a *app) replayCmd() *cobra.Command {
	var f filterFlags
	var delay, limit int
	var destination string
	var dryRun, yes bool
	cmd := &cobra.Command{
		Use:   "replay [ID...]",
		Short: "Replay rows by id or by filter, after a dry run and a confirmation",
		Long: `replay sends pending rows back to their source queue (or --destination).
It first asks for a dry run and shows how many rows match and why they failed,
then asks for confirmation (--yes skips it). By filter, it replays page after
page until every matching row is done.`,
		Example: `  redrive replay 12 13 14 --delay 60
  redrive replay --q Lagunitas --yes
  redrive replay --signature 91d2e0b6c4a73f18 --dry-run`,
		Args: args(cobra.ArbitraryArgs),
		RunE: func(cmd *cobra.Command, argv []string) error {
			sel, err := a.selection(argv, &f, 50)
			if err != nil {
				return err
			}
			c, err := a.api()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			req := client.ReplayRequest{DelaySeconds: &delay, Destination: opt(destination)}
			if sel.ids != nil {
				req.Ids = &sel.ids
			} else {
				req.Filter = sel.filter
				if limit > 0 {
					req.Limit = &limit
				}
			}
			t := true
			dry := req
			dry.DryRun, dry.Limit = &t, nil
			var p preview
			data, err := into(&p)(c.ReplayDLQ(ctx, dry))
			if err != nil {
				return err
			}
			if dryRun {
				if a.json {
					return a.printJSON(data)
				}
				return a.printPreview(p, "replayed", true)
			}
			if err := a.printPreview(p, "replayed", false); err != nil {
				return err
			}
			if p.MatchedCount == 0 && sel.filter != nil {
				fmt.Fprintln(a.env.Stderr, "nothing to replay")
				return a.showReplay(replayTotals{ReplayedIDs: []int64{}, FailedIDs: []int64{}, Skipped: []json.RawMessage{}, DelaySeconds: delay}, sel)
			}
			// Ids none of which is pending are sent without a question: the
			// answer says why each was skipped.
			if !yes && p.MatchedCount > 0 {
				to := "their source queues"
				if destination != "" {
					to = destination
				}
				if err := a.confirm(fmt.Sprintf("Replay %d rows to %s?", p.MatchedCount, to)); err != nil {
					return err
				}
			}
			total := replayTotals{ReplayedIDs: []int64{}, FailedIDs: []int64{}, Skipped: []json.RawMessage{}, DelaySeconds: delay}
			queues := map[string]bool{}
			for page := 1; ; page++ {
				var r replayTotals
				if _, err := into(&r)(c.ReplayDLQ(ctx, req)); err != nil {
					if total.RequestedCount > 0 || total.ClaimedCount > 0 {
						_ = a.showReplay(total, sel)
						return partialError{fmt.Errorf("after %d rows replayed: %w", total.ReplayedCount, err)}
					}
					return err
				}
				total.RequestedCount += r.RequestedCount
				total.ClaimedCount += r.ClaimedCount
				total.ReplayedCount += r.ReplayedCount
				total.FailedCount += r.FailedCount
				total.ReplayedIDs = append(total.ReplayedIDs, r.ReplayedIDs...)
				total.FailedIDs = append(total.FailedIDs, r.FailedIDs...)
				total.SkippedCount += r.SkippedCount
				total.Skipped = append(total.Skipped, r.Skipped...)
				total.DelaySeconds = r.DelaySeconds
				for _, q := range strings.Split(r.QueuedTo, ",") {
					if q != "" && !queues[q] {
						queues[q] = true
						total.QueuedTo = strings.TrimPrefix(total.QueuedTo+","+q, ",")
					}
				}
				if sel.filter == nil || r.HasMore == nil || !*r.HasMore || r.NextCursor == nil {
					break
				}
				fmt.Fprintf(a.env.Stderr, "\rreplayed %d rows (page %d)", total.ReplayedCount, page)
				req.Cursor = r.NextCursor
			}
			if sel.filter != nil {
				fmt.Fprintf(a.env.Stderr, "\rreplayed %d rows\n", total.ReplayedCount)
				f := false
				total.HasMore = &f
			}
			if err := a.showReplay(total, sel); err != nil {
				return err
			}
			if total.FailedCount > 0 || total.SkippedCount > 0 {
				return partialError{fmt.Errorf("%d rows replayed, %d failed to send, %d skipped", total.ReplayedCount, total.FailedCount, total.SkippedCount)}
			}
			return nil
		},
	}
	f.register(cmd.Flags(), "pending: bulk actions take pending rows only")
	cmd.Flags().IntVar(&delay, "delay", 0, "deliver after this many seconds (0..43200)")
	cmd.Flags().StringVar(&destination, "destination", "", "send to this queue instead of each row's source queue")
	cmd.Flags().IntVar(&limit, "limit", 0, "by filter: rows per request (at most DLQ_BULK_REPLAY_MAX)")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "only show what would be replayed")
	cmd.Flags().BoolVarP(&yes, "yes", "y", false, "do not ask for confirmation")
	return cmd
}

func (a *app) showReplay(r replayTotals, sel selection) error {
	if a.json {
		return a.printJSON(r)
	}
	t := newTable(a.env.Stdout, "REQUESTED", "CLAIMED", "REPLAYED", "FAILED", "SKIPPED", "QUEUED TO", "DELAY (s)")
	t.row(r.RequestedCount, r.ClaimedCount, r.ReplayedCount, r.FailedCount, r.SkippedCount, r.QueuedTo, r.DelaySeconds)
	if err := t.flush(); err != nil {
		return err
	}
	if len(r.FailedIDs) > 0 {
		fmt.Fprintf(a.env.Stdout, "failed to send (pending again): %v\n", r.FailedIDs)
	}
	for _, raw := range r.Skipped {
		var s struct {
			ID     int64  `json:"id"`
			Reason string `json:"reason"`
		}
		_ = json.Unmarshal(raw, &s)
		fmt.Fprintf(a.env.Stdout, "skipped %d: %s\n", s.ID, s.Reason)
	}
	return nil
}

type ackTotals struct {
	AcknowledgedCount int     `json:"acknowledged_count"`
	RequestedCount    int     `json:"requested_count"`
	AcknowledgedIDs   []int64 `json:"acknowledged_ids"`
	HasMore           *bool   `json:"has_more,omitempty"`
}

func (a *app) ackCmd() *cobra.Command {
	var f filterFlags
	var note string
	var dryRun, yes bool
	cmd := &cobra.Command{
		Use:   "ack [ID...]",
		Short: "Acknowledge rows by id or by filter (with a note), after a dry run and a confirmation",
		Example: `  redrive ack 4 5 --note duplicates
  redrive ack --signature 3c0f9a2b7d1e4c55 --note "bad model name, fixed in config" --yes`,
		Args: args(cobra.ArbitraryArgs),
		RunE: func(cmd *cobra.Command, argv []string) error {
			sel, err := a.selection(argv, &f, 100)
			if err != nil {
				return err
			}
			c, err := a.api()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			req := client.AcknowledgeRequest{Note: opt(note)}
			if sel.ids != nil {
				req.Ids = &sel.ids
			} else {
				req.Filter = sel.filter
			}
			t := true
			dry := req
			dry.DryRun = &t
			var p preview
			data, err := into(&p)(c.AcknowledgeDLQ(ctx, dry))
			if err != nil {
				return err
			}
			if dryRun {
				if a.json {
					return a.printJSON(data)
				}
				return a.printPreview(p, "acknowledged", true)
			}
			if err := a.printPreview(p, "acknowledged", false); err != nil {
				return err
			}
			total := ackTotals{AcknowledgedIDs: []int64{}}
			if p.MatchedCount > 0 || sel.ids != nil {
				if !yes && p.MatchedCount > 0 {
					if err := a.confirm(fmt.Sprintf("Acknowledge %d rows?", p.MatchedCount)); err != nil {
						return err
					}
				}
				for {
					var r ackTotals
					if _, err := into(&r)(c.AcknowledgeDLQ(ctx, req)); err != nil {
						if total.AcknowledgedCount > 0 {
							_ = a.showAck(total)
							return partialError{fmt.Errorf("after %d rows acknowledged: %w", total.AcknowledgedCount, err)}
						}
						return err
					}
					total.AcknowledgedCount += r.AcknowledgedCount
					total.RequestedCount += r.RequestedCount
					total.AcknowledgedIDs = append(total.AcknowledgedIDs, r.AcknowledgedIDs...)
					if sel.filter == nil || r.HasMore == nil || !*r.HasMore || r.AcknowledgedCount == 0 {
						break
					}
					fmt.Fprintf(a.env.Stderr, "\racknowledged %d rows", total.AcknowledgedCount)
				}
			}
			if sel.filter != nil {
				f := false
				total.HasMore = &f
				fmt.Fprintf(a.env.Stderr, "\racknowledged %d rows\n", total.AcknowledgedCount)
			}
			if err := a.showAck(total); err != nil {
				return err
			}
			if sel.ids != nil && total.AcknowledgedCount < len(sel.ids) {
				return partialError{fmt.Errorf("%d of %d rows acknowledged (the others were not pending)", total.AcknowledgedCount, len(sel.ids))}
			}
			return nil
		},
	}
	f.register(cmd.Flags(), "pending: bulk actions take pending rows only")
	cmd.Flags().StringVar(&note, "note", "", "why (recorded on the rows and in the audit log; at most 1000 bytes)")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "only show what would be acknowledged")
	cmd.Flags().BoolVarP(&yes, "yes", "y", false, "do not ask for confirmation")
	return cmd
}

func (a *app) showAck(r ackTotals) error {
	if a.json {
		return a.printJSON(r)
	}
	t := newTable(a.env.Stdout, "REQUESTED", "ACKNOWLEDGED")
	t.row(r.RequestedCount, r.AcknowledgedCount)
	return t.flush()
}

func (a *app) editCmd() *cobra.Command {
	var note, destination string
	var delay int
	cmd := &cobra.Command{
		Use:   "edit ID",
		Short: "Edit a pending JSON row's body in $EDITOR and replay it",
		Long: `edit opens the row's body, pretty-printed, in $VISUAL or $EDITOR. When the
editor exits, the body must be valid JSON (not null, at most 128,000 bytes
compact) and changed; then it is sent as the row's edited replay. The stored
raw message is kept; the note is required and audited.`,
		Example: `  EDITOR=nano redrive edit 12 --note "beer_name was empty upstream"`,
		Args:    args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			id, err := rowID(argv[0])
			if err != nil {
				return err
			}
			if strings.TrimSpace(note) == "" {
				return usagef("--note is required: say why the body was edited")
			}
			c, err := a.api()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			var d detail
			if _, err := into(&d)(c.DlqMessage(ctx, id)); err != nil {
				return err
			}
			var m message
			if err := json.Unmarshal(d.Message, &m); err != nil {
				return err
			}
			if m.ContentType != "json" || m.Status != "pending" || m.RawMessage == nil {
				return fmt.Errorf("row %d is %s with content type %s: only a pending json row can be edited", id, m.Status, m.ContentType)
			}
			var orig bytes.Buffer
			if err := json.Indent(&orig, []byte(*m.RawMessage), "", "  "); err != nil {
				return fmt.Errorf("row %d's body is not valid JSON: acknowledge it instead", id)
			}
			orig.WriteByte('\n')
			edited, err := a.editBody(ctx, id, orig.Bytes())
			if err != nil {
				return err
			}
			req := client.EditedReplayRequest{Body: json.RawMessage(edited), Note: note, Destination: opt(destination)}
			if delay > 0 {
				req.DelaySeconds = &delay
			}
			var r struct {
				Replayed bool   `json:"replayed"`
				QueuedTo string `json:"queued_to"`
				Hash     string `json:"edited_body_hash"`
			}
			data, err := into(&r)(c.ReplayEdited(ctx, id, req))
			if err != nil {
				return err
			}
			if a.json {
				if err := a.printJSON(data); err != nil {
					return err
				}
			} else {
				t := newTable(a.env.Stdout, "ID", "REPLAYED", "QUEUED TO", "EDITED BODY HASH")
				t.row(id, r.Replayed, r.QueuedTo, r.Hash)
				if err := t.flush(); err != nil {
					return err
				}
			}
			if !r.Replayed {
				return fmt.Errorf("the send failed: row %d is pending again", id)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&note, "note", "", "why the body was edited (required, audited)")
	cmd.Flags().StringVar(&destination, "destination", "", "send to this queue instead of the row's source queue")
	cmd.Flags().IntVar(&delay, "delay", 0, "deliver after this many seconds (0..43200)")
	return cmd
}

// editBody runs the editor on body and returns the edited value, compact
// and checked.
func (a *app) editBody(ctx context.Context, id int, body []byte) ([]byte, error) {
	dir, err := os.MkdirTemp("", "redrive-edit-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, fmt.Sprintf("row-%d.json", id))
	if err := os.WriteFile(path, body, 0o600); err != nil {
		return nil, err
	}
	if err := a.editFile(ctx, path); err != nil {
		return nil, err
	}
	got, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, got); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			line := 1 + bytes.Count(got[:se.Offset], []byte("\n"))
			return nil, fmt.Errorf("the edited body is not valid JSON (line %d: %v): nothing sent", line, se)
		}
		return nil, fmt.Errorf("the edited body is not valid JSON (%v): nothing sent", err)
	}
	var before bytes.Buffer
	_ = json.Compact(&before, body)
	switch {
	case compact.String() == "null":
		return nil, errors.New("the edited body is null: nothing sent")
	case compact.Len() > 128_000:
		return nil, fmt.Errorf("the edited body is %d bytes compact, over 128,000: nothing sent", compact.Len())
	case bytes.Equal(compact.Bytes(), before.Bytes()):
		return nil, errors.New("the body was not changed: nothing sent")
	}
	return compact.Bytes(), nil
}
