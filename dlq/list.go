package dlq

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strconv"
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

	// RawMessage (a JSON string, or null) is present only when asked for
	// (include_raw=true), with RawEncoding (text | base64).
	RawMessage  json.RawMessage `json:"raw_message,omitempty"`
	RawEncoding string          `json:"raw_encoding,omitempty"`
}

// messageFields is the json_object argument list of a Message; raw adds
// raw_message and raw_encoding.
func messageFields(raw bool) string {
	fields := `'id', id, 'message_id', message_id, 'beer_id', beer_id, 'beer_name', beer_name, 'brewer', brewer,
		'failed_at', failed_at, 'failure_count', failure_count, 'failure_reason', failure_reason,
		'source_queue', source_queue, 'status', status, 'replay_count', COALESCE(replay_count, 0),
		'replayed_at', replayed_at, 'acknowledged_at', acknowledged_at, 'failure_class', failure_class,
		'first_failed_at', first_failed_at, 'replaying_at', replaying_at, 'acknowledged_note', acknowledged_note,
		'updated_at', updated_at, 'content_type', ` + contentTypeSQL
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
func messagesJSON(cond string, raw bool) string {
	return `(SELECT json_group_array(json_object(` + messageFields(raw) + `) ORDER BY failed_at DESC, id DESC)
		FROM (SELECT * FROM dlq_messages WHERE ` + cond + ` ORDER BY failed_at DESC, id DESC LIMIT ?))`
}

// Messages is a JSON array of Message objects, newest failure first, as
// SQLite built it. The admin API writes it out unchanged: decoding and
// re-encoding a 100-row page costs milliseconds in wasm, several times what
// SQLite needs to build it.
type Messages []byte

// MarshalJSON implements json.Marshaler.
func (m Messages) MarshalJSON() ([]byte, error) {
	if len(m) == 0 {
		return []byte("[]"), nil
	}
	return m, nil
}

// Decode parses the array.
func (m Messages) Decode() ([]Message, error) {
	if len(m) == 0 {
		return []Message{}, nil
	}
	return decodeMessages(string(m))
}

// decodeMessages reads a messagesJSON array (already in order: the
// aggregate is ordered).
func decodeMessages(js string) ([]Message, error) {
	out := []Message{}
	if err := json.Unmarshal([]byte(js), &out); err != nil {
		return nil, fmt.Errorf("decode messages: %w", err)
	}
	return out, nil
}

// AppendJSON appends the page's JSON (what json.Marshal gives) to b with
// Messages copied as they are: encoding/json would scan them again, which
// in wasm costs more than building them did.
func (p Page) AppendJSON(b []byte) []byte {
	msgs, _ := p.Messages.MarshalJSON()
	b = append(append(b, `{"messages":`...), msgs...)
	b = append(b, `,"total_count":`...)
	b = strconv.AppendInt(b, p.TotalCount, 10)
	b = append(b, `,"limit":`...)
	b = strconv.AppendInt(b, int64(p.Limit), 10)
	b = append(b, `,"next_cursor":`...)
	cursor, _ := json.Marshal(p.NextCursor)
	b = append(b, cursor...)
	b = append(b, `,"has_more":`...)
	b = strconv.AppendBool(b, p.HasMore)
	return append(b, '}')
}

// List pages through dlq_messages for GET /admin/dlq.
type List struct {
	DB      *sql.DB
	Cursors Cursors
}

// ListParams are the list's inputs (the HTTP layer parses the query string).
type ListParams struct {
	Filter Filter
	// Limit is 1..MaxListLimit; 0 means DefaultListLimit.
	Limit int
	// Cursor is next_cursor of the previous page ("" for the first page).
	Cursor string
	// IncludeRaw adds raw_message and raw_encoding to each message.
	IncludeRaw bool
}

// Page is the list response (ListPage in handlers/openapi.json).
type Page struct {
	// Messages are the page's rows, newest failure first.
	Messages Messages `json:"messages"`
	// TotalCount counts every row matching the filters (all pages), as counted
	// on the first page: later pages carry that count in their cursor.
	TotalCount int64 `json:"total_count"`
	Limit      int   `json:"limit"`
	// NextCursor continues after this page; null on the last page.
	NextCursor *string `json:"next_cursor"`
	HasMore    bool    `json:"has_more"`
}

// Page returns one page, newest failure first (failed_at DESC, id DESC), and
// the total count, in one statement. Walking next_cursor until has_more is
// false yields every matching row exactly once, ties on failed_at included;
// rows whose failed_at moves while paging (a repeat failure) may be missed
// or seen twice, as with any keyset pagination.
func (l List) Page(ctx context.Context, p ListParams) (Page, error) {
	f, err := p.Filter.Normalize()
	if err != nil {
		return Page{}, err
	}
	if p.Limit == 0 {
		p.Limit = DefaultListLimit
	}
	if p.Limit < 1 || p.Limit > MaxListLimit {
		return Page{}, inputErr("INVALID_LIMIT", "limit must be an integer in 1..%d", MaxListLimit)
	}
	fp := f.fingerprint()
	where, args := f.where()
	pageWhere, pageArgs := where, append([]any(nil), args...)
	// The first page counts the matches; later pages carry that count in
	// their cursor instead of counting again (COUNT is most of a page's cost).
	total, totalArgs := `(SELECT COUNT(*) FROM dlq_messages WHERE `+where+`)`, args
	if p.Cursor != "" {
		pos, err := l.Cursors.decode(p.Cursor, cursorList, fp)
		if err != nil {
			return Page{}, err
		}
		pageWhere += ` AND failed_at <= ? AND (failed_at < ? OR id < ?)`
		pageArgs = append(pageArgs, pos.FailedAt, pos.FailedAt, pos.ID)
		if pos.Total != nil {
			total, totalArgs = `?`, []any{*pos.Total}
		}
	}
	// The page is read with one row more than it shows (that row tells
	// has_more); SQLite numbers them, builds the JSON of the shown ones and
	// returns the position of the last one for the cursor.
	query := `SELECT ` + total + `,
			json_group_array(json_object(` + messageFields(p.IncludeRaw) + `) ORDER BY rn) FILTER (WHERE rn <= ?),
			COUNT(*), MAX(CASE WHEN rn = ? THEN failed_at END), MAX(CASE WHEN rn = ? THEN id END)
		FROM (SELECT *, ROW_NUMBER() OVER (ORDER BY failed_at DESC, id DESC) AS rn FROM (
			SELECT * FROM dlq_messages WHERE ` + pageWhere + ` ORDER BY failed_at DESC, id DESC LIMIT ?))`
	limit := int64(p.Limit)
	allArgs := append(append([]any(nil), totalArgs...), limit, limit, limit)
	allArgs = append(append(allArgs, pageArgs...), limit+1)
	var (
		page               string
		rows               int
		lastFailed, lastID sql.NullInt64
	)
	out := Page{Limit: p.Limit}
	if err := l.DB.QueryRowContext(ctx, query, allArgs...).Scan(&out.TotalCount, &page, &rows, &lastFailed, &lastID); err != nil {
		return Page{}, fmt.Errorf("dlq list: %w", err)
	}
	out.Messages = Messages(page)
	if rows > p.Limit {
		next := l.Cursors.encode(position{Kind: cursorList, Filter: fp, FailedAt: lastFailed.Int64, ID: lastID.Int64, Total: &out.TotalCount})
		out.NextCursor, out.HasMore = &next, true
	}
	return out, nil
}
