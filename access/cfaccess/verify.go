// Package cfaccess verifies the JWT that Cloudflare Access puts in a
// request's Cf-Access-Jwt-Assertion header and maps the identity it names
// to a role (ACCESS_ROLES).
//
// A token is RS256, signed by one of the keys the team publishes at
// https://<team>.cloudflareaccess.com/cdn-cgi/access/certs (a JWKS). A
// Verifier fetches that set when it first needs it, keeps it for
// CertsCacheFor, and fetches it again early only for a token whose key id
// it does not hold, at most once per RefetchEvery: a flood of tokens with
// made-up key ids costs one fetch per window, not one each. A fetch that
// succeeds replaces the set (a key Access rotated out stops working); one
// that fails keeps the keys already held, which go on verifying tokens.
//
// Every refusal is an *Error with a fixed message: it never repeats the
// token or what a fetch failed with. The package uses the standard
// library only and builds for the Worker (TinyGo, js/wasm).
package cfaccess

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/redrive/redrive/clock"
	"github.com/redrive/redrive/outbound"
)

// MaxTokenBytes is the longest token Verify reads; a longer one is
// refused as malformed before any of it is decoded.
const MaxTokenBytes = 8192

// DefaultCertsCacheFor is how long a Verifier keeps the key set it
// fetched when CertsCacheFor is zero.
const DefaultCertsCacheFor = time.Hour

// DefaultRefetchEvery is the least time between two fetches of the key
// set when RefetchEvery is zero.
const DefaultRefetchEvery = 30 * time.Second

// Leeway is the clock skew allowed between Access and the Worker when
// reading exp and nbf.
const Leeway = 60 * time.Second

const (
	// fetchTimeout bounds one fetch of the key set.
	fetchTimeout = 5 * time.Second
	// maxStale is how long past CertsCacheFor the keys held keep working
	// while every fetch fails.
	maxStale = 24 * time.Hour
	// maxKeys bounds the keys read from one key set.
	maxKeys = 64
	// maxDate is the largest exp or nbf read (9999-12-31T23:59:59Z).
	maxDate = 253402300799
)

// The codes of an *Error.
const (
	// CodeMalformed: the token is not a JWT this package can read.
	CodeMalformed = "MALFORMED_ACCESS_TOKEN"
	// CodeInvalid: the token is readable but not valid for this application.
	CodeInvalid = "INVALID_ACCESS_TOKEN"
	// CodeExpired: the token was valid and has expired.
	CodeExpired = "ACCESS_TOKEN_EXPIRED"
	// CodeUnavailable: the team's keys could not be fetched, or the
	// Verifier is not configured.
	CodeUnavailable = "ACCESS_UNAVAILABLE"
)

// Error is why Verify refused a token: an HTTP status (401, or 503 when
// the keys could not be had), a code and a message that are safe to send
// to the caller.
type Error struct {
	Status  int
	Code    string
	Message string
}

// Error implements error.
func (e *Error) Error() string { return e.Code + ": " + e.Message }

func malformed(msg string) *Error { return &Error{Status: 401, Code: CodeMalformed, Message: msg} }
func invalid(msg string) *Error   { return &Error{Status: 401, Code: CodeInvalid, Message: msg} }
func unavailable(msg string) *Error {
	return &Error{Status: 503, Code: CodeUnavailable, Message: msg}
}

// Identity is who a verified token names.
type Identity struct {
	Email   string
	Subject string
	// Groups are the token's groups claim, when it has one.
	Groups []string
	// ExpiresAt is the token's exp.
	ExpiresAt time.Time
}

// Verifier verifies Access tokens for one application. Its exported
// fields are set before the first Verify and not changed after; Verify
// may be called from any number of goroutines.
type Verifier struct {
	// TeamDomain is the team's Access domain, the tokens' iss:
	// https://team.cloudflareaccess.com. Without a scheme https:// is
	// assumed; a trailing slash is ignored.
	TeamDomain string
	// Audience is the application's AUD tag (ACCESS_AUD); a
	// comma-separated list accepts a token for any of them.
	Audience string
	// CertsURL is where the key set is fetched; "" means TeamDomain +
	// "/cdn-cgi/access/certs".
	CertsURL string
	// Doer fetches the key set.
	Doer outbound.Doer
	// Now is the time tokens are checked against.
	Now clock.Clock
	// CertsCacheFor is how long a fetched key set is kept
	// (DefaultCertsCacheFor when zero).
	CertsCacheFor time.Duration
	// RefetchEvery is the least time between two fetches
	// (DefaultRefetchEvery when zero).
	RefetchEvery time.Duration
	// RSA verifies the signatures: nil is Go's crypto/rsa natively; the
	// Worker sets the runtime's WebCrypto (platform.WebCryptoRSA), faster
	// under wasm, and without it crypto/rsa stays out of the script.
	RSA RSA

	// mu guards the fields below. It is not held during a fetch: the
	// goroutine that fetches sets inflight, and others that need the
	// result wait for it to close.
	mu          sync.Mutex
	keys        map[string]*rsaKey
	fetchedAt   time.Time // when keys were fetched
	attemptedAt time.Time // when the last fetch started
	lastFailed  bool      // whether the last fetch failed
	inflight    chan struct{}
	// verified holds the identities of tokens verified with the keys held,
	// by the SHA-256 of the token: a browser sends the same token with
	// every request, and an RSA verification costs milliseconds of the
	// Worker's CPU (docs/costs.md). It is emptied when the keys are replaced.
	verified map[[32]byte]Identity
}

// RSA verifies an RS256 signature (RSASSA-PKCS1-v1_5 with SHA-256) of
// signed with the public key of modulus n and exponent e (big-endian
// bytes). An error says the verification could not be made, not that
// the signature is wrong.
type RSA interface {
	VerifyRS256(ctx context.Context, n, e, signed, sig []byte) (bool, error)
}

func (v *Verifier) rsa() RSA {
	if v.RSA != nil {
		return v.RSA
	}
	return defaultRSA()
}

// maxVerified bounds the tokens a Verifier remembers (it starts over past it).
const maxVerified = 1024

// Verify checks token (the Cf-Access-Jwt-Assertion header's value) and
// returns the identity it names. Every error is an *Error.
func (v *Verifier) Verify(ctx context.Context, token string) (Identity, error) {
	iss, auds := v.issuer(), v.audiences()
	if iss == "" || len(auds) == 0 || v.Doer == nil || v.rsa() == nil {
		return Identity{}, unavailable("Cloudflare Access is not configured")
	}
	t, err := parse(token)
	if err != nil {
		return Identity{}, err
	}
	sum := sha256.Sum256([]byte(token))
	if id, ok := v.remembered(sum); ok {
		return id.stillValid(v.Now.Now())
	}
	key, err := v.key(ctx, t.kid)
	if err != nil {
		return Identity{}, err
	}
	if err := t.verifySignature(ctx, v.rsa(), key); err != nil {
		return Identity{}, err
	}
	id, cerr := t.claims.check(iss, auds, v.Now.Now())
	if cerr != nil {
		return Identity{}, cerr
	}
	v.remember(sum, t.kid, key, id)
	return id.clone(), nil
}

// remembered returns the identity of a token verified before, while the
// keys it was verified with are fresh.
func (v *Verifier) remembered(sum [32]byte) (Identity, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	id, ok := v.verified[sum]
	if !ok || v.Now.Now().Sub(v.fetchedAt) >= v.cacheFor() {
		return Identity{}, false
	}
	return id, true
}

// remember keeps id for the token whose hash is sum, unless the keys were
// replaced since key was had.
func (v *Verifier) remember(sum [32]byte, kid string, key *rsaKey, id Identity) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.keys[kid] != key {
		return
	}
	if v.verified == nil || len(v.verified) >= maxVerified {
		v.verified = map[[32]byte]Identity{}
	}
	v.verified[sum] = id.clone()
}

// stillValid returns a copy of id, remembered from a verified token,
// unless the token has expired since.
func (id Identity) stillValid(now time.Time) (Identity, error) {
	if now.After(id.ExpiresAt.Add(Leeway)) {
		return Identity{}, &Error{Status: 401, Code: CodeExpired, Message: "the Access token has expired"}
	}
	return id.clone(), nil
}

func (id Identity) clone() Identity {
	id.Groups = slices.Clone(id.Groups)
	return id
}

// issuer is TeamDomain as the tokens' iss says it: with a scheme and
// without a trailing slash.
func (v *Verifier) issuer() string {
	d := strings.TrimRight(strings.TrimSpace(v.TeamDomain), "/")
	if d == "" {
		return ""
	}
	if !strings.HasPrefix(d, "https://") && !strings.HasPrefix(d, "http://") {
		d = "https://" + d
	}
	return d
}

// audiences is Audience split at commas, blanks dropped.
func (v *Verifier) audiences() []string {
	var out []string
	for _, a := range strings.Split(v.Audience, ",") {
		if a = strings.TrimSpace(a); a != "" {
			out = append(out, a)
		}
	}
	return out
}

// token is a parsed JWT whose signature is not yet checked.
type token struct {
	kid       string
	signed    []byte // header.payload, what the signature covers
	signature []byte
	claims    claims
}

// parse reads a compact JWS: its size and bytes first, then its parts,
// header (RS256 with a kid) and claims. It fetches nothing.
func parse(s string) (*token, *Error) {
	if len(s) > MaxTokenBytes {
		return nil, malformed("the Access token is too long")
	}
	if !base64URLOrDots(s) {
		return nil, malformed("the Access token holds a byte no JWT holds")
	}
	parts := strings.Split(s, ".")
	if len(parts) != 3 || parts[0] == "" || parts[1] == "" {
		return nil, malformed("the Access token is not a JWT (header.payload.signature)")
	}
	raw := make([][]byte, 3)
	for i, p := range parts {
		b, err := base64.RawURLEncoding.Strict().DecodeString(p)
		if err != nil {
			return nil, malformed("a part of the Access token is not base64url")
		}
		raw[i] = b
	}
	var h header
	if err := strictUnmarshal(raw[0], &h); err != nil {
		return nil, malformed("the Access token's header is not a JSON object")
	}
	if h.Alg != "RS256" {
		return nil, invalid("the Access token is not signed with RS256")
	}
	if h.Kid == "" || h.Crit != nil {
		return nil, invalid("the Access token's header names no key or has critical extensions")
	}
	t := &token{kid: h.Kid, signed: []byte(s[:len(parts[0])+1+len(parts[1])]), signature: raw[2]}
	if err := strictUnmarshal(raw[1], &t.claims); err != nil {
		return nil, malformed("the Access token's claims are not a JSON object")
	}
	return t, nil
}

// base64URLOrDots reports whether s holds only base64url characters and dots.
func base64URLOrDots(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

// strictUnmarshal decodes one JSON object into v, refusing anything after it.
func strictUnmarshal(b []byte, v any) error {
	b = bytes.TrimSpace(b)
	if len(b) == 0 || b[0] != '{' {
		return errNotObject
	}
	return json.Unmarshal(b, v)
}

var errNotObject = errors.New("not a JSON object")

// header is a JWT's header as far as it is read.
type header struct {
	Alg  string          `json:"alg"`
	Kid  string          `json:"kid"`
	Crit json.RawMessage `json:"crit"`
}

// verifySignature checks t's RS256 signature with key.
func (t *token) verifySignature(ctx context.Context, r RSA, key *rsaKey) *Error {
	if len(t.signature) != len(key.n) {
		return invalid("the Access token's signature does not verify")
	}
	ok, err := r.VerifyRS256(ctx, key.n, key.e, t.signed, t.signature)
	if err != nil {
		return unavailable("the Access token's signature could not be checked")
	}
	if !ok {
		return invalid("the Access token's signature does not verify")
	}
	return nil
}

// claims are a token's claims as far as they are read.
type claims struct {
	Iss    string          `json:"iss"`
	Aud    audience        `json:"aud"`
	Exp    *float64        `json:"exp"`
	Nbf    *float64        `json:"nbf"`
	Sub    string          `json:"sub"`
	Email  string          `json:"email"`
	Groups json.RawMessage `json:"groups"`
}

// check returns the identity c names when they are for iss and one of
// auds, and valid at now.
func (c *claims) check(iss string, auds []string, now time.Time) (Identity, error) {
	if !strings.EqualFold(strings.TrimRight(c.Iss, "/"), iss) {
		return Identity{}, invalid("the Access token was issued for another team")
	}
	if !c.Aud.containsAny(auds) {
		return Identity{}, invalid("the Access token is for another application")
	}
	exp, ok := unixTime(c.Exp)
	if !ok {
		return Identity{}, invalid("the Access token has no valid expiry")
	}
	if now.After(exp.Add(Leeway)) {
		return Identity{}, &Error{Status: 401, Code: CodeExpired, Message: "the Access token has expired"}
	}
	if c.Nbf != nil {
		nbf, ok := unixTime(c.Nbf)
		if !ok || nbf.After(now.Add(Leeway)) {
			return Identity{}, invalid("the Access token is not valid yet")
		}
	}
	return Identity{Email: c.Email, Subject: c.Sub, Groups: groupNames(c.Groups), ExpiresAt: exp}, nil
}

// unixTime reads a NumericDate; false when it is missing or out of range.
func unixTime(f *float64) (time.Time, bool) {
	if f == nil || math.IsNaN(*f) || *f < 0 || *f > maxDate {
		return time.Time{}, false
	}
	sec, frac := math.Modf(*f)
	return time.Unix(int64(sec), int64(frac*1e9)).UTC(), true
}

// groupNames reads a groups claim: an array of strings, or of objects
// with a name (as Access's identity lists them). Anything else is no
// groups: a rule that names a group then does not match.
func groupNames(raw json.RawMessage) []string {
	if len(raw) == 0 {
		return nil
	}
	var names []string
	if json.Unmarshal(raw, &names) == nil {
		return names
	}
	var objs []struct {
		Name string `json:"name"`
	}
	if json.Unmarshal(raw, &objs) != nil {
		return nil
	}
	names = nil // the failed decode above may have left empty names
	for _, o := range objs {
		if o.Name != "" {
			names = append(names, o.Name)
		}
	}
	return names
}

// audience is the aud claim: one string or an array of them.
type audience []string

// UnmarshalJSON implements json.Unmarshaler.
func (a *audience) UnmarshalJSON(b []byte) error {
	if bytes.HasPrefix(bytes.TrimSpace(b), []byte(`"`)) {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*a = audience{s}
		return nil
	}
	var list []string
	if err := json.Unmarshal(b, &list); err != nil {
		return err
	}
	*a = list
	return nil
}

func (a audience) containsAny(want []string) bool {
	for _, got := range a {
		for _, w := range want {
			if got == w {
				return true
			}
		}
	}
	return false
}
