// Package client is a Go client of redrive's admin API: the types and
// methods oapi-codegen generates from handlers/openapi.json (client.gen.go;
// regenerate with `go generate ./client`), plus a few hand-written
// conveniences in this file: credentials, the response envelope, typed
// errors and an export that follows X-Next-Cursor.
//
// Every /admin route needs both credentials; New sends them on every request:
//
//	c, err := client.New("https://redrive.example.workers.dev", client.Credentials{APIKey: key, AdminSecret: secret})
//	resp, err := c.DlqStatsWithResponse(ctx, nil)
//	var stats client.StatsReport
//	err = client.DecodeData(resp.StatusCode(), resp.Body, &stats)
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
)

// Credentials authenticate with the admin API: a named key (Token), or the
// pair of secrets: APIKey goes in X-API-Key (a wrong one is a 401) and
// AdminSecret in X-Admin-Secret (403).
type Credentials struct {
	APIKey      string
	AdminSecret string
	// Token is a named key (rdk_…, POST /admin/keys): when set, it is sent
	// as Authorization: Bearer instead of the pair.
	Token string
}

// WithCredentials sends the credentials on every request: the named key
// when Token is set, else both headers of the pair.
func WithCredentials(c Credentials) ClientOption {
	return WithRequestEditorFn(func(_ context.Context, req *http.Request) error {
		if c.Token != "" {
			req.Header.Set("Authorization", "Bearer "+c.Token)
			return nil
		}
		req.Header.Set("X-API-Key", c.APIKey)
		req.Header.Set("X-Admin-Secret", c.AdminSecret)
		return nil
	})
}

// New returns a client of the worker at server (its origin, such as
// http://localhost:8787) that authenticates with creds.
func New(server string, creds Credentials, opts ...ClientOption) (*ClientWithResponses, error) {
	return NewClientWithResponses(server, append([]ClientOption{WithCredentials(creds)}, opts...)...)
}

// APIError is an error envelope ({success:false, error:{code, message},
// requestId}), or a response that is not an envelope at all.
type APIError struct {
	// Status is the HTTP status.
	Status int
	// Code is the envelope's stable error code (UNAUTHORIZED, INVALID_FILTER, ...).
	Code string
	// Message says what was wrong, in the API's terms.
	Message string
	// RequestID names the worker's log lines of the request.
	RequestID string
}

func (e *APIError) Error() string {
	if e.Code == "" {
		return fmt.Sprintf("HTTP %d: %s", e.Status, e.Message)
	}
	return fmt.Sprintf("%s (HTTP %d): %s", e.Code, e.Status, e.Message)
}

// IsAuth reports whether err is the API refusing the credentials (401,
// 403, or 503 NOT_CONFIGURED: the worker has none).
func IsAuth(err error) bool {
	var e *APIError
	return errors.As(err, &e) && (e.Status == http.StatusUnauthorized || e.Status == http.StatusForbidden || e.Code == "NOT_CONFIGURED")
}

// Data returns the data of a success envelope, or an *APIError for any
// other answer.
func Data(status int, body []byte) (json.RawMessage, error) {
	var env struct {
		Success   bool            `json:"success"`
		RequestID string          `json:"requestId"`
		Data      json.RawMessage `json:"data"`
		Error     *struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(body, &env); err != nil {
		msg := string(body)
		if len(msg) > 200 {
			msg = msg[:200] + "…"
		}
		return nil, &APIError{Status: status, Message: "not a JSON envelope: " + msg}
	}
	if status/100 != 2 || !env.Success {
		e := &APIError{Status: status, RequestID: env.RequestID, Message: http.StatusText(status)}
		if env.Error != nil {
			e.Code, e.Message = env.Error.Code, env.Error.Message
		}
		return nil, e
	}
	return env.Data, nil
}

// DecodeData decodes the data of a success envelope into v, or returns
// the *APIError of any other answer.
func DecodeData(status int, body []byte, v any) error {
	data, err := Data(status, body)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("decode response data: %w", err)
	}
	return nil
}

// ExportAll writes every row GET /admin/dlq/export gives for params to w,
// asking again with X-Next-Cursor until the server sends none (a CSV
// export's header row is written once). progress, when not nil, is called
// after each response with the rows written so far. It returns the rows
// written; on an error, those written before it.
func (c *ClientWithResponses) ExportAll(ctx context.Context, params ExportDLQParams, w io.Writer, progress func(rows int)) (int, error) {
	rows := 0
	for page := 0; ; page++ {
		resp, err := c.ExportDLQ(ctx, &params)
		if err != nil {
			return rows, fmt.Errorf("export: %w", err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return rows, fmt.Errorf("export: read response: %w", err)
		}
		if resp.StatusCode != http.StatusOK {
			_, err := Data(resp.StatusCode, body)
			return rows, err
		}
		if page > 0 && params.Format != nil && *params.Format == Csv {
			// Every response starts with the header row: keep the first only.
			if i := bytes.IndexByte(body, '\n'); i >= 0 {
				body = body[i+1:]
			}
		}
		if _, err := w.Write(body); err != nil {
			return rows, fmt.Errorf("export: write: %w", err)
		}
		n, _ := strconv.Atoi(resp.Header.Get("X-Export-Rows"))
		rows += n
		if progress != nil {
			progress(rows)
		}
		next := resp.Header.Get("X-Next-Cursor")
		if next == "" {
			return rows, nil
		}
		params.Cursor = &next
	}
}

// Import limits of POST /admin/dlq/import (relocation.ImportMaxLines, handlers.MaxBodyBytes).
const (
	ImportMaxLines = 500
	ImportMaxBytes = 1 << 20
)

// ImportChunks splits NDJSON (as GET /admin/dlq/export?format=ndjson&include_raw=true
// writes it) into request bodies of whole lines, each at most maxLines lines
// and maxBytes bytes. A line longer than maxBytes is an error naming it.
func ImportChunks(ndjson []byte, maxLines, maxBytes int) ([][]byte, error) {
	var out [][]byte
	var cur []byte
	lines := 0
	for n, rest := 1, ndjson; len(rest) > 0; n++ {
		line := rest
		if i := bytes.IndexByte(rest, '\n'); i >= 0 {
			line = rest[:i+1]
		}
		rest = rest[len(line):]
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		if len(line) > maxBytes {
			return nil, fmt.Errorf("import: line %d is %d bytes, more than a request may hold (%d)", n, len(line), maxBytes)
		}
		if lines == maxLines || len(cur)+len(line) > maxBytes {
			out, cur, lines = append(out, cur), nil, 0
		}
		cur, lines = append(cur, line...), lines+1
	}
	if lines > 0 {
		out = append(out, cur)
	}
	return out, nil
}

// ImportAll sends ndjson in ImportChunks, one POST /admin/dlq/import
// each, in order, and adds up their results; it stops at the first error
// (what was imported stays: run it again, lines already imported are
// skipped). progress, when set, is called after each request.
func (c *ClientWithResponses) ImportAll(ctx context.Context, ndjson []byte, progress func(ImportResult)) (ImportResult, error) {
	var total ImportResult
	chunks, err := ImportChunks(ndjson, ImportMaxLines, ImportMaxBytes)
	if err != nil {
		return total, err
	}
	for _, chunk := range chunks {
		resp, err := c.ImportDLQWithBody(ctx, "application/x-ndjson", bytes.NewReader(chunk))
		if err != nil {
			return total, fmt.Errorf("import: %w", err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return total, fmt.Errorf("import: read response: %w", err)
		}
		var r ImportResult
		if err := DecodeData(resp.StatusCode, body, &r); err != nil {
			return total, err
		}
		total.Database = r.Database
		total.Lines, total.Imported, total.Skipped = total.Lines+r.Lines, total.Imported+r.Imported, total.Skipped+r.Skipped
		if progress != nil {
			progress(total)
		}
	}
	return total, nil
}

// ReleaseAll calls POST /admin/dlq/release from the first id to the
// database's last and adds up what the calls scanned, released and found
// not imported or changed; the result's Remaining and NextAfter are the last call's.
func (c *ClientWithResponses) ReleaseAll(ctx context.Context, pipeline, database string, progress func(ReleaseResult)) (ReleaseResult, error) {
	var total ReleaseResult
	after := 0
	for {
		req := ReleaseRequest{Pipeline: pipeline, Database: database, After: &after}
		resp, err := c.ReleaseDLQ(ctx, req)
		if err != nil {
			return total, fmt.Errorf("release: %w", err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return total, fmt.Errorf("release: read response: %w", err)
		}
		var r ReleaseResult
		if err := DecodeData(resp.StatusCode, body, &r); err != nil {
			return total, err
		}
		r.Scanned, r.Released, r.NotImported = total.Scanned+r.Scanned, total.Released+r.Released, total.NotImported+r.NotImported
		r.Changed += total.Changed
		total = r
		if progress != nil {
			progress(total)
		}
		if r.NextAfter == nil {
			return total, nil
		}
		after = *r.NextAfter
	}
}
