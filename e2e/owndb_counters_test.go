//go:build e2e

package e2e

import (
	"fmt"
	"net/http"
	"testing"
	"time"
)

// With tickets on its own database (TICKETS_DB) and orders and js in DB:
//
//   - /admin/metrics counts what happened to tickets in TICKETS_DB: its
//     acknowledges and poison rows are added to DB's counters of the same
//     names (each sample is the sum over both databases, and TICKETS_DB's
//     part is not 0), and the scrape's rows read stay bounded (logged);
//   - attempt records are per queue: a report for e2e-js naming an
//     e2e-orders message id writes a record of its own and leaves the
//     orders record alone; an order failing through the JavaScript consumer
//     (clients/js/redrive-report.mjs) is captured with its reported reason,
//     and its record is removed, the other queue's stays.
func TestOwnDatabaseCountersAndPerQueueAttempts(t *testing.T) {
	w := startWorkerWith(t, Options{ExtraConfigs: []string{jsConsumerConfig}, Vars: rowsVars, OwnDatabases: true})
	n := time.Now().UnixNano() % 1_000_000_000
	tickets := []string{
		fmt.Sprintf(`{"ticket":"T-%d-1","team":"infra","fail":true}`, n),
		fmt.Sprintf(`{"ticket":"T-%d-2","team":"infra","fail":true}`, n),
		fmt.Sprintf(`{"team":"no key %d","fail":true}`, n), // poison
	}
	w.sendJSON(t, ticketsQueue, tickets...)
	order := orderBody(int(n), "acme", "card declined", "")
	w.sendOrders(t, order)

	// Two reports of one message id on two queues: two records.
	report := func(queue string, attempt int, text string) {
		t.Helper()
		body := fmt.Sprintf(`{"attempts":[{"queue":%q,"message_id":"m-shared-%d","attempt":%d,"error":%q,"class":"permanent"}]}`,
			queue, n, attempt, text)
		r, err := w.Do(http.MethodPost, "/admin/attempts", body, map[string]string{"Authorization": "Bearer " + TestReportToken})
		if err != nil || r.Status != http.StatusAccepted {
			t.Fatalf("report on %s: %v %+v", queue, err, r)
		}
	}
	report(ordersQueue, 2, "card declined")
	report(jsQueue, 9, "written over")
	shared := fmt.Sprintf("m-shared-%d", n)
	if got := w.Int(t, `SELECT COUNT(*) FROM message_attempts WHERE message_id = ?`, shared); got != 2 {
		t.Fatalf("%d attempt records of %s, want one per queue", got, shared)
	}
	if a := w.Int(t, `SELECT attempt FROM message_attempts WHERE queue = ? AND message_id = ?`, ordersQueue, shared); a != 2 {
		t.Fatalf("the orders record says attempt %d after a report on e2e-js, want 2", a)
	}

	Eventually(t, 120*time.Second, "3 tickets and the order captured", func() bool {
		return w.IntOf(t, TicketsDB, `SELECT COUNT(*) FROM dlq_messages WHERE source_queue = ?`, ticketsQueue) == 3 &&
			w.Int(t, `SELECT COUNT(*) FROM dlq_messages WHERE source_queue = ? AND instr(raw_message, ?) > 0`,
				ordersQueue, fmt.Sprint(n)) == 1
	})
	var reason string
	if err := w.DB(t).QueryRow(`SELECT failure_reason FROM dlq_messages WHERE source_queue = ? AND instr(raw_message, ?) > 0`,
		ordersQueue, fmt.Sprint(n)).Scan(&reason); err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("permanent: card declined (order %d)", n); reason != want {
		t.Fatalf("captured order's reason %q, want %q (its reported attempts)", reason, want)
	}
	if got := w.Int(t, `SELECT COUNT(*) FROM message_attempts WHERE queue = ?`, ordersQueue); got != 1 {
		t.Fatalf("%d orders attempt records left, want 1 (the shared id's; the captured order's removed)", got)
	}
	if got := w.Int(t, `SELECT COUNT(*) FROM message_attempts WHERE queue = ? AND message_id = ?`, jsQueue, shared); got != 1 {
		t.Fatalf("the e2e-js record of %s is gone", shared)
	}

	// Acknowledge the two keyed tickets (in TICKETS_DB).
	var ids []int64
	rows, err := w.DBOf(t, TicketsDB).Query(`SELECT id FROM dlq_messages WHERE source_queue = ? AND failure_class <> 'poison'`, ticketsQueue)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	rows.Close()
	if r := w.Admin(t, http.MethodPost, "/admin/dlq/acknowledge", map[string]any{"ids": ids}); r.Status != http.StatusOK || len(ids) != 2 {
		t.Fatalf("acknowledge %v: %d %s", ids, r.Status, r.Raw)
	}

	counter := func(binding, name string) int64 {
		return w.IntOf(t, binding, `SELECT COALESCE((SELECT value FROM counters WHERE name = ?), 0)`, name)
	}
	for _, name := range []string{"dlq_acknowledged_total", "dlq_poison_total"} {
		own := counter(TicketsDB, name)
		if own == 0 {
			t.Fatalf("%s is 0 in %s: the test counts nothing there", name, TicketsDB)
		}
		want := own + counter("DB", name)
		page := metricsPage(t, w)
		if got := page.Samples["redrive_"+name]; got != float64(want) {
			t.Errorf("redrive_%s = %v, want %d (DB's and %s's %d)", name, got, want, TicketsDB, own)
		}
	}

	// What a scrape reads with two databases: the second scrape's usage
	// holds the first's.
	before := d1Usage(t, w)
	after := d1Usage(t, w)
	u := usageDelta(before, after, opIs("GET /admin/metrics"))
	t.Logf("metrics scrape with 2 databases: D1 rows read %d, written %d, statements %d", u.RowsRead, u.RowsWritten, u.Statements)
	if u.Statements != 2 || u.RowsRead > 1_000 || u.RowsWritten != 0 {
		t.Errorf("metrics scrape: %d statements, %d rows read, %d written (one statement per database, at most 1,000 rows, none written)",
			u.Statements, u.RowsRead, u.RowsWritten)
	}
}
