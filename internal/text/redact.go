package text

import "strings"

// Redacted is what Redact puts where a secret was.
const Redacted = "[redacted]"

// SecretRun is the length of the shortest piece of a secret that Redact
// removes wherever it stands (a shorter secret is removed whole).
const SecretRun = 8

// CutPiece is the length of the shortest piece of a secret's start that
// ClipRedact removes from the end of the text it cut.
const CutPiece = 4

// Redact returns s with every piece of secret at least SecretRun bytes long
// replaced by Redacted (overlapping and adjacent pieces by one marker), so
// neither the whole secret nor any long part of it (echoed cut, or split
// across lines) survives. An empty secret leaves s as it is. In the
// pathological case of a secret that holds part of the marker itself, so
// that the marker would make a piece again, Redact returns "".
func Redact(s, secret string) string {
	if secret == "" {
		return s
	}
	run := min(SecretRun, len(secret))
	out := replaceRuns(s, secret, run)
	if hasRun(out, secret, run) {
		return ""
	}
	return out
}

// replaceRuns marks every byte of s inside a window of run bytes that is
// part of secret, and replaces each stretch of marked bytes by Redacted.
func replaceRuns(s, secret string, run int) string {
	end := -1 // the end of the marked stretch being built
	var b strings.Builder
	last := 0 // s[:last] is written to b
	for i := 0; i+run <= len(s); i++ {
		if !strings.Contains(secret, s[i:i+run]) {
			continue
		}
		if i > end {
			// A new stretch: write what lies before it and the marker.
			b.WriteString(s[last:i])
			b.WriteString(Redacted)
		}
		end = i + run
		last = end
	}
	if end < 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

// hasRun reports whether s holds a piece of secret run bytes long.
func hasRun(s, secret string, run int) bool {
	for i := 0; i+run <= len(s); i++ {
		if strings.Contains(secret, s[i:i+run]) {
			return true
		}
	}
	return false
}

// ClipRedact is Clip(Redact(s, secret), n) for text that may hold a
// secret: the secret is redacted before anything is cut, so no cut leaves
// a piece of it, and a start of the secret (CutPiece bytes or more) left at
// the end of the cut text is redacted too. Only as much of s as can show is
// redacted (the cost does not grow with a long text).
func ClipRedact(s string, n int, secret string) string {
	if secret == "" {
		return Clip(s, n)
	}
	// Redact a window of s that, redacted, still reaches well past n (a
	// piece of the secret cut at the window's end lies past n); the whole
	// of s when it is short.
	var r string
	for w := n + len(secret) + len(Redacted); ; w *= 2 {
		if w >= len(s) {
			r = Redact(s, secret)
			break
		}
		if r = Redact(s[:w], secret); len(r) > n+len(secret) {
			break
		}
	}
	if len(r) <= n {
		return r
	}
	cut := strings.TrimSuffix(Clip(r, n), "…")
	return Redact(redactTail(cut, secret), secret) + "…"
}

// redactTail replaces the longest end of s that is a start of secret,
// CutPiece bytes or more, by Redacted.
func redactTail(s, secret string) string {
	for j := min(len(s), len(secret)); j >= CutPiece; j-- {
		if strings.HasSuffix(s, secret[:j]) {
			return s[:len(s)-j] + Redacted
		}
	}
	return s
}
