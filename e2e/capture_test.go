//go:build e2e

package e2e

import (
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"
)

// beerBody is an enrichment message body; extra fields are merged in.
func beerBody(t testing.TB, id, name string, extra map[string]any) string {
	t.Helper()
	m := map[string]any{"beer_id": id, "beer_name": name, "brewer": "Capture Brewing"}
	for k, v := range extra {
		m[k] = v
	}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// capturedRow is a dlq_messages row as the e2e tests read it.
type capturedRow struct {
	ID, FailureCount, ReplayCount, FailedAt                                int64
	MessageID, LastMessageID, BeerID, Status, Source, Raw, Encoding, Class string
	Reason                                                                 sql.NullString
	AcknowledgedAt                                                         sql.NullInt64
}

func (w *Worker) capturedRow(t testing.TB, where string, args ...any) capturedRow {
	t.Helper()
	var r capturedRow
	var class sql.NullString
	err := w.DB(t).QueryRow(`SELECT id, failure_count, replay_count, failed_at, message_id, last_message_id, row_key, status,
		source_queue, raw_message, raw_encoding, failure_class, failure_reason, acknowledged_at FROM dlq_messages WHERE `+where, args...).
		Scan(&r.ID, &r.FailureCount, &r.ReplayCount, &r.FailedAt, &r.MessageID, &r.LastMessageID, &r.BeerID, &r.Status,
			&r.Source, &r.Raw, &r.Encoding, &class, &r.Reason, &r.AcknowledgedAt)
	if err != nil {
		t.Fatalf("dlq row %s %v: %v", where, args, err)
	}
	r.Class = class.String
	return r
}

// nearLimit is a body size just under the queue's message limit (128,000
// bytes locally, checked: 127,950 passes, 128,000 fails).
const nearLimit = 127_000

func sqlQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

func unique(prefix string) string { return fmt.Sprintf("%s-%d", prefix, time.Now().UnixNano()) }

// 500 messages sent to the DLQ (5 sendBatch calls of 100) are stored exactly
// once each, with source_queue = the queue they failed on.
func TestCaptureStoresEveryDLQMessageOnce(t *testing.T) {
	prefix := unique("cap500")
	want := map[string]string{}
	var bodies []string
	for i := range 500 {
		id := fmt.Sprintf("%s-%03d", prefix, i)
		b := beerBody(t, id, "Five Hundred "+id, nil)
		want[id] = b
		bodies = append(bodies, b)
	}
	shared.Send(t, "beer-enrichment-dlq", bodies...)
	like := prefix + "-%"
	Eventually(t, 120*time.Second, "500 DLQ messages stored", func() bool {
		return shared.Int(t, `SELECT COUNT(*) FROM dlq_messages WHERE row_key LIKE ?`, like) >= 500
	})
	if n := shared.Int(t, `SELECT COUNT(*) FROM dlq_messages WHERE row_key LIKE ?`, like); n != 500 {
		t.Fatalf("rows = %d, want 500", n)
	}
	if n := shared.Int(t, `SELECT COUNT(DISTINCT message_id) FROM dlq_messages WHERE row_key LIKE ?`, like); n != 500 {
		t.Fatalf("distinct message ids = %d", n)
	}
	rows, err := shared.DB(t).Query(`SELECT row_key, raw_message, source_queue, status, failure_reason, failure_count
		FROM dlq_messages WHERE row_key LIKE ?`, like)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	seen := map[string]bool{}
	for rows.Next() {
		var id, raw, source, status, reason string
		var count int64
		if err := rows.Scan(&id, &raw, &source, &status, &reason, &count); err != nil {
			t.Fatal(err)
		}
		if seen[id] || raw != want[id] || source != "beer-enrichment" || status != "pending" || reason != "no attempt record" || count < 1 {
			t.Fatalf("row %s: seen %v source %s status %s reason %q count %d raw match %v", id, seen[id], source, status, reason, count, raw == want[id])
		}
		seen[id] = true
	}
	if len(seen) != 500 {
		t.Fatalf("distinct beers = %d", len(seen))
	}
}

// A message failing for real on the main queue (provider 500 on every
// attempt) is stored with failure_count = max_retries+1 = 4 and the
// provider's error as failure_reason; its attempt record is then removed.
func TestCaptureRealFailureHasTrueAttemptsAndReason(t *testing.T) {
	token := unique("cap-real")
	shared.Provider.On(token, Behavior{Status: http.StatusInternalServerError})
	shared.Send(t, "beer-enrichment", beerBody(t, token, token, nil))
	Eventually(t, 60*time.Second, "failed message captured", func() bool {
		return shared.Int(t, `SELECT COUNT(*) FROM dlq_messages WHERE row_key = ?`, token) == 1
	})
	r := shared.capturedRow(t, `row_key = ?`, token)
	if r.FailureCount != 4 || r.Source != "beer-enrichment" || r.Status != "pending" || r.Class != "transient" ||
		!strings.HasPrefix(r.Reason.String, "transient: ") || !strings.Contains(r.Reason.String, "500") {
		t.Fatalf("row = %+v", r)
	}
	if n := len(shared.Provider.Calls(token)); n != 4 {
		t.Fatalf("provider calls = %d, want 4", n)
	}
	Eventually(t, 10*time.Second, "attempt record removed", func() bool {
		return shared.Int(t, `SELECT COUNT(*) FROM message_attempts WHERE message_id = ?`, r.MessageID) == 0
	})
}

// Poison bodies are stored with a reason and the placeholder beer_id, and
// their good neighbours in the same sendBatch are stored once each.
func TestCapturePoisonBodiesAndTheirNeighbours(t *testing.T) {
	token := unique("cap-poison")
	good1, good2 := token+"-good1", token+"-good2"
	poison := map[string]string{
		"not json":  "not json " + token,
		"no beer":   `{"beer_name":"` + token + `"}`,
		"array":     `["` + token + `"]`,
		"empty id":  `{"beer_id":"","beer_name":"` + token + `"}`,
		"number id": `{"beer_id":7,"beer_name":"` + token + `-n"}`,
		"near 128k": token + strings.Repeat("x", nearLimit-len(token)),
	}
	bodies := []string{beerBody(t, good1, good1, nil)}
	kinds := make([]string, 0, len(poison))
	for k := range poison {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	for _, k := range kinds {
		bodies = append(bodies, poison[k])
	}
	bodies = append(bodies, beerBody(t, good2, good2, nil))
	shared.Send(t, "beer-enrichment-dlq", bodies...)
	// A valid body near 128 KB in its own sendBatch (256 KB per batch).
	bigID := token + "-big"
	big := beerBody(t, bigID, bigID, map[string]any{"notes": ""})
	big = beerBody(t, bigID, bigID, map[string]any{"notes": strings.Repeat("n", nearLimit-len(big))})
	shared.Send(t, "beer-enrichment-dlq", big)

	Eventually(t, 60*time.Second, "poison and neighbours stored", func() bool {
		n := shared.Int(t, `SELECT COUNT(*) FROM dlq_messages WHERE instr(raw_message, ?) > 0`, token)
		return n >= int64(len(bodies)+1)
	})
	for _, k := range kinds {
		r := shared.capturedRow(t, `raw_message = ?`, poison[k])
		if r.BeerID != "__unparseable__" || r.Class != "poison" || !strings.HasPrefix(r.Reason.String, "unparseable: ") ||
			r.Source != "beer-enrichment" || r.Encoding != "text" {
			t.Errorf("%s: %+v", k, r.Reason.String)
		}
	}
	for _, id := range []string{good1, good2, bigID} {
		if n := shared.Int(t, `SELECT COUNT(*) FROM dlq_messages WHERE row_key = ?`, id); n != 1 {
			t.Errorf("%s stored %d times", id, n)
		}
	}
	if r := shared.capturedRow(t, `row_key = ?`, bigID); r.Raw != big {
		t.Errorf("big body stored as %d bytes, sent %d", len(r.Raw), len(big))
	}
	if n := shared.Int(t, `SELECT COUNT(*) FROM dlq_messages WHERE instr(raw_message, ?) > 0`, token); n != int64(len(bodies)+1) {
		t.Errorf("rows = %d, want %d", n, len(bodies)+1)
	}
}

// A replayed message (the admin replay sends the row's body unchanged) that
// fails again on the main queue updates its original row: back to pending,
// replay_count kept, new failure recorded. Replaying it a second time still
// gives one row.
func TestCaptureReplayedMessageFailingAgainUpdatesItsRow(t *testing.T) {
	token := unique("cap-lineage")
	shared.Provider.On(token, Behavior{Status: http.StatusInternalServerError})
	body := beerBody(t, token, token, nil)
	shared.Send(t, "beer-enrichment", body)
	Eventually(t, 60*time.Second, "first failure captured", func() bool {
		return shared.Int(t, `SELECT COUNT(*) FROM dlq_messages WHERE row_key = ?`, token) == 1
	})
	first := shared.capturedRow(t, `row_key = ?`, token)

	for round := int64(1); round <= 2; round++ {
		before := shared.capturedRow(t, `id = ?`, first.ID)
		if res := replay(t, shared, idsBody([]int64{first.ID})); res.ReplayedCount != 1 {
			t.Fatalf("replay %d: %+v", round, res)
		}
		Eventually(t, 90*time.Second, "repeat failure captured", func() bool {
			r := shared.capturedRow(t, `id = ?`, first.ID)
			return r.LastMessageID != before.LastMessageID && r.Status == "pending"
		})
		r := shared.capturedRow(t, `id = ?`, first.ID)
		if r.ReplayCount != round || r.MessageID != first.MessageID || r.FailureCount != 4 || r.FailedAt <= before.FailedAt ||
			!strings.Contains(r.Reason.String, "500") || r.Raw != body {
			t.Fatalf("replay %d: row = %+v", round, r)
		}
		if n := shared.Int(t, `SELECT COUNT(*) FROM dlq_messages WHERE row_key = ?`, token); n != 1 {
			t.Fatalf("replay %d: rows = %d, want 1", round, n)
		}
	}
	if n := len(shared.Provider.Calls(token)); n != 12 {
		t.Fatalf("provider calls = %d, want 3 x 4", n)
	}
}

// One message that makes the batch statement fail (a trigger rejects it)
// does not hold back its neighbours in the same batch: they are stored once
// each at once; it is retried by the DLQ and, from its third delivery on,
// kept as a minimal row (body as base64, reason "unstorable: ...").
func TestCaptureOneBadMessageDoesNotHoldBackItsNeighbours(t *testing.T) {
	token := unique("cap-bad")
	bad := beerBody(t, token+"-bad", token, nil)
	trigger := strings.ReplaceAll(token, "-", "_")
	shared.Exec(t, fmt.Sprintf(`CREATE TRIGGER %s BEFORE INSERT ON dlq_messages WHEN NEW.raw_message = %s
		BEGIN SELECT RAISE(ABORT, 'e2e: store rejected'); END`, trigger, sqlQuote(bad)))
	defer shared.Exec(t, "DROP TRIGGER IF EXISTS "+trigger)

	good := []string{beerBody(t, token+"-g1", token, nil), beerBody(t, token+"-g2", token, nil)}
	shared.Send(t, "beer-enrichment-dlq", good[0], bad, good[1])
	Eventually(t, 60*time.Second, "bad message kept as a minimal row", func() bool {
		return shared.Int(t, `SELECT COUNT(*) FROM dlq_messages WHERE raw_message = ?`, base64.StdEncoding.EncodeToString([]byte(bad))) == 1
	})
	for _, id := range []string{token + "-g1", token + "-g2"} {
		if n := shared.Int(t, `SELECT COUNT(*) FROM dlq_messages WHERE row_key = ?`, id); n != 1 {
			t.Fatalf("neighbour %s stored %d times", id, n)
		}
	}
	r := shared.capturedRow(t, `raw_message = ?`, base64.StdEncoding.EncodeToString([]byte(bad)))
	g := shared.capturedRow(t, `row_key = ?`, token+"-g1")
	if r.Encoding != "base64" || r.BeerID != "__unparseable__" || r.Class != "poison" || r.FailureCount < 3 ||
		!strings.HasPrefix(r.Reason.String, "unstorable: ") || !strings.Contains(r.Reason.String, "e2e: store rejected") || g.FailedAt >= r.FailedAt {
		t.Fatalf("minimal row = %+v, neighbour failed_at %d", r, g.FailedAt)
	}
	log := shared.Log()
	if !strings.Contains(log, "storing messages one by one") || !strings.Contains(log, `"message_id":"`+r.MessageID+`"`) {
		t.Fatalf("fallback not logged for %s", r.MessageID)
	}
}

// A real DLQ redelivery of a message whose row is acknowledged leaves it
// acknowledged and creates no row. To get one, a trigger makes the DLQ store
// of one message fail (the DLQ retries it, same message id); meanwhile the
// row is seeded as if the store had succeeded and the operator acknowledged
// it but the queue never saw the ack; then the trigger is dropped. Runs on
// its own worker so that the message's attempt record is the only one.
func TestCaptureRedeliveryAfterAcknowledgeStaysAcknowledged(t *testing.T) {
	w := startWorkerWith(t, Options{})
	token := unique("cap-redeliver")
	body := beerBody(t, token, token, nil)
	w.Exec(t, fmt.Sprintf(`CREATE TRIGGER e2e_block BEFORE INSERT ON dlq_messages WHEN NEW.raw_message IN (%s, %s)
		BEGIN SELECT RAISE(ABORT, 'e2e: store blocked'); END`, sqlQuote(body), sqlQuote(base64.StdEncoding.EncodeToString([]byte(body)))))
	w.Provider.On(token, Behavior{Status: http.StatusInternalServerError})
	w.Send(t, "beer-enrichment", body)

	// The message fails 4 times on the main queue, then its DLQ store fails.
	var msgID string
	retried := regexp.MustCompile(`"msg":"dlq: message could not be stored; retrying it"[^\n]*"message_id":"([^"]+)"`)
	Eventually(t, 60*time.Second, "DLQ store of the message failed and was retried", func() bool {
		m := retried.FindStringSubmatch(w.Log())
		if m == nil {
			return false
		}
		msgID = m[1]
		return true
	})
	if n := w.Int(t, `SELECT attempt FROM message_attempts WHERE message_id = ?`, msgID); n != 4 {
		t.Fatalf("attempt record of %s: attempt %d, want 4", msgID, n)
	}
	w.Exec(t, fmt.Sprintf(`DROP TRIGGER e2e_block;
		INSERT INTO dlq_messages(message_id, row_key, failed_at, failure_count, failure_reason, source_queue,
			status, acknowledged_at, raw_message, last_message_id, first_failed_at, updated_at)
		VALUES (%s, %s, 1000, 4, 'stored before the ack was lost', 'beer-enrichment', 'acknowledged', 2000, %s, %s, 1000, 2000);`,
		sqlQuote(msgID), sqlQuote(token), sqlQuote(body), sqlQuote(msgID)))

	// The seeded row stands for the store that succeeded: like it, the insert
	// removed the attempt record and counted one captured message.
	if n := w.Int(t, `SELECT COUNT(*) FROM message_attempts WHERE message_id = ?`, msgID); n != 0 {
		t.Fatalf("attempt record kept after the row was stored")
	}
	Eventually(t, 60*time.Second, "redelivery absorbed as a duplicate", func() bool {
		return w.Int(t, `SELECT COALESCE(MAX(value), 0) FROM counters WHERE name = 'dlq_duplicates_total'`) == 1
	})
	if n := w.Int(t, `SELECT COUNT(*) FROM dlq_messages WHERE row_key = ? OR message_id = ?`, token, msgID); n != 1 {
		t.Fatalf("rows = %d, want 1", n)
	}
	r := w.capturedRow(t, `message_id = ?`, msgID)
	if r.Status != "acknowledged" || r.AcknowledgedAt.Int64 != 2000 || r.FailedAt != 1000 || r.Reason.String != "stored before the ack was lost" {
		t.Fatalf("acknowledged row changed by the redelivery: %+v", r)
	}
	if d, c := w.Int(t, `SELECT value FROM counters WHERE name = 'dlq_duplicates_total'`), w.Int(t, `SELECT COALESCE(SUM(events), 0) FROM dlq_activity WHERE kind = 'failed'`); d != 1 || c != 1 {
		t.Fatalf("counters: duplicates %d captured %d, want 1 and 1 (the seeded store)", d, c)
	}
}
