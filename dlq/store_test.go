package dlq

import (
	"context"
	"testing"
	"time"

	"github.com/redrive/redrive/internal/sqlitetest"
)

func TestStorePutIsIdempotentOnMessageID(t *testing.T) {
	db := sqlitetest.New(t)
	s := Store{DB: db}
	at := time.UnixMilli(1_700_000_000_000)
	fs := []Failure{
		{MessageID: "m1", SourceQueue: "beer-enrichment", Body: `{"beer_id":"7","beer_name":"IPA","brewer":"B"}`, Attempts: 4, Class: "transient", Reason: "transient: status 500", FailedAt: at},
		{MessageID: "m2", SourceQueue: "beer-enrichment", Body: `not json`, Attempts: 1, Class: "poison", Reason: "unparseable", FailedAt: at},
	}
	for i := 0; i < 2; i++ {
		if err := s.Put(context.Background(), fs); err != nil {
			t.Fatal(err)
		}
	}
	var n int
	db.QueryRow(`SELECT COUNT(*) FROM dlq_messages`).Scan(&n)
	if n != 2 {
		t.Fatalf("rows = %d, want 2", n)
	}
	var beer, name, reason string
	var count int
	db.QueryRow(`SELECT beer_id, beer_name, failure_reason, failure_count FROM dlq_messages WHERE message_id='m1'`).Scan(&beer, &name, &reason, &count)
	if beer != "7" || name != "IPA" || reason != "transient: status 500" || count != 4 {
		t.Fatalf("m1 = %s %s %s %d", beer, name, reason, count)
	}
	db.QueryRow(`SELECT beer_id FROM dlq_messages WHERE message_id='m2'`).Scan(&beer)
	if beer != UnparseableBeerID {
		t.Fatalf("poison beer_id = %q", beer)
	}
}
