package enrichment

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/internal/sqlitetest"
	"github.com/redrive/redrive/queue"
	"github.com/redrive/redrive/queue/queuetest"
)

func TestValidate(t *testing.T) {
	many := make([]Beer, 101)
	for i := range many {
		many[i] = Beer{BeerID: fmt.Sprint(i), BeerName: "n"}
	}
	cases := []struct {
		name  string
		beers []Beer
		want  string // "" = valid
	}{
		{"one", []Beer{{BeerID: "1", BeerName: "IPA"}}, ""},
		{"hundred", many[:100], ""},
		{"none", nil, "1..100 items, got 0"},
		{"too many", many, "1..100 items, got 101"},
		{"no id", []Beer{{BeerName: "IPA"}}, "beers[0].beer_id is required"},
		{"no name", []Beer{{BeerID: "1"}, {BeerID: "2"}}, "beers[0].beer_name is required"},
		{"long id", []Beer{{BeerID: strings.Repeat("é", 129), BeerName: "x"}}, "beer_id is longer than 128"},
		{"long brewer", []Beer{{BeerID: "1", BeerName: "x", Brewer: strings.Repeat("b", 301)}}, "limited to 300"},
		{"duplicate", []Beer{{BeerID: "1", BeerName: "a"}, {BeerID: "2", BeerName: "b"}, {BeerID: "1", BeerName: "c"}}, `beers[2].beer_id "1" repeats beers[0]`},
	}
	for _, c := range cases {
		err := Validate(c.beers)
		if (c.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%s: err = %v, want %q", c.name, err, c.want)
		}
	}
}

func TestRegistryEnqueuesOnlyBeersNotDoneOrQueued(t *testing.T) {
	ctx := context.Background()
	db := sqlitetest.New(t)
	now := time.UnixMilli(1_900_000_000_000)
	db.Exec(`INSERT INTO beers(beer_id, name, brewer, status, abv, created_at, updated_at) VALUES
		('done', 'Old', 'B', 'enriched', 5.0, 1, 1), ('nf', 'Mystery', 'B', 'not_found', NULL, 1, 1),
		('inq', 'Waiting', 'B', 'queued', NULL, 1, 1), ('bad', 'Failed', 'B', 'failed', NULL, 1, 1)`)
	sender := &queuetest.Sender{}
	r := Registry{DB: db, Sender: sender}
	in := []Beer{{"new", "Fresh IPA", "Brew Co"}, {"done", "Old Renamed", "B"}, {"nf", "Mystery", "B"}, {"inq", "Waiting", "B"}, {"bad", "Failed", "B"}}
	res, err := r.Enqueue(ctx, in, now)
	if err != nil {
		t.Fatal(err)
	}
	want := EnqueueResult{Received: 5, Queued: []string{"new", "bad"}, AlreadyQueued: []string{"inq"}, AlreadyDone: []string{"done", "nf"}}
	if !reflect.DeepEqual(res, want) {
		t.Fatalf("result %+v, want %+v", res, want)
	}
	if sender.Calls != 1 || len(sender.Sent[queue.Enrichment]) != 2 {
		t.Fatalf("want one SendBatch of 2 messages, got %d calls %+v", sender.Calls, sender.Sent)
	}
	var body Beer
	if err := json.Unmarshal([]byte(sender.Sent[queue.Enrichment][0].Body), &body); err != nil || body != in[0] {
		t.Fatalf("message body %q: %v", sender.Sent[queue.Enrichment][0].Body, err)
	}
	for id, st := range map[string]string{"new": "queued", "bad": "queued", "done": "enriched", "nf": "not_found", "inq": "queued"} {
		s, err := r.Lookup(ctx, id)
		if err != nil || s.Status != st {
			t.Errorf("%s: status %q err %v, want %s", id, s.Status, err, st)
		}
	}
	s, _ := r.Lookup(ctx, "done")
	if s.BeerName != "Old Renamed" || s.ABV == nil || *s.ABV != 5.0 {
		t.Errorf("upsert must update the name and keep the result: %+v", s)
	}
	s, _ = r.Lookup(ctx, "new")
	if s.QueuedAt == nil || *s.QueuedAt != now.UnixMilli() || s.CreatedAt != now.UnixMilli() || s.Brewer != "Brew Co" || s.ABV != nil {
		t.Errorf("new beer: %+v", s)
	}
}

func TestRegistrySendFailureLeavesBeersPending(t *testing.T) {
	ctx := context.Background()
	db := sqlitetest.New(t)
	r := Registry{DB: db, Sender: &queuetest.Sender{Err: errors.New("queue down")}}
	_, err := r.Enqueue(ctx, []Beer{{"p1", "Pils", ""}}, time.UnixMilli(1))
	if !errors.Is(err, ErrQueueSend) || err.Error() != "enqueue enrichment messages: queue down" {
		t.Fatalf("err = %v, want ErrQueueSend: queue down", err)
	}
	if s, _ := r.Lookup(ctx, "p1"); s.Status != StatusPending || s.QueuedAt != nil {
		t.Fatalf("beer must stay pending and registered: %+v", s)
	}
	// Repeating the request once the queue works sends it.
	r.Sender = &queuetest.Sender{}
	res, err := r.Enqueue(ctx, []Beer{{"p1", "Pils", ""}}, time.UnixMilli(2))
	if err != nil || len(res.Queued) != 1 {
		t.Fatalf("retry: %+v %v", res, err)
	}
}

// sendThen is a sender whose every send fails with err after running f.
type sendThen struct {
	f   func()
	err error
}

func (s sendThen) SendBatch(context.Context, string, []queue.Outgoing) error {
	s.f()
	return s.err
}

// When the beers cannot be put back after a failed send either, the error
// says so (the beers stay queued; the catch-up's lost rule sends them).
func TestRegistrySendFailureReportsAFailedPutBack(t *testing.T) {
	ctx := context.Background()
	db := sqlitetest.New(t)
	r := Registry{DB: db, Sender: sendThen{err: errors.New("queue down"), f: func() {
		if _, err := db.Exec(`CREATE TRIGGER no_put_back BEFORE UPDATE ON beers WHEN NEW.status = 'pending'
			BEGIN SELECT RAISE(ABORT, 'd1 refused'); END`); err != nil {
			t.Fatal(err)
		}
	}}}
	res, err := r.Enqueue(ctx, []Beer{{"p1", "Pils", ""}}, time.UnixMilli(1))
	if !errors.Is(err, ErrQueueSend) || !strings.HasPrefix(err.Error(), "enqueue enrichment messages: queue down (and putting the beers back failed: ") ||
		!strings.Contains(err.Error(), "d1 refused") ||
		len(res.Queued) != 0 {
		t.Fatalf("res %+v err %v", res, err)
	}
	if s, _ := r.Lookup(ctx, "p1"); s.Status != StatusQueued {
		t.Fatalf("beer %+v", s)
	}
}

func TestLookupUnknownBeer(t *testing.T) {
	if _, err := (Registry{DB: sqlitetest.New(t)}).Lookup(context.Background(), "nope"); !errors.Is(err, ErrBeerNotFound) {
		t.Fatalf("err = %v", err)
	}
}

// Enqueue claims the beers it sends in its upsert, like the catch-up: a beer
// the catch-up already claimed is reported already queued, not sent again,
// and a beer Enqueue claimed is not claimed by the catch-up.
func TestEnqueueAndCatchUpNeverSendABeerTwice(t *testing.T) {
	ctx := context.Background()
	db := sqlitetest.New(t)
	now := time.UnixMilli(1_700_000_000_000)
	s := &queuetest.Sender{}
	if _, err := db.Exec(`INSERT INTO beers(beer_id, name, status, next_attempt_at, created_at, updated_at)
		VALUES ('due', 'Due', 'pending', ?1, ?1, ?1)`, now.Add(-time.Hour).UnixMilli()); err != nil {
		t.Fatal(err)
	}
	if _, err := newCatchUp(db, s).Run(ctx, now); err != nil {
		t.Fatal(err)
	}
	res, err := (Registry{DB: db, Sender: s}).Enqueue(ctx, []Beer{{"due", "Due", ""}, {"new", "New", ""}}, now.Add(time.Second))
	if err != nil || len(res.AlreadyQueued) != 1 || res.AlreadyQueued[0] != "due" || len(res.Queued) != 1 || res.Queued[0] != "new" {
		t.Fatalf("enqueue: %+v %v", res, err)
	}
	if _, err := newCatchUp(db, s).Run(ctx, now.Add(2*time.Second)); err != nil {
		t.Fatal(err)
	}
	if n := len(s.Sent["beer-enrichment"]); n != 2 {
		t.Fatalf("%d messages sent for 2 beers", n)
	}
}

// A registration larger than one sendBatch (256 KB) goes out in several.
func TestEnqueueSplitsLargeRegistrations(t *testing.T) {
	s := &queuetest.Sender{}
	var beers []Beer
	for i := range 100 {
		beers = append(beers, Beer{fmt.Sprint("big-", i), strings.Repeat("n", 3000), "B"})
	}
	res, err := (Registry{DB: sqlitetest.New(t), Sender: s}).Enqueue(context.Background(), beers, time.UnixMilli(1))
	if err != nil || len(res.Queued) != 100 || len(s.Sent["beer-enrichment"]) != 100 || s.Calls < 2 {
		t.Fatalf("queued %d, sent %d in %d calls, err %v", len(res.Queued), len(s.Sent["beer-enrichment"]), s.Calls, err)
	}
}
