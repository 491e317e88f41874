package dlq

import (
	"encoding/base64"
	"strings"
	"testing"
)

// decode accepts only its own cursors for the right listing and filters,
// and says why it refuses one.
func TestCursorDecodeReasons(t *testing.T) {
	c := NewCursors("secret")
	good := c.Encode(Position{Kind: CursorList, Filter: "f", FailedAt: 5, ID: 1})
	if p, err := c.Decode(good, CursorList, "f"); err != nil || p.ID != 1 || p.FailedAt != 5 {
		t.Fatalf("id 1: %+v %v", p, err)
	}
	payload, mac, _ := strings.Cut(good, ".")
	enc := base64.RawURLEncoding
	signed := func(json string) string {
		return enc.EncodeToString([]byte(json)) + "." + enc.EncodeToString(c.mac([]byte(json)))
	}
	for name, tc := range map[string]struct{ cursor, why string }{
		"512 bytes":         {strings.Repeat("a", maxCursorLen), "malformed"},
		"513 bytes":         {strings.Repeat("a", maxCursorLen+1), "too long"},
		"no dot":            {payload + mac, "malformed"},
		"payload not b64":   {"!!" + "." + mac, "malformed"},
		"mac not b64":       {payload + ".!!", "malformed"},
		"other mac":         {payload + "." + enc.EncodeToString(make([]byte, 16)), "not issued by this server"},
		"id 0":              {c.Encode(Position{Kind: CursorList, Filter: "f", ID: 0}), "malformed"},
		"negative id":       {c.Encode(Position{Kind: CursorList, Filter: "f", ID: -4}), "malformed"},
		"signed non-JSON":   {signed("nope"), "malformed"},
		"unknown field":     {signed(`{"k":"dlq","f":"f","t":1,"i":2,"x":1}`), "malformed"},
		"another listing":   {c.Encode(Position{Kind: CursorAudit, Filter: "f", ID: 3}), "issued for another listing"},
		"other filters":     {c.Encode(Position{Kind: CursorList, Filter: "g", ID: 3}), "issued for other filters"},
		"other secret's id": {NewCursors("other").Encode(Position{Kind: CursorList, Filter: "f", ID: 3}), "not issued by this server"},
	} {
		_, err := c.Decode(tc.cursor, CursorList, "f")
		wantInput(t, err, "INVALID_CURSOR")
		if want := "cursor is not valid here: " + tc.why + ";"; !strings.HasPrefix(err.Error(), "INVALID_CURSOR: "+want) {
			t.Errorf("%s: %v, want %q", name, err, want)
		}
	}
}
