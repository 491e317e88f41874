// Package text holds the one way redrive shortens text for logs, error
// messages and stored reasons.
package text

import "unicode/utf8"

// Clip returns s cut to at most n bytes, never inside a UTF-8 sequence,
// with "…" appended when it was cut.
func Clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := max(n, 0)
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + "…"
}
