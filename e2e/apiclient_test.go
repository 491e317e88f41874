//go:build e2e

package e2e

import (
	"context"
	"net/http"
	"slices"
	"testing"
	"time"

	redrive "github.com/redrive/redrive/client"
)

// doerFunc adapts a function to the generated client's HttpRequestDoer.
type doerFunc func(*http.Request) (*http.Response, error)

func (f doerFunc) Do(req *http.Request) (*http.Response, error) { return f(req) }

// The client oapi-codegen generates from handlers/openapi.json (the public package client)
// drives a replay and an acknowledge end to end, and decodes an error.
func TestGeneratedClientReplaysAndAcknowledges(t *testing.T) {
	prefix := newPrefix("client")
	shared.Exec(t, seedSQL(prefix, 3, 1, time.Now().UnixMilli(), "beer-enrichment"))
	ids := ownIDs(t, shared, prefix)
	// Through the harness's client: each exchange is checked against the document too.
	doer := doerFunc(func(req *http.Request) (*http.Response, error) {
		req, ex := withExchange(req)
		resp, err := client.Do(req)
		if ex.Mismatch != nil {
			t.Error(ex.Mismatch)
		}
		return resp, err
	})
	c, err := redrive.NewClientWithResponses(shared.URL, redrive.WithHTTPClient(doer),
		redrive.WithRequestEditorFn(func(_ context.Context, req *http.Request) error {
			for k, v := range AdminHeaders() {
				req.Header.Set(k, v)
			}
			return nil
		}))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	replayIDs, delay := []int{int(ids[0])}, 0
	rep, err := c.ReplayDLQWithResponse(ctx, redrive.ReplayRequest{Ids: &replayIDs, DelaySeconds: &delay})
	if err != nil || rep.JSON200 == nil {
		t.Fatalf("replay: %v %d %s", err, rep.StatusCode(), rep.Body)
	}
	res, err := rep.JSON200.Data.AsReplayResult()
	if err != nil || res.RequestedCount != 1 || res.ReplayedCount != 1 || !slices.Equal(res.ReplayedIds, replayIDs) || res.QueuedTo != "beer-enrichment" {
		t.Fatalf("replay result: %v %+v", err, res)
	}

	ackIDs, note := []int{int(ids[1]), int(ids[2])}, "handled by the generated client"
	ack, err := c.AcknowledgeDLQWithResponse(ctx, redrive.AcknowledgeRequest{Ids: &ackIDs, Note: &note})
	if err != nil || ack.JSON200 == nil {
		t.Fatalf("acknowledge: %v %d %s", err, ack.StatusCode(), ack.Body)
	}
	ackRes, err := ack.JSON200.Data.AsAcknowledgeResult()
	if err != nil || ackRes.AcknowledgedCount != 2 || ackRes.RequestedCount != 2 {
		t.Fatalf("acknowledge result: %v %+v", err, ackRes)
	}
	for i, want := range []string{"replayed", "acknowledged", "acknowledged"} {
		var status string
		if err := shared.DB(t).QueryRow(`SELECT status FROM dlq_messages WHERE id = ?`, ids[i]).Scan(&status); err != nil || status != want {
			t.Errorf("row %d: %q (%v), want %s", ids[i], status, err, want)
		}
	}

	// The same row again is a 400 the client decodes with its code.
	twice := []int{int(ids[0]), int(ids[0])}
	bad, err := c.ReplayDLQWithResponse(ctx, redrive.ReplayRequest{Ids: &twice})
	if err != nil || bad.JSON400 == nil || bad.JSON400.Error.Code != "INVALID_REQUEST" {
		t.Fatalf("duplicate ids: %v %d %s", err, bad.StatusCode(), bad.Body)
	}
}
