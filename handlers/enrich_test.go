package handlers

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/redrive/redrive/enrichment"
	"github.com/redrive/redrive/internal/sqlitetest"
	"github.com/redrive/redrive/queue"
	"github.com/redrive/redrive/queue/queuetest"
)

var adminHdr = map[string]string{"X-API-Key": "k", "X-Admin-Secret": "s"}

func newEnrichAPI(t *testing.T) (*API, *queuetest.Sender) {
	db := sqlitetest.New(t)
	sender := &queuetest.Sender{}
	return &API{DB: db, Log: discard, Auth: Auth{APIKey: "k", AdminSecret: "s"}, Beers: &enrichment.Registry{DB: db, Sender: sender}}, sender
}

func TestEnrichRegistersAndEnqueues(t *testing.T) {
	api, sender := newEnrichAPI(t)
	h := api.Handler()
	body := `{"beers":[{"beer_id":"7239443","beer_name":"Hop Stoopid","brewer":"Lagunitas"},{"beer_id":"7239444","beer_name":"Pils","brewer":""}]}`
	rec, env := do(h, "POST", "/admin/enrich", body, adminHdr)
	if rec.Code != 200 || !env.Success {
		t.Fatalf("%d %s", rec.Code, rec.Body)
	}
	var res enrichment.EnqueueResult
	raw, _ := json.Marshal(env.Data)
	json.Unmarshal(raw, &res)
	if res.Received != 2 || len(res.Queued) != 2 || len(sender.Sent[queue.Enrichment]) != 2 {
		t.Fatalf("result %+v sent %+v", res, sender.Sent)
	}
	var msg enrichment.Beer
	json.Unmarshal([]byte(sender.Sent[queue.Enrichment][0].Body), &msg)
	if msg != (enrichment.Beer{BeerID: "7239443", BeerName: "Hop Stoopid", Brewer: "Lagunitas"}) {
		t.Fatalf("message body %q", sender.Sent[queue.Enrichment][0].Body)
	}
	// Posting again sends nothing: both are queued already.
	rec, env = do(h, "POST", "/admin/enrich", body, adminHdr)
	raw, _ = json.Marshal(env.Data)
	json.Unmarshal(raw, &res)
	if rec.Code != 200 || len(res.Queued) != 0 || len(res.AlreadyQueued) != 2 || sender.Calls != 1 {
		t.Fatalf("repeat: %d %s (send calls %d)", rec.Code, rec.Body, sender.Calls)
	}

	rec, env = do(h, "GET", "/admin/beers/7239443", "", adminHdr)
	var s enrichment.BeerState
	raw, _ = json.Marshal(env.Data)
	json.Unmarshal(raw, &s)
	if rec.Code != 200 || s.BeerID != "7239443" || s.BeerName != "Hop Stoopid" || s.Status != "queued" || s.ABV != nil {
		t.Fatalf("get: %d %s", rec.Code, rec.Body)
	}
	if !strings.Contains(rec.Body.String(), `"abv":null`) || !strings.Contains(rec.Body.String(), `"next_attempt_at":null`) {
		t.Fatalf("unset fields must be explicit nulls: %s", rec.Body)
	}
}

func TestEnrichRejectsBadInput(t *testing.T) {
	api, sender := newEnrichAPI(t)
	h := api.Handler()
	var hundredOne []string
	for i := 0; i < 101; i++ {
		hundredOne = append(hundredOne, fmt.Sprintf(`{"beer_id":"%d","beer_name":"n"}`, i))
	}
	for name, body := range map[string]string{
		"empty body":    ``,
		"not an object": `[]`,
		"no beers":      `{}`,
		"empty beers":   `{"beers":[]}`,
		"beers null":    `{"beers":null}`,
		"too many":      `{"beers":[` + strings.Join(hundredOne, ",") + `]}`,
		"no beer_id":    `{"beers":[{"beer_name":"x"}]}`,
		"no beer_name":  `{"beers":[{"beer_id":"1"}]}`,
		"numeric id":    `{"beers":[{"beer_id":1,"beer_name":"x"}]}`,
		"unknown field": `{"beers":[{"beer_id":"1","beer_name":"x","abv":5}]}`,
		"duplicate ids": `{"beers":[{"beer_id":"1","beer_name":"x"},{"beer_id":"1","beer_name":"y"}]}`,
	} {
		rec, env := do(h, "POST", "/admin/enrich", body, adminHdr)
		if rec.Code != 400 || env.Error == nil || env.Error.Code != "INVALID_REQUEST" {
			t.Errorf("%s: %d %s", name, rec.Code, rec.Body)
		}
	}
	if sender.Calls != 0 {
		t.Fatalf("bad input must not enqueue anything (%d sends)", sender.Calls)
	}
	var n int
	api.DB.QueryRow(`SELECT COUNT(*) FROM beers`).Scan(&n)
	if n != 0 {
		t.Fatalf("bad input registered %d beers", n)
	}
	if rec, _ := do(h, "POST", "/admin/enrich", `{"beers":[{"beer_id":"1","beer_name":"x"}]}`, nil); rec.Code != 401 {
		t.Fatalf("no credentials: %d", rec.Code)
	}
	if rec, _ := do(h, "GET", "/admin/beers/1", "", nil); rec.Code != 401 {
		t.Fatalf("no credentials: %d", rec.Code)
	}
}

func TestEnrichQueueDownIs503AndBeersStayPending(t *testing.T) {
	api, sender := newEnrichAPI(t)
	sender.Err = errors.New("queue down")
	rec, env := do(api.Handler(), "POST", "/admin/enrich", `{"beers":[{"beer_id":"q1","beer_name":"x"}]}`, adminHdr)
	if rec.Code != 503 || env.Error == nil || env.Error.Code != "QUEUE_UNAVAILABLE" || strings.Contains(rec.Body.String(), "queue down") {
		t.Fatalf("%d %s", rec.Code, rec.Body)
	}
	var status string
	api.DB.QueryRow(`SELECT status FROM beers WHERE beer_id = 'q1'`).Scan(&status)
	if status != "pending" {
		t.Fatalf("status %q", status)
	}
}

func TestBeerLookupErrors(t *testing.T) {
	api, _ := newEnrichAPI(t)
	h := api.Handler()
	if rec, env := do(h, "GET", "/admin/beers/nope", "", adminHdr); rec.Code != 404 || env.Error == nil || env.Error.Code != "NOT_FOUND" {
		t.Fatalf("unknown: %d %s", rec.Code, rec.Body)
	}
	if rec, env := do(h, "GET", "/admin/beers/"+strings.Repeat("x", 129), "", adminHdr); rec.Code != 400 || env.Error.Code != "INVALID_REQUEST" {
		t.Fatalf("long id: %d %s", rec.Code, rec.Body)
	}
	// 128 characters (not bytes) is the longest id: looked up, not refused.
	for _, id := range []string{strings.Repeat("x", 128), strings.Repeat("%C3%A9", 128)} {
		if rec, env := do(h, "GET", "/admin/beers/"+id, "", adminHdr); rec.Code != 404 || env.Error.Code != "NOT_FOUND" {
			t.Fatalf("id of 128 characters: %d %s", rec.Code, rec.Body)
		}
	}
	unconfigured := &API{DB: api.DB, Log: discard, Auth: api.Auth}
	if rec, env := do(unconfigured.Handler(), "GET", "/admin/beers/x", "", adminHdr); rec.Code != 503 || env.Error.Code != "NOT_CONFIGURED" {
		t.Fatalf("no registry: %d %s", rec.Code, rec.Body)
	}
}
