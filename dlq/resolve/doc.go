// Package resolve is how a dead letter comes to an end: it is sent back to
// its queue (replay), edited and sent (edited replay), replayed at a pace
// with a canary (replay tasks), or dismissed (acknowledge).
//
// Every action takes its rows by ids or by the same Filter the list uses,
// within the database that holds them, and changes them in one statement
// or one D1 batch. A replay claims its rows atomically (pending to
// replaying, so two replays never send one message twice), sends each
// body byte for byte with the content type it was produced with, and
// settles: replayed, or back to pending with the send's error. Rows a
// crash leaves in replaying are rescued by package upkeep. The replayed
// message carries the row's lineage, so if it fails again capture updates
// the same row and its replay_count grows.
//
// A replay task works through a filter in steps on the cron, each step
// bounded, pausable and resumable; its first rows are a canary that must
// succeed often enough before the rest are sent. Acknowledge marks rows
// dealt with and keeps them until retention.
//
// Actions is the admin API's door to all of this. Each of its methods is
// one action: it validates its request once, chooses the database it acts
// on (that of its rows, its filter's pipeline or its task), runs there,
// and records itself in that database's audit log through dlq.Audit.Run
// with its typed result, whose AuditOutcome and AuditCounts say what the
// entry holds. The HTTP handlers parse, authorise and call one method;
// they never choose a database.
package resolve
