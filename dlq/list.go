package dlq

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
)

// Message is one dlq_messages row as the admin API shows it: the seed's
// fields (§9) with their names, then redrive's additions.
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

	// RawMessage (a JSON string, or null) is present only when asked for
	// (include_raw=true), with RawEncoding (text | base64).
	RawMessage  json.RawMessage `json:"raw_message,omitempty"`
	RawEncoding string          `json:"raw_encoding,omitempty"`
}

// messageColumns is the select list scanned by scanMessage; the last two
// columns are raw_message and raw_encoding, or NULLs when raw is false.
func messageColumns(raw bool) string {
	cols := `id, message_id, beer_id, beer_name, brewer, failed_at, failure_count, failure_reason, source_queue, status,
		COALESCE(replay_count, 0) AS replay_count, replayed_at, acknowledged_at, failure_class, first_failed_at, replaying_at,
		acknowledged_note, updated_at`
	if raw {
		return cols + `, raw_message, raw_encoding`
	}
	return cols + `, NULL AS raw_message, NULL AS raw_encoding`
}

// messageScan holds one scanned row; every column is nullable so that the
// all-NULL row of an empty page (see List.Page) scans too.
type messageScan struct {
	id, failedAt, replayCount, firstFailedAt, updatedAt         sql.NullInt64
	failureCount, replayedAt, acknowledgedAt, replayingAt       sql.NullInt64
	messageID, beerID, sourceQueue, status                      sql.NullString
	beerName, brewer, reason, class, note, rawMessage, encoding sql.NullString
}

func (m *messageScan) dest() []any {
	return []any{&m.id, &m.messageID, &m.beerID, &m.beerName, &m.brewer, &m.failedAt, &m.failureCount, &m.reason,
		&m.sourceQueue, &m.status, &m.replayCount, &m.replayedAt, &m.acknowledgedAt, &m.class, &m.firstFailedAt,
		&m.replayingAt, &m.note, &m.updatedAt, &m.rawMessage, &m.encoding}
}

func (m *messageScan) message(raw bool) Message {
	out := Message{
		ID: m.id.Int64, MessageID: m.messageID.String, BeerID: m.beerID.String, BeerName: str(m.beerName),
		Brewer: str(m.brewer), FailedAt: m.failedAt.Int64, FailureCount: num(m.failureCount), FailureReason: str(m.reason),
		SourceQueue: m.sourceQueue.String, Status: m.status.String, ReplayCount: m.replayCount.Int64,
		ReplayedAt: num(m.replayedAt), AcknowledgedAt: num(m.acknowledgedAt), FailureClass: str(m.class),
		FirstFailedAt: m.firstFailedAt.Int64, ReplayingAt: num(m.replayingAt), AcknowledgedNote: str(m.note),
		UpdatedAt: m.updatedAt.Int64,
	}
	if raw {
		out.RawMessage = json.RawMessage("null")
		if m.rawMessage.Valid {
			out.RawMessage, _ = json.Marshal(m.rawMessage.String)
		}
		out.RawEncoding = m.encoding.String
	}
	return out
}

func str(v sql.NullString) *string {
	if !v.Valid {
		return nil
	}
	return &v.String
}

func num(v sql.NullInt64) *int64 {
	if !v.Valid {
		return nil
	}
	return &v.Int64
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

// Page is the seed's list response (§9).
type Page struct {
	Messages []Message `json:"messages"`
	// TotalCount counts every row matching the filters (all pages).
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
	if p.Cursor != "" {
		pos, err := l.Cursors.decode(p.Cursor, cursorList, fp)
		if err != nil {
			return Page{}, err
		}
		pageWhere += ` AND failed_at <= ? AND (failed_at < ? OR id < ?)`
		pageArgs = append(pageArgs, pos.FailedAt, pos.FailedAt, pos.ID)
	}
	// The empty page still yields one (all-NULL) row carrying the total.
	query := `SELECT (SELECT COUNT(*) FROM dlq_messages WHERE ` + where + `) AS total, p.*
		FROM (SELECT 1) LEFT JOIN (SELECT ` + messageColumns(p.IncludeRaw) + ` FROM dlq_messages
			WHERE ` + pageWhere + ` ORDER BY failed_at DESC, id DESC LIMIT ?) AS p ON 1
		ORDER BY p.failed_at DESC, p.id DESC`
	allArgs := append(append(append([]any(nil), args...), pageArgs...), int64(p.Limit+1))
	rows, err := l.DB.QueryContext(ctx, query, allArgs...)
	if err != nil {
		return Page{}, fmt.Errorf("dlq list: %w", err)
	}
	defer rows.Close()
	out := Page{Messages: []Message{}, Limit: p.Limit}
	for rows.Next() {
		var total int64
		var m messageScan
		if err := rows.Scan(append([]any{&total}, m.dest()...)...); err != nil {
			return Page{}, fmt.Errorf("dlq list scan: %w", err)
		}
		out.TotalCount = total
		if m.id.Valid {
			out.Messages = append(out.Messages, m.message(p.IncludeRaw))
		}
	}
	if err := rows.Err(); err != nil {
		return Page{}, fmt.Errorf("dlq list rows: %w", err)
	}
	if len(out.Messages) > p.Limit {
		out.Messages = out.Messages[:p.Limit]
		last := out.Messages[p.Limit-1]
		next := l.Cursors.encode(position{Kind: cursorList, Filter: fp, FailedAt: last.FailedAt, ID: last.ID})
		out.NextCursor, out.HasMore = &next, true
	}
	return out, nil
}
