package alerts

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/outbound"
)

// recordingDoer answers every request with status and keeps the requests.
type recordingDoer struct {
	status int
	got    []outbound.Request
}

func (d *recordingDoer) Do(_ context.Context, req outbound.Request) (outbound.Response, error) {
	d.got = append(d.got, req)
	return outbound.Response{Status: d.status}, nil
}

// The webhook needs only the status: it asks for the body to be cancelled
// unread (a webhook that streams hundreds of MB costs nothing), and it
// still tells 2xx from the rest.
func TestWebhookDiscardsTheResponseBody(t *testing.T) {
	for _, c := range []struct {
		status int
		ok     bool
	}{{200, true}, {204, true}, {299, true}, {199, false}, {300, false}, {500, false}} {
		d := &recordingDoer{status: c.status}
		err := Webhook{Doer: d, URL: "http://hook.example/x", Timeout: time.Second}.Notify(context.Background(), "hello")
		if (err == nil) != c.ok {
			t.Errorf("status %d: error %v", c.status, err)
		}
		if len(d.got) != 1 || !d.got[0].DiscardBody || d.got[0].Method != http.MethodPost || d.got[0].Timeout != time.Second ||
			!strings.Contains(string(d.got[0].Body), "hello") {
			t.Errorf("status %d: request %+v", c.status, d.got)
		}
	}
}

// Through the native Doer: an endless answer is not read, the call returns
// with its status.
func TestWebhookDoesNotReadAnEndlessAnswer(t *testing.T) {
	done := make(chan int64, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		chunk := []byte(strings.Repeat("x", 64<<10))
		rc := http.NewResponseController(w)
		var n int64
		for n < 1<<34 {
			m, err := w.Write(chunk)
			n += int64(m)
			if err != nil || rc.Flush() != nil {
				break
			}
		}
		done <- n
	}))
	defer srv.Close()
	if err := (Webhook{Doer: outbound.HTTPDoer{}, URL: srv.URL, Timeout: time.Minute}).Notify(context.Background(), "x"); err != nil {
		t.Fatal(err)
	}
	select {
	case n := <-done:
		t.Logf("the hook wrote %d bytes before the client went away", n)
	case <-time.After(time.Minute):
		t.Fatal("the hook is still streaming: the body was not cancelled")
	}
}
