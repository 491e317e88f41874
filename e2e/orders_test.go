//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/dlq"
)

// The orders pipeline (wrangler.jsonc env.e2e PIPELINES "orders": queue
// e2e-orders, key /order/id, label customer, consumer external) consumed by
// the JavaScript worker e2e/jsconsumer, which reports each failed attempt to
// redrive through its service binding (clients/js/redrive-report.mjs).

const ordersQueue = "e2e-orders"

// orderBody is an order's body as the producer sends it (compact JSON, keys
// in this order: JSON.stringify of the delivered value gives the same text).
func orderBody(id int, customer, fail string, extra string) string {
	b := fmt.Sprintf(`{"order":{"id":%d,"customer":%q`, id, customer)
	if fail != "" {
		b += fmt.Sprintf(`,"fail":%q`, fail)
	}
	return b + extra + `},"lines":[{"sku":"hop-1","qty":2,"price":3.5},{"sku":"é 🍺 <&>","qty":1,"price":12}]}`
}

// sendOrders puts JSON bodies on e2e-orders (content type json, as a
// TypeScript producer's send(obj) does).
func (w *Worker) sendOrders(t *testing.T, bodies ...string) {
	t.Helper()
	w.sendJSON(t, ordersQueue, bodies...)
}

// sendJSON puts JSON bodies on queue with content type json.
func (w *Worker) sendJSON(t *testing.T, queue string, bodies ...string) {
	t.Helper()
	msgs := make([]map[string]any, len(bodies))
	for i, b := range bodies {
		msgs[i] = map[string]any{"body": b, "content_type": "json"}
	}
	if r := w.Admin(t, http.MethodPost, "/__dev/send", map[string]any{"queue": queue, "messages": msgs}); r.Status != http.StatusOK {
		t.Fatalf("send to %s: %d %s", queue, r.Status, r.Raw)
	}
}

// orderDeliveries returns the deliveries of e2e-orders whose body was exactly body.
func (w *Worker) orderDeliveries(t *testing.T, body string) []jsDelivery {
	t.Helper()
	return w.queueDeliveries(t, ordersQueue, body)
}

// queueDeliveries returns the deliveries the JavaScript consumer recorded
// on queue whose body was exactly body, in the order received.
func (w *Worker) queueDeliveries(t *testing.T, queue, body string) []jsDelivery {
	t.Helper()
	if w.Int(t, `SELECT COUNT(*) FROM sqlite_master WHERE name = 'e2e_js_deliveries'`) == 0 {
		return nil
	}
	rows, err := w.DB(t).Query(`SELECT message_id, attempts, typeof_body FROM e2e_js_deliveries
		WHERE queue = ? AND body_json_or_text = ? ORDER BY id`, queue, body)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []jsDelivery
	for rows.Next() {
		var d jsDelivery
		if err := rows.Scan(&d.MessageID, &d.Attempts, &d.TypeOf); err != nil {
			t.Fatal(err)
		}
		out = append(out, d)
	}
	return out
}

// orderRow is an orders row as stored.
type orderRow struct {
	ID, FailureCount, ReplayCount                                    int64
	MessageID, LastMessageID, Status, Key, Label1, Label2            string
	Class, Reason, Signature, History, ContentType, Raw, RawEncoding string
}

func (w *Worker) orderRow(t *testing.T, body string) (orderRow, bool) {
	t.Helper()
	var r orderRow
	err := w.DB(t).QueryRow(`SELECT id, failure_count, replay_count, message_id, last_message_id, status, row_key,
			COALESCE(label_1, ''), COALESCE(label_2, ''), failure_class, failure_reason, COALESCE(signature, ''), COALESCE(history, '[]'),
			content_type, raw_message, raw_encoding
		FROM dlq_messages WHERE source_queue = ? AND body_hash = ?`, ordersQueue, dlq.BodyHash("json", body)).
		Scan(&r.ID, &r.FailureCount, &r.ReplayCount, &r.MessageID, &r.LastMessageID, &r.Status, &r.Key, &r.Label1, &r.Label2,
			&r.Class, &r.Reason, &r.Signature, &r.History, &r.ContentType, &r.Raw, &r.RawEncoding)
	return r, err == nil
}

// An external consumer's failures, reported through a service binding with
// the JavaScript helper, reach the orders rows: each failing order is
// captured from e2e-orders-dlq keyed by /order/id with label customer, with
// its three reported attempts as history, the reported reason and class,
// and the signature of the reported failure (one group for every declined
// card). An order whose failures are not reported carries Queues' delivery
// count (the DLQ delivery's: 1, in workerd a moved message's count starts
// again) and "no attempt record". Replayed, the bodies arrive at the
// consumer byte-identical; replayed edited, the edited body arrives.
func TestOrdersPipelineReportsFailuresAndReplays(t *testing.T) {
	w := startJSWorker(t)
	base := int(time.Now().UnixNano() % 1_000_000_000)
	declined := []string{
		orderBody(base+1, "acme", "card declined", ""),
		orderBody(base+2, "globex", "card declined", ""),
		orderBody(base+3, "acme", "card declined", `,"note":"nested \"quotes\" and \\ slashes"`),
	}
	silent := orderBody(base+4, "initech", "address invalid", `,"report":false`)
	ok := orderBody(base+5, "acme", "", "")
	start := time.Now()
	w.sendOrders(t, append(append([]string{}, declined...), silent, ok)...)

	failing := append(append([]string{}, declined...), silent)
	Eventually(t, 120*time.Second, "every failing order captured from e2e-orders-dlq", func() bool {
		for _, b := range failing {
			if _, found := w.orderRow(t, b); !found {
				return false
			}
		}
		return true
	})
	t.Logf("4 failing orders captured %v after sending", time.Since(start).Round(100*time.Millisecond))
	Eventually(t, 30*time.Second, "the good order delivered once", func() bool { return len(w.orderDeliveries(t, ok)) == 1 })

	wantSig := dlq.SignatureIn("e2e-orders", "permanent", fmt.Sprintf("card declined (order %d)", base+1)).Key
	for i, b := range declined {
		r, _ := w.orderRow(t, b)
		id := fmt.Sprint(base + 1 + i)
		customer := []string{"acme", "globex", "acme"}[i]
		if r.Key != id || r.Label1 != customer || r.ContentType != "json" || r.Status != "pending" {
			t.Fatalf("order %s: row %+v", id, r)
		}
		if r.FailureCount != 3 || r.Class != "permanent" || r.Reason != fmt.Sprintf("permanent: card declined (order %s)", id) || r.Signature != wantSig {
			t.Fatalf("order %s: count %d class %s reason %q signature %s (want %s)", id, r.FailureCount, r.Class, r.Reason, r.Signature, wantSig)
		}
		var h []dlq.HistoryEntry
		if err := json.Unmarshal([]byte(r.History), &h); err != nil {
			t.Fatal(err)
		}
		if len(h) != 3 {
			t.Fatalf("order %s: history %+v, want the 3 reported attempts", id, h)
		}
		for n, e := range h {
			if e.Attempt != n+1 || e.Class != "permanent" || e.MessageID != r.MessageID || !strings.Contains(e.Error, "card declined") {
				t.Fatalf("order %s: history entry %d = %+v", id, n, e)
			}
		}
		// Delivered three times, exactly as produced.
		if d := w.orderDeliveries(t, b); len(d) != 3 || d[0].MessageID != r.MessageID || d[2].Attempts != 3 || d[0].TypeOf != "object" {
			t.Fatalf("order %s: deliveries %+v", id, d)
		}
	}
	r, _ := w.orderRow(t, silent)
	if r.Reason != "no attempt record" || r.Class != "unknown" || r.FailureCount != 1 || r.History != "[]" && r.History != "" {
		t.Fatalf("unreported order: count %d class %s reason %q history %s", r.FailureCount, r.Class, r.Reason, r.History)
	}
	// Every attempt record was consumed by the capture.
	if n := w.Int(t, `SELECT COUNT(*) FROM message_attempts WHERE queue = ?`, ordersQueue); n != 0 {
		t.Fatalf("%d attempt records left behind", n)
	}

	// One group for the three declined cards (the order number is normalised
	// away); this worker has no other rows.
	g := w.Admin(t, http.MethodGet, "/admin/dlq/groups", nil)
	if g.Status != http.StatusOK || !strings.Contains(string(g.Raw), `"signature":"`+wantSig+`"`) {
		t.Fatalf("groups: %d %.600s", g.Status, g.Raw)
	}
	if n := w.Int(t, `SELECT pending FROM dlq_signatures WHERE signature = ?`, wantSig); n != 3 {
		t.Fatalf("group %s counts %d pending, want 3", wantSig, n)
	}
	// The orders groups only, each naming its pipeline; the beer pipeline has
	// none; the orders timeseries counts its captures.
	var groups struct {
		Groups []struct {
			Signature   string  `json:"signature"`
			SourceQueue string  `json:"source_queue"`
			Pipeline    *string `json:"pipeline"`
		} `json:"groups"`
	}
	w.Admin(t, http.MethodGet, "/admin/dlq/groups?pipeline=orders", nil).Decode(t, &groups)
	found := false
	for _, gr := range groups.Groups {
		if gr.SourceQueue != ordersQueue || gr.Pipeline == nil || *gr.Pipeline != "orders" {
			t.Fatalf("groups?pipeline=orders listed %+v", gr)
		}
		found = found || gr.Signature == wantSig
	}
	if !found || int64(len(groups.Groups)) != w.Int(t, `SELECT COUNT(*) FROM dlq_signatures WHERE source_queue = ?`, ordersQueue) {
		t.Fatalf("groups?pipeline=orders: %+v", groups)
	}
	if g := w.Admin(t, http.MethodGet, "/admin/dlq/groups?pipeline=beers", nil); g.Status != http.StatusOK || strings.Contains(string(g.Raw), wantSig) {
		t.Fatalf("groups?pipeline=beers: %d %.600s", g.Status, g.Raw)
	}
	var series struct {
		Total    int64  `json:"total"`
		Pipeline string `json:"pipeline"`
	}
	w.Admin(t, http.MethodGet, "/admin/dlq/timeseries?pipeline=orders", nil).Decode(t, &series)
	if want := w.Int(t, `SELECT COUNT(*) FROM dlq_messages WHERE source_queue = ?`, ordersQueue); series.Total != want || series.Pipeline != "orders" || want < 4 {
		t.Fatalf("timeseries?pipeline=orders: %+v, want total %d", series, want)
	}

	// A report with a wrong token is refused; with the token, over HTTP, accepted.
	report := `{"attempts":[{"queue":"e2e-orders","message_id":"m-http","attempt":1,"error":"warehouse timeout","class":"transient"}]}`
	if resp, err := w.Do(http.MethodPost, "/admin/attempts", report, map[string]string{"Authorization": "Bearer wrong"}); err != nil || resp.Status != http.StatusUnauthorized {
		t.Fatalf("wrong token: %v %+v", err, resp)
	}
	resp, err := w.Do(http.MethodPost, "/admin/attempts", report, map[string]string{"Authorization": "Bearer " + TestReportToken})
	if err != nil || resp.Status != http.StatusAccepted || !strings.Contains(string(resp.Raw), `"recorded":1`) || resp.Contract != nil {
		t.Fatalf("report over HTTP: %v %+v", err, resp)
	}
	bad := `{"attempts":[{"queue":"beer-enrichment","message_id":"m","attempt":1,"error":"e"}]}`
	if resp, _ := w.Do(http.MethodPost, "/admin/attempts", bad, map[string]string{"Authorization": "Bearer " + TestReportToken}); resp == nil ||
		resp.Status != http.StatusBadRequest || resp.Error == nil || resp.Error.Code != "UNKNOWN_QUEUE" {
		t.Fatalf("report on the beer queue: %+v", resp)
	}

	// Replay the declined orders by id: each body reaches the consumer again
	// byte-identical, fails again there and updates its own row.
	var ids []int64
	for _, b := range declined {
		r, _ := w.orderRow(t, b)
		ids = append(ids, r.ID)
	}
	res := replay(t, w, idsBody(ids))
	if res.ReplayedCount != len(ids) || res.QueuedTo != ordersQueue {
		t.Fatalf("replay: %+v", res)
	}
	Eventually(t, 120*time.Second, "every replayed order failed again into its own row", func() bool {
		for _, b := range declined {
			if r, _ := w.orderRow(t, b); r.ReplayCount != 1 || r.Status != "pending" {
				return false
			}
		}
		return true
	})
	for _, b := range declined {
		r, _ := w.orderRow(t, b)
		d := w.orderDeliveries(t, b)
		if len(d) != 6 || d[3].MessageID != r.LastMessageID || d[3].Attempts != 1 {
			t.Fatalf("replayed order: row %+v, deliveries %+v", r, d)
		}
		var h []dlq.HistoryEntry
		json.Unmarshal([]byte(r.History), &h)
		if len(h) != 6 || h[3].MessageID != r.LastMessageID || h[5].Attempt != 3 {
			t.Fatalf("replayed order's history %+v", h)
		}
	}

	// Edit and replay: the fixed body arrives as sent and is acked.
	r, _ = w.orderRow(t, silent)
	fixed := orderBody(base+4, "initech", "", `,"address":"1 Infinite Loop"`)
	er := w.Admin(t, http.MethodPost, fmt.Sprintf("/admin/dlq/%d/replay", r.ID), `{"body":`+fixed+`,"note":"address fixed"}`)
	if er.Status != http.StatusOK {
		t.Fatalf("edited replay: %d %s", er.Status, er.Raw)
	}
	Eventually(t, 60*time.Second, "the edited order delivered", func() bool { return len(w.orderDeliveries(t, fixed)) == 1 })

	// Export: the orders rows, each with its body as it failed.
	ex := w.Admin(t, http.MethodGet, "/admin/dlq/export?format=ndjson&include_raw=true&source_queue="+ordersQueue, nil)
	if ex.Status != http.StatusOK {
		t.Fatalf("export: %d %.300s", ex.Status, ex.Raw)
	}
	exported := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(ex.Raw)), "\n") {
		var m struct {
			BeerID     string `json:"beer_id"`
			RawMessage string `json:"raw_message"`
		}
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("export line %q: %v", line, err)
		}
		exported[m.BeerID] = m.RawMessage
	}
	for i, b := range declined {
		if got := exported[fmt.Sprint(base+1+i)]; got != b {
			t.Fatalf("export of order %d: %q, want %q", base+1+i, got, b)
		}
	}

	Consistently(t, 3*time.Second, "no extra delivery", func() bool {
		return len(w.orderDeliveries(t, ok)) == 1 && len(w.orderDeliveries(t, fixed)) == 1
	})
}

// What a failure report costs in D1 (POST /admin/attempts, one batch of one
// upsert per entry): 100 new messages' first attempts write 3 rows each
// (row, primary key, recorded_at index) and read none, their second
// attempts write and read 1 each.
func TestReportAttemptsD1Rows(t *testing.T) {
	w := startWorker(t, rowsVars) // usage flushed after every request
	prefix := fmt.Sprintf("rows-%d-", time.Now().UnixNano())
	defer w.Exec(t, fmt.Sprintf(`DELETE FROM message_attempts WHERE message_id LIKE '%s%%'`, prefix))
	report := func(attempt int) dlqUsage {
		var es []map[string]any
		for i := range 100 {
			es = append(es, map[string]any{"queue": ordersQueue, "message_id": fmt.Sprintf("%s%d", prefix, i), "attempt": attempt,
				"error": fmt.Sprintf("gateway timeout after %d ms", 100+i), "class": "transient"})
		}
		before := settledUsage(t, w)
		resp, err := w.Do(http.MethodPost, "/admin/attempts", map[string]any{"attempts": es},
			map[string]string{"Authorization": "Bearer " + TestReportToken})
		if err != nil || resp.Status != http.StatusAccepted || !strings.Contains(string(resp.Raw), `"recorded":100`) {
			t.Fatalf("report: %v %+v", err, resp)
		}
		d := usageDelta(before, settledUsage(t, w), opIs("POST /admin/attempts"))
		return dlqUsage{d.RowsRead, d.RowsWritten, d.Statements}
	}
	first, second := report(1), report(2)
	t.Logf("100 first attempts: read %d written %d statements %d; 100 second attempts: read %d written %d statements %d",
		first.read, first.written, first.statements, second.read, second.written, second.statements)
	if first.written != 300 || second.written != 100 || first.statements != 100 || second.statements != 100 {
		t.Fatalf("rows written %d then %d (statements %d, %d), want 300 then 100 in 100 statements each",
			first.written, second.written, first.statements, second.statements)
	}
	// Measured: 0 then 100 (the upsert reads the record it updates).
	if first.read > 100 || second.read > 100 {
		t.Fatalf("rows read %d then %d, want at most 1 per entry", first.read, second.read)
	}
	if n := w.Int(t, fmt.Sprintf(`SELECT COUNT(*) FROM message_attempts WHERE message_id LIKE '%s%%' AND attempt = 2
		AND json_array_length(history) = 2`, prefix)); n != 100 {
		t.Fatalf("%d records with both attempts, want 100", n)
	}
}

// dlqUsage is one operation's D1 rows read and written and statements.
type dlqUsage struct{ read, written, statements int64 }
