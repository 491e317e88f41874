package handlers

import (
	"encoding/json"
	"net/url"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/redrive/redrive/enrichment"
)

// enrichOne posts one beer and reads it back through GET /admin/beers/{id}
// with the id percent-encoded. It returns the POST's status and error code
// and, when the beer was registered, the GET's status and the id it shows.
func enrichOne(t *testing.T, api *API, id string) (postCode int, postErr string, getCode int, gotID string) {
	t.Helper()
	h := api.Handler()
	body, _ := json.Marshal(map[string]any{"beers": []map[string]string{{"beer_id": id, "beer_name": "Beer"}}})
	rec, env := do(h, "POST", "/admin/enrich", string(body), adminHdr)
	if env.Error != nil {
		postErr = env.Error.Code
	}
	if rec.Code != 200 {
		return rec.Code, postErr, 0, ""
	}
	rec, env = do(h, "GET", "/admin/beers/"+url.PathEscape(id), "", adminHdr)
	var s enrichment.BeerState
	raw, _ := json.Marshal(env.Data)
	_ = json.Unmarshal(raw, &s)
	return 200, "", rec.Code, s.BeerID
}

// Every beer id POST /admin/enrich accepts is read back by its own route,
// percent-encoded: "/", "?", "#", "%", dots and spaces included ("badinput/../x?y#z" was once registered, then a 404). The ids the
// route cannot name (".", ".." and "/") and control characters are refused
// at the door with a 400 envelope.
func TestBeerIDsAreReadBackByTheirRoute(t *testing.T) {
	api, _ := newEnrichAPI(t)
	for _, id := range []string{"badinput/../x?y#z", "a/b", "../x", "x/..", "./", "//", "/a", "a/", "%2F", "%zz", "a%2e%2e",
		"?", "#", "...", ". .", " ", "a b", "é/ü", "..\u00a0", strings.Repeat("/", 128), strings.Repeat("é", 128)} {
		code, errCode, get, got := enrichOne(t, api, id)
		if code != 200 || get != 200 || got != id {
			t.Errorf("id %q: POST %d %s, GET %d %q", id, code, errCode, get, got)
		}
	}
	for _, id := range []string{".", "..", "/", "a\x00b", "line\nbreak", "\t", "a\u0085b", "\x7f", "", strings.Repeat("x", 129)} {
		if code, errCode, _, _ := enrichOne(t, api, id); code != 400 || errCode != "INVALID_REQUEST" {
			t.Errorf("id %q: POST %d %s, want 400 INVALID_REQUEST", id, code, errCode)
		}
	}
	// Ids stored before these rules (a control character) are still read
	// by their route; "." and ".." never could be and are a 404 envelope.
	if _, err := api.DB.Exec(`INSERT INTO beers(beer_id, name, brewer, status, created_at, updated_at)
		VALUES ('old' || char(10) || 'id', 'Old', '', 'pending', 1, 1), ('..', 'Dots', '', 'pending', 1, 1)`); err != nil {
		t.Fatal(err)
	}
	if rec, _ := do(api.Handler(), "GET", "/admin/beers/"+url.PathEscape("old\nid"), "", adminHdr); rec.Code != 200 {
		t.Errorf("stored id with a control character: %d %s", rec.Code, rec.Body)
	}
	for _, target := range []string{"/admin/beers/..", "/admin/beers/%2e%2e", "/admin/beers/%2E."} {
		if rec, env := serveTarget(api.Handler(), "GET", target, adminHdr); rec.Code != 404 || env.Error == nil || env.Error.Code != "NOT_FOUND" {
			t.Errorf("%s: %d %s", target, rec.Code, rec.Body)
		}
	}
}

// FuzzBeerIDRoundTrip: any beer id is either refused by POST /admin/enrich
// with a 400 INVALID_REQUEST, or registered and read back unchanged by
// GET /admin/beers/{percent-encoded id}.
func FuzzBeerIDRoundTrip(f *testing.F) {
	for _, id := range []string{"badinput/../x?y#z", "..", ".", "%2e%2e", "a\x00b", "é", "/", strings.Repeat("x", 129), "\xff"} {
		f.Add(id)
	}
	api := fuzzAPI(f)
	h := api.Handler()
	f.Fuzz(func(t *testing.T, id string) {
		body, _ := json.Marshal(map[string]any{"beers": []map[string]string{{"beer_id": id, "beer_name": "Beer"}}})
		rec, env := do(h, "POST", "/admin/enrich", string(body), adminHdr)
		checkResponse(t, id, rec)
		if rec.Code != 200 {
			if rec.Code != 400 || env.Error == nil || env.Error.Code != "INVALID_REQUEST" {
				t.Fatalf("id %q: %d %s", id, rec.Code, rec.Body)
			}
			return
		}
		want := strings.ToValidUTF8(id, "\uFFFD") // what JSON carries
		if !utf8.ValidString(id) {
			// encoding/json replaces each invalid byte: compare with what it sent.
			var back []map[string]string
			_ = json.Unmarshal([]byte(`[`+string(body[len(`{"beers":[`):len(body)-2])+`]`), &back)
			if len(back) == 1 {
				want = back[0]["beer_id"]
			}
		}
		rec, env = do(h, "GET", "/admin/beers/"+url.PathEscape(want), "", adminHdr)
		var s enrichment.BeerState
		raw, _ := json.Marshal(env.Data)
		_ = json.Unmarshal(raw, &s)
		if rec.Code != 200 || s.BeerID != want {
			t.Fatalf("id %q registered, then GET: %d %s", id, rec.Code, rec.Body)
		}
	})
}
