package handlers

import (
	"context"
	"fmt"
	"testing"

	"github.com/redrive/redrive/queue"
)

// peekSender runs peek before it sends (and records nothing).
type peekSender struct{ peek func() }

func (s peekSender) SendBatch(context.Context, string, []queue.Outgoing) error {
	s.peek()
	return nil
}

// A replay's audit entry exists before anything is sent: a worker that dies
// during the send still leaves a "started" record of who replayed what.
func TestReplayIsAuditedBeforeItSends(t *testing.T) {
	api, _ := newDLQAPI(t)
	ids := seedRows(t, api.DB, 2)
	var during []string
	api.Sender = peekSender{peek: func() {
		rows, err := api.DB.Query(`SELECT action || ':' || outcome FROM admin_audit`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		for rows.Next() {
			var s string
			rows.Scan(&s)
			during = append(during, s)
		}
	}}
	rec, env := do(api.Handler(), "POST", "/admin/dlq/replay", fmt.Sprintf(`{"ids":[%d,%d]}`, ids[0], ids[1]), adminHeaders)
	if rec.Code != 200 || !env.Success {
		t.Fatalf("replay: %d %s", rec.Code, rec.Body)
	}
	if len(during) != 1 || during[0] != "replay:started" {
		t.Fatalf("audit rows while sending: %v, want one started replay", during)
	}
	var outcome string
	if err := api.DB.QueryRow(`SELECT outcome FROM admin_audit`).Scan(&outcome); err != nil || outcome != "ok" {
		t.Fatalf("audit outcome after the replay: %q %v", outcome, err)
	}
}
