package inspect

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"

	"github.com/redrive/redrive/dlq"
)

// Export reads every row matching a list filter for GET /admin/dlq/export,
// page by page through the list's keyset pagination (List.Page), at most
// ExportMaxPages pages and about ExportMaxBytes per call. When that budget
// runs out before the last matching row, the call returns the list cursor
// to continue with (the same next_cursor GET /admin/dlq would give after
// that row): the admin API sends it as the X-Next-Cursor header.
type Export struct {
	List List
	// MoveFields adds to each row, with IncludeRaw, what a copy of it
	// needs (dlq.AddMoveFields), read from the database that holds it:
	// the NDJSON that POST /admin/dlq/import reads.
	MoveFields bool
}

// ExportFrom is the export of the rows of dbs: those of the filter's
// pipeline's database, or of every database merged; or, when database
// names one (Databases.Named), those of that database alone, whatever
// their pipeline (a pipeline's move: docs/operations.md), read as the
// configured pipelines say, its cursors bound to it.
func ExportFrom(dbs dlq.Databases, database string, cursors dlq.Cursors) (Export, error) {
	if database == "" {
		return Export{List: List{DBs: dbs, Cursors: cursors}}, nil
	}
	d, err := dbs.Named(database)
	if err != nil {
		return Export{}, err
	}
	var name string
	if dbs.Many() {
		name = d.Name
	}
	one := dlq.Single(dlq.Store{DB: d.DB, Pipelines: dbs.Pipelines()})
	return Export{List: List{DBs: one, Database: name, Cursors: cursors}}, nil
}

// moveFields adds to rows what a copy of each needs (dlq.AddMoveFields),
// read from the database of the filter's pipeline or source queue, or
// from each database in turn for the rows the ones before it did not hold
// (a merged export).
func (e Export) moveFields(ctx context.Context, f dlq.Filter, rows []json.RawMessage) error {
	dbs := e.List.DBs
	switch {
	case !dbs.Many() || f.Pipeline != "":
		return dlq.AddMoveFields(ctx, dbs.OfPipeline(f.Pipeline).DB, rows)
	case f.SourceQueue != "":
		return dlq.AddMoveFields(ctx, dbs.OfQueue(f.SourceQueue).DB, rows)
	}
	left := slices.Clone(rows)
	at := make([]int, len(rows))
	for i := range at {
		at[i] = i
	}
	for _, d := range dbs.All {
		before := slices.Clone(left)
		if err := dlq.AddMoveFields(ctx, d.DB, left); err != nil {
			return err
		}
		var nextLeft []json.RawMessage
		var nextAt []int
		for i := range left {
			if len(left[i]) != len(before[i]) {
				rows[at[i]] = left[i]
				continue
			}
			nextLeft, nextAt = append(nextLeft, left[i]), append(nextAt, at[i])
		}
		left, at = nextLeft, nextAt
	}
	return nil
}

// Export budget: pages of ListParams.Limit rows (DefaultExportPageSize
// when 0; at most ExportRawPageSize with IncludeRaw), at most
// ExportMaxPages of them per call (5,000 rows by default), and no page
// read once the pages read hold ExportMaxBytes of JSON. A call thus holds
// at most ExportMaxBytes plus one page: with raw bodies (128 KB each at
// most, 171 KB as base64, up to 6 times that as JSON-escaped text) one
// page stays under 8 MB, so a response stays well within the isolate's
// 128 MB, which the worker's bridge buffers it in (platform/serve.go).
const (
	DefaultExportPageSize = dlq.MaxListLimit
	ExportRawPageSize     = 10
	ExportMaxPages        = 50
	ExportMaxBytes        = 8 << 20
)

// ExportResult says how far a call went.
type ExportResult struct {
	// Rows is the number of rows written.
	Rows int
	// Pages is the number of list pages read.
	Pages int
	// Bytes is the size of the pages read, as JSON (what NDJSON writes,
	// about what CSV writes).
	Bytes int
	// NextCursor continues after the last row written; nil when every
	// matching row was written.
	NextCursor *string
}

// Run reads the pages of p (p.Cursor continues a previous call) and hands
// each page's messages to visit, newest failure first.
func (e Export) Run(ctx context.Context, p ListParams, visit func([]json.RawMessage) error) (ExportResult, error) {
	if p.Limit == 0 {
		p.Limit = DefaultExportPageSize
	}
	if p.IncludeRaw {
		p.Limit = min(p.Limit, ExportRawPageSize)
	}
	var res ExportResult
	for res.Pages < ExportMaxPages && res.Bytes < ExportMaxBytes {
		// A page over D1's value limit comes back shorter (List.Page).
		page, err := e.List.Page(ctx, p)
		if err != nil {
			return res, err
		}
		res.Pages++
		res.Bytes += len(page.Messages)
		var rows []json.RawMessage
		if len(page.Messages) > 0 {
			if err := json.Unmarshal(page.Messages, &rows); err != nil {
				return res, fmt.Errorf("dlq export: page: %w", err)
			}
		}
		if p.IncludeRaw && e.MoveFields {
			if err := e.moveFields(ctx, p.Filter, rows); err != nil {
				return res, err
			}
		}
		if err := visit(rows); err != nil {
			return res, err
		}
		res.Rows += len(rows)
		if !page.HasMore {
			res.NextCursor = nil
			return res, nil
		}
		p.Cursor = *page.NextCursor
		res.NextCursor = page.NextCursor
	}
	return res, nil
}

// ExportColumns are the CSV export's columns, in order (the Message fields;
// raw_message and raw_encoding only with include_raw).
var ExportColumns = []string{"id", "message_id", "beer_id", "beer_name", "brewer", "failed_at", "failure_count",
	"failure_reason", "source_queue", "status", "replay_count", "replayed_at", "acknowledged_at", "failure_class",
	"first_failed_at", "replaying_at", "acknowledged_note", "updated_at", "content_type", "pipeline", "key", "labels"}

// ExportRawColumns follow ExportColumns with include_raw.
var ExportRawColumns = []string{"raw_message", "raw_encoding"}

// CSVExport writes export rows as CSV (RFC 4180, CRLF line ends, a header
// row first). A null is an empty cell. A cell a spreadsheet would run as a
// formula (first character =, +, -, @, tab or CR) is written with a
// leading ', and so is a cell that begins with ' (so that removing one
// leading ' from a cell that has one always gives the value back).
type CSVExport struct {
	out io.Writer
	rec bytes.Buffer // one record, as csv.Writer ends it ("\n")
	w   *csv.Writer  // writes to rec
	raw bool
}

// NewCSVExport writes the header row to w.
func NewCSVExport(w io.Writer, raw bool) (*CSVExport, error) {
	c := &CSVExport{out: w, raw: raw}
	// Not csv.Writer's UseCRLF: it drops every CR inside a cell (and turns
	// a cell's LF into CRLF). Each record is written with LF and its last
	// LF becomes the CRLF that ends it; a cell's own CR and LF stay as they are.
	c.w = csv.NewWriter(&c.rec)
	cols := ExportColumns
	if raw {
		cols = append(append([]string{}, cols...), ExportRawColumns...)
	}
	if err := c.record(cols); err != nil {
		return nil, err
	}
	return c, nil
}

// record writes one record, ended by CRLF.
func (c *CSVExport) record(rec []string) error {
	c.rec.Reset()
	if err := c.w.Write(rec); err != nil {
		return err
	}
	c.w.Flush()
	if err := c.w.Error(); err != nil {
		return err
	}
	b := c.rec.Bytes()
	b = append(b[:len(b)-1], '\r', '\n')
	_, err := c.out.Write(b)
	return err
}

// Write writes one page of rows (Message objects as the list gives them).
func (c *CSVExport) Write(rows []json.RawMessage) error {
	for _, js := range rows {
		var m dlq.Message
		if err := json.Unmarshal(js, &m); err != nil {
			return fmt.Errorf("dlq export: row: %w", err)
		}
		rec := []string{exportInt(m.ID), m.MessageID, m.BeerID, str(m.BeerName), str(m.Brewer), exportInt(m.FailedAt),
			intp(m.FailureCount), str(m.FailureReason), m.SourceQueue, m.Status, exportInt(m.ReplayCount),
			intp(m.ReplayedAt), intp(m.AcknowledgedAt), str(m.FailureClass), exportInt(m.FirstFailedAt),
			intp(m.ReplayingAt), str(m.AcknowledgedNote), exportInt(m.UpdatedAt), m.ContentType, str(m.Pipeline), m.Key, labelsJSON(m.Labels)}
		if c.raw {
			var raw *string
			if len(m.RawMessage) > 0 {
				if err := json.Unmarshal(m.RawMessage, &raw); err != nil {
					return fmt.Errorf("dlq export: raw_message: %w", err)
				}
			}
			rec = append(rec, str(raw), m.RawEncoding)
		}
		for i, v := range rec {
			rec[i] = NeutralizeCell(v)
		}
		if err := c.record(rec); err != nil {
			return err
		}
	}
	return nil
}

// Flush ends the CSV (records are written whole as they come: nothing is
// left to write).
func (c *CSVExport) Flush() error { return nil }

// NeutralizeCell prefixes ' to a cell that begins with =, +, -, @, tab,
// CR or ' (see CSVExport).
func NeutralizeCell(v string) string {
	if v == "" {
		return v
	}
	switch v[0] {
	case '=', '+', '-', '@', '\t', '\r', '\'':
		return "'" + v
	}
	return v
}

func exportInt(n int64) string { return strconv.FormatInt(n, 10) }

func intp(n *int64) string {
	if n == nil {
		return ""
	}
	return exportInt(*n)
}

func str(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// labelsJSON is a row's labels as a CSV cell: their JSON object ({} when none).
func labelsJSON(labels map[string]*string) string {
	if len(labels) == 0 {
		return "{}"
	}
	js, _ := json.Marshal(labels) // keys sorted
	return string(js)
}
