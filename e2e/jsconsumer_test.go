//go:build e2e

package e2e

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/queue"
)

// The JavaScript worker run beside redrive (see e2e/jsconsumer/wrangler.jsonc)
// and the queue it consumes and records every delivery of.
const (
	jsConsumerConfig = "e2e/jsconsumer/wrangler.jsonc"
	jsQueue          = "e2e-js"
)

// jsMessage is one message the JavaScript producer (e2e/jsconsumer) sends to e2e-js.
type jsMessage struct {
	name string
	// produce is how the producer sends it: json, default (send(obj) without
	// a content type), text or bytes.
	produce string
	// body is the text form: JSON text as JSON.stringify writes it, the
	// string, or base64 of the bytes.
	body string
	// ct is the content type redrive must record; typeOf what the JavaScript
	// consumer sees (typeof body, or ArrayBuffer).
	ct     queue.ContentType
	typeOf string
	fails  bool
}

// jsProduce has the JavaScript worker send msgs to e2e-js: one command per
// message on e2e-js-produce, itself sent as text through /__dev/send.
func (w *Worker) jsProduce(t *testing.T, msgs []jsMessage) {
	t.Helper()
	var cmds []string
	for _, m := range msgs {
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false) // the command must stay under the queue's message limit
		if err := enc.Encode(map[string]string{"content_type": m.produce, "body": m.body}); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, strings.TrimSpace(b.String()))
	}
	w.Send(t, "e2e-js-produce", cmds...)
}

// jsDelivery is one delivery the JavaScript consumer recorded.
type jsDelivery struct {
	MessageID string
	Attempts  int64
	TypeOf    string
}

// jsDeliveries returns the deliveries of e2e-js whose body was exactly value,
// in the order received (none while the table does not exist yet).
func (w *Worker) jsDeliveries(t *testing.T, value string) []jsDelivery {
	t.Helper()
	if w.Int(t, `SELECT COUNT(*) FROM sqlite_master WHERE name = 'e2e_js_deliveries'`) == 0 {
		return nil
	}
	rows, err := w.DB(t).Query(`SELECT message_id, attempts, typeof_body FROM e2e_js_deliveries
		WHERE queue = 'e2e-js' AND body_json_or_text = ? ORDER BY id`, value)
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

// jsRow is the dlq_messages row of a message, found by its body hash.
type jsRow struct {
	ID, ReplayCount                                                 int64
	MessageID, LastMessageID, Status, ContentType, Raw, RawEncoding string
}

func (w *Worker) jsRow(t *testing.T, m jsMessage) (jsRow, bool) {
	t.Helper()
	var r jsRow
	err := w.DB(t).QueryRow(`SELECT id, replay_count, message_id, last_message_id, status, content_type, raw_message, raw_encoding
		FROM dlq_messages WHERE source_queue = 'e2e-js' AND body_hash = ?`, dlq.BodyHash(m.ct, m.body)).
		Scan(&r.ID, &r.ReplayCount, &r.MessageID, &r.LastMessageID, &r.Status, &r.ContentType, &r.Raw, &r.RawEncoding)
	return r, err == nil
}

// Replay to a real JavaScript consumer (e2e/jsconsumer, in the same wrangler
// dev): json, text and bytes messages that failed there reach it again
// exactly as its producer sent them (same typeof, same value, keys in the
// same order, nothing added), once per replay; a replayed message that fails
// again updates its row (replay_count 1, then 2), never a new one.
func TestReplayToAJavaScriptConsumerSendsExactlyWhatFailed(t *testing.T) {
	w := startJSWorker(t)
	tok := unique("js")
	bin := base64.StdEncoding.EncodeToString(append([]byte{0xff, 0, 0x80, '"'}, tok+"-bytes"...))
	msgs := []jsMessage{
		{"json", "json", `{"token":"` + tok + `-json","z":1,"fail":true,"a":{"y":[1,2.5,"<&>",true,null],"x":"é 🍺"},"b":""}`, queue.JSON, "object", true},
		{"default", "default", `{"fail":true,"token":"` + tok + `-default"}`, queue.JSON, "object", true},
		{"array", "json", `["FAIL","` + tok + `-array",{"b":1,"a":2}]`, queue.JSON, "object", true},
		{"text", "text", "FAIL " + tok + "-text: plain <&> text\n", queue.Text, "string", true},
		{"text-json", "text", `{"fail":"FAIL","token":"` + tok + `-text-json"}`, queue.Text, "string", true},
		{"bytes", "bytes", bin, queue.Bytes, "ArrayBuffer", true},
		// Near the queue's 128,000-byte limit: re-encoded with escaped <>& (as
		// replay once did) it would be six times over.
		{"big", "json", `{"fail":true,"token":"` + tok + `-big","pad":"` + strings.Repeat("<&>", 41_000) + `"}`, queue.JSON, "object", true},
		{"ok", "json", `{"fail":false,"token":"` + tok + `-ok"}`, queue.JSON, "object", false},
	}
	var failing []jsMessage
	for _, m := range msgs {
		if m.fails {
			failing = append(failing, m)
		}
	}
	w.jsProduce(t, msgs)

	// Each failing message: two deliveries, then the DLQ, then a row.
	Eventually(t, 120*time.Second, "every failing message captured from e2e-js-dlq", func() bool {
		for _, m := range failing {
			if _, ok := w.jsRow(t, m); !ok {
				return false
			}
		}
		return true
	})
	ids := make([]int64, len(failing))
	for i, m := range failing {
		r, _ := w.jsRow(t, m)
		ids[i] = r.ID
		raw := r.Raw
		if r.RawEncoding == "base64" && m.ct != queue.Bytes {
			b, _ := base64.StdEncoding.DecodeString(raw)
			raw = string(b)
		}
		if r.ContentType != string(m.ct) || raw != m.body || r.Status != "pending" || r.ReplayCount != 0 || r.MessageID != r.LastMessageID {
			t.Fatalf("%s: row %+v (raw %d bytes)", m.name, r, len(r.Raw))
		}
		w.wantDeliveries(t, m, r.MessageID, 2)
	}
	Eventually(t, 30*time.Second, "the message that does not fail delivered", func() bool {
		return len(w.jsDeliveries(t, msgs[len(msgs)-1].body)) == 1
	})
	if n := w.Int(t, `SELECT COUNT(*) FROM dlq_messages WHERE source_queue = 'e2e-js'`); n != int64(len(failing)) {
		t.Fatalf("%d rows for %d failing messages", n, len(failing))
	}

	// The list shows each row's content type.
	page := w.Admin(t, http.MethodGet, "/admin/dlq?source_queue=e2e-js&limit=100", nil)
	for _, m := range failing {
		if !bytes.Contains(page.Raw, []byte(`"content_type":"`+string(m.ct)+`"`)) {
			t.Fatalf("list lacks content_type %s: %.300s", m.ct, page.Raw)
		}
	}

	for round := int64(1); round <= 2; round++ {
		before := map[string]jsRow{}
		for _, m := range failing {
			before[m.name], _ = w.jsRow(t, m)
		}
		res := replay(t, w, idsBody(ids))
		if res.ReplayedCount != len(failing) || res.FailedCount != 0 || res.QueuedTo != "e2e-js" {
			t.Fatalf("round %d: replay %+v", round, res)
		}
		// Each replayed message fails again there: its row, back to pending.
		Eventually(t, 120*time.Second, "every replayed message failed again and updated its own row", func() bool {
			for _, m := range failing {
				r, ok := w.jsRow(t, m)
				if !ok || r.Status != "pending" || r.ReplayCount != round || r.LastMessageID == before[m.name].LastMessageID {
					return false
				}
			}
			return true
		})
		for _, m := range failing {
			r, _ := w.jsRow(t, m)
			if r.ID != before[m.name].ID || r.MessageID != before[m.name].MessageID || r.LastMessageID == r.MessageID {
				t.Fatalf("round %d, %s: row %+v, before %+v", round, m.name, r, before[m.name])
			}
			// The replayed message: delivered twice (it fails), exactly as produced.
			w.wantDeliveries(t, m, r.LastMessageID, 2)
		}
		if n := w.Int(t, `SELECT COUNT(*) FROM dlq_messages WHERE source_queue = 'e2e-js'`); n != int64(len(failing)) {
			t.Fatalf("round %d: %d rows, want %d (a repeat failure made a new row)", round, n, len(failing))
		}
	}

	// Settle: nothing is delivered twice, nothing more arrives.
	Consistently(t, 5*time.Second, "no extra delivery and no new row", func() bool {
		for _, m := range msgs {
			want := 6 // first failure, then two replays: two deliveries each
			if !m.fails {
				want = 1
			}
			if len(w.jsDeliveries(t, m.body)) != want {
				return false
			}
		}
		return w.Int(t, `SELECT COUNT(*) FROM dlq_messages WHERE source_queue = 'e2e-js'`) == int64(len(failing))
	})
	if n := w.Int(t, `SELECT COUNT(*) FROM e2e_js_deliveries WHERE instr(body_json_or_text, '_redrive_dlq_id') > 0`); n != 0 {
		t.Fatalf("%d deliveries carry a field redrive added", n)
	}
}

// wantDeliveries checks that message id was delivered n times (attempts 1..n)
// with the body exactly as produced and of the same JavaScript type.
func (w *Worker) wantDeliveries(t *testing.T, m jsMessage, id string, n int) {
	t.Helper()
	var got []jsDelivery
	for _, d := range w.jsDeliveries(t, m.body) {
		if d.MessageID == id {
			got = append(got, d)
		}
	}
	if len(got) != n {
		var all []jsDelivery
		rows, _ := w.DB(t).Query(`SELECT message_id, attempts, typeof_body FROM e2e_js_deliveries WHERE message_id = ?`, id)
		for rows != nil && rows.Next() {
			var d jsDelivery
			rows.Scan(&d.MessageID, &d.Attempts, &d.TypeOf)
			all = append(all, d)
		}
		if rows != nil {
			rows.Close()
		}
		t.Fatalf("%s: %d deliveries of message %s with the body as produced, want %d (all of its deliveries: %+v)", m.name, len(got), id, n, all)
	}
	for i, d := range got {
		if d.Attempts != int64(i+1) || d.TypeOf != m.typeOf {
			t.Fatalf("%s: delivery %d = %+v, want attempt %d of type %s", m.name, i, d, i+1, m.typeOf)
		}
	}
}
