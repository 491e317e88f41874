package dlq

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/redrive/redrive/queue/queuetest"
)

// The pure-Go work of one capture batch of 100: read each body once and
// build the store statement's JSON parameter.
func BenchmarkCapturePrepareAndEncode100(b *testing.B) {
	c := &Capture{}
	msgs := make([]*queuetest.Message, 100)
	for i := range msgs {
		msgs[i] = queuetest.New(fmt.Sprint("m", i), fmt.Sprintf(`{"beer_id":"%d","beer_name":"Beer %d","brewer":"Brewer %d"}`, i, i, i%7))
	}
	now := time.UnixMilli(1_700_000_000_000)
	b.ReportAllocs()
	for b.Loop() {
		fs := make([]Failure, len(msgs))
		for i, m := range msgs {
			fs[i] = c.prepare(m, "beer-enrichment", now).failure
		}
		if _, err := encodeBatch(fs); err != nil {
			b.Fatal(err)
		}
	}
}

// pageJSON is the JSON array of an n-row list page, as messagesJSON builds it.
func pageJSON(b *testing.B, n int) []byte {
	page := make([]Message, n)
	for i := range page {
		name := fmt.Sprint("Beer ", i)
		page[i] = Message{ID: int64(i), MessageID: fmt.Sprint("m", i), BeerID: fmt.Sprint(i), BeerName: &name,
			FailedAt: int64(1_700_000_000_000 - i), SourceQueue: "beer-enrichment", Status: "pending"}
	}
	js, err := json.Marshal(page)
	if err != nil {
		b.Fatal(err)
	}
	return js
}

// Decoding a 100-row list page built by SQLite (messagesJSON).
func BenchmarkDecodeMessages100(b *testing.B) {
	js := pageJSON(b, 100)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DecodeMessages(string(js)); err != nil {
			b.Fatal(err)
		}
	}
}

// Signing and checking a list cursor (every page does both).
func BenchmarkCursorRoundTrip(b *testing.B) {
	c := NewCursors("secret")
	total := int64(100_000)
	for b.Loop() {
		s := c.Encode(Position{Kind: CursorList, Filter: "f", FailedAt: 1_700_000_000_000, ID: 42, Total: &total})
		if _, err := c.Decode(s, CursorList, "f"); err != nil {
			b.Fatal(err)
		}
	}
}
