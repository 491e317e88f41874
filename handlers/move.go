package handlers

import (
	"errors"
	"io"
	"net/http"

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
	res, err := relocation.Import{DBs: a.databases()}.Audited(r.Context(), rows, a.auditLog(), a.requester(r))
	if err != nil {
		return err
	}
	respond(w, r, http.StatusOK, res)
	return nil
}

// dlqRelease serves POST /admin/dlq/release (relocation.Release).
func (a *API) dlqRelease(w http.ResponseWriter, r *http.Request) error {
	var p relocation.ReleaseParams
	if err := decodeJSON(w, r, &p); err != nil {
		return err
	}
	res, err := relocation.Release{DBs: a.databases()}.Audited(r.Context(), p, a.auditLog(), a.requester(r))
	if err != nil {
		return err
	}
	respond(w, r, http.StatusOK, res)
	return nil
}
