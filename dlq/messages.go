package dlq

import (
	"encoding/json"
	"fmt"
)

// The rows of a page as the admin API shows them, read in one statement and
// decoded once: the list and the dry run of a bulk action share them.

// messageFields is the json_object argument list of a Message; raw adds
// raw_message and raw_encoding.
func MessageFields(ps Pipelines, raw bool) string {
	fields := `'id', id, 'message_id', message_id, 'beer_id', row_key, 'beer_name', label_1, 'brewer', label_2,
		'failed_at', failed_at, 'failure_count', failure_count, 'failure_reason', failure_reason,
		'source_queue', source_queue, 'status', status, 'replay_count', COALESCE(replay_count, 0),
		'replayed_at', replayed_at, 'acknowledged_at', acknowledged_at, 'failure_class', failure_class,
		'first_failed_at', first_failed_at, 'replaying_at', replaying_at, 'acknowledged_note', acknowledged_note,
		'updated_at', updated_at, 'content_type', ` + ContentTypeSQL + `, ` + ps.FieldsSQL()
	if raw {
		fields += `, 'raw_message', raw_message, 'raw_encoding', raw_encoding`
	}
	return fields
}

// messagesJSON is a scalar subquery that returns the rows matching cond
// (newest failure first, at most limit: bind it after cond's arguments) as
// one JSON array of Message objects, built by SQLite. One text value crosses
// from D1 instead of ~20 cells per row, each a syscall/js round trip in the
// D1 driver. raw adds raw_message and raw_encoding.
func MessagesJSON(ps Pipelines, cond string, raw bool) string {
	return `(SELECT json_group_array(json_object(` + MessageFields(ps, raw) + `) ORDER BY failed_at DESC, id DESC)
		FROM (SELECT * FROM dlq_messages WHERE ` + cond + ` ORDER BY failed_at DESC, id DESC LIMIT ?))`
}

// decodeMessages reads a messagesJSON array (already in order: the
// aggregate is ordered).
func DecodeMessages(js string) ([]Message, error) {
	out := []Message{}
	if err := json.Unmarshal([]byte(js), &out); err != nil {
		return nil, fmt.Errorf("decode messages: %w", err)
	}
	return out, nil
}
