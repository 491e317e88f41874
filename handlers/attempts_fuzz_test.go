package handlers

import (
	"bytes"
	"encoding/json"
	"net/http/httptest"
	"testing"
)

// FuzzReportAttempts: a failure report (POST /admin/attempts, the body an
// external consumer sends) never panics or answers 5xx on a database with
// D1's limits; a rejected report is a 400 in the API's terms that writes
// nothing; an accepted one is a 202 recording exactly its entries. Seeds in
// testdata/fuzz/FuzzReportAttempts.
//
//	go test -run '^$' -fuzz '^FuzzReportAttempts$' -fuzztime 30s ./handlers
func FuzzReportAttempts(f *testing.F) {
	f.Add([]byte(`{"attempts":[{"queue":"e2e-orders","message_id":"m1","attempt":2,"error":"card declined","class":"permanent"}]}`))
	f.Add([]byte(`{"attempts":[{"queue":"e2e-orders","message_id":"m1","attempt":1,"error":"x","class":null}]}`))
	api := fuzzAPI(f)
	api.Auth.ReportToken = "fuzz-token"
	api.ReportQueues = func(q string) bool { return q == "e2e-orders" }
	h := api.Handler()
	f.Fuzz(func(t *testing.T, body []byte) {
		if _, err := api.DB.Exec(`DELETE FROM message_attempts`); err != nil {
			t.Fatal(err)
		}
		req := httptest.NewRequest("POST", "/admin/attempts", bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer fuzz-token")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		checkResponse(t, string(body), rec)
		var n int
		if err := api.DB.QueryRow(`SELECT COUNT(*) FROM message_attempts`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		switch rec.Code {
		case 202:
			var got struct {
				Data attemptsData `json:"data"`
			}
			var sent attemptsBody
			if json.Unmarshal(rec.Body.Bytes(), &got) != nil || json.Unmarshal(body, &sent) != nil || got.Data.Recorded != len(sent.Attempts) {
				t.Fatalf("%.300q: 202 %s", body, rec.Body)
			}
			ids := map[string]bool{}
			for _, a := range sent.Attempts {
				ids[a.MessageID] = true
			}
			if n != len(ids) {
				t.Fatalf("%.300q: %d records for %d message ids", body, n, len(ids))
			}
		case 400, 413:
			if n != 0 {
				t.Fatalf("%.300q: rejected (%d) but wrote %d records", body, rec.Code, n)
			}
		default:
			t.Fatalf("%.300q: status %d %s", body, rec.Code, rec.Body)
		}
	})
}
