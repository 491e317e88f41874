package handlers

import (
	"bytes"
	_ "embed"
	"net/http"
)

// openAPIDocument is the OpenAPI 3.1 description of the HTTP API, kept in the
// repository next to the handlers (openapi_test.go checks it covers every route).
//
//go:embed openapi.json
var openAPIDocument []byte

// openAPI serves GET /admin/openapi.json: the document itself (not wrapped in
// the envelope, so that OpenAPI tools can read it).
func (a *API) openAPI(w http.ResponseWriter, r *http.Request) error {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	_, err := w.Write(openAPIDocument)
	return err
}

// OpenAPIDocument returns the document GET /admin/openapi.json serves (a
// copy), for the contract tests.
func OpenAPIDocument() []byte { return bytes.Clone(openAPIDocument) }
