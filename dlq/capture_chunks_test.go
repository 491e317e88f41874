package dlq

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/internal/sqlitetest"
	"github.com/redrive/redrive/queue/queuetest"
)

// chunks keeps the sum of each chunk's encodedSize (what encodeBatch writes
// for each message alone, a bound on the statement's JSON parameter) at most
// limit, fills each chunk as far as it goes, never makes an empty one, and
// gives a message larger than limit a chunk of its own.
func TestChunksFillUpToTheLimit(t *testing.T) {
	c := newCapture(sqlitetest.New(t), &bytes.Buffer{})
	var batch []*captured
	for i, n := range []int{100, 300, 50, 2000} {
		m := queuetest.New(fmt.Sprint("m", i), fmt.Sprintf(`{"beer_id":"%d","pad":%q}`, i, strings.Repeat("x", n)))
		batch = append(batch, c.prepare(m, "beer-enrichment", t0))
	}
	size := make([]int, len(batch))
	for i, cm := range batch {
		size[i] = encodedSize(cm)
		if js, _ := encodeBatch([]Failure{cm.failure}); size[i] != len(js) {
			t.Fatalf("encodedSize %d, encoded %d bytes", size[i], len(js))
		}
	}
	shape := func(parts [][]*captured) string {
		var out []string
		for _, p := range parts {
			var ids []string
			for _, cm := range p {
				ids = append(ids, cm.msg.ID())
			}
			out = append(out, strings.Join(ids, "+"))
		}
		return strings.Join(out, " | ")
	}
	first3 := size[0] + size[1] + size[2]
	for _, c := range []struct {
		limit int
		want  string
	}{
		{first3 + size[3], "m0+m1+m2+m3"},
		{first3, "m0+m1+m2 | m3"},
		{first3 - 1, "m0+m1 | m2 | m3"},
		{size[0], "m0 | m1 | m2 | m3"},
		{1, "m0 | m1 | m2 | m3"},
	} {
		if got := shape(chunks(batch, c.limit)); got != c.want {
			t.Errorf("limit %d: %s, want %s", c.limit, got, c.want)
		}
	}
	if parts := chunks(nil, 100); len(parts) != 0 {
		t.Errorf("no messages: %d chunks", len(parts))
	}
}

// A message that cannot be stored while D1 answers is retried at the
// consumer's own retry delay (0), not with the backoff of an unavailable D1.
func TestCaptureUnstorableWhileD1AnswersRetriesAtTheDefaultDelay(t *testing.T) {
	db := sqlitetest.New(t)
	mustExec(t, db, `CREATE TRIGGER reject_bad BEFORE INSERT ON dlq_messages WHEN NEW.message_id = 'bad'
		BEGIN SELECT RAISE(ABORT, 'rejected by test trigger'); END`)
	c := newCapture(db, &bytes.Buffer{})
	c.RetryBase = 7 * time.Second
	for _, batch := range [][]*queuetest.Message{
		{queuetest.New("bad", beer("bad"))},
		{queuetest.New("g1", beer("g1")), queuetest.New("bad", beer("bad"))},
	} {
		consume(t, c, batch...)
		bad := batch[len(batch)-1]
		if bad.Acked || !bad.Retried || bad.RetryDelay != 0 {
			t.Fatalf("batch of %d: bad %+v", len(batch), bad)
		}
	}
	if n := count(t, db, `SELECT COUNT(*) FROM dlq_messages`); n != 1 {
		t.Fatalf("rows = %d, want 1 (g1)", n)
	}
}

// A failure that cannot be encoded (its JSON elements do not exist, so
// their size is unknown) is sized as its body plus 1 KiB, the room its
// other fields could take: the chunk it joins stays within the limit as
// if it had been encoded. The path cannot be reached through ConsumeBatch
// today (the elements are written by hand; only a history entry is
// marshalled, and it cannot fail); the test sets the encoding error by hand.
func TestChunksSizeAnUnencodableFailureAsItsBodyAndAKiB(t *testing.T) {
	body := strings.Repeat("b", 3000)
	bad := &captured{msg: queuetest.New("bad", body), failure: Failure{MessageID: "bad", Body: body},
		encErr: errors.New("cannot encode")}
	if n := encodedSize(bad); n != len(body)+1024 {
		t.Fatalf("encodedSize = %d, want body %d + 1024", n, len(body))
	}
	c := newCapture(sqlitetest.New(t), &bytes.Buffer{})
	good := c.prepare(queuetest.New("good", beer("good")), "beer-enrichment", t0)
	limit := encodedSize(good) + len(body) + 1024
	for _, c := range []struct {
		limit int
		want  int
	}{{limit, 1}, {limit - 1, 2}} {
		if parts := chunks([]*captured{good, bad}, c.limit); len(parts) != c.want {
			t.Errorf("limit %d: %d chunks, want %d", c.limit, len(parts), c.want)
		}
	}
}
