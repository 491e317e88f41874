package dlq

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"github.com/redrive/redrive/internal/text"
	"github.com/redrive/redrive/sqlbatch"
)

// maxAttemptError caps the error text kept per attempt (bytes).
const maxAttemptError = 500

// maxEntryError caps the error text of one history entry (bytes): short,
// since a row keeps up to MaxHistory of them.
const maxEntryError = 200

// History bounds: a row keeps the first HistoryHead attempts and the newest
// MaxHistory-HistoryHead; history_dropped counts the ones in between.
const (
	MaxHistory  = 50
	HistoryHead = 5
)

// Attempt is the latest failed attempt of a message on its source queue.
// A consumer records it before calling Retry; the DLQ consumer reads it for
// failure_count and failure_reason, then removes it. A record is keyed by
// queue and message id (migrations/0033): an attempt writes only its own
// queue's record, and a capture reads only the record of the queue its
// message failed on (its row's source_queue).
type Attempt struct {
	// MessageID is the queue message id (kept when the message moves to the DLQ).
	MessageID string
	// Queue is the queue the attempt ran on (beer-enrichment).
	Queue string
	// Attempt is the attempt number on that queue (message Attempts, from 1).
	Attempt int
	// Class is transient | rate_limited | permanent | breaker_open | quota | config.
	Class string
	// Error is a short text of the error (no secrets); cut to 500 bytes.
	Error string
	// At is when the attempt failed. The record keeps the time of the
	// message's first recorded attempt (recorded_at): retention expires
	// records by it, and a time that stays put costs no index write per
	// attempt.
	At time.Time
	// Status is the provider's HTTP status (0 when no response arrived).
	Status int
	// Duration is how long the provider call took (0 when none was made).
	Duration time.Duration
	// Version is the worker version the attempt ran on (Version.Stamp).
	Version string
}

// HistoryEntry is one failed attempt in a message's history
// (message_attempts.history, dlq_messages.history).
type HistoryEntry struct {
	At         int64  `json:"at"`
	Attempt    int    `json:"attempt"`
	Class      string `json:"class"`
	Status     *int   `json:"status"`
	Error      string `json:"error"`
	DurationMS *int64 `json:"duration_ms"`
	Version    string `json:"version,omitempty"`
	MessageID  string `json:"message_id"`
}

// entry is the attempt as a history entry.
func (a Attempt) entry() HistoryEntry {
	e := HistoryEntry{At: a.At.UnixMilli(), Attempt: a.Attempt, Class: a.Class, Error: text.Clip(a.Error, maxEntryError),
		Version: a.Version, MessageID: a.MessageID}
	if a.Status > 0 {
		st := a.Status
		e.Status = &st
	}
	if a.Duration > 0 {
		ms := a.Duration.Milliseconds()
		e.DurationMS = &ms
	}
	return e
}

// entryJSON is the attempt's history entry as JSON text.
func (a Attempt) entryJSON() string {
	js, _ := json.Marshal(a.entry())
	return string(js)
}

// Attempts reads and writes message_attempts.
type Attempts struct {
	DB *sql.DB
}

// RecordSQL upserts the attempt record of queue ?2 and message id ?1
// (never another queue's record of the same message id): ?1 message id, ?2 queue, ?3
// attempt, ?4 class, ?5 error, ?6 time, ?7 the history entry (JSON), ?8
// signature, ?9 its text, ?10 version. The entry is appended to the
// record's history (a redelivery of the same attempt number replaces the
// last entry instead; beyond MaxHistory entries the oldest after the first
// HistoryHead goes, and history_dropped counts it).
// recorded_at is set by the first attempt only: the record's later updates
// rewrite the row alone (1 row written), not its entry in
// idx_attempts_recorded_at too. A message's record costs 3 rows written
// when created (row, primary key, recorded_at), 1 per later attempt and 1
// when the DLQ consumer removes it: 7 for the 4 attempts of a message that
// ends in the DLQ (docs/costs.md "What it costs"); the history is in the same row.
const RecordSQL = `INSERT INTO message_attempts(message_id, queue, attempt, error_class, error, recorded_at,
			history, signature, signature_text, version)
		VALUES (?1, ?2, ?3, ?4, ?5, ?6, json_array(json(?7)), ?8, ?9, ?10)
		ON CONFLICT(queue, message_id) DO UPDATE SET attempt = excluded.attempt,
			error_class = excluded.error_class, error = excluded.error,
			signature = excluded.signature, signature_text = excluded.signature_text, version = excluded.version,
			history = CASE
				WHEN json_array_length(COALESCE(message_attempts.history, '[]')) = 0 THEN json_array(json(?7))
				WHEN excluded.attempt = message_attempts.attempt THEN json_set(message_attempts.history, '$[#-1]', json(?7))
				WHEN json_array_length(message_attempts.history) >= ` + maxHistorySQL + `
					THEN json_insert(json_remove(message_attempts.history, '$[` + historyHeadSQL + `]'), '$[#]', json(?7))
				ELSE json_insert(message_attempts.history, '$[#]', json(?7)) END,
			history_dropped = message_attempts.history_dropped + (excluded.attempt <> message_attempts.attempt
				AND json_array_length(COALESCE(message_attempts.history, '[]')) >= ` + maxHistorySQL + `)
			WHERE excluded.attempt >= message_attempts.attempt`

// maxHistorySQL and historyHeadSQL are MaxHistory and HistoryHead for SQL text.
const (
	maxHistorySQL  = "50"
	historyHeadSQL = "5"
)

// Record upserts the attempt in one statement. An attempt never overwrites
// a record with a higher attempt number (late writes of an earlier attempt
// are ignored).
func (a Attempts) Record(ctx context.Context, at Attempt) error {
	_, err := a.DB.ExecContext(ctx, RecordSQL, at.recordArgs()...)
	if err != nil {
		return fmt.Errorf("record attempt of %s: %w", at.MessageID, err)
	}
	return nil
}

// recordArgs are RecordSQL's arguments for the attempt.
func (at Attempt) recordArgs() []any {
	sig := SignatureIn(at.Queue, at.Class, at.Error)
	return []any{at.MessageID, at.Queue, int64(at.Attempt), at.Class, text.Clip(at.Error, maxAttemptError), at.At.UnixMilli(),
		at.entryJSON(), sig.Key, sig.Text, NullIfEmpty(at.Version)}
}

// NullIfEmpty is s as a statement argument: nil when empty.
func NullIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// ReportClasses are the classes an external consumer may give a reported
// attempt (POST /admin/attempts): the beer consumer's attempt classes and
// unknown (the default).
var ReportClasses = []string{"transient", "rate_limited", "permanent", "breaker_open", "quota", "config", "unknown"}

// MaxReportError bounds the error text of one reported attempt (bytes); the
// text kept is cut further, as for the beer consumer's own attempts.
const MaxReportError = 2000

// MaxReportAttempts bounds the attempts of one report.
const MaxReportAttempts = 100

// RecordAttempts records each attempt in its queue's database
// (Attempts.RecordAll): one batch per database that gets any, one in all
// when every queue shares a database. A batch that fails ends the call;
// the batches before it stay written.
func (d Databases) RecordAttempts(ctx context.Context, ats []Attempt) error {
	byDB := map[string][]Attempt{}
	for _, at := range ats {
		name := d.OfQueue(at.Queue).Name
		byDB[name] = append(byDB[name], at)
	}
	for _, db := range d.All {
		if len(byDB[db.Name]) == 0 {
			continue
		}
		if err := (Attempts{DB: db.DB}).RecordAll(ctx, db.Batch, byDB[db.Name]); err != nil {
			return err
		}
	}
	return nil
}

// RecordAll upserts every attempt with one batch (one RecordSQL statement
// per attempt, all or nothing), so a report from a consumer outside redrive
// lands in the same attempt history and failure signatures as the beer
// consumer's own attempts. batch nil: a transaction on a.DB (native tests).
// Rows written: 3 per new record, 1 per later attempt of a message.
func (a Attempts) RecordAll(ctx context.Context, batch sqlbatch.Runner, ats []Attempt) error {
	if len(ats) == 0 {
		return nil
	}
	stmts := make([]sqlbatch.Stmt, len(ats))
	for i, at := range ats {
		stmts[i] = sqlbatch.Stmt{SQL: RecordSQL, Args: at.recordArgs()}
	}
	if _, err := BatchOf(batch, a.DB).Batch(ctx, stmts...); err != nil {
		return fmt.Errorf("record %d reported attempts: %w", len(ats), err)
	}
	return nil
}
