package platform

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/queue"
)

func TestDecodeBatchKeepsEveryMessageAsDelivered(t *testing.T) {
	desc := `[{"id":"a","attempts":3,"timestamp":1700000000123,"type":"json","body":"{\"beer_id\":\"1\"}"},
		{"id":"b","attempts":1,"timestamp":5,"type":"bytes","body":null},
		{"id":"c","attempts":2,"timestamp":6,"type":"text","body":"ü\u0000 \"x\""}]`
	asked := []int{}
	b, err := decodeBatch(desc, func(i int) []byte { asked = append(asked, i); return []byte{0, 1, 255} })
	if err != nil {
		t.Fatal(err)
	}
	if len(b.msgs) != 3 || len(asked) != 1 || asked[0] != 1 {
		t.Fatalf("%d messages, blobs asked %v", len(b.msgs), asked)
	}
	check := func(m queue.Message, id string, attempts int, ts time.Time, text string, ct queue.ContentType) {
		t.Helper()
		gotText, gotCT := m.Body()
		if m.ID() != id || m.Attempts() != attempts || !m.Timestamp().Equal(ts) || gotText != text || gotCT != ct {
			t.Errorf("%s: %d %v %q %s", m.ID(), m.Attempts(), m.Timestamp(), gotText, gotCT)
		}
	}
	check(b.msgs[0], "a", 3, time.UnixMilli(1700000000123), `{"beer_id":"1"}`, queue.JSON)
	check(b.msgs[1], "b", 1, time.UnixMilli(5), "AAH/", queue.Bytes)
	check(b.msgs[2], "c", 2, time.UnixMilli(6), "ü\x00 \"x\"", queue.Text)
}

// The settlement lists every Ack and Retry in the order they were made
// (worker.mjs makes the same calls on the runtime's messages), with
// Retry's delay in whole seconds, at least one, 0 for the consumer's own.
func TestSettlementRecordsCallsInOrder(t *testing.T) {
	b, err := decodeBatch(`[{"id":"a","type":"text","body":""},{"id":"b","type":"text","body":""},{"id":"c","type":"text","body":""}]`, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := b.settlement(); got != "[]" {
		t.Fatalf("no calls: %s", got)
	}
	b.msgs[2].Retry(0)
	b.msgs[0].Ack()
	b.msgs[1].Retry(300 * time.Millisecond)
	b.msgs[1].Retry(2700 * time.Millisecond)
	b.msgs[2].Retry(-time.Second)
	want := `[[2,"retry",0],[0,"ack"],[1,"retry",1],[1,"retry",2],[2,"retry",0]]`
	if got := b.settlement(); got != want {
		t.Fatalf("settlement %s, want %s", got, want)
	}
	if (&batch{}).settlement() != "[]" {
		t.Fatal("an empty batch must settle as []")
	}
}

func TestDecodeBatchRejectsWhatWorkerMJSNeverSends(t *testing.T) {
	for _, desc := range []string{``, `{}`, `[{"id":"a","type":"text"}]`, `[{"id":"a","type":"json","body":null}]`, `[1]`} {
		if _, err := decodeBatch(desc, nil); err == nil {
			t.Errorf("%q: no error", desc)
		}
	}
}

// FuzzDecodeBatch: any description either fails to decode or yields
// messages whose text is what the JSON said, and whose settlement is
// valid JSON.
func FuzzDecodeBatch(f *testing.F) {
	f.Add(`[{"id":"a","attempts":3,"timestamp":1,"type":"json","body":"{}"}]`)
	f.Add(`[{"id":"b","type":"bytes","body":null}]`)
	f.Add(`[{"id":"c","type":"v8","body":"[object Map]"},{"id":"d","type":"text","body":"\ud800"}]`)
	f.Fuzz(func(t *testing.T, desc string) {
		b, err := decodeBatch(desc, func(int) []byte { return []byte("x") })
		if err != nil {
			return
		}
		var raw []deliveredJSON
		if err := json.Unmarshal([]byte(desc), &raw); err != nil || len(raw) != len(b.msgs) {
			t.Fatalf("decoded %d messages from %q (%v)", len(b.msgs), desc, err)
		}
		for i, m := range b.msgs {
			m.Ack()
			text, ct := m.Body()
			if ct != queue.Bytes && text != *raw[i].Body {
				t.Fatalf("message %d: %q, want %q", i, text, *raw[i].Body)
			}
		}
		if s := b.settlement(); !json.Valid([]byte(s)) || strings.Count(s, `"ack"`) != len(b.msgs) {
			t.Fatalf("settlement %s", s)
		}
	})
}

// A consumer that panics keeps the decisions it made before the panic (so
// a stored message stays acked) and fails the batch with the panic.
func TestRunBatchKeepsDecisionsBeforeAPanic(t *testing.T) {
	b, err := decodeBatch(`[{"id":"a","type":"text","body":"x"},{"id":"b","type":"text","body":"y"}]`, nil)
	if err != nil {
		t.Fatal(err)
	}
	settle, err := b.run(func(_ context.Context, q string, ms []queue.Message) error {
		if q != "dlq" || len(ms) != 2 || ms[1].ID() != "b" {
			t.Errorf("consumer got %s %d", q, len(ms))
		}
		ms[0].Ack()
		panic("boom")
	}, "dlq")
	if settle != `[[0,"ack"]]` || err == nil || !strings.Contains(err.Error(), "queue dlq: panic: boom") {
		t.Fatalf("settle %s, err %v", settle, err)
	}
	b, _ = decodeBatch(`[{"id":"a","type":"text","body":"x"},{"id":"b","type":"text","body":"y"}]`, nil)
	settle, err = b.run(func(_ context.Context, _ string, ms []queue.Message) error {
		ms[1].Retry(0)
		return errors.New("D1 unavailable")
	}, "dlq")
	if settle != `[[1,"retry",0]]` || err == nil || err.Error() != "D1 unavailable" {
		t.Fatalf("a consumer error: settle %s, err %v", settle, err)
	}
}

// allAcked is true only when every message was acked once and none retried
// (worker.mjs then calls ackAll()).
func TestAllAcked(t *testing.T) {
	desc := `[{"id":"a","type":"text","body":""},{"id":"b","type":"text","body":""}]`
	for _, c := range []struct {
		do   func(ms []*delivered)
		want bool
	}{
		{func(ms []*delivered) { ms[1].Ack(); ms[0].Ack() }, true},
		{func(ms []*delivered) { ms[0].Ack() }, false},
		{func(ms []*delivered) { ms[0].Ack(); ms[0].Ack() }, false},
		{func(ms []*delivered) { ms[0].Ack(); ms[1].Retry(0) }, false},
		{func(ms []*delivered) {}, false},
	} {
		b, err := decodeBatch(desc, nil)
		if err != nil {
			t.Fatal(err)
		}
		c.do(b.msgs)
		if got := b.allAcked(); got != c.want {
			t.Errorf("calls %s: allAcked %v, want %v", b.settlement(), got, c.want)
		}
	}
	if b, _ := decodeBatch(`[]`, nil); b.allAcked() {
		t.Error("an empty batch: allAcked")
	}
}
