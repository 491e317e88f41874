package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/redrive/redrive/client"
)

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

// add adds one answer to the totals; queues are the queues named so far.
func (t *replayTotals) add(r replayTotals, queues map[string]bool) {
	t.RequestedCount += r.RequestedCount
	t.ClaimedCount += r.ClaimedCount
	t.ReplayedCount += r.ReplayedCount
	t.FailedCount += r.FailedCount
	t.ReplayedIDs = append(t.ReplayedIDs, r.ReplayedIDs...)
	t.FailedIDs = append(t.FailedIDs, r.FailedIDs...)
	t.SkippedCount += r.SkippedCount
	t.Skipped = append(t.Skipped, r.Skipped...)
	t.DelaySeconds = r.DelaySeconds
	for _, q := range strings.Split(r.QueuedTo, ",") {
		if q != "" && !queues[q] {
			queues[q] = true
			t.QueuedTo = strings.TrimPrefix(t.QueuedTo+","+q, ",")
		}
	}
}

// replayFlags are replay's flags.
type replayFlags struct {
	bulkFlags
	delay, limit int
	destination  string
}

func (a *app) replayCmd() *cobra.Command {
	var f replayFlags
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
		RunE: func(cmd *cobra.Command, argv []string) error { return a.replay(cmd.Context(), argv, &f) },
	}
	f.register(cmd.Flags(), "replayed")
	cmd.Flags().IntVar(&f.delay, "delay", 0, "deliver after this many seconds (0..43200)")
	cmd.Flags().StringVar(&f.destination, "destination", "", "send to this queue instead of each row's source queue")
	cmd.Flags().IntVar(&f.limit, "limit", 0, "by filter: rows per request (at most DLQ_BULK_REPLAY_MAX)")
	return cmd
}

func (a *app) replay(ctx context.Context, argv []string, f *replayFlags) error {
	sel, err := a.selection(argv, &f.filter, 50)
	if err != nil {
		return err
	}
	c, err := a.api()
	if err != nil {
		return err
	}
	r := &replayRun{a: a, c: c, sel: sel, destination: f.destination, queues: map[string]bool{},
		req:   client.ReplayRequest{DelaySeconds: &f.delay, Destination: opt(f.destination)},
		total: replayTotals{ReplayedIDs: []int64{}, FailedIDs: []int64{}, Skipped: []json.RawMessage{}, DelaySeconds: f.delay}}
	if sel.ids != nil {
		r.req.Ids = &sel.ids
	} else {
		r.req.Filter = sel.filter
		if f.limit > 0 {
			r.req.Limit = &f.limit
		}
	}
	return a.runBulk(ctx, &f.bulkFlags, "replayed", sel.filter != nil, r)
}

// replayRun is a replay for runBulk: page after page by filter, one
// request by ids.
type replayRun struct {
	a           *app
	c           *client.ClientWithResponses
	sel         selection
	destination string
	req         client.ReplayRequest
	total       replayTotals
	queues      map[string]bool // the queues in total.QueuedTo
	page        int             // the requests answered
}

func (r *replayRun) dryRun(ctx context.Context) (*http.Response, error) {
	t := true
	dry := r.req
	dry.DryRun, dry.Limit = &t, nil
	return r.c.ReplayDLQ(ctx, dry)
}

func (r *replayRun) question(matched int) string {
	to := "their source queues"
	if r.destination != "" {
		to = r.destination
	}
	return fmt.Sprintf("Replay %d rows to %s?", matched, to)
}

func (r *replayRun) none() error {
	fmt.Fprintln(r.a.env.Stderr, "nothing to replay")
	return r.a.showReplay(r.total)
}

func (r *replayRun) send(ctx context.Context) (bool, error) {
	var ans replayTotals
	if _, err := into(&ans)(r.c.ReplayDLQ(ctx, r.req)); err != nil {
		return false, err
	}
	r.total.add(ans, r.queues)
	r.page++
	if r.sel.filter == nil || ans.HasMore == nil || !*ans.HasMore || ans.NextCursor == nil {
		return false, nil
	}
	fmt.Fprintf(r.a.env.Stderr, "\rreplayed %d rows (page %d)", r.total.ReplayedCount, r.page)
	r.req.Cursor = ans.NextCursor
	return true, nil
}

func (r *replayRun) cut(err error) error {
	if r.total.RequestedCount > 0 || r.total.ClaimedCount > 0 {
		_ = r.a.showReplay(r.total)
		return partialError{fmt.Errorf("after %d rows replayed: %w", r.total.ReplayedCount, err)}
	}
	return err
}

func (r *replayRun) done() error {
	if r.sel.filter != nil {
		fmt.Fprintf(r.a.env.Stderr, "\rreplayed %d rows\n", r.total.ReplayedCount)
		f := false
		r.total.HasMore = &f
	}
	if err := r.a.showReplay(r.total); err != nil {
		return err
	}
	if t := r.total; t.FailedCount > 0 || t.SkippedCount > 0 {
		return partialError{fmt.Errorf("%d rows replayed, %d failed to send, %d skipped", t.ReplayedCount, t.FailedCount, t.SkippedCount)}
	}
	return nil
}

func (a *app) showReplay(r replayTotals) error {
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
	var f bulkFlags
	var note string
	cmd := &cobra.Command{
		Use:   "ack [ID...]",
		Short: "Acknowledge rows by id or by filter (with a note), after a dry run and a confirmation",
		Example: `  redrive ack 4 5 --note duplicates
  redrive ack --signature 3c0f9a2b7d1e4c55 --note "bad model name, fixed in config" --yes`,
		Args: args(cobra.ArbitraryArgs),
		RunE: func(cmd *cobra.Command, argv []string) error { return a.ack(cmd.Context(), argv, &f, note) },
	}
	f.register(cmd.Flags(), "acknowledged")
	cmd.Flags().StringVar(&note, "note", "", "why (recorded on the rows and in the audit log; at most 1000 bytes)")
	return cmd
}

func (a *app) ack(ctx context.Context, argv []string, f *bulkFlags, note string) error {
	sel, err := a.selection(argv, &f.filter, 100)
	if err != nil {
		return err
	}
	c, err := a.api()
	if err != nil {
		return err
	}
	k := &ackRun{a: a, c: c, sel: sel, req: client.AcknowledgeRequest{Note: opt(note)}, total: ackTotals{AcknowledgedIDs: []int64{}}}
	if sel.ids != nil {
		k.req.Ids = &sel.ids
	} else {
		k.req.Filter = sel.filter
	}
	return a.runBulk(ctx, f, "acknowledged", sel.filter != nil, k)
}

// ackRun is an acknowledge for runBulk: by filter, request after request
// until one acknowledges nothing more; one request by ids.
type ackRun struct {
	a     *app
	c     *client.ClientWithResponses
	sel   selection
	req   client.AcknowledgeRequest
	total ackTotals
}

func (k *ackRun) dryRun(ctx context.Context) (*http.Response, error) {
	t := true
	dry := k.req
	dry.DryRun = &t
	return k.c.AcknowledgeDLQ(ctx, dry)
}

func (k *ackRun) question(matched int) string { return fmt.Sprintf("Acknowledge %d rows?", matched) }

func (k *ackRun) none() error { return k.done() }

func (k *ackRun) send(ctx context.Context) (bool, error) {
	var r ackTotals
	if _, err := into(&r)(k.c.AcknowledgeDLQ(ctx, k.req)); err != nil {
		return false, err
	}
	k.total.AcknowledgedCount += r.AcknowledgedCount
	k.total.RequestedCount += r.RequestedCount
	k.total.AcknowledgedIDs = append(k.total.AcknowledgedIDs, r.AcknowledgedIDs...)
	if k.sel.filter == nil || r.HasMore == nil || !*r.HasMore || r.AcknowledgedCount == 0 {
		return false, nil
	}
	fmt.Fprintf(k.a.env.Stderr, "\racknowledged %d rows", k.total.AcknowledgedCount)
	return true, nil
}

func (k *ackRun) cut(err error) error {
	if k.total.AcknowledgedCount > 0 {
		_ = k.a.showAck(k.total)
		return partialError{fmt.Errorf("after %d rows acknowledged: %w", k.total.AcknowledgedCount, err)}
	}
	return err
}

func (k *ackRun) done() error {
	if k.sel.filter != nil {
		f := false
		k.total.HasMore = &f
		fmt.Fprintf(k.a.env.Stderr, "\racknowledged %d rows\n", k.total.AcknowledgedCount)
	}
	if err := k.a.showAck(k.total); err != nil {
		return err
	}
	if k.sel.ids != nil && k.total.AcknowledgedCount < len(k.sel.ids) {
		return partialError{fmt.Errorf("%d of %d rows acknowledged (the others were not pending)", k.total.AcknowledgedCount, len(k.sel.ids))}
	}
	return nil
}

func (a *app) showAck(r ackTotals) error {
	if a.json {
		return a.printJSON(r)
	}
	t := newTable(a.env.Stdout, "REQUESTED", "ACKNOWLEDGED")
	t.row(r.RequestedCount, r.AcknowledgedCount)
	return t.flush()
}

// editFlags are edit's flags.
type editFlags struct {
	note, destination string
	delay             int
}

func (a *app) editCmd() *cobra.Command {
	var f editFlags
	cmd := &cobra.Command{
		Use:   "edit ID",
		Short: "Edit a pending JSON row's body in $EDITOR and replay it",
		Long: `edit opens the row's body, pretty-printed, in $VISUAL or $EDITOR. When the
editor exits, the body must be valid JSON (not null, at most 128,000 bytes
compact) and changed; then it is sent as the row's edited replay. The stored
raw message is kept; the note is required and audited.`,
		Example: `  EDITOR=nano redrive edit 12 --note "beer_name was empty upstream"`,
		Args:    args(cobra.ExactArgs(1)),
		RunE:    func(cmd *cobra.Command, argv []string) error { return a.edit(cmd.Context(), argv[0], &f) },
	}
	cmd.Flags().StringVar(&f.note, "note", "", "why the body was edited (required, audited)")
	cmd.Flags().StringVar(&f.destination, "destination", "", "send to this queue instead of the row's source queue")
	cmd.Flags().IntVar(&f.delay, "delay", 0, "deliver after this many seconds (0..43200)")
	return cmd
}

func (a *app) edit(ctx context.Context, arg string, f *editFlags) error {
	id, err := rowID(arg)
	if err != nil {
		return err
	}
	if strings.TrimSpace(f.note) == "" {
		return usagef("--note is required: say why the body was edited")
	}
	c, err := a.api()
	if err != nil {
		return err
	}
	orig, err := editable(ctx, c, id)
	if err != nil {
		return err
	}
	edited, err := a.editBody(ctx, id, orig)
	if err != nil {
		return err
	}
	req := client.EditedReplayRequest{Body: json.RawMessage(edited), Note: f.note, Destination: opt(f.destination)}
	if f.delay > 0 {
		req.DelaySeconds = &f.delay
	}
	return a.replayEdited(ctx, c, id, req)
}

// editable gets row id's body, pretty-printed, to edit: only a pending
// JSON row's.
func editable(ctx context.Context, c *client.ClientWithResponses, id int) ([]byte, error) {
	var d detail
	if _, err := into(&d)(c.DlqMessage(ctx, id)); err != nil {
		return nil, err
	}
	var m message
	if err := json.Unmarshal(d.Message, &m); err != nil {
		return nil, err
	}
	if m.ContentType != "json" || m.Status != "pending" || m.RawMessage == nil {
		return nil, fmt.Errorf("row %d is %s with content type %s: only a pending json row can be edited", id, m.Status, m.ContentType)
	}
	var orig bytes.Buffer
	if err := json.Indent(&orig, []byte(*m.RawMessage), "", "  "); err != nil {
		return nil, fmt.Errorf("row %d's body is not valid JSON: acknowledge it instead", id)
	}
	orig.WriteByte('\n')
	return orig.Bytes(), nil
}

// replayEdited sends the edited replay and prints its answer.
func (a *app) replayEdited(ctx context.Context, c *client.ClientWithResponses, id int, req client.EditedReplayRequest) error {
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
