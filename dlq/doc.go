// Package dlq is the dead-letter domain: everything redrive does with a
// message once it has reached a dead-letter queue. It stores rows in D1's
// dlq_messages (schema.sql) and keeps their counts in dlq_tally,
// dlq_activity and dlq_signatures, mostly through triggers
// (migrations/0012). It imports no HTTP and no js/wasm code: handlers
// serve it, jobs run its scheduled parts, and it is tested natively
// against SQLite with D1's limits.
//
// The map, by capability (file: main names):
//
// Shared types: types.go holds the Status* values, Message (a row as the
// admin API shows it), Outcome, Requester and InputError.
//
// Capture, from a DLQ batch to a stored row:
//   - capture.go: Capture, the DLQ consumer (ConsumeBatch)
//   - store.go: Store, Failure (one batch of upserts; lineage of replays)
//   - unavailable.go: RetryDelay, SurvivableOutage, Unroutable (D1 outages, queues without a consumer)
//   - attempts.go: Attempt, Attempts, HistoryEntry (why each attempt failed, before the DLQ)
//   - signature.go: Signature, SignatureOf, NormalizeReason (failure groups' keys)
//
// Reading rows:
//   - filter.go: Filter (one filter for list, bulk actions, tasks, export)
//   - cursor.go: Cursors (signed, opaque page cursors)
//   - list.go: List, Page (GET /admin/dlq)
//   - detail.go: Detail, MessageDetail (one row with its history and audit)
//   - groups.go: Groups, Group (failure groups by signature)
//   - stats.go, tally.go: Stats, StatsReport (counts from dlq_tally, never a scan)
//   - pipelines.go: the configured pipelines (key, labels, filter by pipeline)
//   - timeseries.go: TimeSeries, Series (dlq_activity by hour)
//   - export.go: Export, CSVExport (NDJSON and CSV, bounded by bytes)
//   - selection.go: Selection, Preview (what a bulk action or task would touch)
//
// Acting on rows (each state change is one statement or one batch):
//   - replay.go: Replay (ids or filter; claim, send, settle)
//   - replay_edited.go: Replay.RunEdited (edit and replay one row)
//   - replay_task.go: ReplayTasks, Task, Canary (paced, canaried replay run by the cron)
//   - acknowledge.go: Acknowledge
//   - audit.go: Audit, AuditEntry (every admin action, before and after)
//
// Alert conditions (run by the alerts job; alerts holds the engine):
//   - alert_conditions.go: PendingHigh, OldestPending, RepeatFailures, CapEvicting, RetentionBehind, ReplayCanary
//   - signature_alert.go: NewFailureSignature (a new failure group, announced once)
//
// Upkeep (scheduled jobs that keep the tables bounded and consistent; each
// implements jobs.Job and drains in bounded batches):
//   - rescue.go: Rescue (rows stuck in replaying go back to pending)
//   - retention.go, expiry.go, backlog.go: Retention (age and per-key cap), the shared expiry statements, how far behind a job is
//   - retention_pipelines.go, retention_rescans.go: each pipeline's retention (windows), rows an import wrote behind the positions
//   - audit_retention.go: AuditRetention
//   - tallyjob.go: TallyCheck (recounts dlq_tally against the rows)
package dlq
