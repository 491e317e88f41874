package inspect

import (
	"testing"

	"github.com/redrive/redrive/dlq"
)

// Writing a 100-row list page: the messages, built by SQLite, are copied as
// they are (compare BenchmarkDecodeMessages100, what decoding them costs).
func BenchmarkPageAppendJSON100(b *testing.B) {
	js := pageJSON(b, 100)
	cursor := dlq.NewCursors("s").Encode(dlq.Position{Kind: dlq.CursorList, Filter: "f", FailedAt: 1, ID: 1})
	p := Page{Messages: js, TotalCount: 100_000, Limit: 100, NextCursor: &cursor, HasMore: true}
	buf := make([]byte, 0, 64<<10)
	b.ReportAllocs()
	for b.Loop() {
		buf = p.AppendJSON(buf[:0])
	}
}
