package config

// The name checks of PIPELINES entries are loops, not regexps compiled at
// package initialisation: every new instance paid for compiling them before
// its first answer, and the TinyGo build (0.39.0) panics in regexp/syntax
// ("index out of range" in patchList.patch) compiling a counted repetition
// as long as {0,62}: the wasm then hangs in package initialisation and
// never answers. config/names_test.go checks
// that each loop agrees with the regexp it replaces.

// isName reports whether s is one byte for which first holds, then at most
// max bytes for which rest holds: the regexp ^F R{0,max}$ over ASCII classes.
func isName(s string, max int, first, rest func(c byte) bool) bool {
	if s == "" || len(s) > max+1 || !first(s[0]) {
		return false
	}
	for i := 1; i < len(s); i++ {
		if !rest(s[i]) {
			return false
		}
	}
	return true
}

func isLower(c byte) bool { return 'a' <= c && c <= 'z' }
func isDigit(c byte) bool { return '0' <= c && c <= '9' }
func isAlpha(c byte) bool { return isLower(c) || 'A' <= c && c <= 'Z' }

// validPipelineName: ^[a-z][a-z0-9_-]{0,31}$.
func validPipelineName(s string) bool {
	return isName(s, 31, isLower, func(c byte) bool { return isLower(c) || isDigit(c) || c == '_' || c == '-' })
}

// validLabelName: ^[a-z][a-z0-9_]{0,31}$.
func validLabelName(s string) bool {
	return isName(s, 31, isLower, func(c byte) bool { return isLower(c) || isDigit(c) || c == '_' })
}

// validQueueName is a Cloudflare queue name: letters, digits and dashes, at
// most 63 (^[a-zA-Z0-9][a-zA-Z0-9_-]{0,62}$).
func validQueueName(s string) bool {
	return isName(s, 62, func(c byte) bool { return isAlpha(c) || isDigit(c) },
		func(c byte) bool { return isAlpha(c) || isDigit(c) || c == '_' || c == '-' })
}

// validBindingName is a JavaScript identifier on env
// (^[A-Za-z_$][A-Za-z0-9_$]{0,63}$).
func validBindingName(s string) bool {
	return isName(s, 63, func(c byte) bool { return isAlpha(c) || c == '_' || c == '$' },
		func(c byte) bool { return isAlpha(c) || isDigit(c) || c == '_' || c == '$' })
}
