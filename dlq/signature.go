package dlq

import (
	"crypto/sha256"
	"encoding/hex"
	"regexp"
	"strings"
	"sync"

	"github.com/redrive/redrive/config"
	"github.com/redrive/redrive/internal/text"
)

// A failure signature groups failures that are the same failure: the
// reason with its variable parts (numbers, ids, quoted values, URL query
// values) replaced by placeholders, plus its class. 2,000 rows that differ
// only by beer id, request id or byte count are one signature.

// maxSignatureText caps a signature's normalised text (bytes).
const maxSignatureText = 200

// Placeholders of NormalizeReason.
const (
	phQuoted = "<q>"
	phUUID   = "<uuid>"
	phHex    = "<hex>"
	phNumber = "<n>"
	phID     = "<id>"
	phValue  = "<v>"
)

// units are the units of the unit regexp: of time and of size (case-insensitive).
const units = `ns|us|µs|μs|ms|secs|sec|s|mins|min|m|hrs|hr|h|d|kib|mib|gib|tib|kb|mb|gb|tb|k|b`

// The regexps of NormalizeReason, compiled on its first call rather than at
// package initialisation, which every new instance runs before its first
// answer.
var signatureRegexps = sync.OnceValue(func() *reasonRegexps {
	return &reasonRegexps{
		// A single quote opens a value only where no letter or digit is before
		// it (\B) and closes it only where none follows; one followed by a
		// letter or digit inside the value is an apostrophe (it's). So can't,
		// isn't and users' are words, not the ends of a quoted value.
		quoted: regexp.MustCompile(`"(?:[^"\\]|\\.)*"|\B'(?:[^'\n]|'\b)*'\B|` + "`[^`\\n]*`"),
		// A number with a unit of time or size (20s, 2m0s, 1.5s, 500ms, 2h,
		// 10KB, 1.5MiB) is a number: each Retry-After value or timeout is not a
		// signature of its own.
		unit: regexp.MustCompile(`(?i)\b(?:[0-9]+(?:\.[0-9]+)?(?:` + units + `))+\b`),
		uuid: regexp.MustCompile(`(?i)\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b`),
		// Query values and key=value pairs: the key stays, its value goes.
		queryValue: regexp.MustCompile(`((?:^|[?&;\s,(\[{])[A-Za-z0-9_.\-\[\]]+=)[^&;#\s"',:)\]}]*`),
		// Words with a digit: all digits (a number, a status, a count) or
		// digits mixed with letters (ids, hashes, tokens).
		word: regexp.MustCompile(`[A-Za-z0-9_]*[0-9][A-Za-z0-9_]*(?:\.[0-9]+)?`),
		hex:  regexp.MustCompile(`^(?:0x)?[0-9a-fA-F]{8,}$`),
		// A name with a short number after it (base64, sha256, utf8, int64,
		// http2) is a name, not an id.
		name:   regexp.MustCompile(`^[A-Za-z]{2,}[0-9]{1,3}$`),
		digits: regexp.MustCompile(`^[0-9]+(?:\.[0-9]+)?$`),
		space:  regexp.MustCompile(`\s+`),
	}
})

type reasonRegexps struct {
	quoted, unit, uuid, queryValue, word, hex, name, digits, space *regexp.Regexp
}

// NormalizeReason returns a failure reason without its variable parts:
// quoted values become <q>, UUIDs <uuid>, long hex strings <hex>, numbers
// (also with a unit of time or size: 30s, 2m0s, 5ms, 10KB) <n>, other words of 4 or more characters containing digits <id> (but
// not names such as base64 or sha256: letters and up to 3 digits), URL query values <v> (URL paths
// keep their fixed segments, their numeric or id segments become <n>/<id>);
// whitespace runs become one space; the result is cut to 200 bytes. It never
// fails: any text, valid UTF-8 or not, gives a (valid UTF-8) result.
func NormalizeReason(reason string) string {
	re := signatureRegexps()
	s := strings.ToValidUTF8(reason, "\uFFFD")
	s = re.quoted.ReplaceAllString(s, phQuoted)
	s = re.uuid.ReplaceAllString(s, phUUID)
	s = re.queryValue.ReplaceAllString(s, "${1}"+phValue)
	s = re.unit.ReplaceAllString(s, phNumber)
	s = re.word.ReplaceAllStringFunc(s, func(w string) string {
		switch {
		case re.digits.MatchString(w):
			return phNumber
		case re.hex.MatchString(w):
			return phHex
		case len(w) <= 3 || re.name.MatchString(w):
			return w // v1, h2, base64, sha256: names, not ids
		default:
			return phID
		}
	})
	s = strings.TrimSpace(re.space.ReplaceAllString(s, " "))
	return text.Clip(s, maxSignatureText)
}

// Signature is a failure's group: its class and normalised reason, and
// their key (what dlq_messages.signature and the signature filter hold).
type Signature struct {
	Key   string
	Class string
	Text  string
}

// SignatureOf returns the signature of a failure of class with reason
// (the error text without the "<class>: " prefix) on the beer pipeline's
// queue: SignatureIn(config.BeerQueue, class, reason).
func SignatureOf(class, reason string) Signature {
	return SignatureIn(config.BeerQueue, class, reason)
}

// SignatureIn returns the signature of a failure of class with reason on
// source queue q. A failure group is one cause in one pipeline: the key of
// every queue but the beer pipeline's (whose keys predate pipelines) also
// hashes the queue, so the same error on two queues is two groups.
func SignatureIn(q, class, reason string) Signature {
	n := NormalizeReason(reason)
	return Signature{Key: signatureKey(q, class, n), Class: class, Text: n}
}

// signatureKey is the first 8 bytes of SHA-256 over class, "\n" and the
// normalised text (preceded by the queue and a NUL byte for a queue other
// than config.BeerQueue), in hex (16 characters).
func signatureKey(q, class, normalized string) string {
	in := class + "\n" + normalized
	if q != config.BeerQueue && q != "" {
		in = q + "\x00" + in
	}
	h := sha256.Sum256([]byte(in))
	return hex.EncodeToString(h[:8])
}

// UnknownSignatureIn is the signature of a failure without an attempt
// record on queue q: UnknownSignature's, whose key hashes q (signatureKey).
func UnknownSignatureIn(q string) Signature {
	s := UnknownSignature
	s.Key = signatureKey(q, s.Class, s.Text)
	return s
}

// validSignatureKey reports whether s has a signature key's form.
func ValidSignatureKey(s string) bool {
	if len(s) != 16 {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil && strings.ToLower(s) == s
}

// ReplayWillFail reports whether failures of class fail again when replayed unchanged.
func ReplayWillFail(class string) bool {
	return class == "permanent" || class == "poison"
}
