package inspect

import (
	"strings"
	"testing"

	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/internal/sqlitetest"
)

// version_not keeps the rows whose latest failure happened on any other
// version, or on an unknown one (NULL: captured before versions were stamped).
func TestFilterVersionNotKeepsOtherAndUnknownVersions(t *testing.T) {
	db := sqlitetest.New(t)
	ids := insert(t, db, adminRow{Key: "v1", FailedAt: 3}, adminRow{Key: "v2", FailedAt: 2}, adminRow{Key: "none", FailedAt: 1})
	if _, err := db.Exec(`UPDATE dlq_messages SET version = CASE id WHEN ? THEN 'v1' WHEN ? THEN 'v2' END`, ids[0], ids[1]); err != nil {
		t.Fatal(err)
	}
	l := List{DBs: dlq.Single(dlq.Store{DB: db}), Cursors: dlq.NewCursors("s")}
	for _, c := range []struct {
		f    dlq.Filter
		want []string
	}{
		{dlq.Filter{VersionNot: "v1"}, []string{"v2", "none"}},
		{dlq.Filter{Version: "v1"}, []string{"v1"}},
		{dlq.Filter{}, []string{"v1", "v2", "none"}},
	} {
		p, err := l.Page(ctx, ListParams{Filter: c.f})
		if err != nil {
			t.Fatal(err)
		}
		msgs, err := p.Messages.Decode()
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, m := range msgs {
			got = append(got, m.BeerID)
		}
		if strings.Join(got, ",") != strings.Join(c.want, ",") || p.TotalCount != int64(len(c.want)) {
			t.Errorf("%+v: %v (total %d), want %v", c.f, got, p.TotalCount, c.want)
		}
	}
}
