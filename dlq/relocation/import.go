package relocation

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/sqlbatch"
)

// Import writes exported rows (ParseImport) into the database of their
// source queue (Databases.OfQueue) for POST /admin/dlq/import, as they were:
// id, message ids, body and content type, status, times, replay count,
// history, signature; each row records the version it was imported from
// (moved_version, RowVersionSQL), the one Release deletes in the old
// database.
//
// A line whose message_id the database already holds is the same message:
// the row there is its copy (imported before, the line being a newer
// version of it) or a redelivery of it captured there after the switch.
// The line is merged into that row, which keeps its id: the newer of the
// two (updated_at) gives the status and its action times, replay_count
// adds the replays the line has beyond the version merged before (all of
// them for a row captured there), first_failed_at is the earlier, and a
// captured row's history follows the line's; moved_version becomes the
// line's, so that Release deletes the old row. A line of a version already
// taken, or whose id another message holds, is skipped: a run repeated
// after a failure imports nothing twice.
//
// One batch of six statements, all or nothing, the lines bound as one
// JSON value each: the kept counts of the rows to be inserted (dlq_tally,
// dlq_activity, dlq_signatures: one row written per group, as capture
// does), the merges (their counts moved by the per-row triggers, as for
// any status change), then the rows, inserted with tally_seq = 1 so that
// the per-row trigger dlq_messages_inserted leaves the counts to the
// batch. A row's hour of failure counts it (n) but not as a capture
// (events): it was captured once, in the database it came from. A sixth
// statement adds the lines' earliest action time to retention_rescans, so
// that retention looks at the imported and merged rows (RescanMarkSQL).
type Import struct {
	DBs dlq.Databases
}

// ImportResult is the answer of an import.
type ImportResult struct {
	// Database is the binding the lines went to.
	Database string `json:"database"`
	// Lines is the number of lines read.
	Lines int `json:"lines"`
	// Imported is the number of rows written.
	Imported int `json:"imported"`
	// Merged is the number of lines merged into the row of their
	// message_id the database held (a newer version of a copy, or a
	// redelivery captured there).
	Merged int `json:"merged"`
	// Skipped is the number of lines neither imported nor merged: their
	// version was taken before, or their id is another message's.
	Skipped int `json:"skipped"`
}

// importNewSQL is the lines bound to it whose row is not in the database
// yet (by id or message_id: one index lookup each).
const importNewSQL = `WITH n AS (SELECT j.value AS v FROM json_each(?) AS j
	WHERE NOT EXISTS (SELECT 1 FROM dlq_messages d WHERE d.id = j.value ->> '$.id')
		AND NOT EXISTS (SELECT 1 FROM dlq_messages d WHERE d.message_id = j.value ->> '$.message_id')) `

const (
	importTallySQL = importNewSQL + `INSERT INTO dlq_tally(status, source_queue, label_key, n)
	SELECT v ->> '$.status', v ->> '$.source_queue',
		CASE WHEN v ->> '$.status' = 'pending' AND v ->> '$.brewer' IS NOT NULL THEN '=' || (v ->> '$.brewer') ELSE '' END, COUNT(*)
	FROM n GROUP BY 1, 2, 3
	ON CONFLICT(status, source_queue, label_key) DO UPDATE SET n = n + excluded.n`

	importActivitySQL = importNewSQL + `INSERT INTO dlq_activity(kind, hour, source_queue, n, events)
	SELECT kind, hour, q, COUNT(*), 0 FROM (
		SELECT 'failed' AS kind, CAST(v ->> '$.failed_at' AS INTEGER) / 3600000 AS hour, v ->> '$.source_queue' AS q FROM n
		UNION ALL SELECT v ->> '$.status', CAST(v ->> '$.action_at' AS INTEGER) / 3600000, v ->> '$.source_queue' FROM n
			WHERE v ->> '$.action_at' IS NOT NULL)
	GROUP BY 1, 2, 3
	ON CONFLICT(kind, hour, source_queue) DO UPDATE SET n = n + excluded.n`

	importSignaturesSQL = importNewSQL + `INSERT INTO dlq_signatures(signature, class, text, source_queue,
		pending, replaying, replayed, acknowledged, first_seen, last_seen, versions, sample_ids, announced_at)
	SELECT v ->> '$.sig.signature', v ->> '$.sig.class', v ->> '$.sig.text', v ->> '$.sig.source_queue',
		SUM(v ->> '$.status' = 'pending'), SUM(v ->> '$.status' = 'replaying'),
		SUM(v ->> '$.status' = 'replayed'), SUM(v ->> '$.status' = 'acknowledged'),
		MIN(v ->> '$.sig.first_seen'), MAX(v ->> '$.failed_at'), v ->> '$.sig.versions', v ->> '$.sig.sample_ids',
		MIN(v ->> '$.sig.announced_at')
	FROM n WHERE v ->> '$.sig.signature' IS NOT NULL GROUP BY 1
	ON CONFLICT(signature) DO UPDATE SET pending = pending + excluded.pending, replaying = replaying + excluded.replaying,
		replayed = replayed + excluded.replayed, acknowledged = acknowledged + excluded.acknowledged,
		first_seen = min(first_seen, excluded.first_seen), last_seen = max(last_seen, excluded.last_seen),
		announced_at = COALESCE(announced_at, excluded.announced_at)`

	importRowsSQL = `INSERT INTO dlq_messages(id, message_id, row_key, label_1, label_2, failed_at, failure_count,
		failure_reason, source_queue, status, replay_count, replayed_at, acknowledged_at, raw_message, last_message_id,
		first_failed_at, failure_class, raw_encoding, replaying_at, acknowledged_note, updated_at, content_type,
		body_hash, tally_seq, history, history_dropped, signature, version, body_edited, moved_version)
	SELECT j.value ->> '$.id', j.value ->> '$.message_id', j.value ->> '$.beer_id', j.value ->> '$.beer_name',
		j.value ->> '$.brewer', j.value ->> '$.failed_at', j.value ->> '$.failure_count', j.value ->> '$.failure_reason',
		j.value ->> '$.source_queue', j.value ->> '$.status', j.value ->> '$.replay_count', j.value ->> '$.replayed_at',
		j.value ->> '$.acknowledged_at', j.value ->> '$.raw_message', j.value ->> '$.last_message_id',
		j.value ->> '$.first_failed_at', j.value ->> '$.failure_class', j.value ->> '$.raw_encoding',
		j.value ->> '$.replaying_at', j.value ->> '$.acknowledged_note', j.value ->> '$.updated_at',
		j.value ->> '$.content_type', j.value ->> '$.body_hash', 1, j.value ->> '$.history',
		j.value ->> '$.history_dropped', j.value ->> '$.signature.signature', j.value ->> '$.version',
		j.value ->> '$.body_edited', ` + lineVersionSQL + `
	FROM json_each(?) AS j
	WHERE NOT EXISTS (SELECT 1 FROM dlq_messages d WHERE d.id = j.value ->> '$.id')
		AND NOT EXISTS (SELECT 1 FROM dlq_messages d WHERE d.message_id = j.value ->> '$.message_id')
	RETURNING id`
)

// lineVersionSQL is RowVersionSQL of the line j.value.
const lineVersionSQL = `json_array(j.value ->> '$.updated_at', j.value ->> '$.status', j.value ->> '$.replay_count')`

// importMergeSQL merges each line into the row of its message_id the
// database holds, unless that row took the line's version already (see
// Import). The lines just inserted by the batch carry their own version.
var importMergeSQL = `UPDATE dlq_messages SET
		status = CASE WHEN l.u > dlq_messages.updated_at THEN l.status ELSE dlq_messages.status END,
		replayed_at = CASE WHEN l.u > dlq_messages.updated_at THEN l.replayed_at ELSE dlq_messages.replayed_at END,
		acknowledged_at = CASE WHEN l.u > dlq_messages.updated_at THEN l.acknowledged_at ELSE dlq_messages.acknowledged_at END,
		acknowledged_note = CASE WHEN l.u > dlq_messages.updated_at THEN l.note ELSE dlq_messages.acknowledged_note END,
		replaying_at = CASE WHEN l.u > dlq_messages.updated_at THEN l.replaying_at ELSE dlq_messages.replaying_at END,
		replay_count = dlq_messages.replay_count + max(0, l.rc - COALESCE(dlq_messages.moved_version ->> '$[2]',
			CASE WHEN dlq_messages.id = l.id THEN dlq_messages.replay_count ELSE 0 END)),
		first_failed_at = min(dlq_messages.first_failed_at, l.first_failed_at),
		history = CASE WHEN dlq_messages.id = l.id THEN dlq_messages.history ELSE ` + dlq.HistoryKeepSQL("l.history", "dlq_messages.history") + ` END,
		history_dropped = CASE WHEN dlq_messages.id = l.id THEN dlq_messages.history_dropped
			ELSE dlq_messages.history_dropped + l.dropped + ` + dlq.HistoryDroppedSQL("l.history", "dlq_messages.history") + ` END,
		updated_at = max(dlq_messages.updated_at, l.u),
		moved_version = l.v
	FROM (SELECT j.value ->> '$.id' AS id, j.value ->> '$.message_id' AS m, j.value ->> '$.source_queue' AS q,
			j.value ->> '$.updated_at' AS u, j.value ->> '$.status' AS status, j.value ->> '$.replayed_at' AS replayed_at,
			j.value ->> '$.acknowledged_at' AS acknowledged_at, j.value ->> '$.acknowledged_note' AS note,
			j.value ->> '$.replaying_at' AS replaying_at, j.value ->> '$.replay_count' AS rc,
			j.value ->> '$.first_failed_at' AS first_failed_at, j.value ->> '$.history' AS history,
			j.value ->> '$.history_dropped' AS dropped, ` + lineVersionSQL + ` AS v
		FROM json_each(?) AS j) AS l
	WHERE dlq_messages.message_id = l.m AND dlq_messages.source_queue = l.q AND dlq_messages.moved_version IS NOT l.v
	RETURNING id`

// importCount is a line as the count statements read it (no body).
type importCount struct {
	ID          int64                `json:"id"`
	MessageID   string               `json:"message_id"`
	Status      string               `json:"status"`
	SourceQueue string               `json:"source_queue"`
	Brewer      *string              `json:"brewer"`
	FailedAt    int64                `json:"failed_at"`
	ActionAt    *int64               `json:"action_at"` // replayed_at of a replayed row, acknowledged_at of an acknowledged one
	Sig         *dlq.ImportSignature `json:"sig"`
}

// Run imports rows (from ParseImport). Every row must belong to one
// database (400 MIXED_DATABASES otherwise: a request is one batch), and
// keep its ids apart (checkIDs).
func (im Import) Run(ctx context.Context, rows []ImportRow) (ImportResult, error) {
	if len(rows) == 0 {
		return ImportResult{}, dlq.InputErr("INVALID_REQUEST", "no lines")
	}
	d := im.DBs.OfQueue(rows[0].SourceQueue)
	counts := make([]importCount, len(rows))
	for i, r := range rows {
		if o := im.DBs.OfQueue(r.SourceQueue); o.Name != d.Name {
			return ImportResult{}, dlq.InputErr("MIXED_DATABASES", "line %d: source_queue %q is stored in database %s, line 1's in %s: send each database's lines in a request of their own",
				i+1, dlq.ClipName(r.SourceQueue), o.Name, d.Name)
		}
		c := importCount{ID: r.ID, MessageID: r.MessageID, Status: r.Status, SourceQueue: r.SourceQueue, Brewer: r.Brewer,
			FailedAt: r.FailedAt, Sig: r.Signature}
		switch r.Status {
		case dlq.StatusReplayed:
			c.ActionAt = r.ReplayedAt
		case dlq.StatusAcknowledged:
			c.ActionAt = r.AcknowledgedAt
		}
		counts[i] = c
	}
	if err := im.checkIDs(ctx, d, rows); err != nil {
		return ImportResult{}, err
	}
	full, err := json.Marshal(rows)
	if err != nil {
		return ImportResult{}, fmt.Errorf("dlq import: %w", err)
	}
	lean, err := json.Marshal(counts)
	if err != nil {
		return ImportResult{}, fmt.Errorf("dlq import: %w", err)
	}
	out, err := dlq.BatchOf(d.Batch, d.DB).Batch(ctx,
		sqlbatch.Stmt{SQL: importTallySQL, Args: []any{string(lean)}},
		sqlbatch.Stmt{SQL: importActivitySQL, Args: []any{string(lean)}},
		sqlbatch.Stmt{SQL: importSignaturesSQL, Args: []any{string(lean)}},
		sqlbatch.Stmt{SQL: importMergeSQL, Args: []any{string(full)}},
		sqlbatch.Stmt{SQL: importRowsSQL, Args: []any{string(full)}},
		sqlbatch.Stmt{SQL: dlq.RescanMarkSQL, Args: []any{string(lean)}})
	if err != nil {
		return ImportResult{}, fmt.Errorf("dlq import: %w", err)
	}
	var merged, inserted []json.RawMessage
	if err := json.Unmarshal(out[3], &merged); err != nil {
		return ImportResult{}, fmt.Errorf("dlq import: result: %w", err)
	}
	if err := json.Unmarshal(out[4], &inserted); err != nil {
		return ImportResult{}, fmt.Errorf("dlq import: result: %w", err)
	}
	return ImportResult{Database: d.Name, Lines: len(rows), Imported: len(inserted), Merged: len(merged),
		Skipped: len(rows) - len(inserted) - len(merged)}, nil
}

// idRange is the width of a database's id range (IDBase).
const idRange = 1 << 40

// checkIDs keeps each database's ids apart (IDBase): an id past d's range
// would move its AUTOINCREMENT sequence into another database's (SQLite
// continues after the largest id inserted), and a database other than the
// shared one takes rows only once its ids start at its own range (seeded
// by make migrate-local and make deploy), or the ids it gives its own
// captures would follow the moved ones, inside the shared database's range.
func (im Import) checkIDs(ctx context.Context, d dlq.Database, rows []ImportRow) error {
	base := dlq.IDBase(d.Name)
	for i, r := range rows {
		if r.ID >= base+idRange {
			return dlq.InputErr("ID_OUT_OF_RANGE", "line %d: id %d is past database %s's id range (below %d): importing it would move %s's ids into another database's",
				i+1, r.ID, d.Name, base+idRange, d.Name)
		}
	}
	if base == 0 {
		return nil
	}
	var seq int64
	if err := d.DB.QueryRowContext(ctx, `SELECT COALESCE(MAX(seq), 0) FROM sqlite_sequence WHERE name = 'dlq_messages'`).Scan(&seq); err != nil {
		return fmt.Errorf("dlq import: %s's id sequence: %w", d.Name, err)
	}
	if seq < base {
		return dlq.InputErr("DATABASE_NOT_SEEDED", "database %s's ids do not start at its own range (%d) yet: migrate it with make migrate-local or make deploy (which seed them) before importing",
			d.Name, base)
	}
	return nil
}
