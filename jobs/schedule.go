// Package jobs holds redrive's scheduled work: the cron expressions it runs on.
package jobs

// Cron expressions of the worker's two triggers; wrangler.jsonc's
// triggers.crons must list exactly these (a test keeps them in step: the
// cron router ignores an expression it does not know, so drift would
// silently disable jobs).
const (
	// Frequent runs the rescue, the catch-up and the alerts, and continues
	// the retention jobs while their last run left work (WhileMore).
	Frequent = "*/5 * * * *"
	// Daily runs the retention jobs (03:17 UTC, off the busy hour).
	Daily = "17 3 * * *"
)

// Crons lists every expression main registers jobs for.
var Crons = []string{Frequent, Daily}
