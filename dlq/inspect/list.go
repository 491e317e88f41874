package inspect

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/redrive/redrive/dlq"
)

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
func (m Messages) Decode() ([]dlq.Message, error) {
	if len(m) == 0 {
		return []dlq.Message{}, nil
	}
	return dlq.DecodeMessages(string(m))
}

// AppendJSON appends the page's JSON (what json.Marshal gives) to b with
// Messages copied as they are: encoding/json would scan them again, which
// in wasm costs more than building them did.
func (p Page) AppendJSON(b []byte) []byte {
	msgs, _ := p.Messages.MarshalJSON()
	b = append(append(b, `{"messages":`...), msgs...)
	b = append(b, `,"total_count":`...)
	b = strconv.AppendInt(b, p.TotalCount, 10)
	b = append(b, `,"total_count_exact":`...)
	b = strconv.AppendBool(b, p.TotalCountExact)
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
	// DBs are the databases of the rows: a pipeline or source_queue filter
	// reads its database alone; without one, more than one database are
	// read and merged (pageMerged).
	DBs dlq.Databases
	// Database names the one database DBs holds when it stands for one of
	// several bound (an export of one named database, ExportFrom): its
	// cursors are bound to it, as a pipeline's are to its database.
	Database string
	Cursors  dlq.Cursors
}

// ListParams are the list's inputs (the HTTP layer parses the query string).
type ListParams struct {
	Filter dlq.Filter
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
	// on the first page: later pages carry that count in their cursor. It is
	// exact (TotalCountExact) when the filters are a status and a source
	// queue at most (read from dlq_tally) or when at most ListCountMax rows
	// match; otherwise it is ListCountMax and means "at least that many".
	// Merged over several databases it is the sum of theirs (exact when
	// each is).
	TotalCount int64 `json:"total_count"`
	// TotalCountExact is false when TotalCount is a lower bound (see there).
	TotalCountExact bool `json:"total_count_exact"`
	Limit           int  `json:"limit"`
	// NextCursor continues after this page; null on the last page.
	NextCursor *string `json:"next_cursor"`
	HasMore    bool    `json:"has_more"`
}

// Page returns one page, newest failure first (failed_at DESC, id DESC), and
// the total count, in one statement. Walking next_cursor until has_more is
// false yields every matching row exactly once, ties on failed_at included,
// when no row changes meanwhile. While rows change, a reader sees exactly
// this: no row twice (failed_at never goes back, so a row only moves toward
// the head, which the walk has passed); a row that fails again before its
// page is read (its failed_at moves to now) is not listed by the later
// pages, nor is a row that starts matching (a status change) with a
// failed_at the walk has passed: a new first page lists them. Every other
// row that matches when its page is read is listed once.
func (l List) Page(ctx context.Context, p ListParams) (Page, error) {
	f, err := p.Filter.Normalize(l.DBs.Pipelines())
	if err != nil {
		return Page{}, err
	}
	if p.Limit == 0 {
		p.Limit = dlq.DefaultListLimit
	}
	if err := dlq.CheckLimit(int64(p.Limit), dlq.MaxListLimit, ""); err != nil {
		return Page{}, err
	}
	if l.DBs.Many() && f.SourceQueue == "" {
		return l.pageMerged(ctx, f, p)
	}
	fp := f.Fingerprint()
	// With several databases bound, a cursor names the database it walks:
	// one made in another database's ids would skip rows there.
	if name := l.database(f); name != "" {
		fp += "@" + name
	}
	// The first page counts the matches; later pages carry that count in
	// their cursor instead of counting again.
	var pos *dlq.Position
	if p.Cursor != "" {
		decoded, err := l.Cursors.Decode(p.Cursor, dlq.CursorList, fp)
		if err != nil {
			return Page{}, err
		}
		pos = &decoded
	}
	db := l.DBs.Viewed(f.Pipeline, f.SourceQueue).DB
	r, err := readListPage(ctx, db, l.DBs.Pipelines(), f, pos, pos, p.Limit, p.IncludeRaw)
	if err != nil {
		return Page{}, err
	}
	out := Page{Limit: p.Limit, TotalCount: r.total, TotalCountExact: r.exact, Messages: Messages(r.page), HasMore: r.more}
	if out.HasMore {
		next := l.Cursors.Encode(dlq.Position{Kind: dlq.CursorList, Filter: fp, FailedAt: r.lastFailed, ID: r.lastID,
			Total: &out.TotalCount, Bounded: !out.TotalCountExact})
		out.NextCursor = &next
	}
	return out, nil
}

// database is the binding a single-database page of f reads when several
// databases are bound ("" otherwise).
func (l List) database(f dlq.Filter) string {
	switch {
	case l.DBs.Many() && f.SourceQueue != "":
		return l.DBs.OfQueue(f.SourceQueue).Name
	case l.DBs.Many():
		return l.DBs.OfPipeline(f.Pipeline).Name
	}
	return l.Database
}

// listRead is one database's page: its JSON array of rows (at most the
// limit asked, fewer when halved), whether rows follow them, the position
// of the last one and the total count (from pos when it carries one).
type listRead struct {
	page               string
	more               bool
	lastFailed, lastID int64
	total              int64
	exact              bool
}

// readListPage reads one page of f after pos (nil: the first page) from
// db in one statement; it counts the total unless carried holds it.
func readListPage(ctx context.Context, db *sql.DB, ps dlq.Pipelines, f dlq.Filter, pos, carried *dlq.Position, limit int, raw bool) (listRead, error) {
	total, totalArgs := totalSQL(f)
	r := listRead{exact: true}
	if carried != nil && carried.Total != nil {
		total, totalArgs, r.exact = `?`, []any{*carried.Total}, !carried.Bounded
	}
	var rows int
	var lastFailed, lastID sql.NullInt64
	for limit := int64(limit); ; limit /= 2 {
		rowsSQL, rowsArgs := newestRows(f, pos, limit+1)
		// The page is read with one row more than it shows (that row tells
		// has_more); SQLite numbers them, builds the JSON of the shown ones and
		// returns the position of the last one for the cursor.
		query := `SELECT ` + total + `,
			json_group_array(json_object(` + dlq.MessageFields(ps, raw) + `) ORDER BY rn) FILTER (WHERE rn <= ?),
			COUNT(*), MAX(CASE WHEN rn = ? THEN failed_at END), MAX(CASE WHEN rn = ? THEN id END)
		FROM (SELECT *, ROW_NUMBER() OVER (ORDER BY failed_at DESC, id DESC) AS rn FROM (` + rowsSQL + `))`
		allArgs := append(append([]any(nil), totalArgs...), limit, limit, limit)
		allArgs = append(allArgs, rowsArgs...)
		err := db.QueryRowContext(ctx, query, allArgs...).Scan(&r.total, &r.page, &rows, &lastFailed, &lastID)
		if err != nil && tooBig(err) && limit > 1 {
			// The page's JSON is over D1's 2,000,000-byte value limit (raw
			// bodies, or text full of characters JSON escapes): the same page,
			// half as long; the cursor continues after it.
			continue
		}
		if err != nil {
			return listRead{}, fmt.Errorf("dlq list: %w", err)
		}
		r.more = rows > int(limit)
		break
	}
	if (carried == nil || carried.Total == nil) && !countedByTally(f) {
		r.exact = r.total <= ListCountMax
		r.total = min(r.total, ListCountMax)
	}
	r.lastFailed, r.lastID = lastFailed.Int64, lastID.Int64
	return r, nil
}

// tooBig reports whether err is SQLite's SQLITE_TOOBIG: a value built
// over the length limit (D1: 2,000,000 bytes).
func tooBig(err error) bool {
	return strings.Contains(err.Error(), "string or blob too big")
}

// ListCountMax bounds the list's total_count when it has to be counted row
// by row (filters other than status and source queue): counting stops
// there, so a first page reads at most that many rows for it.
const ListCountMax = 1000

// countedByTally reports whether total_count comes from kept counts: the
// filters are a status (or all) and a source queue at most (dlq_tally), or
// a status and a signature (dlq_signatures).
func countedByTally(f dlq.Filter) bool {
	return f.Key == "" && f.FailedAfter == nil && f.FailedBefore == nil && f.Q == "" && f.Version == "" && f.VersionNot == "" &&
		(f.Signature == "" || f.SourceQueue == "")
}

// totalSQL is the list's total_count as an SQL expression, with its
// arguments: the sum of dlq_tally's counts for the status and source queue,
// or else the matching rows counted up to ListCountMax + 1.
func totalSQL(f dlq.Filter) (string, []any) {
	if countedByTally(f) && f.Signature != "" {
		n := "pending + replaying + replayed + acknowledged"
		if f.Status != dlq.StatusAll {
			n = f.Status // a validated status: a column of dlq_signatures
		}
		return `(SELECT COALESCE((SELECT ` + n + ` FROM dlq_signatures WHERE signature = ?), 0))`, []any{f.Signature}
	}
	if countedByTally(f) {
		var conds []string
		var args []any
		if f.Status != dlq.StatusAll {
			conds, args = append(conds, "status = ?"), append(args, f.Status)
		}
		if f.SourceQueue != "" {
			conds, args = append(conds, "source_queue = ?"), append(args, f.SourceQueue)
		}
		where := "true"
		if len(conds) > 0 {
			where = strings.Join(conds, " AND ")
		}
		return `(SELECT COALESCE(SUM(n), 0) FROM dlq_tally WHERE ` + where + `)`, args
	}
	where, args := f.Where()
	return `(SELECT COUNT(*) FROM (SELECT 1 FROM dlq_messages WHERE ` + where + ` LIMIT ?))`, append(args, int64(ListCountMax+1))
}

// listStatuses are the statuses a row can have, for the list of all of them.
var listStatuses = []string{dlq.StatusPending, dlq.StatusReplaying, dlq.StatusReplayed, dlq.StatusAcknowledged}

// newestRows returns a query for the newest n rows matching f after pos
// (failed_at DESC, id DESC), with its arguments. Each status is a range of
// idx_dlq_status_failed in that order; the list of every status (without a
// row_key, whose index drives the query) takes the n newest rows of each
// status and keeps the n newest of those: at most 4n rows read, where one
// index over every row's failed_at would cost a row written per capture.
func newestRows(f dlq.Filter, pos *dlq.Position, n int64) (string, []any) {
	one := func(g dlq.Filter) (string, []any) {
		where, args := g.Where()
		if pos != nil {
			where += ` AND failed_at <= ? AND (failed_at < ? OR id < ?)`
			args = append(args, pos.FailedAt, pos.FailedAt, pos.ID)
		}
		return `SELECT * FROM dlq_messages WHERE ` + where + ` ORDER BY failed_at DESC, id DESC LIMIT ?`, append(args, n)
	}
	if f.Status != dlq.StatusAll || f.Key != "" {
		return one(f)
	}
	var terms []string
	var args []any
	for _, st := range listStatuses {
		g := f
		g.Status = st
		q, a := one(g)
		terms, args = append(terms, `SELECT * FROM (`+q+`)`), append(args, a...)
	}
	return `SELECT * FROM (` + strings.Join(terms, ` UNION ALL `) + `) ORDER BY failed_at DESC, id DESC LIMIT ?`, append(args, n)
}
