package consume_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/redrive/redrive/consume"
	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/internal/sqlitetest"
	"github.com/redrive/redrive/queue"
	"github.com/redrive/redrive/queue/queuetest"
)

var discard = slog.New(slog.DiscardHandler)

type consumerFunc func(ctx context.Context, q string, msgs []queue.Message) error

func (f consumerFunc) ConsumeBatch(ctx context.Context, q string, msgs []queue.Message) error {
	return f(ctx, q, msgs)
}

func TestRouter(t *testing.T) {
	var got string
	r := &consume.Router{Log: discard, Consumers: map[string]consume.Consumer{
		"a":     consumerFunc(func(_ context.Context, q string, msgs []queue.Message) error { got = q; msgs[0].Ack(); return nil }),
		"panic": consumerFunc(func(context.Context, string, []queue.Message) error { panic("boom") }),
	}}
	m := queuetest.New("1", "x")
	if err := r.Consume(context.Background(), "a", queuetest.Batch(m)); err != nil || got != "a" || !m.Acked {
		t.Fatalf("routed: err=%v got=%q acked=%v", err, got, m.Acked)
	}
	// No consumer and nowhere to store: retried, never acked.
	u := queuetest.New("2", "x")
	if err := r.Consume(context.Background(), "other", queuetest.Batch(u)); err != nil || u.Acked || !u.Retried {
		t.Fatalf("unrouted message without a store must be retried: err=%v %+v", err, u)
	}
	// With a store: the unroutable consumer gets the batch and the queue's name.
	var stored []string
	r.Unroutable = consumerFunc(func(_ context.Context, q string, msgs []queue.Message) error {
		for _, m := range msgs {
			stored = append(stored, q+"/"+m.ID())
			m.Ack()
		}
		return nil
	})
	u = queuetest.New("2", "x")
	if err := r.Consume(context.Background(), "other", queuetest.Batch(u)); err != nil || !u.Acked || len(stored) != 1 || stored[0] != "other/2" {
		t.Fatalf("unrouted message must go to the unroutable consumer: err=%v %+v %v", err, u, stored)
	}
	p := queuetest.New("3", "x")
	if err := r.Consume(context.Background(), "panic", queuetest.Batch(p)); err == nil || p.Acked {
		t.Fatalf("panic must become an error without acking: err=%v", err)
	}
}

// Wired as in main.go: a batch from a queue without a consumer is stored
// by dlq.Unroutable (class and reason naming the queue) and acked.
func TestRouterStoresUnroutableBatches(t *testing.T) {
	db := sqlitetest.New(t)
	r := &consume.Router{Log: discard, Consumers: map[string]consume.Consumer{}, Unroutable: dlq.Unroutable(db, discard, time.Minute)}
	m1, m2 := queuetest.New("u1", `{"beer_id":"b1"}`), queuetest.New("u2", "plain text")
	if err := r.Consume(context.Background(), "forgotten-queue", queuetest.Batch(m1, m2)); err != nil || !m1.Acked || !m2.Acked {
		t.Fatalf("err=%v %+v %+v", err, m1, m2)
	}
	var n int
	err := db.QueryRow(`SELECT COUNT(*) FROM dlq_messages WHERE source_queue = 'forgotten-queue' AND failure_class = 'unroutable'
		AND failure_reason = 'unroutable: no consumer for queue forgotten-queue' AND status = 'pending'`).Scan(&n)
	if err != nil || n != 2 {
		t.Fatalf("stored rows %d %v", n, err)
	}
	// D1 unavailable: nothing stored, so nothing acked.
	db.Close()
	m3 := queuetest.New("u3", "x")
	if err := r.Consume(context.Background(), "forgotten-queue", queuetest.Batch(m3)); err != nil || m3.Acked || !m3.Retried {
		t.Fatalf("err=%v %+v", err, m3)
	}
}
