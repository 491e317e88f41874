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
// The rooms around this core each hold one concern: package inspect reads
// (list, detail, groups, stats, time series, export), package resolve ends
// a dead letter (replay, edited replay, replay tasks, acknowledge),
// package upkeep is the cron's work (retention, rescue, recounts, alert
// conditions) and package relocation moves a pipeline's rows between
// databases. They share what is here: one Filter for the list, bulk
// actions, tasks and export, paged by signed, opaque cursors; the rows of
// a page and the dry run of a bulk action; the audit of every admin
// action, with its before and after.
//
// A pipeline's rows live in one database: the shared one, or the
// pipeline's own (Databases). Every room answers for all of them at once:
// listings merge the databases in one order (the Stream machinery here),
// an action goes to the database that holds its rows, and while a
// pipeline's rows are being moved the rows left behind are frozen and
// captures continue them.
//
// The configured pipelines (Pipelines) are a value, not a global: main.go
// hands them to NewDatabases, every database's Store carries them, and a
// service reads them from its Databases (or its own Pipelines field). A
// filter names a pipeline through them, a row object shows its pipeline,
// key and labels through them, and a capture reads a body's key and labels
// through its queue's pointers. Nil Pipelines are the beer pipeline alone.
package dlq
