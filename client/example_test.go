package client_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"

	"github.com/redrive/redrive/client"
)

// fakeWorker answers like a worker would, for the examples to run.
func fakeWorker() *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.Header.Get("X-API-Key") != "key" {
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprint(w, `{"success":false,"error":{"code":"UNAUTHORIZED","message":"missing or invalid X-API-Key"},"requestId":"0b7e6f9c-3d52-4a51-9c3e-8d1f2a4b5c61"}`)
			return
		}
		switch r.URL.Path {
		case "/admin/dlq/replay":
			fmt.Fprint(w, `{"success":true,"requestId":"5e2d1c0b-9a87-4f65-8e43-2c1b0a9f8e7d","data":{"dry_run":true,"requested_count":0,"matched_count":42,"not_replayable_count":0,"sample":[],"by_failure_reason":[{"failure_reason":"status 500: upstream busy","count":42}]}}`)
		case "/admin/dlq/export":
			w.Header().Set("Content-Type", "application/x-ndjson")
			w.Header().Set("X-Export-Rows", "1")
			if r.URL.Query().Get("cursor") == "" {
				w.Header().Set("X-Next-Cursor", "c1")
				fmt.Fprintln(w, `{"id":2}`)
				return
			}
			fmt.Fprintln(w, `{"id":1}`)
		}
	}))
}

// A dry run of a bulk replay: how many pending rows match, and why they failed.
func Example() {
	srv := fakeWorker()
	defer srv.Close()
	c, err := client.New(srv.URL, client.Credentials{APIKey: "key", AdminSecret: "secret"})
	if err != nil {
		panic(err)
	}
	q, dry := "Lagunitas", true
	resp, err := c.ReplayDLQWithResponse(context.Background(), client.ReplayRequest{
		Filter: &client.Filter{Q: &q}, DryRun: &dry})
	if err != nil {
		panic(err)
	}
	var p client.Preview
	if err := client.DecodeData(resp.StatusCode(), resp.Body, &p); err != nil {
		panic(err)
	}
	fmt.Println(p.MatchedCount, "rows would be replayed")
	for _, r := range p.ByFailureReason {
		fmt.Println(r.Count, *r.FailureReason)
	}
	// Output:
	// 42 rows would be replayed
	// 42 status 500: upstream busy
}

// An error envelope becomes an *APIError.
func ExampleAPIError() {
	srv := fakeWorker()
	defer srv.Close()
	c, _ := client.New(srv.URL, client.Credentials{APIKey: "wrong", AdminSecret: "secret"})
	resp, err := c.DlqStatsWithResponse(context.Background(), nil)
	if err != nil {
		panic(err)
	}
	_, err = client.Data(resp.StatusCode(), resp.Body)
	fmt.Println(err, client.IsAuth(err))
	// Output: UNAUTHORIZED (HTTP 401): missing or invalid X-API-Key true
}

// ExportAll follows X-Next-Cursor until the export is complete.
func ExampleClientWithResponses_ExportAll() {
	srv := fakeWorker()
	defer srv.Close()
	c, _ := client.New(srv.URL, client.Credentials{APIKey: "key", AdminSecret: "secret"})
	var out strings.Builder
	status := client.ExportDLQParamsStatus("all")
	rows, err := c.ExportAll(context.Background(), client.ExportDLQParams{Status: &status}, &out,
		func(rows int) { fmt.Fprintf(os.Stderr, "\r%d rows", rows) })
	fmt.Print(rows, err, "\n", out.String())
	// Output:
	// 2 <nil>
	// {"id":2}
	// {"id":1}
}
