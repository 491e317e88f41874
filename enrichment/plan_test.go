package enrichment

import (
	"strings"
	"testing"

	"github.com/redrive/redrive/internal/sqlitetest"
)

// Statements on a list of beer ids look the beers up by primary key, not
// by idx_beers_status_next (which would visit every beer of that status).
func TestBeerListStatementsUsePrimaryKey(t *testing.T) {
	db := sqlitetest.New(t)
	for name, query := range map[string]string{
		"claim": claimBeersSQL, "unclaim": unclaimBeersSQL, "catch-up put back": putBackSQL,
	} {
		plan := sqlitetest.Plan(t, db, query, `["a","b"]`, int64(1))
		if !strings.Contains(plan[0], "beers USING INDEX sqlite_autoindex_beers_1 (beer_id=?)") {
			t.Errorf("%s: beers are not looked up by id:\n%s", name, strings.Join(plan, "\n"))
		}
	}
}
