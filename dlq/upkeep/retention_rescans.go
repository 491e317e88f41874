package upkeep

import (
	"context"
	"database/sql"
	"fmt"
)

// rescanSinceSQL is the last rescan added after ?1 and the earliest time
// among them (a primary-key range: nothing read when none was added).
const rescanSinceSQL = `SELECT MAX(seq), MIN(since) FROM retention_rescans WHERE seq > ?1`

// rescanForgetSQL deletes the rescans up to ?1, which a recorded run has
// applied (the newest is kept, so that seq never counts back).
const rescanForgetSQL = `DELETE FROM retention_rescans WHERE seq <= ?1`

// rescanFrom moves prev's positions back to the earliest action time of
// the rescans added since prev.RescanSeq and returns the newest rescan's
// seq, which the run's summary carries (rescan_seq) so that the next run
// applies each rescan once. The rescans the previous run applied are
// deleted then. On an error prev is left as it was and its seq returned:
// the next run tries again.
func (r *Retention) rescanFrom(ctx context.Context, prev *backlog) (int64, error) {
	var seq, since sql.NullInt64
	if err := r.DB.QueryRowContext(ctx, rescanSinceSQL, prev.RescanSeq).Scan(&seq, &since); err != nil {
		return prev.RescanSeq, fmt.Errorf("retention: rescans: %w", err)
	}
	if !seq.Valid || !since.Valid {
		return prev.RescanSeq, nil
	}
	for k, at := range prev.AgeScannedTo {
		prev.AgeScannedTo[k] = min(at, since.Int64)
	}
	if prev.CapScannedTo != nil {
		at := min(*prev.CapScannedTo, since.Int64)
		prev.CapScannedTo = &at
	}
	if prev.RescanSeq > 0 {
		if _, err := exec(ctx, r.DB, "retention: forget rescans", rescanForgetSQL, prev.RescanSeq); err != nil {
			return seq.Int64, err
		}
	}
	return seq.Int64, nil
}
