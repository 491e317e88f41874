//go:build e2e

package e2e

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/redrive/redrive/dlq"
)

// The tickets pipeline exists by configuration alone: wrangler.jsonc's
// env.e2e has its producer binding E2E_TICKETS_QUEUE, a consumer of its DLQ
// e2e-tickets-dlq and its PIPELINES entry (key /ticket, label team,
// consumer external); e2e/jsconsumer/wrangler.jsonc consumes e2e-tickets
// with its generic consumer (fail === true fails). No code names it.
const ticketsQueue = "e2e-tickets"

// A third pipeline added by configuration alone is captured keyed by its
// pointer, with its label, and replayed to its own queue: the replayed body
// reaches its consumer byte-identical and, failing again, updates its row;
// an edited replay delivers the fixed body.
func TestPipelineAddedByConfigurationIsCapturedAndReplayed(t *testing.T) {
	// On its own database TICKETS_DB (Options.OwnDatabases).
	w := startWorkerWith(t, Options{ExtraConfigs: []string{jsConsumerConfig}, OwnDatabases: true})
	n := time.Now().UnixNano() % 1_000_000_000
	ticket := func(i int, team string, fail bool) string {
		return fmt.Sprintf(`{"ticket":"T-%d-%d","team":%q,"fail":%t,"detail":{"steps":[1,2.5,"<&>"],"é":"🍺"}}`, n, i, team, fail)
	}
	failing := []string{ticket(1, "infra", true), ticket(2, "payments", true)}
	ok := ticket(3, "infra", false)
	w.sendJSON(t, ticketsQueue, append(append([]string{}, failing...), ok)...)

	type row struct {
		ID, ReplayCount                             int64
		Key, Team, Status, LastMessageID, MessageID string
	}
	rowOf := func(body string) (row, bool) {
		var r row
		err := w.DBOf(t, ticketsDB).QueryRow(`SELECT id, replay_count, row_key, COALESCE(label_1, ''), status, last_message_id, message_id
			FROM dlq_messages WHERE source_queue = ? AND body_hash = ?`, ticketsQueue, dlq.BodyHash("json", body)).
			Scan(&r.ID, &r.ReplayCount, &r.Key, &r.Team, &r.Status, &r.LastMessageID, &r.MessageID)
		return r, err == nil
	}
	Eventually(t, 120*time.Second, "both failing tickets captured from e2e-tickets-dlq", func() bool {
		for _, b := range failing {
			if _, found := rowOf(b); !found {
				return false
			}
		}
		return true
	})
	var ids []int64
	for i, b := range failing {
		r, _ := rowOf(b)
		if want := fmt.Sprintf("T-%d-%d", n, i+1); r.Key != want || r.Team != []string{"infra", "payments"}[i] || r.Status != "pending" {
			t.Fatalf("ticket %d: row %+v", i+1, r)
		}
		if d := w.queueDeliveries(t, ticketsQueue, b); len(d) != 2 || d[0].MessageID != r.MessageID {
			t.Fatalf("ticket %d: deliveries %+v", i+1, d)
		}
		ids = append(ids, r.ID)
	}
	Eventually(t, 30*time.Second, "the good ticket delivered once", func() bool { return len(w.queueDeliveries(t, ticketsQueue, ok)) == 1 })
	if c := w.IntOf(t, ticketsDB, `SELECT COUNT(*) FROM dlq_messages WHERE source_queue = ?`, ticketsQueue); c != 2 {
		t.Fatalf("%d tickets rows, want 2", c)
	}

	// Replayed to e2e-tickets through its producer binding: byte-identical, failing again.
	res := replay(t, w, idsBody(ids))
	if res.ReplayedCount != 2 || res.QueuedTo != ticketsQueue {
		t.Fatalf("replay: %+v", res)
	}
	Eventually(t, 120*time.Second, "both replayed tickets failed again into their own rows", func() bool {
		for _, b := range failing {
			if r, _ := rowOf(b); r.ReplayCount != 1 || r.Status != "pending" {
				return false
			}
		}
		return true
	})
	for _, b := range failing {
		r, _ := rowOf(b)
		if d := w.queueDeliveries(t, ticketsQueue, b); len(d) != 4 || d[2].MessageID != r.LastMessageID || r.LastMessageID == r.MessageID {
			t.Fatalf("replayed ticket: row %+v deliveries %+v", r, d)
		}
	}

	// Edited and replayed: the fixed body is delivered and acked.
	fixed := fmt.Sprintf(`{"ticket":"T-%d-1","team":"infra","fail":false,"fixed":true}`, n)
	if r := w.Admin(t, http.MethodPost, fmt.Sprintf("/admin/dlq/%d/replay", ids[0]), `{"body":`+fixed+`,"note":"fixed"}`); r.Status != http.StatusOK {
		t.Fatalf("edited replay: %d %s", r.Status, r.Raw)
	}
	Eventually(t, 60*time.Second, "the edited ticket delivered", func() bool { return len(w.queueDeliveries(t, ticketsQueue, fixed)) == 1 })
	Consistently(t, 3*time.Second, "delivered once, no new row", func() bool {
		return len(w.queueDeliveries(t, ticketsQueue, fixed)) == 1 && w.IntOf(t, ticketsDB, `SELECT COUNT(*) FROM dlq_messages WHERE source_queue = ?`, ticketsQueue) == 2
	})
}
