package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/redrive/redrive/client"
)

// message is what the tables show of a Message.
type message struct {
	ID            int64   `json:"id"`
	MessageID     string  `json:"message_id"`
	BeerID        string  `json:"beer_id"`
	BeerName      *string `json:"beer_name"`
	Brewer        *string `json:"brewer"`
	Status        string  `json:"status"`
	FailedAt      int64   `json:"failed_at"`
	FailureReason *string `json:"failure_reason"`
	FailureClass  *string `json:"failure_class"`
	SourceQueue   string  `json:"source_queue"`
	ReplayCount   int     `json:"replay_count"`
	ContentType   string  `json:"content_type"`
	RawMessage    *string `json:"raw_message"`
	RawEncoding   *string `json:"raw_encoding"`
}

func messageHeader() []string {
	return []string{"ID", "STATUS", "FAILED AT", "BEER", "NAME", "QUEUE", "REPLAYS", "REASON"}
}

// messageCells is a message's row of the messageHeader table.
func messageCells(raw json.RawMessage) ([]any, error) {
	var m message
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, err
	}
	return []any{m.ID, m.Status, ms(m.FailedAt), m.BeerID, m.BeerName, m.SourceQueue, m.ReplayCount, m.FailureReason}, nil
}

// listFlags are the paging flags of ls, groups and audit.
type listFlags struct {
	limit  int
	cursor string
	all    bool
}

func (l *listFlags) register(cmd *cobra.Command, limit, cursor string) {
	cmd.Flags().IntVar(&l.limit, "limit", 0, limit)
	cmd.Flags().StringVar(&l.cursor, "cursor", "", cursor)
	cmd.Flags().BoolVar(&l.all, "all", false, "follow next_cursor through every page")
}

// limitParam is the limit parameter: nil unless --limit was set.
func (l *listFlags) limitParam() *int {
	if l.limit > 0 {
		return &l.limit
	}
	return nil
}

func (a *app) lsCmd() *cobra.Command {
	var f filterFlags
	var l listFlags
	var raw bool
	cmd := &cobra.Command{
		Use:   "ls",
		Short: "List dead-letter rows, newest failure first",
		Example: `  redrive ls --q Lagunitas --failed-after 24h
  redrive ls --status all --signature 3c0f9a2b7d1e4c55 --all --json`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error { return a.ls(cmd.Context(), &f, &l, &raw) },
	}
	f.register(cmd.Flags(), "pending (default), replaying, replayed, acknowledged or all")
	l.register(cmd, "rows per page (1..100; server default 50)", "continue from a previous page's next_cursor")
	cmd.Flags().BoolVar(&raw, "include-raw", false, "include raw_message and raw_encoding")
	return cmd
}

func (a *app) ls(ctx context.Context, f *filterFlags, l *listFlags, raw *bool) error {
	c, err := a.api()
	if err != nil {
		return err
	}
	p, err := f.listParams()
	if err != nil {
		return err
	}
	p.Limit, p.Cursor, p.IncludeRaw = l.limitParam(), opt(l.cursor), raw
	out, err := list[page](l.all, &p.Cursor, func() (*http.Response, error) { return c.ListDLQ(ctx, p) })
	if err != nil {
		return err
	}
	if err := a.printList(out, out.Messages, messageHeader(), messageCells); err != nil || a.json {
		return err
	}
	more := ""
	if !out.TotalCountExact {
		more = " (at least)"
	}
	fmt.Fprintf(a.env.Stderr, "%d shown, %d matching%s", len(out.Messages), out.TotalCount, more)
	if out.HasMore {
		fmt.Fprintf(a.env.Stderr, "; more with --all or --cursor %s", *out.NextCursor)
	}
	fmt.Fprintln(a.env.Stderr)
	return nil
}

// rowID parses a row or task id argument.
func rowID(s string) (int, error) {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 1 || n > 1<<53-1 {
		return 0, usagef("%q is not an id (a positive integer)", s)
	}
	return int(n), nil
}

type detail struct {
	Message       json.RawMessage `json:"message"`
	LastMessageID *string         `json:"last_message_id"`
	BodyHash      *string         `json:"body_hash"`
	RelatedIDs    []int64         `json:"related_ids"`
	History       []struct {
		At         int64   `json:"at"`
		Attempt    int     `json:"attempt"`
		Class      string  `json:"class"`
		Status     *int    `json:"status"`
		Error      string  `json:"error"`
		DurationMS *int    `json:"duration_ms"`
		Version    string  `json:"version"`
		MessageID  *string `json:"message_id"`
	} `json:"history"`
	HistoryDropped int `json:"history_dropped"`
	Signature      *struct {
		Signature      string `json:"signature"`
		Class          string `json:"class"`
		Text           string `json:"text"`
		ReplayWillFail bool   `json:"replay_will_fail"`
	} `json:"signature"`
	Version *string `json:"version"`
	Audit   []struct {
		At             int64   `json:"at"`
		Action         string  `json:"action"`
		KeyFingerprint string  `json:"key_fingerprint"`
		DryRun         bool    `json:"dry_run"`
		Note           *string `json:"note"`
		Outcome        string  `json:"outcome"`
		MatchedBy      string  `json:"matched_by"`
	} `json:"audit"`
}

func (a *app) showCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "show ID",
		Short:   "Show one row with its failure history, lineage and audit",
		Example: "  redrive show 12",
		Args:    args(cobra.ExactArgs(1)),
		RunE:    func(cmd *cobra.Command, argv []string) error { return a.show(cmd.Context(), argv[0]) },
	}
}

func (a *app) show(ctx context.Context, arg string) error {
	id, err := rowID(arg)
	if err != nil {
		return err
	}
	c, err := a.api()
	if err != nil {
		return err
	}
	var d detail
	data, err := into(&d)(c.DlqMessage(ctx, id))
	if err != nil {
		return err
	}
	if a.json {
		return a.printJSON(data)
	}
	var m message
	if err := json.Unmarshal(d.Message, &m); err != nil {
		return err
	}
	if err := a.showRow(m, d); err != nil {
		return err
	}
	return a.showHistory(d)
}

// showRow prints a row's fields, one per line.
func (a *app) showRow(m message, d detail) error {
	t := newTable(a.env.Stdout)
	t.row("id", m.ID)
	t.row("status", m.Status)
	t.row("beer", m.BeerID)
	t.row("name", m.BeerName)
	t.row("brewer", m.Brewer)
	t.row("queue", m.SourceQueue)
	t.row("failed at", ms(m.FailedAt))
	t.row("reason", m.FailureReason)
	t.row("class", m.FailureClass)
	t.row("replays", m.ReplayCount)
	t.row("content type", m.ContentType)
	t.row("message id", m.MessageID)
	t.row("last message id", d.LastMessageID)
	t.row("body hash", d.BodyHash)
	t.row("version", d.Version)
	if d.Signature != nil {
		t.row("group", d.Signature.Signature+" "+d.Signature.Class+": "+d.Signature.Text)
		if d.Signature.ReplayWillFail {
			t.row("advice", "replaying it unchanged fails again: fix the cause or acknowledge")
		}
	}
	related := "-"
	if len(d.RelatedIDs) > 0 {
		related = fmt.Sprint(d.RelatedIDs)
	}
	t.row("related ids", related)
	return t.flush()
}

// showHistory prints a row's failure history and audit entries.
func (a *app) showHistory(d detail) error {
	w := a.env.Stdout
	fmt.Fprintf(w, "\nHISTORY (%d attempts", len(d.History))
	if d.HistoryDropped > 0 {
		fmt.Fprintf(w, ", %d dropped", d.HistoryDropped)
	}
	fmt.Fprintln(w, ")")
	t := newTable(w, "AT", "ATTEMPT", "CLASS", "STATUS", "MS", "ERROR")
	for _, h := range d.History {
		t.row(ms(h.At), h.Attempt, h.Class, h.Status, h.DurationMS, h.Error)
	}
	if err := t.flush(); err != nil {
		return err
	}
	fmt.Fprintln(w, "\nAUDIT")
	t = newTable(w, "AT", "ACTION", "DRY RUN", "BY", "MATCHED BY", "OUTCOME", "NOTE")
	for _, e := range d.Audit {
		t.row(ms(e.At), e.Action, e.DryRun, e.KeyFingerprint, e.MatchedBy, e.Outcome, e.Note)
	}
	return t.flush()
}

type stats struct {
	ByStatus          map[string]int `json:"by_status"`
	OldestPendingAgeH float64        `json:"oldest_pending_age_hours"`
	BySourceQueue     []struct {
		SourceQueue string `json:"source_queue"`
		Pending     int    `json:"pending"`
		Total       int    `json:"total"`
	} `json:"by_source_queue"`
	TopFailureReasons []struct {
		FailureReason *string `json:"failure_reason"`
		Count         int     `json:"count"`
	} `json:"top_failure_reasons"`
	TopFailingBrewers []struct {
		Brewer string `json:"brewer"`
		Count  int    `json:"count"`
	} `json:"top_failing_brewers"`
	Last24h        map[string]int `json:"last_24h"`
	CurrentVersion struct {
		Stamp string `json:"stamp"`
	} `json:"current_version"`
}

func (a *app) statsCmd() *cobra.Command {
	var pipeline string
	cmd := &cobra.Command{
		Use:     "stats",
		Short:   "Counts by status and queue, top failure reasons, the last 24 hours",
		Example: "  redrive stats\n  redrive stats --pipeline orders",
		Args:    args(cobra.NoArgs),
		RunE:    func(cmd *cobra.Command, _ []string) error { return a.stats(cmd.Context(), pipeline) },
	}
	cmd.Flags().StringVar(&pipeline, "pipeline", "", "one pipeline's counts (redrive pipelines); the oldest pending age and repeat failures stay across all")
	return cmd
}

func (a *app) stats(ctx context.Context, pipeline string) error {
	c, err := a.api()
	if err != nil {
		return err
	}
	var s stats
	data, err := into(&s)(c.DlqStats(ctx, &client.DlqStatsParams{Pipeline: opt(pipeline)}))
	if err != nil {
		return err
	}
	if a.json {
		return a.printJSON(data)
	}
	return a.showStats(s)
}

// showStats prints the counts, the queues and the top failure reasons.
func (a *app) showStats(s stats) error {
	w := a.env.Stdout
	t := newTable(w, "PENDING", "REPLAYING", "REPLAYED", "ACKNOWLEDGED", "OLDEST PENDING (h)", "NEW 24h", "REPLAYED 24h", "ACKED 24h")
	t.row(s.ByStatus["pending"], s.ByStatus["replaying"], s.ByStatus["replayed"], s.ByStatus["acknowledged"],
		strconv.FormatFloat(s.OldestPendingAgeH, 'f', 1, 64), s.Last24h["new_failures_24h"], s.Last24h["replayed_24h"], s.Last24h["acknowledged_24h"])
	if err := t.flush(); err != nil {
		return err
	}
	fmt.Fprintln(w, "\nQUEUE")
	t = newTable(w, "SOURCE QUEUE", "PENDING", "TOTAL")
	for _, q := range s.BySourceQueue {
		t.row(q.SourceQueue, q.Pending, q.Total)
	}
	if err := t.flush(); err != nil {
		return err
	}
	fmt.Fprintln(w, "\nTOP FAILURE REASONS (pending)")
	t = newTable(w, "COUNT", "REASON")
	for _, r := range s.TopFailureReasons {
		t.row(r.Count, r.FailureReason)
	}
	if err := t.flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "\nlive version: %s\n", cell(s.CurrentVersion.Stamp))
	return nil
}

func (a *app) groupsCmd() *cobra.Command {
	var l listFlags
	var class, version, pipeline, incident string
	cmd := &cobra.Command{
		Use:     "groups",
		Short:   "Failure groups (signatures), most pending rows first; ack, resolve, ignore, snooze, open one",
		Example: "  redrive groups --class permanent\n  redrive groups --pipeline orders\n  redrive groups --incident open\n  redrive groups ack 3c0f9a2b7d1e4c55",
		Args:    args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			p := &client.DlqGroupsParams{Class: opt(class), Version: opt(version), Pipeline: opt(pipeline)}
			if incident != "" {
				s := client.DlqGroupsParamsIncident(incident)
				p.Incident = &s
			}
			return a.groups(cmd.Context(), &l, p)
		},
	}
	cmd.AddCommand(a.groupStatusCmds()...)
	l.register(cmd, "groups per page (1..100)", "continue from next_cursor")
	cmd.Flags().StringVar(&class, "class", "", "only this class (transient, permanent, poison, ...)")
	cmd.Flags().StringVar(&version, "version", "", "groups seen on this worker version")
	cmd.Flags().StringVar(&pipeline, "pipeline", "", "one pipeline's groups (redrive pipelines)")
	cmd.Flags().StringVar(&incident, "incident", "", "only groups of this status (open, acknowledged, resolved, ignored, snoozed), newest first")
	return cmd
}

func (a *app) groups(ctx context.Context, l *listFlags, p *client.DlqGroupsParams) error {
	c, err := a.api()
	if err != nil {
		return err
	}
	p.Cursor, p.Limit = opt(l.cursor), l.limitParam()
	out, err := list[groupsPage](l.all, &p.Cursor, func() (*http.Response, error) { return c.DlqGroups(ctx, p) })
	if err != nil {
		return err
	}
	return a.printList(out, out.Groups, []string{"SIGNATURE", "STATUS", "CLASS", "PENDING", "TOTAL", "LAST SEEN", "REPLAY FAILS", "TEXT"}, groupCells)
}

// groupCells is a failure group's row of the groups table.
func groupCells(raw json.RawMessage) ([]any, error) {
	var g struct {
		Signature      string         `json:"signature"`
		Class          string         `json:"class"`
		Text           string         `json:"text"`
		Counts         map[string]int `json:"counts"`
		Total          int            `json:"total"`
		LastSeen       int64          `json:"last_seen"`
		ReplayWillFail bool           `json:"replay_will_fail"`
		Incident       struct {
			Status string `json:"status"`
		} `json:"incident"`
	}
	if err := json.Unmarshal(raw, &g); err != nil {
		return nil, err
	}
	return []any{g.Signature, g.Incident.Status, g.Class, g.Counts["pending"], g.Total, ms(g.LastSeen), g.ReplayWillFail, g.Text}, nil
}

func (a *app) auditCmd() *cobra.Command {
	var l listFlags
	var action string
	cmd := &cobra.Command{
		Use:     "audit",
		Short:   "The audit log: every replay, acknowledge and task action, newest first",
		Example: "  redrive audit --action replay --limit 20",
		Args:    args(cobra.NoArgs),
		RunE:    func(cmd *cobra.Command, _ []string) error { return a.audit(cmd.Context(), &l, action) },
	}
	l.register(cmd, "entries per page (1..100)", "continue from next_cursor")
	cmd.Flags().StringVar(&action, "action", "", "only this action (replay, acknowledge, replay_edited, replay_task, ...)")
	return cmd
}

func (a *app) audit(ctx context.Context, l *listFlags, action string) error {
	c, err := a.api()
	if err != nil {
		return err
	}
	p := &client.AuditLogParams{Cursor: opt(l.cursor), Limit: l.limitParam()}
	if action != "" {
		act := client.AuditLogParamsAction(action)
		p.Action = &act
	}
	out, err := list[auditPage](l.all, &p.Cursor, func() (*http.Response, error) { return c.AuditLog(ctx, p) })
	if err != nil {
		return err
	}
	return a.printList(out, out.Entries, []string{"ID", "AT", "ACTION", "DRY RUN", "BY", "SELECTION", "OUTCOME", "NOTE"}, auditCells)
}

// auditCells is an audit entry's row of the audit table.
func auditCells(raw json.RawMessage) ([]any, error) {
	var e struct {
		ID             int64           `json:"id"`
		At             int64           `json:"at"`
		Action         string          `json:"action"`
		KeyFingerprint string          `json:"key_fingerprint"`
		DryRun         bool            `json:"dry_run"`
		IDs            []int64         `json:"ids"`
		Filter         json.RawMessage `json:"filter"`
		Note           *string         `json:"note"`
		Outcome        string          `json:"outcome"`
	}
	if err := json.Unmarshal(raw, &e); err != nil {
		return nil, err
	}
	sel := "-"
	if e.IDs != nil {
		sel = fmt.Sprintf("%d ids", len(e.IDs))
	} else if len(e.Filter) > 0 && string(e.Filter) != "null" {
		sel = "filter " + string(e.Filter)
	}
	return []any{e.ID, ms(e.At), e.Action, e.DryRun, e.KeyFingerprint, sel, e.Outcome, e.Note}, nil
}
func (a *app) pipelinesCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "pipelines",
		Short:   "The configured pipelines: queues, key, labels, retention (names for --pipeline)",
		Example: "  redrive pipelines\n  redrive ls --pipeline orders",
		Args:    args(cobra.NoArgs),
		RunE:    func(cmd *cobra.Command, _ []string) error { return a.pipelines(cmd.Context()) },
	}
}

func (a *app) pipelines(ctx context.Context) error {
	c, err := a.api()
	if err != nil {
		return err
	}
	var list client.PipelineList
	data, err := into(&list)(c.Pipelines(ctx))
	if err != nil {
		return err
	}
	if a.json {
		return a.printJSON(data)
	}
	t := newTable(a.env.Stdout, "NAME", "QUEUE", "DLQ", "CONSUMER", "KEY", "LABELS", "RETENTION (d)", "PRODUCER")
	for _, p := range list.Pipelines {
		labels := make([]string, len(p.Labels))
		for i, l := range p.Labels {
			labels[i] = l.Name + "=" + l.Pointer
		}
		producer := p.Producer
		if !p.ProducerBound {
			producer += " (missing: capture only)"
		}
		t.row(p.Name, p.Queue, p.Dlq, string(p.Consumer), p.Key, strings.Join(labels, " "), p.RetentionDays, producer)
	}
	return t.flush()
}
