package dlq

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"strings"
)

// Cursors issues the opaque pagination cursors of the admin API and accepts
// only its own. A cursor is base64url(JSON position) "." base64url(MAC),
// where MAC is HMAC-SHA256 (truncated to 16 bytes) under a key derived from
// the admin secret. A cursor names the listing it belongs to (kind) and the
// fingerprint of the filter it was made for, so it cannot be replayed against
// another listing or other filters. Anything else is INVALID_CURSOR.
type Cursors struct {
	key []byte
}

// NewCursors derives the cursor key from secret (the ADMIN_SECRET): cursors
// stay valid across calls and instances, and rotating the secret voids them.
func NewCursors(secret string) Cursors {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte("redrive admin cursor v1"))
	return Cursors{key: mac.Sum(nil)}
}

// Cursor kinds: one per listing that pages.
const (
	CursorList   = "dlq"
	CursorReplay = "replay"
	CursorAudit  = "audit"
	CursorGroups = "groups"
)

// maxCursorLen bounds what is even looked at (real cursors are ~100 bytes;
// a merged listing's, with a position per database, about 100 more per
// database).
const maxCursorLen = 2048

// Position is where a listing stopped: the last row returned.
type Position struct {
	Kind     string `json:"k"`
	Filter   string `json:"f"`
	FailedAt int64  `json:"t"`
	ID       int64  `json:"i"`
	// Total is the list's total_count, counted on the first page and carried
	// to the next ones (nil in other kinds of cursor).
	Total *int64 `json:"n,omitempty"`
	// Bounded: Total is a lower bound (the list's total_count_exact is false).
	Bounded bool `json:"b,omitempty"`
	// Key is the last group's signature (groups cursors; ID is then its
	// pending count + 1).
	Key string `json:"s,omitempty"`
	// Spots are the position in each database of a merged listing (one
	// per Databases.All entry, in its order; see dlq/merge.go).
	Spots []Spot `json:"p,omitempty"`
}

func (c Cursors) mac(payload []byte) []byte {
	m := hmac.New(sha256.New, c.key)
	m.Write(payload)
	return m.Sum(nil)[:16]
}

// Encode signs p into an opaque cursor (Decode reads it back).
func (c Cursors) Encode(p Position) string {
	payload, _ := json.Marshal(p)
	enc := base64.RawURLEncoding
	return enc.EncodeToString(payload) + "." + enc.EncodeToString(c.mac(payload))
}

// Decode returns the position of a cursor this server issued for kind and
// filter, or an INVALID_CURSOR error.
func (c Cursors) Decode(s, kind, filter string) (Position, error) {
	bad := func(why string) (Position, error) {
		return Position{}, InputErr("INVALID_CURSOR", "cursor is not valid here: %s; use next_cursor from a previous response with the same filters", why)
	}
	if len(s) > maxCursorLen {
		return bad("too long")
	}
	payloadB64, macB64, ok := strings.Cut(s, ".")
	if !ok {
		return bad("malformed")
	}
	enc := base64.RawURLEncoding.Strict()
	payload, err1 := enc.DecodeString(payloadB64)
	sum, err2 := enc.DecodeString(macB64)
	if err1 != nil || err2 != nil {
		return bad("malformed")
	}
	if !hmac.Equal(sum, c.mac(payload)) {
		return bad("not issued by this server")
	}
	var p Position
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil || p.ID < 1 {
		return bad("malformed")
	}
	if p.Kind != kind {
		return bad("issued for another listing")
	}
	if p.Filter != filter {
		return bad("issued for other filters")
	}
	return p, nil
}
