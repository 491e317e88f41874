package dlq

import (
	"context"
	"database/sql"
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/internal/sqlitetest"
)

// records reads message_attempts by message id.
func records(t *testing.T, db *sql.DB) map[string]Attempt {
	t.Helper()
	rows, err := db.Query(`SELECT message_id, queue, attempt, error_class, error, recorded_at FROM message_attempts`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]Attempt{}
	for rows.Next() {
		var at Attempt
		var ms int64
		if err := rows.Scan(&at.MessageID, &at.Queue, &at.Attempt, &at.Class, &at.Error, &ms); err != nil {
			t.Fatal(err)
		}
		at.At = time.UnixMilli(ms)
		out[at.MessageID] = at
	}
	return out
}

func TestAttemptsRecordKeepsTheLatestAttempt(t *testing.T) {
	db := sqlitetest.New(t)
	a := Attempts{DB: db}
	ctx := context.Background()
	record := func(at Attempt) {
		t.Helper()
		if err := a.Record(ctx, at); err != nil {
			t.Fatal(err)
		}
	}
	record(Attempt{MessageID: "m1", Queue: "beer-enrichment", Attempt: 1, Class: "transient", Error: "status 500", At: t0})
	record(Attempt{MessageID: "m1", Queue: "beer-enrichment", Attempt: 2, Class: "rate_limited", Error: "status 429", At: t0.Add(time.Second)})
	// A late write of an earlier attempt does not overwrite the newer record.
	record(Attempt{MessageID: "m1", Queue: "beer-enrichment", Attempt: 1, Class: "transient", Error: "late", At: t0.Add(2 * time.Second)})
	record(Attempt{MessageID: "m2", Queue: "beer-enrichment", Attempt: 4, Class: "permanent", Error: strings.Repeat("é", 400), At: t0})

	got := records(t, db)
	m1 := got["m1"]
	// The latest attempt's number, class and error; the time of the first
	// (recorded_at stays put: no index write per attempt).
	if len(got) != 2 || m1.Attempt != 2 || m1.Class != "rate_limited" || m1.Error != "status 429" || !m1.At.Equal(t0) || m1.Queue != "beer-enrichment" {
		t.Fatalf("lookup = %+v", got)
	}
	if e := got["m2"].Error; len(e) > maxAttemptError+len("…") || !strings.HasSuffix(e, "…") || !strings.HasPrefix(e, "éé") {
		t.Fatalf("long error kept as %d bytes: %q", len(e), e)
	}
}
