package text

import (
	"strings"
	"testing"
)

const secret = "sk-ABCDEFGHIJKLMNOP"

func TestRedact(t *testing.T) {
	for _, c := range []struct{ s, secret, want string }{
		{"no secret here", secret, "no secret here"},
		{"key " + secret + " refused", secret, "key [redacted] refused"},
		{"key " + secret + secret + ".", secret, "key [redacted]."}, // adjacent pieces: one marker
		{"head sk-ABCD| tail", secret, "head sk-ABCD| tail"},        // 7 bytes: kept
		{"head sk-ABCDE| tail", secret, "head [redacted]| tail"},    // 8 bytes: gone
		{"mid HIJKLMNO end", secret, "mid [redacted] end"},
		{"ends sk-ABCDE", secret, "ends [redacted]"},               // the last window too
		{"sk-ABCDE", secret, "[redacted]"},                         // any 8 bytes, not only the start
		{"a DEFGHIJK b LMNOP c", secret, "a [redacted] b LMNOP c"}, // two pieces, one long enough
		{"xabcx", "abc", "x[redacted]x"},                           // a short secret: whole
		{"xabx", "abc", "xabx"},
		{"anything", "", "anything"},
		{"", secret, ""},
		{"x dacted]Q y", "dacted]Q-ZZZZZZZZ", "x [redacted] y"},
		{"x dacted]Q-ZZZZZZZZ y", "ted]Q-ZZZZZZZZ", "x dac[redacted] y"},
		{"redactedQQ", "[redacted]QQ", ""},    // the marker would make a piece again: nothing is kept
		{"aQ1234567", "Q1234567edacted]", ""}, // (at the very end of the text)
	} {
		if got := Redact(c.s, c.secret); got != c.want {
			t.Errorf("Redact(%q, %q) = %q, want %q", c.s, c.secret, got, c.want)
		}
	}
}

func TestClipRedact(t *testing.T) {
	pad := strings.Repeat("x", 20)
	for _, c := range []struct {
		s    string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{pad, 10, strings.Repeat("x", 10) + "…"},
		{"ab" + secret + "cd", 30, "ab[redacted]cd"},
		// Redacted before the cut: the cut falls in the marker, never in the secret.
		{pad + secret + pad, 25, pad + "[reda…"},
		{pad + secret + pad, 21, pad + "[…"},
		// A start of the secret (4 bytes or more) left at the end of the cut.
		{pad + "sk-A" + pad, 24, pad + "[redacted]…"},
		{pad + "sk-ABCD" + pad, 27, pad + "[redacted]…"},
		{pad + "sk-" + pad, 23, pad + "sk-…"}, // 3 bytes: kept
		{pad + "sk-A", 24, pad + "sk-A"},      // not cut: kept
		// A long text: only the window that can show is redacted, and a
		// text that shrinks when redacted brings more of s into view.
		{strings.Repeat(secret, 40) + "tail" + strings.Repeat("y", 1000), 30, "[redacted]tail" + strings.Repeat("y", 16) + "…"},
	} {
		if got := ClipRedact(c.s, c.n, secret); got != c.want {
			t.Errorf("ClipRedact(%q, %d) = %q, want %q", c.s, c.n, got, c.want)
		}
	}
	if got := ClipRedact(pad+secret, 25, ""); got != Clip(pad+secret, 25) {
		t.Errorf("without a secret ClipRedact is Clip: %q", got)
	}
}
