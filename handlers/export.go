package handlers

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/redrive/redrive/access"
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
	p, err := a.listParams(r)
	if err != nil {
		return err
	}
	if err := exportAllowed(r, p.IncludeRaw, q["database"] != ""); err != nil {
		return err
	}
	exp, err := inspect.ExportFrom(a.databases(), q["database"], a.cursors())
	if err != nil {
		return err
	}
	exp.MoveFields = format == "ndjson"
	var buf bytes.Buffer
	visit := func(rows []json.RawMessage) error {
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
	res, err := exp.Run(r.Context(), p, visit)
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

// exportAllowed refuses an export its principal may not make: bodies
// (include_raw) need access.ReadBody, one database's rows (database, what
// a move copies) access.Move.
func exportAllowed(r *http.Request, raw, database bool) error {
	if raw {
		if err := need(r, access.ReadBody); err != nil {
			return err
		}
	}
	if database {
		if p := principalOf(r); p.Scoped() {
			return unscopedOnly(p)
		}
		return need(r, access.Move)
	}
	return nil
}
