package dlq

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strconv"
)

// Moving a pipeline's rows to its own database (docs/operations.md
// "Move a pipeline to its own database"): GET /admin/dlq/export with
// include_raw writes each row with the fields a copy needs (AddMoveFields),
// POST /admin/dlq/import writes those lines into the database of their
// source queue (Import), and POST /admin/dlq/release deletes from the old
// database the rows the pipeline's own database holds (Release).

// RowVersionSQL is a row's version as a move compares it: its updated_at,
// status and replay_count, as a JSON array. An import records the version
// of each row it takes (moved_version); a release deletes an old row only
// while it is still of the version its copy took.
const RowVersionSQL = `json_array(updated_at, status, replay_count)`

// MoveFieldNames are the fields an NDJSON export with include_raw adds to
// each row, after raw_message and raw_encoding: what a copy of the row
// needs beyond the Message fields (GET /admin/dlq/{id} shows them).
var MoveFieldNames = []string{"last_message_id", "body_hash", "body_edited", "history", "history_dropped", "version", "signature"}

// moveFieldsSQL reads MoveFieldNames of the rows whose ids are the JSON
// array bound to it, as one JSON object keyed by id: one row read per row
// and one per signature. signature is the row's failure group as its
// database keeps it (null for rows captured before groups), so that the
// group exists wherever the row goes.
const moveFieldsSQL = `SELECT json_group_object(m.id, json_object('last_message_id', m.last_message_id,
		'body_hash', m.body_hash, 'body_edited', m.body_edited, 'history', json(m.history),
		'history_dropped', m.history_dropped, 'version', m.version,
		'signature', json(CASE WHEN m.signature IS NOT NULL THEN json_object('signature', m.signature,
			'class', COALESCE(s.class, m.failure_class, 'unknown'), 'text', COALESCE(s.text, ''),
			'source_queue', COALESCE(s.source_queue, ''), 'first_seen', COALESCE(s.first_seen, m.first_failed_at),
			'announced_at', s.announced_at, 'versions', json(COALESCE(s.versions, '[]')),
			'sample_ids', json(COALESCE(s.sample_ids, '[]'))) END))) AS fields
	FROM dlq_messages m LEFT JOIN dlq_signatures s ON s.signature = m.signature
	WHERE m.id IN (SELECT value FROM json_each(?))`

// AddMoveFields appends MoveFieldNames to each of rows (Message objects as
// the list gives them, with raw_message), read from db in one statement.
// The fields the list wrote stay byte for byte as they were.
func AddMoveFields(ctx context.Context, db *sql.DB, rows []json.RawMessage) error {
	if len(rows) == 0 {
		return nil
	}
	ids := make([]int64, len(rows))
	for i, r := range rows {
		var m struct {
			ID int64 `json:"id"`
		}
		if err := json.Unmarshal(r, &m); err != nil {
			return fmt.Errorf("dlq export: row: %w", err)
		}
		ids[i] = m.ID
	}
	list, _ := json.Marshal(ids)
	var fields string
	if err := db.QueryRowContext(ctx, moveFieldsSQL, string(list)).Scan(&fields); err != nil {
		return fmt.Errorf("dlq export: move fields: %w", err)
	}
	byID := map[string]json.RawMessage{}
	if err := json.Unmarshal([]byte(fields), &byID); err != nil {
		return fmt.Errorf("dlq export: move fields: %w", err)
	}
	for i, r := range rows {
		f, ok := byID[strconv.FormatInt(ids[i], 10)]
		r = bytes.TrimRight(r, " \t\r\n")
		if !ok || len(f) < 2 || len(r) < 2 || r[len(r)-1] != '}' {
			// The row went between the two statements (retention): it is
			// exported as the list read it, which an import refuses.
			continue
		}
		out := make([]byte, 0, len(r)+len(f))
		out = append(append(append(out, r[:len(r)-1]...), ','), f[1:]...)
		rows[i] = out
	}
	return nil
}

// ImportSignature is a row's failure group as its old database kept it
// (dlq_signatures).
type ImportSignature struct {
	Signature   string          `json:"signature"`
	Class       string          `json:"class"`
	Text        string          `json:"text"`
	SourceQueue string          `json:"source_queue"`
	FirstSeen   int64           `json:"first_seen"`
	AnnouncedAt *int64          `json:"announced_at"`
	Versions    json.RawMessage `json:"versions"`
	SampleIDs   json.RawMessage `json:"sample_ids"`
}
