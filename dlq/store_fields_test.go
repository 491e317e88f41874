package dlq

import (
	"context"
	"testing"

	"github.com/redrive/redrive/internal/sqlitetest"
)

// beer_name and brewer are stored as the body gives them: a string as is,
// any other JSON value as its JSON text, absent or null as NULL.
func TestStoreBeerFieldsFromTheBody(t *testing.T) {
	db := sqlitetest.New(t)
	s := Store{DB: db}
	bodies := map[string]string{
		"absent":  `{"beer_id":"1"}`,
		"null":    `{"beer_id":"2","beer_name":null,"brewer":null}`,
		"strings": `{"beer_id":"3","beer_name":"Pils","brewer":""}`,
		"other":   `{"beer_id":"4","beer_name":5.5,"brewer":{"a":[1]}}`,
	}
	var fs []Failure
	for id, b := range bodies {
		fs = append(fs, Failure{MessageID: id, SourceQueue: "q", Body: b, Attempts: 1, FailedAt: t0})
	}
	if err := s.Put(context.Background(), fs); err != nil {
		t.Fatal(err)
	}
	for id, want := range map[string][2]string{
		"absent":  {"NULL", "NULL"},
		"null":    {"NULL", "NULL"},
		"strings": {"Pils", ""},
		"other":   {"5.5", `{"a":[1]}`},
	} {
		r := readRow(t, db, `message_id = ?`, id)
		got := [2]string{"NULL", "NULL"}
		if r.Label1.Valid {
			got[0] = r.Label1.String
		}
		if r.Label2.Valid {
			got[1] = r.Label2.String
		}
		if got != want {
			t.Errorf("%s: beer_name, brewer = %q, want %q", id, got, want)
		}
	}
}
