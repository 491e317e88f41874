package handlers

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
)

// envelope is the struct the envelope was encoded from by reflection
// before writeEnvelope (the bytes must stay the same); the tests decode
// responses into it.
type envelope struct {
	Success   bool       `json:"success"`
	RequestID string     `json:"requestId"`
	Data      any        `json:"data,omitempty"`
	Error     *errorBody `json:"error,omitempty"`
}

func TestWriteEnvelopeWritesWhatEncodingJSONWrote(t *testing.T) {
	type item struct {
		A string `json:"a"`
		N *int   `json:"n,omitempty"`
	}
	var nilItem *item
	cases := []envelope{
		{Success: true, RequestID: "2b1c-<id>", Data: map[string]int{"b": 2, "a": 1}},
		{Success: true, RequestID: "id", Data: []item{{A: "x&y"}}},
		{Success: true, RequestID: "id", Data: nilItem},
		{Success: true, RequestID: ""},
		{Success: false, RequestID: "id", Error: &errorBody{Message: "no route for GET \"/a<b>\"\n", Code: "NOT_FOUND"}},
		{Success: false, RequestID: "id", Data: item{A: "degraded"}, Error: &errorBody{Message: "D1 is not reachable", Code: "D1_UNAVAILABLE"}},
	}
	for _, c := range cases {
		old := httptest.NewRecorder()
		_ = json.NewEncoder(old).Encode(c)
		rec := httptest.NewRecorder()
		writeEnvelope(rec, http.StatusTeapot, c.Success, c.RequestID, c.Data, c.Error)
		if rec.Body.String() != old.Body.String() {
			t.Errorf("writeEnvelope: %s\nencoding/json: %s", rec.Body.String(), old.Body.String())
		}
		if rec.Code != http.StatusTeapot || rec.Header().Get("Content-Type") != "application/json; charset=utf-8" {
			t.Errorf("status %d, content type %q", rec.Code, rec.Header().Get("Content-Type"))
		}
	}
}

func TestWriteEnvelopeAnswersDataThatIsNotJSONWith500(t *testing.T) {
	rec := httptest.NewRecorder()
	writeEnvelope(rec, http.StatusOK, true, "id", map[string]any{"c": make(chan int)}, nil)
	var env envelope
	if err := json.Unmarshal(rec.Body.Bytes(), &env); err != nil || rec.Code != http.StatusInternalServerError || env.Success || env.Error == nil || env.Error.Code != "INTERNAL_ERROR" {
		t.Fatalf("status %d, body %s (%v)", rec.Code, rec.Body.String(), err)
	}
}
