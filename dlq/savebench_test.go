package dlq

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redrive/redrive/internal/sqlitetest"
	"github.com/redrive/redrive/queue"
)

// benchSaveFailures is n new failures shaped like the e2e capture bench's.
func benchSaveFailures(prefix string, n int) []Failure {
	fs := make([]Failure, n)
	now := time.UnixMilli(1_700_000_000_000)
	for i := range fs {
		id := fmt.Sprintf("%s-%03d", prefix, i)
		fs[i] = Failure{MessageID: "0123456789abcdef0123456789abcdef" + id, SourceQueue: "beer-enrichment",
			Body:     fmt.Sprintf(`{"beer_id":%q,"beer_name":"Bench Beer","brewer":"Capture Brewing"}`, id),
			Attempts: 1, FailedAt: now, Version: "e2e", ContentType: queue.JSON}
	}
	return fs
}

// One capture batch of 100 new failures, in native SQLite: Save's six
// statements in one transaction.
func BenchmarkSave100(b *testing.B) {
	db := sqlitetest.New(b)
	s := Store{DB: db}
	ctx := context.Background()
	i := 0
	for b.Loop() {
		i++
		if _, err := s.Save(ctx, benchSaveFailures(fmt.Sprint("b", i), 100)); err != nil {
			b.Fatal(err)
		}
	}
}
