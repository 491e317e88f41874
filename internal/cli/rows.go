package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

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

type page struct {
	Messages        []json.RawMessage `json:"messages"`
	TotalCount      int               `json:"total_count"`
	TotalCountExact bool              `json:"total_count_exact"`
	Limit           int               `json:"limit"`
	NextCursor      *string           `json:"next_cursor"`
	HasMore         bool              `json:"has_more"`
}

func (p *page) next() (*string, bool) { return p.NextCursor, p.HasMore }
func (p *page) add(q page) {
	p.Messages = append(p.Messages, q.Messages...)
	p.NextCursor, p.HasMore = q.NextCursor, q.HasMore
}

// groupsPage is GET /admin/dlq/groups' data.
type groupsPage struct {
	Groups     []json.RawMessage `json:"groups"`
	Limit      int               `json:"limit"`
	NextCursor *string           `json:"next_cursor"`
	HasMore    bool              `json:"has_more"`
}

func (p *groupsPage) next() (*string, bool) { return p.NextCursor, p.HasMore }
func (p *groupsPage) add(q groupsPage) {
	p.Groups = append(p.Groups, q.Groups...)
	p.NextCursor, p.HasMore = q.NextCursor, q.HasMore
}

// auditPage is GET /admin/audit's data.
type auditPage struct {
	Entries    []json.RawMessage `json:"entries"`
	Limit      int               `json:"limit"`
	NextCursor *string           `json:"next_cursor"`
	HasMore    bool              `json:"has_more"`
}

func (p *auditPage) next() (*string, bool) { return p.NextCursor, p.HasMore }
func (p *auditPage) add(q auditPage) {
	p.Entries = append(p.Entries, q.Entries...)
	p.NextCursor, p.HasMore = q.NextCursor, q.HasMore
}

// pager is a page of a cursor-paged list: where the next page starts, and
// how to append a later page's items.
type pager[P any] interface {
	*P
	next() (cursor *string, more bool)
	add(P)
}

// follow gets the page at the request's cursor and, with all, every page
// after it (setCursor moves the request on), appending each to the first;
// the result carries the last page's cursor.
func follow[P any, PP pager[P]](all bool, get func() (P, error), setCursor func(*string)) (P, error) {
	out, err := get()
	last := out
	for err == nil && all {
		cursor, more := PP(&last).next()
		if !more {
			break
		}
		setCursor(cursor)
		if last, err = get(); err == nil {
			PP(&out).add(last)
		}
	}
	return out, err
}

func messageHeader() []string {
	return []string{"ID", "STATUS", "FAILED AT", "BEER", "NAME", "QUEUE", "REPLAYS", "REASON"}
}

func messageRow(t *table, raw json.RawMessage) error {
	var m message
	if err := json.Unmarshal(raw, &m); err != nil {
		return err
	}
	t.row(m.ID, m.Status, ms(m.FailedAt), m.BeerID, m.BeerName, m.SourceQueue, m.ReplayCount, m.FailureReason)
	return nil
}

func (a *app) lsCmd() *cobra.Command {
	var f filterFlags
	var limit int
	var cursor string
	var all, raw bool
	cmd := &cobra.Command{
		Use:   "ls",
		Short: "List dead-letter rows, newest failure first",
		Example: `  redrive ls --q Lagunitas --failed-after 24h
  redrive ls --status all --signature 3c0f9a2b7d1e4c55 --all --json`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := a.api()
			if err != nil {
				return err
			}
			p, err := f.listParams()
			if err != nil {
				return err
			}
			if limit > 0 {
				p.Limit = &limit
			}
			p.Cursor, p.IncludeRaw = opt(cursor), &raw
			out, err := follow(all, func() (pg page, err error) {
				_, err = into(&pg)(c.ListDLQ(cmd.Context(), p))
				return pg, err
			}, func(next *string) { p.Cursor = next })
			if err != nil {
				return err
			}
			if a.json {
				return a.printJSON(out)
			}
			t := newTable(a.env.Stdout, messageHeader()...)
			for _, m := range out.Messages {
				if err := messageRow(t, m); err != nil {
					return err
				}
			}
			if err := t.flush(); err != nil {
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
		},
	}
	f.register(cmd.Flags(), "pending (default), replaying, replayed, acknowledged or all")
	cmd.Flags().IntVar(&limit, "limit", 0, "rows per page (1..100; server default 50)")
	cmd.Flags().StringVar(&cursor, "cursor", "", "continue from a previous page's next_cursor")
	cmd.Flags().BoolVar(&all, "all", false, "follow next_cursor through every page")
	cmd.Flags().BoolVar(&raw, "include-raw", false, "include raw_message and raw_encoding")
	return cmd
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
		RunE: func(cmd *cobra.Command, argv []string) error {
			id, err := rowID(argv[0])
			if err != nil {
				return err
			}
			c, err := a.api()
			if err != nil {
				return err
			}
			var d detail
			data, err := into(&d)(c.DlqMessage(cmd.Context(), id))
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
			w := a.env.Stdout
			t := newTable(w)
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
			if err := t.flush(); err != nil {
				return err
			}
			fmt.Fprintf(w, "\nHISTORY (%d attempts", len(d.History))
			if d.HistoryDropped > 0 {
				fmt.Fprintf(w, ", %d dropped", d.HistoryDropped)
			}
			fmt.Fprintln(w, ")")
			t = newTable(w, "AT", "ATTEMPT", "CLASS", "STATUS", "MS", "ERROR")
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
		},
	}
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
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := a.api()
			if err != nil {
				return err
			}
			var s stats
			data, err := into(&s)(c.DlqStats(cmd.Context(), &client.DlqStatsParams{Pipeline: opt(pipeline)}))
			if err != nil {
				return err
			}
			if a.json {
				return a.printJSON(data)
			}
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
		},
	}
	cmd.Flags().StringVar(&pipeline, "pipeline", "", "one pipeline's counts (redrive pipelines); the oldest pending age and repeat failures stay across all")
	return cmd
}

func (a *app) groupsCmd() *cobra.Command {
	var limit int
	var cursor, class, version, pipeline string
	var all bool
	cmd := &cobra.Command{
		Use:     "groups",
		Short:   "Failure groups (signatures), most pending rows first",
		Example: "  redrive groups --class permanent\n  redrive groups --pipeline orders",
		Args:    args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := a.api()
			if err != nil {
				return err
			}
			p := &client.DlqGroupsParams{Cursor: opt(cursor), Class: opt(class), Version: opt(version), Pipeline: opt(pipeline)}
			if limit > 0 {
				p.Limit = &limit
			}
			out, err := follow(all, func() (pg groupsPage, err error) {
				_, err = into(&pg)(c.DlqGroups(cmd.Context(), p))
				return pg, err
			}, func(next *string) { p.Cursor = next })
			if err != nil {
				return err
			}
			if a.json {
				return a.printJSON(out)
			}
			t := newTable(a.env.Stdout, "SIGNATURE", "CLASS", "PENDING", "TOTAL", "LAST SEEN", "REPLAY FAILS", "TEXT")
			for _, raw := range out.Groups {
				var g struct {
					Signature      string         `json:"signature"`
					Class          string         `json:"class"`
					Text           string         `json:"text"`
					Counts         map[string]int `json:"counts"`
					Total          int            `json:"total"`
					LastSeen       int64          `json:"last_seen"`
					ReplayWillFail bool           `json:"replay_will_fail"`
				}
				if err := json.Unmarshal(raw, &g); err != nil {
					return err
				}
				t.row(g.Signature, g.Class, g.Counts["pending"], g.Total, ms(g.LastSeen), g.ReplayWillFail, g.Text)
			}
			return t.flush()
		},
	}
	cmd.Flags().IntVar(&limit, "limit", 0, "groups per page (1..100)")
	cmd.Flags().StringVar(&cursor, "cursor", "", "continue from next_cursor")
	cmd.Flags().StringVar(&class, "class", "", "only this class (transient, permanent, poison, ...)")
	cmd.Flags().StringVar(&version, "version", "", "groups seen on this worker version")
	cmd.Flags().StringVar(&pipeline, "pipeline", "", "one pipeline's groups (redrive pipelines)")
	cmd.Flags().BoolVar(&all, "all", false, "follow next_cursor through every page")
	return cmd
}

func (a *app) auditCmd() *cobra.Command {
	var limit int
	var cursor, action string
	var all bool
	cmd := &cobra.Command{
		Use:     "audit",
		Short:   "The audit log: every replay, acknowledge and task action, newest first",
		Example: "  redrive audit --action replay --limit 20",
		Args:    args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := a.api()
			if err != nil {
				return err
			}
			p := &client.AuditLogParams{Cursor: opt(cursor)}
			if action != "" {
				act := client.AuditLogParamsAction(action)
				p.Action = &act
			}
			if limit > 0 {
				p.Limit = &limit
			}
			out, err := follow(all, func() (pg auditPage, err error) {
				_, err = into(&pg)(c.AuditLog(cmd.Context(), p))
				return pg, err
			}, func(next *string) { p.Cursor = next })
			if err != nil {
				return err
			}
			if a.json {
				return a.printJSON(out)
			}
			t := newTable(a.env.Stdout, "ID", "AT", "ACTION", "DRY RUN", "BY", "SELECTION", "OUTCOME", "NOTE")
			for _, raw := range out.Entries {
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
					return err
				}
				sel := "-"
				if e.IDs != nil {
					sel = fmt.Sprintf("%d ids", len(e.IDs))
				} else if len(e.Filter) > 0 && string(e.Filter) != "null" {
					sel = "filter " + string(e.Filter)
				}
				t.row(e.ID, ms(e.At), e.Action, e.DryRun, e.KeyFingerprint, sel, e.Outcome, e.Note)
			}
			return t.flush()
		},
	}
	cmd.Flags().IntVar(&limit, "limit", 0, "entries per page (1..100)")
	cmd.Flags().StringVar(&cursor, "cursor", "", "continue from next_cursor")
	cmd.Flags().StringVar(&action, "action", "", "only this action (replay, acknowledge, replay_edited, replay_task, ...)")
	cmd.Flags().BoolVar(&all, "all", false, "follow next_cursor through every page")
	return cmd
}

func (a *app) tailCmd() *cobra.Command {
	var f filterFlags
	var since string
	var interval time.Duration
	var count int
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
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := a.api()
			if err != nil {
				return err
			}
			from := time.Now().UnixMilli()
			if since != "" {
				p, err := when("since", since)
				if err != nil {
					return err
				}
				from = int64(*p)
			}
			if interval <= 0 {
				interval = a.env.Poll
			}
			seen := map[[2]int64]bool{}
			retry := retrier{stderr: a.env.Stderr}
			printed := 0
			var t *table
			if !a.json {
				t = newTable(a.env.Stdout, messageHeader()...)
				_ = t.flush()
			}
			all := client.ListDLQParamsStatus("all")
			for {
				p, err := f.listParams()
				if err != nil {
					return err
				}
				p.Status = &all
				after := int(from)
				p.FailedAfter = &after
				var fresh []json.RawMessage
				var keys []message
				for {
					var pg page
					if _, err := into(&pg)(c.ListDLQ(cmd.Context(), p)); err != nil {
						if retry.again(cmd.Context(), err, interval) {
							continue // the same page again
						}
						if cmd.Context().Err() != nil {
							return nil // interrupted: a normal end
						}
						return err
					}
					retry.ok()
					for _, raw := range pg.Messages {
						var m message
						if err := json.Unmarshal(raw, &m); err != nil {
							return err
						}
						if !seen[[2]int64{m.ID, m.FailedAt}] {
							fresh = append(fresh, raw)
							keys = append(keys, m)
						}
					}
					if !pg.HasMore {
						break
					}
					p.Cursor = pg.NextCursor
				}
				idx := make([]int, len(fresh))
				for i := range idx {
					idx[i] = i
				}
				sort.SliceStable(idx, func(i, j int) bool { // oldest first
					a, b := keys[idx[i]], keys[idx[j]]
					return a.FailedAt < b.FailedAt || (a.FailedAt == b.FailedAt && a.ID < b.ID)
				})
				for _, i := range idx {
					m := keys[i]
					seen[[2]int64{m.ID, m.FailedAt}] = true
					if a.json {
						var v any
						_ = json.Unmarshal(fresh[i], &v)
						enc := json.NewEncoder(a.env.Stdout)
						enc.SetEscapeHTML(false)
						if err := enc.Encode(v); err != nil {
							return err
						}
					} else {
						if err := messageRow(t, fresh[i]); err != nil {
							return err
						}
						_ = t.flush()
					}
					if m.FailedAt > from {
						from = m.FailedAt // rows at exactly from stay in the query: seen dedupes them
					}
					printed++
					if count > 0 && printed >= count {
						return nil
					}
				}
				for k := range seen { // the query returns failed_at >= from only
					if k[1] < from {
						delete(seen, k)
					}
				}
				if err := sleep(cmd.Context(), interval); err != nil {
					return nil // interrupted: a normal end
				}
			}
		},
	}
	f.register(cmd.Flags(), "")
	cmd.Flags().StringVar(&since, "since", "", "start from: epoch ms, RFC 3339 or a duration ago (default now)")
	cmd.Flags().DurationVar(&interval, "interval", 0, "poll interval (default 2s)")
	cmd.Flags().IntVar(&count, "count", 0, "exit after this many failures (0: run until interrupted)")
	return cmd
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

func (a *app) pipelinesCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "pipelines",
		Short:   "The configured pipelines: queues, key, labels, retention (names for --pipeline)",
		Example: "  redrive pipelines\n  redrive ls --pipeline orders",
		Args:    args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := a.api()
			if err != nil {
				return err
			}
			var list client.PipelineList
			data, err := into(&list)(c.Pipelines(cmd.Context()))
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
		},
	}
}
