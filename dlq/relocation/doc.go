// Package relocation moves a pipeline's dead letters from the database
// they were captured in to the pipeline's own database, without losing or
// altering a row.
//
// A move has three steps, each an admin call an operator can repeat.
// Export (package dlq, GET /admin/dlq/export with include_raw) writes each
// row with the fields a copy needs. Import (POST /admin/dlq/import) parses
// those lines strictly (ParseImport: every field present, every value in
// range, ids and message ids distinct) and writes them into the database of
// their source queue as they were, recording the version of each row it
// took; a line of a message the database already holds is merged into that
// row, so a run repeated after a failure imports nothing twice. Release
// (POST /admin/dlq/release) then deletes, window by window, the old rows
// whose version the new database took, checked by the DELETE itself: a row
// that changed after its export stays and is counted, to be exported again.
//
// While a move is under way the rest of redrive holds still around it
// (package dlq: Databases.Frozen, Databases.Elsewhere and the captures that
// continue a row left in the old database); docs/operations.md "Move a
// pipeline to its own database" tells the whole story. Every state change
// here is one statement or one D1 batch, and the counts (dlq_tally,
// dlq_activity, dlq_signatures) move with the rows in the same batch.
package relocation
