// Package inspect is what an operator reads about dead letters: the list
// and its filters, one message in detail (its attempts, lineage and
// audit), the failure groups, the stats, the hourly time series and the
// export.
//
// Nothing here writes a row, and nothing here costs what the backlog
// costs: counts come from the kept tallies (dlq_tally, dlq_activity,
// dlq_signatures), a page reads about as many rows as it shows, and an
// export is bounded by bytes. A listing pages with signed, opaque cursors
// bound to its filter. With several databases every listing merges theirs
// in one order, its cursor carrying a position in each, so a walk lists
// every row of every database exactly once.
package inspect
