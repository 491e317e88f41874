package dlq

import (
	"context"
	"database/sql"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/config"
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

// A history entry's status and duration_ms are null when no response
// arrived (Status 0) and when no provider call was made (Duration 0), and
// kept when set, however small: status 1, a duration under a millisecond
// (0 ms).
func TestHistoryEntryStatusAndDurationNullOnlyWhenAbsent(t *testing.T) {
	at := time.UnixMilli(1_750_000_000_000)
	for _, c := range []struct {
		a    Attempt
		want string
	}{
		{Attempt{MessageID: "m", Attempt: 1, Class: "transient", Error: "e", At: at},
			`{"at":1750000000000,"attempt":1,"class":"transient","status":null,"error":"e","duration_ms":null,"message_id":"m"}`},
		{Attempt{MessageID: "m", Attempt: 2, Class: "transient", Error: "e", At: at, Status: 1, Duration: time.Microsecond},
			`{"at":1750000000000,"attempt":2,"class":"transient","status":1,"error":"e","duration_ms":0,"message_id":"m"}`},
		{Attempt{MessageID: "m", Attempt: 3, Class: "transient", Error: "e", At: at, Status: 503, Duration: 1500 * time.Millisecond},
			`{"at":1750000000000,"attempt":3,"class":"transient","status":503,"error":"e","duration_ms":1500,"message_id":"m"}`},
	} {
		if js, _ := json.Marshal(c.a.entry()); string(js) != c.want {
			t.Errorf("%+v: %s, want %s", c.a, js, c.want)
		}
	}
}

// RecordAttempts writes each attempt in its queue's database, and only
// there: a queue no pipeline names goes to the shared database.
func TestRecordAttemptsRoutesEachToItsQueuesDatabase(t *testing.T) {
	t.Parallel()
	orders := config.Pipeline{Name: "orders", Queue: "orders", Database: "ORDERS_DB"}
	shared, o := sqlitetest.New(t), sqlitetest.New(t)
	d := NewDatabases(Store{DB: shared}, map[string]Store{"ORDERS_DB": {DB: o}}, []config.Pipeline{config.BeerPipeline(), orders})
	t0 := time.UnixMilli(1_750_000_000_000)
	ats := []Attempt{
		{MessageID: "o1", Queue: "orders", Attempt: 1, Class: "transient", Error: "boom", At: t0},
		{MessageID: "b1", Queue: "beer-enrichment", Attempt: 1, Class: "transient", Error: "boom", At: t0},
		{MessageID: "o2", Queue: "orders", Attempt: 2, Class: "permanent", Error: "bad", At: t0},
		{MessageID: "x1", Queue: "unconfigured", Attempt: 1, Class: "transient", Error: "boom", At: t0},
	}
	if err := d.RecordAttempts(context.Background(), ats); err != nil {
		t.Fatal(err)
	}
	for db, want := range map[*sql.DB]string{shared: "b1 x1", o: "o1 o2"} {
		var got []string
		for id := range records(t, db) {
			got = append(got, id)
		}
		slices.Sort(got)
		if strings.Join(got, " ") != want {
			t.Errorf("records = %v, want %s", got, want)
		}
	}
}
