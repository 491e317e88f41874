package relocation

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"

	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/sqlbatch"
)

// Release deletes from a database that is not a pipeline's own the rows of
// that pipeline's queue whose version its own database took: the last step
// of a move (POST /admin/dlq/release), after the import. The own
// database's row of the same message_id (the copy, or the row a redelivery
// captured there, into which the import merged the old one) records the
// version it was imported from (moved_version: updated_at, status and
// replay_count); the old row is deleted only while it is still exactly
// that version, checked by the DELETE itself, so a claim, replay or
// acknowledge landing in the old database after the export keeps the row
// (counted as changed: export and import it again, which merges the newer
// version, then release again). A row whose message the own database does
// not hold, or holds without having imported it, is never deleted: it is
// counted as not imported, and stays. A copy imported before versions were
// recorded stands for the old row of the same id while it is no older
// (updated_at), and then for the version the scan read.
//
// Each call scans one window of ids (ReleaseWindow ids from the first id
// after the position After, so a database whose ids start at its own range
// is reached at once and a gap costs no call; ids in a window are dense, so
// at most that many rows are read, whatever the database holds) for at
// most Limit of the queue's rows, checks them in the own database (one
// lookup each by message_id) and deletes, in one batch, those still of
// the version their copy took, keeping the counts right: every statement
// of the batch selects the rows by the same exact version, so the counts
// move for exactly the rows deleted. The triggers move
// dlq_tally, dlq_activity and dlq_signatures for pending and replaying
// rows; the batch moves them for replayed and acknowledged ones (which
// the triggers leave to the daily dlq_tally job). Failure groups of the
// queue left with no row are deleted, and after the last window the
// queue's attempt records (message_attempts).
type Release struct {
	DBs dlq.Databases
}

// Release bounds.
const (
	// ReleaseWindow is how many ids one call scans.
	ReleaseWindow = 5000
	// ReleaseMaxLimit is the most rows one call deletes; DefaultReleaseLimit when 0.
	ReleaseMaxLimit     = 500
	DefaultReleaseLimit = 500
)

// ReleaseParams is a release request.
type ReleaseParams struct {
	// Pipeline names the pipeline whose rows are released.
	Pipeline string `json:"pipeline"`
	// Database is the binding to delete them from (not the pipeline's own).
	Database string `json:"database"`
	// Limit bounds the rows deleted (1..ReleaseMaxLimit; 0: the default).
	Limit int `json:"limit"`
	// After is the position: ids up to it were scanned by earlier calls.
	After int64 `json:"after"`
}

// ReleaseResult is the answer of a release call.
type ReleaseResult struct {
	Pipeline string `json:"pipeline"`
	// Database is where rows were deleted; Into the pipeline's own database.
	Database string `json:"database"`
	Into     string `json:"into"`
	// Scanned is the number of the queue's rows found in the window.
	Scanned int `json:"scanned"`
	// Released is the number of rows deleted.
	Released int `json:"released"`
	// NotImported counts the rows found that the own database does not
	// hold: import them (export them from Database) and release again.
	NotImported int `json:"not_imported"`
	// Changed counts the rows found whose version is not the one their
	// copy was imported from (claimed, replayed or acknowledged in
	// Database after the export): not deleted. Export and import them
	// again (the import merges the newer version into the copy), then
	// release again.
	Changed int `json:"changed"`
	// NextAfter continues the scan (pass it as after); null once the
	// window reached the database's last id.
	NextAfter *int64 `json:"next_after"`
	// Remaining is the queue's rows left in Database by its kept counts
	// (dlq_tally; retention's deletions of replayed and acknowledged rows
	// are counted out by the daily dlq_tally job).
	Remaining int64 `json:"remaining"`

	// params are the request's, for the audit entry (Audited).
	params ReleaseParams
}

const (
	releaseScanSQL = `SELECT id, message_id AS m, signature AS s, updated_at AS u, ` + dlq.RowVersionSQL + ` AS v FROM dlq_messages
	WHERE id > ? AND id <= ? AND source_queue = ? ORDER BY id LIMIT ?`
	// releaseBoundsSQL is the first id after the position and the last id
	// (two index lookups).
	releaseBoundsSQL = `SELECT (SELECT MIN(id) FROM dlq_messages WHERE id > ?) AS lo, (SELECT COALESCE(MAX(id), 0) FROM dlq_messages) AS hi`
	// releaseHeldSQL is, for each row found, the version its message's row
	// in the own database was imported from (a legacy copy of the same id,
	// no older than the row: the version the scan read), and whether that
	// row has the same id.
	releaseHeldSQL = `SELECT j.value ->> '$.id' AS id, d.id = j.value ->> '$.id' AS same,
		CASE WHEN d.moved_version IS NOT NULL THEN d.moved_version
			WHEN d.id = j.value ->> '$.id' AND d.updated_at >= j.value ->> '$.u' THEN j.value ->> '$.v' END AS v
		FROM json_each(?) AS j JOIN dlq_messages d ON d.message_id = j.value ->> '$.m' AND d.source_queue = ?`
	// releaseExact selects the rows of the bound list ([{id, v}], bound
	// twice) still of version v: the one condition of every statement of
	// the batch.
	releaseExact = `id IN (SELECT value ->> '$.id' FROM json_each(?))
		AND (id, ` + dlq.RowVersionSQL + `) IN (SELECT value ->> '$.id', value ->> '$.v' FROM json_each(?))`
	// releaseIDs is releaseExact's replayed and acknowledged rows, looked up
	// by id (+status: never through idx_dlq_status_failed, which would read
	// every replayed and acknowledged row of the database).
	releaseIDs      = releaseExact + ` AND +status IN ('replayed', 'acknowledged')`
	releaseTallySQL = `UPDATE dlq_tally SET n = dlq_tally.n - c.cnt FROM (SELECT status, source_queue, COUNT(*) AS cnt FROM dlq_messages WHERE ` + releaseIDs + ` GROUP BY 1, 2) AS c
	WHERE dlq_tally.status = c.status AND dlq_tally.source_queue = c.source_queue AND dlq_tally.label_key = ''`
	releaseActivitySQL = `UPDATE dlq_activity SET n = dlq_activity.n - c.cnt FROM (SELECT kind, hour, q, COUNT(*) AS cnt FROM (
		SELECT 'failed' AS kind, CAST(failed_at AS INTEGER) / 3600000 AS hour, source_queue AS q FROM dlq_messages WHERE ` + releaseIDs + `
		UNION ALL SELECT status, CAST(CASE status WHEN 'replayed' THEN replayed_at ELSE acknowledged_at END AS INTEGER) / 3600000, source_queue
			FROM dlq_messages WHERE ` + releaseIDs + ` AND CASE status WHEN 'replayed' THEN replayed_at ELSE acknowledged_at END IS NOT NULL)
		GROUP BY 1, 2, 3) AS c
	WHERE dlq_activity.kind = c.kind AND dlq_activity.hour = c.hour AND dlq_activity.source_queue = c.q`
	releaseSignaturesSQL = `UPDATE dlq_signatures SET replayed = dlq_signatures.replayed - c.r, acknowledged = dlq_signatures.acknowledged - c.a
	FROM (SELECT signature AS sig, SUM(status = 'replayed') AS r, SUM(status = 'acknowledged') AS a FROM dlq_messages
		WHERE ` + releaseIDs + ` AND signature IS NOT NULL GROUP BY 1) AS c
	WHERE dlq_signatures.signature = c.sig`
	releaseRowsSQL   = `DELETE FROM dlq_messages WHERE ` + releaseExact + ` AND source_queue = ? RETURNING id`
	releaseGroupsSQL = `DELETE FROM dlq_signatures WHERE signature IN (SELECT value FROM json_each(?))
		AND pending = 0 AND replaying = 0 AND replayed = 0 AND acknowledged = 0`
	releaseAttemptsSQL  = `DELETE FROM message_attempts WHERE queue = ?`
	releaseRemainingSQL = `SELECT COALESCE(SUM(n), 0) FROM dlq_tally WHERE source_queue = ?`
)

// Run releases one window.
func (rl Release) Run(ctx context.Context, p ReleaseParams) (ReleaseResult, error) {
	ps := rl.DBs.Pipelines()
	pl, ok := ps.ByName(p.Pipeline)
	if !ok {
		if _, err := ps.Queue(p.Pipeline); err != nil {
			return ReleaseResult{}, err
		}
		return ReleaseResult{}, dlq.InputErr("UNKNOWN_PIPELINE", "pipeline is required")
	}
	own := rl.DBs.OfQueue(pl.Queue)
	old, err := rl.DBs.Named(p.Database)
	switch {
	case err != nil:
		return ReleaseResult{}, err
	case old.Name == own.Name:
		return ReleaseResult{}, dlq.InputErr("OWN_DATABASE", "%s is pipeline %s's own database: there is nothing to release from it", old.Name, pl.Name)
	case p.Limit < 0 || p.Limit > ReleaseMaxLimit:
		return ReleaseResult{}, dlq.InputErr("INVALID_LIMIT", "limit must be 1..%d", ReleaseMaxLimit)
	case p.After < 0 || p.After > importMaxID:
		return ReleaseResult{}, dlq.InputErr("INVALID_AFTER", "after must be a non-negative id")
	}
	if p.Limit == 0 {
		p.Limit = DefaultReleaseLimit
	}
	res := ReleaseResult{Pipeline: pl.Name, Database: old.Name, Into: own.Name}
	found, next, err := rl.scan(ctx, old, pl.Queue, p)
	if err != nil {
		return res, err
	}
	res.Scanned, res.NextAfter = len(found), next
	held, stale, err := heldIn(ctx, own, pl.Queue, found)
	if err != nil {
		return res, err
	}
	if res.Released, err = rl.delete(ctx, old, pl.Queue, found, held, next == nil); err != nil {
		return res, err
	}
	// A row held whose delete matched nothing changed after its export
	// (or between the scan and the delete).
	res.Changed, res.NotImported = stale+len(held)-res.Released, len(found)-len(held)-stale
	if err := old.DB.QueryRowContext(ctx, releaseRemainingSQL, pl.Queue).Scan(&res.Remaining); err != nil {
		return res, fmt.Errorf("dlq release: remaining: %w", err)
	}
	return res, nil
}

// releaseRow is a row of the queue found in the old database.
type releaseRow struct {
	ID        int64   `json:"id"`
	MessageID string  `json:"m"`
	Signature *string `json:"s,omitempty"`
	UpdatedAt int64   `json:"u"`
	// Version is the row's version as the scan read it (RowVersionSQL).
	Version string `json:"v"`
}

// heldRow is a row found whose own database's copy took version V.
type heldRow struct {
	ID int64  `json:"id"`
	V  string `json:"v"`
}

// scan reads the queue's rows of the window after p.After; next is where
// the following call starts (nil: the window reached the last id).
func (rl Release) scan(ctx context.Context, old dlq.Database, q string, p ReleaseParams) ([]releaseRow, *int64, error) {
	var lo sql.NullInt64
	var maxID int64
	if err := old.DB.QueryRowContext(ctx, releaseBoundsSQL, p.After).Scan(&lo, &maxID); err != nil {
		return nil, nil, fmt.Errorf("dlq release: first id: %w", err)
	}
	if !lo.Valid {
		return nil, nil, nil
	}
	start := max(p.After, lo.Int64-1)
	end := start + ReleaseWindow
	rows, err := old.DB.QueryContext(ctx, releaseScanSQL, start, end, q, p.Limit)
	if err != nil {
		return nil, nil, fmt.Errorf("dlq release: scan: %w", err)
	}
	defer rows.Close()
	var found []releaseRow
	for rows.Next() {
		var r releaseRow
		if err := rows.Scan(&r.ID, &r.MessageID, &r.Signature, &r.UpdatedAt, &r.Version); err != nil {
			return nil, nil, fmt.Errorf("dlq release: scan: %w", err)
		}
		found = append(found, r)
	}
	if err := rows.Err(); err != nil {
		return nil, nil, fmt.Errorf("dlq release: scan: %w", err)
	}
	if len(found) == p.Limit {
		last := found[len(found)-1].ID
		return found, &last, nil
	}
	if end >= maxID {
		return found, nil, nil
	}
	return found, &end, nil
}

// heldIn returns the rows of found whose message own holds, imported from
// a known version (held, with that version), and how many more it holds
// an older copy of the same id of (stale). A message own holds under
// another id without having imported it (a redelivery captured there) is
// neither: not imported.
func heldIn(ctx context.Context, own dlq.Database, q string, found []releaseRow) (held []heldRow, stale int, err error) {
	if len(found) == 0 {
		return nil, 0, nil
	}
	list, _ := json.Marshal(found)
	rows, err := own.DB.QueryContext(ctx, releaseHeldSQL, string(list), q)
	if err != nil {
		return nil, 0, fmt.Errorf("dlq release: check %s: %w", own.Name, err)
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		var same bool
		var v sql.NullString
		if err := rows.Scan(&id, &same, &v); err != nil {
			return nil, 0, fmt.Errorf("dlq release: check %s: %w", own.Name, err)
		}
		switch {
		case v.Valid:
			held = append(held, heldRow{ID: id, V: v.String})
		case same:
			stale++
		}
	}
	return held, stale, rows.Err()
}

// delete removes the held rows from old in one batch, with their counts
// and their groups left empty; last adds the queue's attempt records.
func (rl Release) delete(ctx context.Context, old dlq.Database, q string, found []releaseRow, held []heldRow, last bool) (int, error) {
	if len(held) == 0 && !last {
		return 0, nil
	}
	ids, _ := json.Marshal(append([]heldRow{}, held...))
	var sigs []string
	for _, r := range found {
		if r.Signature != nil {
			sigs = append(sigs, *r.Signature)
		}
	}
	sigList, _ := json.Marshal(append([]string{}, sigs...))
	stmts := []sqlbatch.Stmt{
		{SQL: releaseTallySQL, Args: []any{string(ids), string(ids)}},
		{SQL: releaseActivitySQL, Args: []any{string(ids), string(ids), string(ids), string(ids)}},
		{SQL: releaseSignaturesSQL, Args: []any{string(ids), string(ids)}},
		{SQL: releaseRowsSQL, Args: []any{string(ids), string(ids), q}},
		{SQL: releaseGroupsSQL, Args: []any{string(sigList)}},
	}
	if last {
		stmts = append(stmts, sqlbatch.Stmt{SQL: releaseAttemptsSQL, Args: []any{q}})
	}
	out, err := dlq.BatchOf(old.Batch, old.DB).Batch(ctx, stmts...)
	if err != nil {
		return 0, fmt.Errorf("dlq release: %w", err)
	}
	var deleted []json.RawMessage
	if err := json.Unmarshal(out[3], &deleted); err != nil {
		return 0, fmt.Errorf("dlq release: result: %w", err)
	}
	return len(deleted), nil
}
