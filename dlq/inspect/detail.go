package inspect

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"sort"

	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/dlq/incidents"
)

// AuditWindow is how many of the newest admin_audit entries GET
// /admin/dlq/{id} searches for the ones that touched the row: the search
// reads that many audit rows at most, however long the log is. Older
// entries are in GET /admin/audit.
const AuditWindow = 500

// RelatedLimit bounds related_ids.
const RelatedLimit = 10

// ErrMessageNotFound is returned by Detail.Read for an id no row has.
var ErrMessageNotFound = errors.New("dlq message not found")

// Detail reads one dlq_messages row for GET /admin/dlq/{id}: every field,
// the body, its lineage and the audit entries that touched it. Two
// statements; rows read: 1 (the row) + 1 (its signature) + at most
// RelatedLimit (lineage index) + at most AuditWindow (admin_audit, newest first).
type Detail struct {
	DB *sql.DB
	// Others are the other databases bound (Databases.All but DB's): a
	// row moved into DB (POST /admin/dlq/import) keeps its id, and the
	// audit entries of the actions taken on it before the move stay in
	// the database it came from, so the audit is searched there too (one
	// more statement per database, at most AuditWindow entries each).
	Others []*sql.DB
	// Pipelines are the configured pipelines (nil: the beer one).
	Pipelines dlq.Pipelines
}

// MessageDetail is the detail response (handlers/openapi.json).
type MessageDetail struct {
	// Message is the row with raw_message and raw_encoding.
	Message dlq.Message `json:"message"`
	// LastMessageID is the queue message id of the latest failure stored
	// (message_id is the first): they differ once a replay failed again.
	LastMessageID string `json:"last_message_id"`
	// BodyHash is the replay lineage key (null until captured with it or replayed).
	BodyHash *string `json:"body_hash"`
	// RelatedIDs are other rows of the same source queue and body that a
	// replay has claimed (the replay lineage index), newest first, at most 10.
	RelatedIDs []int64 `json:"related_ids"`
	// Audit lists the entries among the newest AuditWindow that touched the
	// row, newest first.
	Audit []RowAuditEntry `json:"audit"`
	// AuditWindow is how many of the newest audit entries were searched.
	AuditWindow int `json:"audit_window"`
	// History is every failed attempt kept for the message, oldest first,
	// across its replays: the first 5 and the newest 45 (empty for rows
	// captured before histories were kept).
	History []dlq.HistoryEntry `json:"history"`
	// HistoryDropped counts the attempts left out between them.
	HistoryDropped int64 `json:"history_dropped"`
	// Signature is the failure group of the latest failure (null for rows
	// captured before signatures), with its class and normalised text.
	Signature *RowSignature `json:"signature"`
	// Version is the worker version the latest failure happened on (null when unknown).
	Version *string `json:"version"`
	// Replays are the replays of the row found in the audit window (not dry
	// runs), newest first: when, by which key fingerprint, with what outcome.
	Replays []RowReplay `json:"replays"`
}

// RowSignature is a row's failure group.
type RowSignature struct {
	Signature      string `json:"signature"`
	Class          string `json:"class"`
	Text           string `json:"text"`
	ReplayWillFail bool   `json:"replay_will_fail"`
	// Incident is the group's incident (null: the group's row is gone).
	Incident *incidents.Incident `json:"incident"`
}

// RowReplay is one replay of a row (from its audit entry).
type RowReplay struct {
	At             int64  `json:"at"`
	FinishedAt     *int64 `json:"finished_at"`
	KeyFingerprint string `json:"key_fingerprint"`
	// Principal names who replayed (null: before principals).
	Principal *string `json:"principal"`
	RequestID string  `json:"request_id"`
	Outcome   string  `json:"outcome"`
	MatchedBy string  `json:"matched_by"`
}

// RowAuditEntry is an audit entry and how it was tied to the row.
type RowAuditEntry struct {
	dlq.AuditEntry
	// MatchedBy is "ids" when the entry named the row, or "filter" for a
	// bulk action (not a dry run) whose filter fits the row and whose run
	// covers the row's latest acknowledge or replay time.
	MatchedBy string `json:"matched_by"`
}

// detailRowSQL reads the row: its Message JSON and the fields the rest of
// the detail needs.
func detailRowSQL(ps dlq.Pipelines) string {
	return `SELECT json_object(` + dlq.MessageFields(ps, true) + `) AS message, last_message_id, body_hash,
	source_queue, row_key, acknowledged_at, replayed_at, replaying_at,
	COALESCE(history, '[]') AS history_json, history_dropped, signature AS sig, version AS ver,
	(SELECT json_object('class', s.class, 'text', s.text, 'incident', json_object('signature', s.signature, 'status', s.incident,
		'occurrence', s.incident_seq, 'since', s.incident_at, 'resolved_at', s.resolved_at, 'snoozed_until', s.snoozed_until,
		'owner', s.owner, 'note', s.note)) FROM dlq_signatures s WHERE s.signature = dlq_messages.signature) AS sig_group
	FROM dlq_messages WHERE id = ?`
}

// detailAuditSQL returns related_ids and the matching audit entries as JSON
// (one round trip). ?1 id, ?2 source_queue, ?3 body_hash, ?4 acknowledged_at,
// ?5 replayed_at, ?6 replaying_at, ?7 row_key, ?8 AuditWindow, ?9 the
// RelatedLimit. A replay run's window is [at, finished_at], or 10 minutes
// from at while it is unfinished.
const detailAuditSQL = `SELECT
	(SELECT json_group_array(id) FROM (SELECT id FROM dlq_messages
		WHERE source_queue = ?2 AND body_hash = ?3 AND (status = 'replaying' OR replay_count > 0) AND id <> ?1
		ORDER BY id DESC LIMIT ?9)) AS related,
	(SELECT json_group_array(json_object('id', id, 'at', at, 'action', action, 'request_id', request_id,
			'key_fingerprint', key_fingerprint, 'principal', principal, 'dry_run', dry_run, 'ids', ids, 'filter', filter, 'note', note,
			'counts', counts, 'outcome', outcome, 'error', error, 'finished_at', finished_at, 'matched_by', matched_by) ORDER BY id DESC)
		FROM (SELECT *, IIF(ids IS NULL, 'filter', 'ids') AS matched_by
			FROM (SELECT * FROM admin_audit ORDER BY id DESC LIMIT ?8) AS recent
			WHERE CASE WHEN ids IS NOT NULL THEN json_valid(ids) AND EXISTS (SELECT 1 FROM json_each(recent.ids) WHERE value = ?1)
				ELSE dry_run = 0 AND json_valid(filter)
					AND ((action = 'acknowledge' AND at = ?4)
						OR (action = 'replay' AND (?5 BETWEEN at AND COALESCE(finished_at, at + 600000)
							OR ?6 BETWEEN at AND COALESCE(finished_at, at + 600000))))
					AND COALESCE(filter ->> '$.beer_id' = ?7, 1) AND COALESCE(filter ->> '$.source_queue' = ?2, 1)
				END)) AS audit`

// Read returns row id with its lineage and audit entries, or ErrMessageNotFound.
func (d Detail) Read(ctx context.Context, id int64) (MessageDetail, error) {
	if id < 1 || id > dlq.MaxSafeInteger {
		return MessageDetail{}, ErrMessageNotFound
	}
	out := MessageDetail{AuditWindow: AuditWindow}
	keys, err := d.readRow(ctx, id, &out)
	if err != nil {
		return MessageDetail{}, err
	}
	related, audit, err := d.ReadAudit(ctx, id, keys)
	if err != nil {
		return MessageDetail{}, err
	}
	if err := decodeRelated(related, &out); err != nil {
		return MessageDetail{}, err
	}
	if err := decodeAudit(audit, &out); err != nil {
		return MessageDetail{}, err
	}
	return out, nil
}

// ReadDetail reads row id from the database that holds it
// (Databases.Holding), with the audit entries of the others (Detail.Read):
// ErrMessageNotFound when scope does not reach it (one more row read).
func ReadDetail(ctx context.Context, dbs dlq.Databases, id int64, scope dlq.Scope) (MessageDetail, error) {
	d, err := dbs.Holding(ctx, "dlq_messages", []int64{id})
	if err != nil {
		return MessageDetail{}, err
	}
	if err := scope.CheckScope(ctx, dbs.Pipelines(), d.DB, []int64{id}); err != nil {
		if _, ok := dlq.OutOfScopeID(err); ok {
			return MessageDetail{}, ErrMessageNotFound
		}
		return MessageDetail{}, err
	}
	var others []*sql.DB
	for _, o := range dbs.All {
		if o.DB != d.DB {
			others = append(others, o.DB)
		}
	}
	return Detail{DB: d.DB, Others: others, Pipelines: dbs.Pipelines()}.Read(ctx, id)
}

// detailKeys are the columns of a row that detailAuditSQL matches related
// rows and audit entries by; readRow reads them, readAudit binds them.
type detailKeys struct {
	source, beer               string
	hash                       sql.NullString
	ackAt, replayedAt, claimAt sql.NullInt64
}

// readRow runs detailRowSQL for row id (one row read, plus its signature
// group) and fills out's Message, LastMessageID, BodyHash, History,
// HistoryDropped, Signature and Version. It returns the keys readAudit
// needs, or ErrMessageNotFound when the row is gone.
func (d Detail) readRow(ctx context.Context, id int64, out *MessageDetail) (detailKeys, error) {
	var (
		k             detailKeys
		msg, history  string
		sig, sigGroup sql.NullString
	)
	err := d.DB.QueryRowContext(ctx, detailRowSQL(d.Pipelines), id).Scan(&msg, &out.LastMessageID, &k.hash, &k.source, &k.beer, &k.ackAt, &k.replayedAt, &k.claimAt,
		&history, &out.HistoryDropped, &sig, &out.Version, &sigGroup)
	if errors.Is(err, sql.ErrNoRows) {
		return detailKeys{}, ErrMessageNotFound
	}
	if err != nil {
		return detailKeys{}, fmt.Errorf("dlq detail: %w", err)
	}
	if err := json.Unmarshal([]byte(msg), &out.Message); err != nil {
		return detailKeys{}, fmt.Errorf("dlq detail decode: %w", err)
	}
	if k.hash.Valid {
		out.BodyHash = &k.hash.String
	}
	out.History = []dlq.HistoryEntry{}
	if err := json.Unmarshal([]byte(history), &out.History); err != nil {
		return detailKeys{}, fmt.Errorf("dlq detail history: %w", err)
	}
	if sig.Valid {
		rs := RowSignature{Signature: sig.String}
		if sigGroup.Valid {
			_ = json.Unmarshal([]byte(sigGroup.String), &rs)
		}
		rs.ReplayWillFail = dlq.ReplayWillFail(rs.Class)
		out.Signature = &rs
	}
	return k, nil
}

// readAudit runs detailAuditSQL for row id with the keys readRow read and
// returns its two JSON arrays unparsed: the related row ids and the matching
// admin_audit entries (reads at most RelatedLimit rows and AuditWindow
// entries; writes nothing).
func (d Detail) ReadAudit(ctx context.Context, id int64, k detailKeys) (related, audit string, err error) {
	args := []any{id, k.source, nullable(k.hash), nullable(k.ackAt), nullable(k.replayedAt),
		nullable(k.claimAt), k.beer, int64(AuditWindow), int64(RelatedLimit)}
	if err = d.DB.QueryRowContext(ctx, detailAuditSQL, args...).Scan(&related, &audit); err != nil {
		return "", "", fmt.Errorf("dlq detail audit: %w", err)
	}
	if len(d.Others) == 0 {
		return related, audit, nil
	}
	var all []json.RawMessage
	if err := json.Unmarshal([]byte(audit), &all); err != nil {
		return "", "", fmt.Errorf("dlq detail audit: %w", err)
	}
	for _, db := range d.Others {
		var elsewhere, more string
		if err := db.QueryRowContext(ctx, detailAuditSQL, args...).Scan(&elsewhere, &more); err != nil {
			return "", "", fmt.Errorf("dlq detail audit: %w", err)
		}
		var entries []json.RawMessage
		if err := json.Unmarshal([]byte(more), &entries); err != nil {
			return "", "", fmt.Errorf("dlq detail audit: %w", err)
		}
		all = append(all, entries...)
	}
	// Newest first across the databases (ids of different databases are
	// of different ranges, so the time orders them).
	at := func(e json.RawMessage) (v struct{ At, ID float64 }) {
		_ = json.Unmarshal(e, &v)
		return v
	}
	sort.SliceStable(all, func(i, j int) bool {
		a, b := at(all[i]), at(all[j])
		return a.At > b.At || a.At == b.At && a.ID > b.ID
	})
	merged, err := json.Marshal(all)
	if err != nil {
		return "", "", fmt.Errorf("dlq detail audit: %w", err)
	}
	return related, string(merged), nil
}

// decodeRelated parses readAudit's related JSON array into out.RelatedIDs.
func decodeRelated(related string, out *MessageDetail) error {
	var ids []float64 // D1 may return integers in JSON as REAL text
	if err := json.Unmarshal([]byte(related), &ids); err != nil {
		return fmt.Errorf("dlq detail related: %w", err)
	}
	out.RelatedIDs = make([]int64, len(ids))
	for i, v := range ids {
		out.RelatedIDs[i] = int64(v)
	}
	return nil
}

// decodeAudit parses readAudit's audit JSON array into out.Audit and
// collects its real (not dry-run) replay entries into out.Replays, which is
// never nil.
func decodeAudit(audit string, out *MessageDetail) error {
	var entries []struct {
		ID             float64  `json:"id"`
		At             float64  `json:"at"`
		Action         string   `json:"action"`
		RequestID      string   `json:"request_id"`
		KeyFingerprint string   `json:"key_fingerprint"`
		Principal      *string  `json:"principal"`
		DryRun         float64  `json:"dry_run"`
		IDs            *string  `json:"ids"`
		Filter         *string  `json:"filter"`
		Note           *string  `json:"note"`
		Counts         *string  `json:"counts"`
		Outcome        string   `json:"outcome"`
		Error          *string  `json:"error"`
		FinishedAt     *float64 `json:"finished_at"`
		MatchedBy      string   `json:"matched_by"`
	}
	if err := json.Unmarshal([]byte(audit), &entries); err != nil {
		return fmt.Errorf("dlq detail audit decode: %w", err)
	}
	out.Audit = make([]RowAuditEntry, len(entries))
	for i, e := range entries {
		a := dlq.AuditEntry{ID: int64(e.ID), At: int64(e.At), Action: e.Action, RequestID: e.RequestID,
			KeyFingerprint: e.KeyFingerprint, Principal: e.Principal, DryRun: e.DryRun != 0, Note: e.Note, Outcome: e.Outcome,
			IDs: dlq.RawJSON(nullString(e.IDs)), Filter: dlq.RawJSON(nullString(e.Filter)), Counts: dlq.RawJSON(nullString(e.Counts)),
			Error: dlq.AuditErrorOf(nullString(e.Error), e.RequestID)}
		if e.FinishedAt != nil {
			f := int64(*e.FinishedAt)
			a.FinishedAt = &f
		}
		out.Audit[i] = RowAuditEntry{AuditEntry: a, MatchedBy: e.MatchedBy}
		if a.Action == dlq.ActionReplay && !a.DryRun {
			out.Replays = append(out.Replays, RowReplay{At: a.At, FinishedAt: a.FinishedAt, KeyFingerprint: a.KeyFingerprint, Principal: a.Principal,
				RequestID: a.RequestID, Outcome: a.Outcome, MatchedBy: e.MatchedBy})
		}
	}
	if out.Replays == nil {
		out.Replays = []RowReplay{}
	}
	return nil
}

// nullable is v as a statement argument: nil when NULL.
func nullable[T sql.NullString | sql.NullInt64](v T) any {
	switch x := any(v).(type) {
	case sql.NullString:
		if x.Valid {
			return x.String
		}
	case sql.NullInt64:
		if x.Valid {
			return x.Int64
		}
	}
	return nil
}

func nullString(s *string) sql.NullString {
	if s == nil {
		return sql.NullString{}
	}
	return sql.NullString{String: *s, Valid: true}
}
