package upkeep

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/redrive/redrive/metrics"
)

// expiry is one kind of expired record, deleted oldest first in bounded
// batches through an index whose entries are ordered by (key, rowid) after
// an optional equality (idx_dlq_status_acknowledged_at: status, then
// acknowledged_at). Records expire when key < cutoff; nothing written later
// can fall into that range (keys are the time of an action, and cutoff is
// in the past), so the range only shrinks while a run works on it.
//
// One batch of up to limit records costs three statements and reads about
// two index entries per record it deletes (D1's rows_read, measured in
// workerd), whatever the backlog:
//   - boundary: the key and id of the limit-th oldest expired record
//     (reads limit entries of the index, which covers the query);
//   - before: DELETE the records whose key is below the boundary's (an
//     index range: one entry read per record deleted);
//   - ties: DELETE the records with the boundary's key and an id up to the
//     boundary's (the same index, key = ? AND rowid <= ?), so a batch never
//     outgrows limit however many records share one time.
//
// When fewer than limit records have expired, the boundary query finds none
// and one DELETE (before, with the cutoff itself) removes them all. The
// former `DELETE ... WHERE id IN (SELECT id ... LIMIT n)` read four entries
// per deleted record.
type expiry struct {
	// what names the records in errors ("acknowledged DLQ rows").
	what string
	// boundarySQL selects (key, id) of the ?2+1-th oldest record with key < ?1.
	boundarySQL string
	// beforeSQL deletes every record with key < ?1.
	beforeSQL string
	// tiesSQL deletes the records with key = ?1 and id <= ?2.
	tiesSQL string
	// selectSQL selects one row (1) per record with key < ?1, for bounded counts.
	selectSQL string
}

// newExpiry builds the statements for records of table with key < cutoff
// (and the equality filter, when not empty), in (key, id) order.
func newExpiry(what, table, filter, key, id string) expiry {
	where := key
	if filter != "" {
		where = filter + " AND " + key
	}
	return expiry{
		what:        what,
		boundarySQL: fmt.Sprintf(`SELECT %[3]s, %[4]s FROM %[1]s WHERE %[2]s < ?1 ORDER BY %[3]s, %[4]s LIMIT 1 OFFSET ?2`, table, where, key, id),
		beforeSQL:   fmt.Sprintf(`DELETE FROM %s WHERE %s < ?1`, table, where),
		tiesSQL:     fmt.Sprintf(`DELETE FROM %s WHERE %s = ?1 AND %s <= ?2`, table, where, id),
		selectSQL:   fmt.Sprintf(`SELECT 1 FROM %s WHERE %s < ?1`, table, where),
	}
}

// deleteBatch deletes up to limit records with key < cutoff, oldest first.
func (e expiry) deleteBatch(ctx context.Context, db *sql.DB, cutoff int64, limit int) (int64, error) {
	var key, id int64
	err := db.QueryRowContext(ctx, e.boundarySQL, cutoff, limit-1).Scan(&key, &id)
	if errors.Is(err, sql.ErrNoRows) {
		return exec(ctx, db, "expire "+e.what, e.beforeSQL, cutoff)
	}
	if err != nil {
		return 0, fmt.Errorf("expire %s: boundary: %w", e.what, err)
	}
	before, err := exec(ctx, db, "expire "+e.what, e.beforeSQL, key)
	if err != nil {
		return before, err
	}
	ties, err := exec(ctx, db, "expire "+e.what, e.tiesSQL, key, id)
	return before + ties, err
}

// step returns a drain step for the records expired at cutoff.
func (e expiry) step(db *sql.DB, cutoff int64) func(context.Context, int) (int64, error) {
	return func(ctx context.Context, limit int) (int64, error) {
		return e.deleteBatch(ctx, db, cutoff, limit)
	}
}

// steps chains drain steps into one that fills each batch across them in
// order, like a UNION ALL ... LIMIT: a step that returned fewer rows than
// it was asked for has nothing left and is not called again in this run.
func steps(parts ...func(context.Context, int) (int64, error)) func(context.Context, int) (int64, error) {
	done := make([]bool, len(parts))
	return func(ctx context.Context, limit int) (int64, error) {
		var total int64
		for i, part := range parts {
			if done[i] {
				continue
			}
			left := limit - int(total)
			n, err := part(ctx, left)
			total += n
			if err != nil {
				return total, err
			}
			if n < int64(left) {
				done[i] = true
			}
			if total >= int64(limit) {
				break
			}
		}
		return total, nil
	}
}

// ExpiredLeftCountMax bounds the count of expired records a retention run
// reports as left (expired_left) when it ends with work left: the count
// reads one index entry per record, so it stops here instead of growing
// with the backlog (100,000 entries: 100,000 rows read, about 13 ms in
// workerd; a run that ends with work left has deleted several times that).
const ExpiredLeftCountMax = metrics.ExpiredLeftCountMax

// countUpTo counts the rows of the compound select (each term one row per
// record; ?1 is the cutoff), stopping at max.
func countUpTo(ctx context.Context, db *sql.DB, what, selects string, cutoff int64, max int) (int64, error) {
	var n int64
	if err := db.QueryRowContext(ctx, `SELECT COUNT(*) FROM (`+selects+` LIMIT ?2)`, cutoff, max).Scan(&n); err != nil {
		return 0, fmt.Errorf("count %s left: %w", what, err)
	}
	return n, nil
}
