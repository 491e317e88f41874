package dlq

// Rows that arrive with an action time in the past (an import writes rows
// as they were exported: acknowledged or replayed days ago) lie behind the
// positions the age windows and the cap rule continue from
// (age_scanned_to, cap_scanned_to): they would escape a shorter retention
// and the cap. Whatever writes such rows adds one retention_rescans row in
// the same batch, the earliest action time it wrote (RescanMarkSQL; the
// import does); the database's next dlq_retention run reads the rows added
// since the one its previous summary names (rescan_seq), moves its
// positions back to their earliest time (upkeep's Retention) and goes on from
// there as usual, each window and the cap reading that stretch once.

// RescanMarkSQL adds the rescan of an import batch: the earliest action
// time among its lines (the JSON array ?1 of its lines, action_at, relocation's Import), none
// when no line is acknowledged or replayed. It counts every line, imported
// or skipped, so a repeated import that a failure cut short rewinds too.
// One row written, no table row read.
const RescanMarkSQL = `INSERT INTO retention_rescans(since)
	SELECT m FROM (SELECT MIN(CAST(j.value ->> '$.action_at' AS INTEGER)) AS m FROM json_each(?1) AS j)
	WHERE m IS NOT NULL`
