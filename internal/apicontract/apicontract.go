// Package apicontract checks HTTP exchanges against the OpenAPI document
// (handlers/openapi.json): the contract tests of the handlers (native) and
// of the e2e suite (the worker in workerd) run every response they get
// through Check, so the document cannot drift from what the server does.
package apicontract

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
	"github.com/google/uuid"
)

func init() {
	// GET /admin/dlq/export answers newline-delimited JSON: checked as the
	// array of its lines' values.
	openapi3filter.RegisterBodyDecoder("application/x-ndjson", ndjsonDecoder)
}

// ndjsonDecoder reads one JSON value per non-empty line into an array.
func ndjsonDecoder(body io.Reader, _ http.Header, _ *openapi3.SchemaRef, _ openapi3filter.EncodingFn) (any, error) {
	data, err := io.ReadAll(body)
	if err != nil {
		return nil, err
	}
	out := []any{}
	for i, line := range bytes.Split(data, []byte("\n")) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var v any
		if err := json.Unmarshal(line, &v); err != nil {
			return nil, fmt.Errorf("ndjson line %d: %w", i+1, err)
		}
		out = append(out, v)
	}
	return out, nil
}

// Validator holds a loaded and validated document.
type Validator struct {
	doc    *openapi3.T
	router routers.Router
	errEnv *openapi3.Schema
}

// New loads doc (OpenAPI 3.1 JSON), validates it and prepares its routes.
// The document's servers are ignored: a route is found by method and path
// whatever the host.
func New(doc []byte) (*Validator, error) {
	loader := openapi3.NewLoader()
	t, err := loader.LoadFromData(doc)
	if err != nil {
		return nil, fmt.Errorf("load openapi document: %w", err)
	}
	if err := t.Validate(context.Background()); err != nil {
		return nil, fmt.Errorf("openapi document is not valid: %w", err)
	}
	t.Servers = nil
	router, err := gorillamux.NewRouter(t)
	if err != nil {
		return nil, fmt.Errorf("openapi routes: %w", err)
	}
	ref := t.Components.Schemas["ErrorEnvelope"]
	if ref == nil || ref.Value == nil {
		return nil, errors.New("openapi document has no ErrorEnvelope schema")
	}
	return &Validator{doc: t, router: router, errEnv: ref.Value}, nil
}

// Check validates one exchange: req (whose body, already read, is reqBody)
// and the response's status, header and body.
//
//   - A request whose method and path are an operation of the document: the
//     response must be one of the operation's responses (status, declared
//     headers, body schema). HEAD is checked as GET without a body (the
//     server answers HEAD as GET, RFC 9110).
//   - When the server accepted the request (2xx), the request must also be
//     one the document accepts (parameters, body): the document is never
//     stricter than the server. A request the server rejected is not
//     checked (tests send invalid and hostile requests on purpose); its 4xx
//     answer is.
//   - Any other request (no such path, or not that method): the answer must
//     be the 404 or 405 error envelope with an X-Request-ID, as the
//     document's description says (or 400, for a path with an invalid
//     percent-escape).
func (v *Validator) Check(req *http.Request, reqBody []byte, status int, header http.Header, body []byte) error {
	ctx := context.Background()
	find := req
	if req.Method == http.MethodHead || req.URL.Opaque != "" {
		find = req.Clone(ctx)
		find.Method = strings.Replace(find.Method, http.MethodHead, http.MethodGet, 1)
	}
	if u := find.URL; u.Opaque != "" {
		// A target sent as it is (tests send paths Go would not build):
		// route it by its decoded path.
		p, err := url.PathUnescape(u.Opaque)
		if err != nil {
			return v.checkNoRoute(status, header, body)
		}
		u.Path, u.RawPath, u.Opaque = p, u.Opaque, ""
	}
	route, params, err := v.router.FindRoute(find)
	if err != nil {
		return v.checkNoRoute(status, header, body)
	}
	opts := &openapi3filter.Options{
		IncludeResponseStatus: true,
		MultiError:            true,
		ExcludeResponseBody:   req.Method == http.MethodHead,
		AuthenticationFunc:    credentialsPresent,
	}
	in := &openapi3filter.RequestValidationInput{Request: find, PathParams: params, Route: route, Options: opts}
	if status >= 200 && status < 300 {
		r := find.Clone(ctx)
		r.Body = io.NopCloser(bytes.NewReader(reqBody))
		if len(reqBody) > 0 && r.Header.Get("Content-Type") == "" {
			// The server reads a body as JSON whatever its Content-Type
			// (the document says so): check it as the JSON it is.
			r.Header.Set("Content-Type", "application/json")
		}
		rin := *in
		rin.Request = r
		if err := openapi3filter.ValidateRequest(ctx, &rin); err != nil {
			return fmt.Errorf("the server accepted (%d) a request the document rejects: %w", status, err)
		}
	}
	out := &openapi3filter.ResponseValidationInput{RequestValidationInput: in, Status: status, Header: header,
		Body: io.NopCloser(bytes.NewReader(body)), Options: opts}
	if err := openapi3filter.ValidateResponse(ctx, out); err != nil {
		return fmt.Errorf("response %d: %w", status, err)
	}
	if req.Method == http.MethodHead {
		// ValidateResponse skips HEAD: check the GET's status and headers.
		out.RequestValidationInput.Request = find
		if err := openapi3filter.ValidateResponse(ctx, out); err != nil {
			return fmt.Errorf("response %d to HEAD: %w", status, err)
		}
	}
	return nil
}

// credentialsPresent accepts a security scheme whose header is present
// (the server checks the values; the document says which headers it needs).
func credentialsPresent(_ context.Context, in *openapi3filter.AuthenticationInput) error {
	s := in.SecurityScheme
	h := in.RequestValidationInput.Request.Header
	if s.Type == "apiKey" && s.In == "header" && h.Get(s.Name) != "" {
		return nil
	}
	if s.Type == "http" && s.Scheme == "bearer" {
		if strings.HasPrefix(h.Get("Authorization"), "Bearer ") {
			return nil
		}
		return errors.New("no Authorization: Bearer header")
	}
	return fmt.Errorf("no %s header", s.Name)
}

// checkNoRoute checks the answer to a request that names no operation.
func (v *Validator) checkNoRoute(status int, header http.Header, body []byte) error {
	if status != http.StatusBadRequest && status != http.StatusNotFound && status != http.StatusMethodNotAllowed {
		return fmt.Errorf("status %d for a request the document has no operation for (want the 400, 404 or 405 envelope)", status)
	}
	if err := uuid.Validate(header.Get("X-Request-ID")); err != nil {
		return fmt.Errorf("status %d: X-Request-ID %q: %v", status, header.Get("X-Request-ID"), err)
	}
	if status == http.StatusMethodNotAllowed && header.Get("Allow") == "" {
		return errors.New("405 without an Allow header")
	}
	var value any
	if err := json.Unmarshal(body, &value); err != nil {
		return fmt.Errorf("status %d: body is not JSON: %v", status, err)
	}
	if err := v.errEnv.VisitJSON(value, openapi3.EnableJSONSchema2020()); err != nil {
		return fmt.Errorf("status %d: body is not the ErrorEnvelope: %w", status, err)
	}
	return nil
}

// Describe names an exchange in a failure message: method, path and query
// (clipped), status.
func Describe(req *http.Request, status int) string {
	target := req.URL.EscapedPath()
	if req.URL.Opaque != "" {
		target = req.URL.Opaque
	}
	if req.URL.RawQuery != "" {
		target += "?" + req.URL.RawQuery
	}
	if len(target) > 160 {
		target = target[:160] + "…"
	}
	return fmt.Sprintf("%s %s -> %d", req.Method, strings.ToValidUTF8(target, "?"), status)
}
