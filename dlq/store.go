package dlq

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"
)

// LineageField is the top-level JSON field a replayed message carries: the
// id of its dlq_messages row, so that a repeat failure updates that row.
// The enrichment consumer ignores it.
const LineageField = "_redrive_dlq_id"

// UnparseableBeerID is the beer_id stored for bodies without a usable beer_id.
const UnparseableBeerID = "__unparseable__"

// Failure is one dead-lettered message to store.
type Failure struct {
	// MessageID is the queue message id (dedup key for redeliveries).
	MessageID string
	// SourceQueue is the queue the message failed on (not the DLQ).
	SourceQueue string
	// Body is the message body as text (base64 when Binary).
	Body   string
	Binary bool
	// Attempts is the number of attempts made on the source queue.
	Attempts int
	// Class is transient | rate_limited | permanent | poison | unknown | ...
	Class string
	// Reason is a short human-readable text, no secrets.
	Reason string
	// FailedAt is when the failure was recorded.
	FailedAt time.Time
}

// Store writes failures to dlq_messages.
type Store struct {
	DB *sql.DB
}

// Put stores failures in one statement, idempotent on message id: a
// redelivered message never creates a second row or changes the stored one.
func (s Store) Put(ctx context.Context, fs []Failure) error {
	if len(fs) == 0 {
		return nil
	}
	type row struct {
		MessageID string `json:"message_id"`
		BeerID    string `json:"beer_id"`
		BeerName  any    `json:"beer_name"`
		Brewer    any    `json:"brewer"`
		Attempts  int    `json:"attempts"`
		Source    string `json:"source"`
		Raw       string `json:"raw"`
		Encoding  string `json:"encoding"`
		Class     string `json:"class"`
		Reason    string `json:"reason"`
		FailedAt  int64  `json:"failed_at"`
	}
	rows := make([]row, len(fs))
	for i, f := range fs {
		var b struct {
			BeerID   string `json:"beer_id"`
			BeerName any    `json:"beer_name"`
			Brewer   any    `json:"brewer"`
		}
		if !f.Binary {
			_ = json.Unmarshal([]byte(f.Body), &b)
		}
		if b.BeerID == "" {
			b.BeerID = UnparseableBeerID
		}
		enc := "text"
		if f.Binary {
			enc = "base64"
		}
		rows[i] = row{f.MessageID, b.BeerID, b.BeerName, b.Brewer, f.Attempts, f.SourceQueue, f.Body, enc, f.Class, f.Reason, f.FailedAt.UnixMilli()}
	}
	js, err := json.Marshal(rows)
	if err != nil {
		return fmt.Errorf("dlq store encode: %w", err)
	}
	_, err = s.DB.ExecContext(ctx, `INSERT INTO dlq_messages(message_id, beer_id, beer_name, brewer, failed_at, failure_count,
			failure_reason, failure_class, source_queue, raw_message, raw_encoding, last_message_id, first_failed_at, updated_at)
		SELECT value ->> '$.message_id', value ->> '$.beer_id', value ->> '$.beer_name', value ->> '$.brewer',
			value ->> '$.failed_at', value ->> '$.attempts', value ->> '$.reason', value ->> '$.class',
			value ->> '$.source', value ->> '$.raw', value ->> '$.encoding', value ->> '$.message_id',
			value ->> '$.failed_at', value ->> '$.failed_at'
		FROM json_each(?) WHERE true
		ON CONFLICT(message_id) DO NOTHING`, string(js))
	if err != nil {
		return fmt.Errorf("dlq store %d failures: %w", len(fs), err)
	}
	return nil
}
