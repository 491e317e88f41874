package resolve

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/internal/sqlitetest"
	"github.com/redrive/redrive/queue"
	"github.com/redrive/redrive/queue/queuetest"
)

// Whatever the body and content type: the consumer never panics and stores
// the message with its content type and body hash; a replay sends the body
// back byte for byte with that content type, or (v8, invalid JSON) never
// claims it; and the replayed message failing again updates the same row.
// Seeds are in testdata/fuzz/FuzzCaptureBody.
func FuzzCaptureBody(f *testing.F) {
	for _, s := range []string{`{"beer_id":"1"}`, `{"beer_id":1}`, "\x00", `{"_redrive_dlq_id":"9999999999999999999999"}`, `[`,
		`{"beer_id":"1","_redrive_dlq_id":1}`, `{"b":1,"a":2,"b":3,"x":"<>&"}`, ``, "\xff\xfe{"} {
		for ct := range fuzzTypes {
			f.Add(s, byte(ct))
		}
	}
	db := sqlitetest.New(f)
	c := newCapture(db, &bytes.Buffer{})
	n := 0
	f.Fuzz(func(t *testing.T, body string, ctByte byte) {
		n++
		ct := fuzzTypes[int(ctByte)%len(fuzzTypes)]
		text := body
		if ct == queue.Bytes {
			text = base64.StdEncoding.EncodeToString([]byte(body))
		}
		// A queue of its own: identical bodies of other iterations are other lineages.
		q := fmt.Sprint("fz-q", n)
		m := &queuetest.Message{MsgID: fmt.Sprint("fz", n), Attempt: 1, Text: text, Type: ct}
		if err := c.ConsumeBatch(context.Background(), q, queuetest.Batch(m)); err != nil || !m.Acked {
			t.Fatalf("body %q (%s) not stored: %v", body, ct, err)
		}
		var id int64
		var gotCT, hash string
		if err := db.QueryRow(`SELECT id, content_type, body_hash FROM dlq_messages WHERE message_id = ?`, m.MsgID).Scan(&id, &gotCT, &hash); err != nil {
			t.Fatal(err)
		}
		if gotCT != string(ct) || hash != dlq.BodyHash(ct, text) {
			t.Fatalf("stored content_type %s body_hash %s, want %s %s", gotCT, hash, ct, dlq.BodyHash(ct, text))
		}

		s := &queuetest.Sender{}
		res, err := newReplay(db, s).Run(ctx, ReplayRequest{Selection: dlq.Selection{IDs: []int64{id}}})
		if err != nil {
			t.Fatal(err)
		}
		sent := s.Sent[q]
		var sqliteValid bool
		db.QueryRow(`SELECT json_valid(?)`, text).Scan(&sqliteValid)
		switch {
		case len(sent) == 1:
			if sent[0].Body != text || sent[0].ContentType != ct || res.ReplayedCount != 1 {
				t.Fatalf("replay sent %q (%s), want %q (%s)", sent[0].Body, sent[0].ContentType, text, ct)
			}
		case ct == queue.V8 || (ct == queue.JSON && !(json.Valid([]byte(text)) && sqliteValid)):
			if len(sent) != 0 || res.ReplayedCount != 0 {
				t.Fatalf("%s body %q was replayed: %+v", ct, text, res)
			}
			return
		default:
			t.Fatalf("%s body %q not replayed: %+v", ct, text, res)
		}

		// The replayed message fails again: same row, back to pending.
		again := &queuetest.Message{MsgID: fmt.Sprint("fz", n, "-again"), Attempt: 1, Text: sent[0].Body, Type: sent[0].ContentType}
		if err := c.ConsumeBatch(context.Background(), q, queuetest.Batch(again)); err != nil || !again.Acked {
			t.Fatalf("repeat failure not stored: %v", err)
		}
		if r := readRow(t, db, `id = ?`, id); r.LastMessageID != again.MsgID || r.Status != dlq.StatusPending || r.ReplayCount != 1 {
			t.Fatalf("repeat failure did not update its row: %+v", shortRow(r))
		}
		if k := count(t, db, `SELECT COUNT(*) FROM dlq_messages WHERE source_queue = ?`, q); k != 1 {
			t.Fatalf("%d rows for one message", k)
		}
	})
}
