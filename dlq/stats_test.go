package dlq

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/internal/sqlitetest"
)

func TestStatsReport(t *testing.T) {
	db := sqlitetest.New(t)
	now := clock().UnixMilli()
	hour := time.Hour.Milliseconds()
	ids := insert(t, db,
		adminRow{beerID: "1", beerName: "Old", brewer: "Acme", reason: "transient: 500", failedAt: now - 50*hour},
		adminRow{beerID: "2", brewer: "Acme", reason: "transient: 500", failedAt: now - 2*hour, replayCount: 3},
		adminRow{beerID: "3", beerName: "Again", brewer: "Bold", reason: "permanent: 404", failedAt: now - 1*hour, replayCount: 1},
		adminRow{beerID: "4", failedAt: now - hour, source: "other"},
		adminRow{beerID: "5", brewer: "Zed", failedAt: now - 30*hour, status: StatusReplayed},
		adminRow{beerID: "6", brewer: "Zed", failedAt: now - 30*hour, status: StatusAcknowledged},
		adminRow{beerID: "7", failedAt: now - 30*hour, status: StatusAcknowledged},
		adminRow{beerID: "8", failedAt: now - 30*hour, status: StatusReplaying},
	)
	db.Exec(`UPDATE dlq_messages SET replayed_at = ? WHERE id = ?`, now-hour, ids[4])
	db.Exec(`UPDATE dlq_messages SET acknowledged_at = ? WHERE id = ?`, now-hour, ids[5])
	db.Exec(`UPDATE dlq_messages SET acknowledged_at = ? WHERE id = ?`, now-25*hour, ids[6])
	r, err := Stats{DB: db, Now: clock}.Report(ctx)
	if err != nil {
		t.Fatal(err)
	}
	js, _ := json.Marshal(r)
	want := `{"by_status":{"pending":4,"replaying":1,"replayed":1,"acknowledged":2},"oldest_pending_age_hours":50,` +
		`"top_failing_brewers":[{"brewer":"Acme","count":2},{"brewer":"Bold","count":1}],` +
		`"repeat_failures":[{"beer_id":"2","beer_name":null,"replay_count":3,"id":` + itoa(ids[1]) + `},{"beer_id":"3","beer_name":"Again","replay_count":1,"id":` + itoa(ids[2]) + `}],` +
		`"last_24h":{"replayed_24h":1,"acknowledged_24h":1,"new_failures_24h":3},` +
		`"by_source_queue":[{"source_queue":"beer-enrichment","pending":3,"total":7},{"source_queue":"other","pending":1,"total":1}],` +
		`"top_failure_reasons":[{"failure_reason":"transient: 500","count":2},{"failure_reason":null,"count":1},{"failure_reason":"permanent: 404","count":1}]}`
	if string(js) != want {
		t.Fatalf("stats\n got %s\nwant %s", js, want)
	}
	empty, err := Stats{DB: sqlitetest.New(t), Now: clock}.Report(ctx)
	js, _ = json.Marshal(empty)
	if err != nil || !strings.Contains(string(js), `"top_failing_brewers":[]`) || empty.OldestPendingAgeHours != 0 {
		t.Fatalf("empty: %s %v", js, err)
	}
}

func itoa(n int64) string { b, _ := json.Marshal(n); return string(b) }

// Every part of the stats reads an index, never the table itself: that is
// what keeps it fast at 100k rows. Only the repeat failures look rows up
// (for beer_name), and only those with replay_count > 0.
func TestStatsUsesIndexesOnly(t *testing.T) {
	db := sqlitetest.New(t)
	for _, detail := range sqlitetest.Plan(t, db, statsSQL, 10, 0) {
		if strings.Contains(detail, "dlq_messages") && !strings.Contains(detail, "COVERING INDEX") &&
			!(strings.Contains(detail, "USING INDEX") && strings.Contains(detail, "replay_count>?")) {
			t.Errorf("stats reads the table: %s", detail)
		}
	}
}
