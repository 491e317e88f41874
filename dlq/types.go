package dlq

// The types every part of the package shares: a row's statuses, a row as
// the admin API shows it, what storing a failure did, who asked for an
// action, and a rejected input.

import (
	"encoding/json"
	"fmt"
)

// Status values of a dlq_messages row (schema.sql), and "all" for the list.
const (
	StatusPending      = "pending"
	StatusReplaying    = "replaying"
	StatusReplayed     = "replayed"
	StatusAcknowledged = "acknowledged"
	// StatusAll lists rows of every status (list filter only).
	StatusAll = "all"
)

// Message is one dlq_messages row as the admin API shows it (DLQMessage in
// handlers/openapi.json): the original worker's fields with their names,
// then redrive's additions.
type Message struct {
	ID             int64   `json:"id"`
	MessageID      string  `json:"message_id"`
	BeerID         string  `json:"beer_id"`
	BeerName       *string `json:"beer_name"`
	Brewer         *string `json:"brewer"`
	FailedAt       int64   `json:"failed_at"`
	FailureCount   *int64  `json:"failure_count"`
	FailureReason  *string `json:"failure_reason"`
	SourceQueue    string  `json:"source_queue"`
	Status         string  `json:"status"`
	ReplayCount    int64   `json:"replay_count"`
	ReplayedAt     *int64  `json:"replayed_at"`
	AcknowledgedAt *int64  `json:"acknowledged_at"`

	// FailureClass is transient | permanent | rate_limited | poison | unknown.
	FailureClass *string `json:"failure_class"`
	// FirstFailedAt is when the row was first captured (failed_at is the latest failure).
	FirstFailedAt int64 `json:"first_failed_at"`
	// ReplayingAt is when a replay claimed the row (set while status is replaying).
	ReplayingAt *int64 `json:"replaying_at"`
	// AcknowledgedNote is the note given when the row was acknowledged.
	AcknowledgedNote *string `json:"acknowledged_note"`
	// UpdatedAt is the last change of the row.
	UpdatedAt int64 `json:"updated_at"`
	// ContentType is how the message was sent: json | text | bytes | v8
	// (derived from the body for rows captured before it was recorded).
	// Replay sends the body back with it.
	ContentType string `json:"content_type"`

	// Pipeline is the configured pipeline whose queue is source_queue
	// (null for a queue no pipeline names); Key is its row key (= beer_id, stored in row_key);
	// Labels its labels by name (beer_name and brewer hold them; stored in
	// label_1 and label_2).
	Pipeline *string            `json:"pipeline"`
	Key      string             `json:"key"`
	Labels   map[string]*string `json:"labels"`

	// RawMessage (a JSON string, or null) is present only when asked for
	// (include_raw=true), with RawEncoding (text | base64).
	RawMessage  json.RawMessage `json:"raw_message,omitempty"`
	RawEncoding string          `json:"raw_encoding,omitempty"`

	// The fields an NDJSON export with include_raw adds (MoveFieldNames,
	// AddMoveFields): what POST /admin/dlq/import needs to copy the row.
	LastMessageID  string           `json:"last_message_id,omitempty"`
	BodyHash       *string          `json:"body_hash,omitempty"`
	BodyEdited     *int64           `json:"body_edited,omitempty"`
	History        json.RawMessage  `json:"history,omitempty"`
	HistoryDropped int64            `json:"history_dropped,omitempty"`
	Version        *string          `json:"version,omitempty"`
	Signature      *ImportSignature `json:"signature,omitempty"`
}

// Outcome is what storing one failure did to dlq_messages.
type Outcome string

const (
	// OutcomeNew: the failure created a new row.
	OutcomeNew Outcome = "new"
	// OutcomeRepeat: a replayed message failed again (same source queue and
	// body hash as a row a replay claimed) and updated that row.
	OutcomeRepeat Outcome = "repeat"
	// OutcomeDuplicate: a redelivery of a message already stored; nothing changed.
	OutcomeDuplicate Outcome = "duplicate"
)

// Requester says who asked for an action.
type Requester struct {
	RequestID string
	// KeyFingerprint identifies the API key used (never the key itself).
	KeyFingerprint string
	// Principal names who asks (access.Principal's Name: "key:<name>",
	// "access:<email>", "admin"), recorded in the audit log and on tasks.
	Principal string
	// Scope is the pipelines the requester may see and act on.
	Scope Scope
}

// InputError is a rejected input: the admin API answers it with a 400 and
// its Code; nothing was changed.
type InputError struct {
	Code    string
	Message string
	// Status is the HTTP status the admin API answers with: 0 for 400; 409
	// for a request refused for the state of the rows it names.
	Status int
}

func (e *InputError) Error() string { return e.Code + ": " + e.Message }

// InputErr is an *InputError with code and a formatted message.
func InputErr(code, format string, args ...any) *InputError {
	return &InputError{Code: code, Message: fmt.Sprintf(format, args...)}
}
