package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/redrive/redrive/client"
)

// groupStatusCmds are `redrive groups ack|resolve|ignore|snooze|open SIG`:
// a failure group's incident status (POST /admin/dlq/groups/{sig}/status),
// audited under the caller's name.
func (a *app) groupStatusCmds() []*cobra.Command {
	var out []*cobra.Command
	for _, s := range []struct{ use, status, short string }{
		{"ack", "acknowledged", "Acknowledge a failure group: you own it (PagerDuty: acknowledge)"},
		{"resolve", "resolved", "Resolve a failure group (PagerDuty: resolve); a new failure reopens it"},
		{"ignore", "ignored", "Ignore a failure group: it only counts, nothing is sent for it"},
		{"snooze", "snoozed", "Snooze a failure group: nothing is sent until --for has passed"},
		{"open", "open", "Open a failure group again (no event)"},
	} {
		var owner, note string
		var snooze time.Duration
		cmd := &cobra.Command{
			Use:     s.use + " SIGNATURE",
			Short:   s.short,
			Example: fmt.Sprintf("  redrive groups %s 3c0f9a2b7d1e4c55 --owner alice --note \"model name typo\"", s.use),
			Args:    args(cobra.ExactArgs(1)),
			RunE: func(cmd *cobra.Command, argv []string) error {
				body := client.SetGroupStatusJSONRequestBody{Status: client.GroupStatusChangeStatus(s.status)}
				if cmd.Flags().Changed("owner") {
					body.Owner = &owner
				}
				if cmd.Flags().Changed("note") {
					body.Note = &note
				}
				if s.status == "snoozed" {
					if snooze <= 0 {
						return usagef("snooze needs --for, e.g. --for 2h")
					}
					until := int(time.Now().Add(snooze).UnixMilli())
					body.Until = &until
				}
				return a.groupStatus(cmd.Context(), argv[0], body)
			},
		}
		cmd.Flags().StringVar(&owner, "owner", "", "who owns it (\"\" clears)")
		cmd.Flags().StringVar(&note, "note", "", "a note for the group (\"\" clears)")
		if s.status == "snoozed" {
			cmd.Flags().DurationVar(&snooze, "for", 0, "how long (at most 720h)")
		}
		out = append(out, cmd)
	}
	return out
}

func (a *app) groupStatus(ctx context.Context, sig string, body client.SetGroupStatusJSONRequestBody) error {
	c, err := a.api()
	if err != nil {
		return err
	}
	data, err := into(nil)(c.SetGroupStatus(ctx, sig, body))
	if err != nil {
		return err
	}
	if a.json {
		return a.printJSON(data)
	}
	var res client.GroupStatusChanged
	if err := json.Unmarshal(data, &res); err != nil {
		return err
	}
	t := newTable(a.env.Stdout, "SIGNATURE", "STATUS", "OCCURRENCE", "OWNER", "NOTE", "EVENT")
	t.row(res.Incident.Signature, string(res.Incident.Status), res.Incident.Occurrence, res.Incident.Owner, res.Incident.Note, res.EventId)
	return t.flush()
}
