package dlq

import (
	"database/sql"
	"errors"
	"fmt"
	"testing"
)

// adminRow is a dlq_messages row to insert in the admin API tests.
type adminRow struct {
	beerID, beerName, brewer, source, status, reason, raw string
	failedAt, replayCount                                 int64
	encoding                                              string
	// contentType is stored as given; empty leaves it NULL (a row captured
	// before content types were recorded).
	contentType string
}

// insert adds rows and returns their ids in order.
func insert(t *testing.T, db *sql.DB, rows ...adminRow) []int64 {
	t.Helper()
	ids := make([]int64, len(rows))
	for i, r := range rows {
		if r.source == "" {
			r.source = "beer-enrichment"
		}
		if r.status == "" {
			r.status = StatusPending
		}
		if r.encoding == "" {
			r.encoding = "text"
		}
		if r.raw == "" {
			r.raw = fmt.Sprintf(`{"beer_id":%q,"beer_name":%q,"brewer":%q}`, r.beerID, r.beerName, r.brewer)
		}
		var name, brewer, reason, ct any
		if r.contentType != "" {
			ct = r.contentType
		}
		if r.beerName != "" {
			name = r.beerName
		}
		if r.brewer != "" {
			brewer = r.brewer
		}
		if r.reason != "" {
			reason = r.reason
		}
		err := db.QueryRow(`INSERT INTO dlq_messages(message_id, beer_id, beer_name, brewer, failed_at, failure_reason,
				source_queue, status, replay_count, raw_message, raw_encoding, content_type, first_failed_at, updated_at)
			VALUES (lower(hex(randomblob(8))), ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`,
			r.beerID, name, brewer, r.failedAt, reason, r.source, r.status, r.replayCount, r.raw, r.encoding, ct, r.failedAt, r.failedAt).Scan(&ids[i])
		if err != nil {
			t.Fatalf("insert: %v", err)
		}
	}
	return ids
}

// generate inserts n pending rows in one statement (as the e2e tests do):
// beer_id gen-<i>, beer_name <prefix>-<i>, failed_at base - (i / ties) so
// that groups of ties rows share failed_at.
func generate(t *testing.T, db *sql.DB, prefix string, n, ties int, base int64) {
	t.Helper()
	_, err := db.Exec(`INSERT INTO dlq_messages(message_id, beer_id, beer_name, brewer, failed_at, failure_reason,
			source_queue, raw_message, first_failed_at, updated_at)
		WITH RECURSIVE seq(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM seq WHERE i + 1 < ?1)
		SELECT ?2 || '-m-' || i, 'gen-' || i, printf('%s-%05d', ?2, i), 'Brewer ' || (i % 7), ?3 - (i / CAST(?4 AS INTEGER)),
			'reason ' || (i % 3), 'beer-enrichment',
			json_object('beer_id', 'gen-' || i, 'beer_name', printf('%s-%05d', ?2, i)), ?3, ?3
		FROM seq`, n, prefix, base, ties)
	if err != nil {
		t.Fatalf("generate: %v", err)
	}
}

// wantInput fails unless err is an *InputError with code.
func wantInput(t *testing.T, err error, code string) {
	t.Helper()
	var in *InputError
	if !errors.As(err, &in) || in.Code != code {
		t.Fatalf("err = %v, want input error %s", err, code)
	}
}
