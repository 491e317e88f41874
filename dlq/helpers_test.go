package dlq

import (
	"context"
	"database/sql"
	"io"
	"log/slog"
	"testing"
	"time"
)

var discard = slog.New(slog.NewTextHandler(io.Discard, nil))

// row is a dlq_messages row for seeding tests; zero times are NULL.
type row struct {
	msgID, beerID, status       string
	failedAt, ackAt, replayedAt time.Time
	replayingAt                 time.Time
	replayCount                 int
}

func ms(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UnixMilli()
}

func seed(t *testing.T, db *sql.DB, rows ...row) {
	t.Helper()
	for _, r := range rows {
		_, err := db.Exec(`INSERT INTO dlq_messages(message_id, beer_id, status, failed_at, acknowledged_at, replayed_at, replaying_at, replay_count, last_message_id)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`, r.msgID, r.beerID, r.status, r.failedAt.UnixMilli(), ms(r.ackAt), ms(r.replayedAt), ms(r.replayingAt), r.replayCount, r.msgID)
		if err != nil {
			t.Fatal(err)
		}
	}
}

func count(t *testing.T, db *sql.DB, query string, args ...any) int64 {
	t.Helper()
	var n int64
	if err := db.QueryRow(query, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return n
}

func counter(t *testing.T, db *sql.DB, name string) int64 {
	return count(t, db, `SELECT COALESCE((SELECT value FROM counters WHERE name = ?), 0)`, name)
}

// fakeClock returns t and then advances it by step on every call.
type fakeClock struct {
	t    time.Time
	step time.Duration
}

func (c *fakeClock) Now() time.Time {
	now := c.t
	c.t = c.t.Add(c.step)
	return now
}

var ctx = context.Background()
