// Package dlq is the dead-letter domain: everything redrive does with a
// message once it has reached a dead-letter queue. It imports no HTTP and
// no js/wasm code: handlers serve it, jobs run its scheduled parts, and it
// is tested natively against SQLite with D1's limits.
//
// A dead letter becomes one row of dlq_messages (schema.sql). Capture
// stores a DLQ batch in one statement, idempotent on the message id: a
// redelivery changes nothing, and a replayed message that fails again
// updates the row it came from (its lineage), so a row's replay_count and
// history tell the message's whole life. The failure reason is normalised
// into a signature, the row's failure group. Counts are never scanned:
// triggers (migrations/0012) keep dlq_tally, dlq_activity and
// dlq_signatures in step with the rows, and the stats, groups and time
// series read those.
//
// Reading is by one Filter shared by the list, bulk actions, replay tasks
// and export, paged by signed, opaque cursors. Acting on rows (replay by
// ids or filter, edited replay, acknowledge, paced replay tasks with a
// canary) claims them atomically, sends, and settles, each state change
// one statement or one batch; every admin action is audited with its
// before and after.
//
// A pipeline's rows live in one database: the shared one, or the
// pipeline's own (Databases). The service answers for every database at
// once: lists and counts merge them, an action goes to the database that
// holds its rows, and while a pipeline's rows are being moved (package
// relocation) the rows left behind are frozen and captures continue them.
//
// Upkeep keeps the tables bounded and consistent on the cron, in bounded
// batches whose cost does not grow with the backlog: retention by age and
// per key, rescue of rows stuck in replaying, the daily recount of
// dlq_tally, audit retention, and the alert conditions the alerts engine
// evaluates.
package dlq
