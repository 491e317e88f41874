package handlers

import (
	"context"
	"errors"
	"io"
	"net/http"
	"sort"
	"strings"

	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/dlq/relocation"
)

// Moving a pipeline to its own database (docs/operations.md "Move a
// pipeline to its own database"): POST /admin/dlq/import writes exported
// NDJSON lines into their pipeline's database, POST /admin/dlq/release
// deletes the moved rows from the database they came from.

// dlqImport serves POST /admin/dlq/import: the body is NDJSON as GET
// /admin/dlq/export?format=ndjson&include_raw=true writes it, at most
// relocation.ImportMaxLines lines and MaxBodyBytes, every line of one database.
// One batch: every line is written or skipped (already there), or, for a
// bad line, nothing is.
func (a *API) dlqImport(w http.ResponseWriter, r *http.Request) error {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return &APIError{Status: http.StatusRequestEntityTooLarge, Code: "PAYLOAD_TOO_LARGE",
				Message: "request body is larger than 1 MB: send the lines in several requests"}
		}
		return badRequest("INVALID_REQUEST", "could not read request body")
	}
	rows, err := relocation.ParseImport(body, relocation.ImportMaxLines)
	if err != nil {
		return err
	}
	// Audited in the database the lines go to (that of the first line's
	// queue; the service refuses lines of several databases).
	in := a.in(a.databases().OfQueue(rows[0].SourceQueue))
	start := dlq.AuditStart{Action: dlq.ActionImport}
	return in.audited(w, r, start, auditAround, func(ctx context.Context) (any, string, any, error) {
		res, err := relocation.Import{DBs: a.databases()}.Run(ctx, rows)
		if err != nil {
			return nil, "", nil, err
		}
		return res, dlq.OutcomeOK, map[string]any{"database": res.Database, "lines": res.Lines,
			"imported": res.Imported, "merged": res.Merged, "skipped": res.Skipped}, nil
	})
}

// dlqRelease serves POST /admin/dlq/release (relocation.Release).
func (a *API) dlqRelease(w http.ResponseWriter, r *http.Request) error {
	var p relocation.ReleaseParams
	if err := decodeJSON(w, r, &p); err != nil {
		return err
	}
	// Audited in the database the rows are deleted from (DB when the
	// name is not a bound database: the service refuses it).
	in := a
	if d, err := a.databaseNamed(p.Database); err == nil {
		in = a.in(d)
	}
	start := dlq.AuditStart{Action: dlq.ActionRelease}
	return in.audited(w, r, start, auditAround, func(ctx context.Context) (any, string, any, error) {
		res, err := relocation.Release{DBs: a.databases()}.Run(ctx, p)
		if err != nil {
			return nil, "", nil, err
		}
		return res, dlq.OutcomeOK, map[string]any{"pipeline": res.Pipeline, "database": res.Database, "into": res.Into,
			"after": p.After, "limit": p.Limit, "next_after": res.NextAfter, "scanned": res.Scanned, "released": res.Released,
			"not_imported": res.NotImported, "changed": res.Changed, "remaining": res.Remaining}, nil
	})
}

// databaseNamed returns the bound database named name (400 UNKNOWN_DATABASE
// naming the bound ones otherwise).
func (a *API) databaseNamed(name string) (dlq.Database, error) {
	var names []string
	for _, d := range a.databases().All {
		if d.Name == name {
			return d, nil
		}
		names = append(names, d.Name)
	}
	sort.Strings(names)
	return dlq.Database{}, badRequest("UNKNOWN_DATABASE", "database must be a bound database ("+strings.Join(names, ", ")+"); got "+quote(name))
}
