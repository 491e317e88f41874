package dlq

import (
	"context"
	"database/sql"
	"fmt"
)

// Rows that arrive with an action time in the past (an import writes rows
// as they were exported: acknowledged or replayed days ago) lie behind the
// positions the age windows and the cap rule continue from
// (age_scanned_to, cap_scanned_to): they would escape a shorter retention
// and the cap. Whatever writes such rows adds one retention_rescans row in
// the same batch, the earliest action time it wrote (rescanMarkSQL; the
// import does); the database's next dlq_retention run reads the rows added
// since the one its previous summary names (rescan_seq), moves its
// positions back to their earliest time (rescanFrom) and goes on from
// there as usual, each window and the cap reading that stretch once.

// rescanMarkSQL adds the rescan of an import batch: the earliest action
// time among its lines (the JSON array ?1 of importCount, action_at), none
// when no line is acknowledged or replayed. It counts every line, imported
// or skipped, so a repeated import that a failure cut short rewinds too.
// One row written, no table row read.
const RescanMarkSQL = `INSERT INTO retention_rescans(since)
	SELECT m FROM (SELECT MIN(CAST(j.value ->> '$.action_at' AS INTEGER)) AS m FROM json_each(?1) AS j)
	WHERE m IS NOT NULL`

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
