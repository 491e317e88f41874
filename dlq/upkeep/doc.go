// Package upkeep is the dead-letter store's scheduled work: what the cron
// does so that the tables stay bounded and consistent and on-call hears
// about what matters, at a cost that does not grow with the backlog.
//
// Schedule builds that work once per database that holds dead letters,
// each database's jobs bounded on their own (batch size, time budget) and
// recorded in the shared database's job_runs. Retention deletes acted-on
// rows by age and keeps at most so many per key, continuing from the
// positions its last run recorded instead of scanning, and rescans only
// the stretch an import wrote behind them. Rescue returns rows stuck in
// replaying (a replay that crashed between its send and its settle) to
// pending. The daily tally check recounts dlq_tally and the recent hours
// of dlq_activity against the rows, which the triggers keep in step
// between runs. Audit retention bounds admin_audit.
//
// The alert conditions read the same kept counts (never a scan of the
// rows): pending rows over a threshold, the oldest pending row, rows that
// fail again after many replays, the per-key cap evicting, retention
// falling behind, a replay task's canary failing, and each new failure
// group, announced once. The alerts package owns the engine that turns
// them into notifications.
//
// While a pipeline's rows are being moved (package relocation), upkeep
// holds still where a move needs it: rescue skips the rows left in the
// old database, and the new database's retention waits for the move.
package upkeep
