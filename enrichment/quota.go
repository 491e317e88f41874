package enrichment

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// Quota is the daily budget of provider calls (table enrichment_quota, one
// row per UTC day). A call is reserved before it is made, in one statement
// that refuses at the limit, so concurrent consumers can never overspend it
// (the original worker read the counter after incrementing it and never
// refused anything). Only real provider calls reserve.
type Quota struct {
	DB *sql.DB
	// Limit is the number of calls allowed per UTC day.
	Limit int64
}

// day is the quota window holding now.
func day(now time.Time) string { return now.UTC().Format(time.DateOnly) }

// ResetAt is when the window holding now ends (the next UTC midnight).
func ResetAt(now time.Time) time.Time {
	y, m, d := now.UTC().Date()
	return time.Date(y, m, d+1, 0, 0, 0, 0, time.UTC)
}

// Reserve takes one call from today's budget. ok is false, and nothing is
// taken, when the budget is spent; used is the count after the reservation.
func (q Quota) Reserve(ctx context.Context, now time.Time) (ok bool, used int64, err error) {
	err = q.DB.QueryRowContext(ctx, `INSERT INTO enrichment_quota(day, used, updated_at)
		SELECT ?1, 1, ?3 WHERE ?2 >= 1
		ON CONFLICT(day) DO UPDATE SET used = used + 1, updated_at = ?3 WHERE used < ?2
		RETURNING used`, day(now), q.Limit, now.UnixMilli()).Scan(&used)
	if errors.Is(err, sql.ErrNoRows) {
		return false, 0, nil
	}
	if err != nil {
		return false, 0, fmt.Errorf("quota reserve: %w", err)
	}
	return true, used, nil
}

// Release gives back one call reserved at reservedAt (the same UTC day's
// budget) that should not count: the provider refused the API key, so the
// call did no work. It never takes the count below zero.
func (q Quota) Release(ctx context.Context, reservedAt time.Time) error {
	_, err := q.DB.ExecContext(ctx, `UPDATE enrichment_quota SET used = used - 1, updated_at = ?2 WHERE day = ?1 AND used > 0`,
		day(reservedAt), reservedAt.UnixMilli())
	if err != nil {
		return fmt.Errorf("quota release: %w", err)
	}
	return nil
}
