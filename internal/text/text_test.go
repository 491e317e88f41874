package text

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestClip(t *testing.T) {
	for _, c := range []struct {
		s    string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"exactly10!", 10, "exactly10!"},
		{"eleven char", 10, "eleven cha…"},
		{"ééé", 3, "é…"}, // never half an é
		{"ééé", 4, "éé…"},
		{"abc", 0, "…"},
		{"aé", 2, "a…"},
		{"\x80\x80\x80", 2, "…"}, // no rune start: nothing kept, no panic
	} {
		if got := Clip(c.s, c.n); got != c.want {
			t.Errorf("Clip(%q, %d) = %q, want %q", c.s, c.n, got, c.want)
		}
	}
}

func FuzzClip(f *testing.F) {
	f.Add("ü€😀 text", 5)
	f.Fuzz(func(t *testing.T, s string, n int) {
		if n < 0 || n > 1<<16 {
			return
		}
		got := Clip(s, n)
		body := strings.TrimSuffix(got, "…")
		if len(body) > n || !strings.HasPrefix(s, body) || (utf8.ValidString(s) && !utf8.ValidString(got)) {
			t.Fatalf("Clip(%q, %d) = %q", s, n, got)
		}
	})
}
