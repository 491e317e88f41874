package handlers

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"

	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/dlq/inspect"
)

// Export content types.
const (
	contentNDJSON = "application/x-ndjson"
	contentCSV    = "text/csv; charset=utf-8"
)

// dlqExport serves GET /admin/dlq/export?format=ndjson|csv with the list's
// filters: every matching row, newest failure first, read page by page
// (inspect.Export: at most inspect.ExportMaxPages pages of limit rows per call, and
// no page read past inspect.ExportMaxBytes). When rows remain, X-Next-Cursor
// carries the cursor to continue with (?cursor=, same filters); without it
// the export is complete. database (a binding name) reads that database
// instead of DB. An NDJSON export with include_raw adds to each row what
// a copy of it needs (dlq.MoveFieldNames), which POST /admin/dlq/import
// reads. The worker's bridge buffers every response
// (platform/serve.go): the byte budget bounds what it holds.
func (a *API) dlqExport(w http.ResponseWriter, r *http.Request) error {
	q := queryValues(r)
	format, err := exportFormat(q["format"])
	if err != nil {
		return err
	}
	p, err := parseListParams(q)
	if err != nil {
		return err
	}
	// Without database, the rows of the filter's pipeline's database, or
	// of every database merged (moveFields finds each row's).
	named := q["database"] != ""
	db, dbName, err := a.exportDatabase(q["database"])
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	visit := func(rows []json.RawMessage) error {
		if p.IncludeRaw {
			// What a copy of each row needs (POST /admin/dlq/import).
			if err := a.moveFields(r.Context(), db, p.Filter, rows); err != nil {
				return err
			}
		}
		for _, row := range rows {
			buf.Write(row)
			buf.WriteByte('\n')
		}
		return nil
	}
	var cw *inspect.CSVExport
	if format == "csv" {
		if cw, err = inspect.NewCSVExport(&buf, p.IncludeRaw); err != nil {
			return err
		}
		visit = cw.Write
	}
	list := inspect.List{DB: a.DB, DBs: a.databases(), Cursors: a.cursors()}
	if named {
		// That database alone, read as the configured pipelines say.
		one := dlq.Single(dlq.Store{DB: db, Pipelines: a.databases().Pipelines()})
		list = inspect.List{DB: db, DBs: one, Database: dbName, Cursors: a.cursors()}
	}
	res, err := inspect.Export{List: list}.Run(r.Context(), p, visit)
	if err != nil {
		return err
	}
	return writeExport(w, &buf, cw, res)
}

// exportFormat is the export's format: ndjson (the default) or csv.
func exportFormat(format string) (string, error) {
	if format == "" {
		format = "ndjson"
	}
	if format != "ndjson" && format != "csv" {
		return "", badRequest("INVALID_FORMAT", "format must be ndjson or csv")
	}
	return format, nil
}

// exportDatabase is the database an export reads when ?database= names one
// (name): its handle, and its name when there are many (its cursors are
// bound to it). Without a name, both are empty: the rows of the filter's
// pipeline's database, or of every database merged.
func (a *API) exportDatabase(name string) (*sql.DB, string, error) {
	if name == "" {
		return nil, "", nil
	}
	d, err := a.databaseNamed(name)
	if err != nil {
		return nil, "", err
	}
	var dbName string
	if a.databases().Many() {
		dbName = d.Name // its cursors are bound to it
	}
	return d.DB, dbName, nil
}

// writeExport answers with the exported rows in buf: CSV when cw wrote
// them (flushed first), else NDJSON, as an attachment, with the row count
// and, when rows remain, the cursor to continue with.
func writeExport(w http.ResponseWriter, buf *bytes.Buffer, cw *inspect.CSVExport, res inspect.ExportResult) error {
	h := w.Header()
	if cw != nil {
		if err := cw.Flush(); err != nil {
			return err
		}
		h.Set("Content-Type", contentCSV)
		h.Set("Content-Disposition", `attachment; filename="dlq-export.csv"`)
	} else {
		h.Set("Content-Type", contentNDJSON)
		h.Set("Content-Disposition", `attachment; filename="dlq-export.ndjson"`)
	}
	h.Set("X-Export-Rows", strconv.Itoa(res.Rows))
	if res.NextCursor != nil {
		h.Set("X-Next-Cursor", *res.NextCursor)
	}
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(buf.Bytes())
	return nil
}

// moveFields adds to rows what a copy of each needs (dlq.AddMoveFields),
// read from db, or, when db is nil, from the database of the filter's
// pipeline or source queue, or from each database in turn for the rows
// the ones before it did not hold (a merged export).
func (a *API) moveFields(ctx context.Context, db *sql.DB, f dlq.Filter, rows []json.RawMessage) error {
	dbs := a.databases()
	switch {
	case db != nil:
		return dlq.AddMoveFields(ctx, db, rows)
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
