//go:build e2e

package e2e

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/redrive/redrive/enrichment"
)

// In workerd too (the runtime parses the URL before the worker sees it): a
// beer id with "/", "..", "?" and "#" is registered and read back by its
// route percent-encoded; "." and ".." are refused at the door.
func TestBeerIDWithEncodedSlashIsReadBack(t *testing.T) {
	w := shared
	id := uniq("badinput") + "/../x?y#z%2F"
	res := enrich(t, w, enrichment.Beer{BeerID: id, BeerName: uniq("slash"), Brewer: "E2E Brewing"})
	if res.Received != 1 {
		t.Fatalf("enqueue result %+v", res)
	}
	r := w.Admin(t, http.MethodGet, "/admin/beers/"+url.PathEscape(id), nil)
	var s enrichment.BeerState
	r.Decode(t, &s)
	if r.Status != http.StatusOK || s.BeerID != id {
		t.Fatalf("GET /admin/beers/%s: %d %s", url.PathEscape(id), r.Status, r.Raw)
	}
	for _, bad := range []string{".", "..", "/", "a\x00b"} {
		r := w.Admin(t, http.MethodPost, "/admin/enrich", map[string]any{"beers": []enrichment.Beer{{BeerID: bad, BeerName: "x"}}})
		if r.Status != http.StatusBadRequest || r.Error == nil || r.Error.Code != "INVALID_REQUEST" {
			t.Errorf("beer id %q: %d %s", bad, r.Status, r.Raw)
		}
	}
}
