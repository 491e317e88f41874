package relocation

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"unicode/utf8"

	"github.com/redrive/redrive/dlq"
)

// ImportMaxLines is the most lines one POST /admin/dlq/import takes.
const ImportMaxLines = 500

// Bounds of an imported line's text fields (bytes).
const (
	importMaxID     = 1<<53 - 1
	importMaxName   = 1024 // message ids, queues, signatures, versions, classes
	importMaxReason = 64 << 10
)

// ImportRow is one line of an import: a row as GET
// /admin/dlq/export?format=ndjson&include_raw=true writes it. pipeline,
// key and labels are accepted and not stored: they follow from
// source_queue, beer_id, beer_name and brewer.
type ImportRow struct {
	ID               int64                `json:"id"`
	MessageID        string               `json:"message_id"`
	BeerID           string               `json:"beer_id"`
	BeerName         *string              `json:"beer_name"`
	Brewer           *string              `json:"brewer"`
	FailedAt         int64                `json:"failed_at"`
	FailureCount     *int64               `json:"failure_count"`
	FailureReason    *string              `json:"failure_reason"`
	SourceQueue      string               `json:"source_queue"`
	Status           string               `json:"status"`
	ReplayCount      int64                `json:"replay_count"`
	ReplayedAt       *int64               `json:"replayed_at"`
	AcknowledgedAt   *int64               `json:"acknowledged_at"`
	FailureClass     *string              `json:"failure_class"`
	FirstFailedAt    int64                `json:"first_failed_at"`
	ReplayingAt      *int64               `json:"replaying_at"`
	AcknowledgedNote *string              `json:"acknowledged_note"`
	UpdatedAt        int64                `json:"updated_at"`
	ContentType      string               `json:"content_type"`
	Pipeline         *string              `json:"pipeline"`
	Key              string               `json:"key"`
	Labels           map[string]*string   `json:"labels"`
	RawMessage       *string              `json:"raw_message"`
	RawEncoding      string               `json:"raw_encoding"`
	LastMessageID    string               `json:"last_message_id"`
	BodyHash         *string              `json:"body_hash"`
	BodyEdited       *int64               `json:"body_edited"`
	History          json.RawMessage      `json:"history"`
	HistoryDropped   int64                `json:"history_dropped"`
	Version          *string              `json:"version"`
	Signature        *dlq.ImportSignature `json:"signature"`
}

// importRequired are the fields every line must have (null allowed where
// the type allows it): an export without include_raw, or from a version
// without MoveFieldNames, lacks some and is refused.
var importRequired = []string{"id", "message_id", "beer_id", "failed_at", "source_queue", "status", "replay_count",
	"first_failed_at", "updated_at", "content_type", "raw_message", "raw_encoding", "last_message_id", "body_hash",
	"history", "history_dropped", "signature"}

// ParseImport reads an import body: NDJSON, one row a line (a last
// newline is optional), at most maxLines lines, ids and message ids
// distinct. A bad line is an *InputError naming it (1-based); nothing is
// returned then.
func ParseImport(body []byte, maxLines int) ([]ImportRow, error) {
	body = bytes.TrimSuffix(body, []byte("\n"))
	if len(body) == 0 {
		return nil, dlq.InputErr("INVALID_REQUEST", "the body is empty: send NDJSON lines as GET /admin/dlq/export?format=ndjson&include_raw=true writes them")
	}
	if n := bytes.Count(body, []byte("\n")) + 1; n > maxLines {
		return nil, dlq.InputErr("TOO_MANY_LINES", "%d lines; at most %d per request", n, maxLines)
	}
	var rows []ImportRow
	ids, msgs := map[int64]int{}, map[string]int{}
	for i, line := range bytes.Split(body, []byte("\n")) {
		n := i + 1
		r, err := parseImportLine(line)
		if err != nil {
			return nil, dlq.InputErr("INVALID_LINE", "line %d: %s", n, err.Error())
		}
		if m, ok := ids[r.ID]; ok {
			return nil, dlq.InputErr("INVALID_LINE", "line %d: id %d repeats line %d", n, r.ID, m)
		}
		if m, ok := msgs[r.MessageID]; ok {
			return nil, dlq.InputErr("INVALID_LINE", "line %d: message_id repeats line %d", n, m)
		}
		ids[r.ID], msgs[r.MessageID] = n, n
		rows = append(rows, r)
	}
	return rows, nil
}

// parseImportLine decodes and checks one line.
func parseImportLine(line []byte) (ImportRow, error) {
	var r ImportRow
	if len(bytes.TrimSpace(line)) == 0 {
		return r, fmt.Errorf("empty line")
	}
	if !utf8.Valid(line) {
		return r, fmt.Errorf("not UTF-8")
	}
	keys, err := objectKeys(line)
	if err != nil {
		return r, err
	}
	for _, k := range importRequired {
		if !keys[k] {
			return r, fmt.Errorf("%s is missing (export with format=ndjson&include_raw=true)", k)
		}
	}
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	dec.UseNumber()
	if err := dec.Decode(&r); err != nil {
		return r, fmt.Errorf("%s", dlq.ClipName(err.Error()))
	}
	return r, r.check()
}

// check validates a decoded line.
func (r ImportRow) check() error {
	switch {
	case r.ID < 1 || r.ID > importMaxID:
		return fmt.Errorf("id must be a positive integer")
	case r.MessageID == "" || len(r.MessageID) > importMaxName:
		return fmt.Errorf("message_id must be 1..%d bytes", importMaxName)
	case r.SourceQueue == "" || len(r.SourceQueue) > importMaxName:
		return fmt.Errorf("source_queue must be 1..%d bytes", importMaxName)
	case len(r.BeerID) > importMaxReason || len(r.LastMessageID) > importMaxName:
		return fmt.Errorf("beer_id or last_message_id is too long")
	case r.Status != dlq.StatusPending && r.Status != dlq.StatusReplaying && r.Status != dlq.StatusReplayed && r.Status != dlq.StatusAcknowledged:
		return fmt.Errorf("status must be pending, replaying, replayed or acknowledged")
	case r.FailedAt < 0 || r.FirstFailedAt < 0 || r.UpdatedAt < 0 || neg(r.ReplayedAt) || neg(r.AcknowledgedAt) || neg(r.ReplayingAt):
		return fmt.Errorf("times must be epoch milliseconds (not negative)")
	case r.ReplayCount < 0 || r.HistoryDropped < 0 || neg(r.FailureCount):
		return fmt.Errorf("replay_count, history_dropped and failure_count must not be negative")
	case r.ContentType != "json" && r.ContentType != "text" && r.ContentType != "bytes" && r.ContentType != "v8":
		return fmt.Errorf("content_type must be json, text, bytes or v8")
	case r.RawEncoding != "text" && r.RawEncoding != "base64":
		return fmt.Errorf("raw_encoding must be text or base64")
	case r.BodyEdited != nil && *r.BodyEdited != 0 && *r.BodyEdited != 1:
		return fmt.Errorf("body_edited must be null, 0 or 1")
	case r.BodyHash != nil && len(*r.BodyHash) > importMaxName, r.Version != nil && len(*r.Version) > importMaxName,
		r.FailureClass != nil && len(*r.FailureClass) > importMaxName:
		return fmt.Errorf("body_hash, version or failure_class is too long")
	case r.FailureReason != nil && len(*r.FailureReason) > importMaxReason, r.AcknowledgedNote != nil && len(*r.AcknowledgedNote) > importMaxReason,
		r.BeerName != nil && len(*r.BeerName) > importMaxReason, r.Brewer != nil && len(*r.Brewer) > importMaxReason:
		return fmt.Errorf("failure_reason, acknowledged_note, beer_name or brewer is too long")
	case !jsonArrayOrNull(r.History):
		return fmt.Errorf("history must be a JSON array or null")
	}
	if s := r.Signature; s != nil {
		switch {
		case s.Signature == "" || len(s.Signature) > 64 || !lowerHex(s.Signature):
			return fmt.Errorf("signature.signature must be 1..64 lowercase hex digits")
		case s.Class == "" || len(s.Class) > importMaxName || len(s.Text) > importMaxReason || len(s.SourceQueue) > importMaxName:
			return fmt.Errorf("signature.class must be 1..%d bytes, signature.text at most %d", importMaxName, importMaxReason)
		case s.FirstSeen < 0 || neg(s.AnnouncedAt):
			return fmt.Errorf("signature times must be epoch milliseconds (not negative)")
		case !jsonArray(s.Versions) || !jsonArray(s.SampleIDs):
			return fmt.Errorf("signature.versions and signature.sample_ids must be JSON arrays")
		}
	}
	return nil
}

func neg(p *int64) bool { return p != nil && *p < 0 }

func lowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

func jsonArray(b json.RawMessage) bool {
	b = bytes.TrimSpace(b)
	return len(b) > 0 && b[0] == '[' && json.Valid(b) && utf8.Valid(b)
}

func jsonArrayOrNull(b json.RawMessage) bool {
	return string(bytes.TrimSpace(b)) == "null" || jsonArray(b)
}

// objectKeys returns the keys of the JSON object line, refusing anything
// else and a key given twice (which value would count?).
func objectKeys(line []byte) (map[string]bool, error) {
	dec := json.NewDecoder(bytes.NewReader(line))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, fmt.Errorf("not a JSON object")
	}
	keys := map[string]bool{}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("not a JSON object")
		}
		k, _ := t.(string)
		if keys[k] {
			return nil, fmt.Errorf("%s is given twice", dlq.ClipName(k))
		}
		keys[k] = true
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, fmt.Errorf("not a JSON object")
		}
	}
	if _, err := dec.Token(); err != nil {
		return nil, fmt.Errorf("not a JSON object")
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("data after the JSON object")
	}
	return keys, nil
}
