package dlq

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/internal/sqlitetest"
)

func TestAttemptsRecordLookupRemove(t *testing.T) {
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

	got, err := a.Lookup(ctx, []string{"m1", "m2", "m3"})
	if err != nil {
		t.Fatal(err)
	}
	m1 := got["m1"]
	if len(got) != 2 || m1.Attempt != 2 || m1.Class != "rate_limited" || m1.Error != "status 429" || !m1.At.Equal(t0.Add(time.Second)) || m1.Queue != "beer-enrichment" {
		t.Fatalf("lookup = %+v", got)
	}
	if e := got["m2"].Error; len(e) > maxAttemptError+len("…") || !strings.HasSuffix(e, "…") || !strings.HasPrefix(e, "éé") {
		t.Fatalf("long error kept as %d bytes: %q", len(e), e)
	}

	if err := a.Remove(ctx, []string{"m1", "m3"}); err != nil {
		t.Fatal(err)
	}
	if got, _ := a.Lookup(ctx, []string{"m1", "m2"}); len(got) != 1 || got["m2"].Attempt != 4 {
		t.Fatalf("after remove = %+v", got)
	}
	if got, err := a.Lookup(ctx, nil); err != nil || len(got) != 0 {
		t.Fatalf("empty lookup = %v %v", got, err)
	}
}
