// Package cfaccesstest is a stand-in for Cloudflare Access's token
// issuer: it holds RSA keys, publishes them as a team's key set and signs
// tokens with them, good ones and bad ones, for the tests of any package
// and for the local stand-in (cmd/devaccess). It is never built into the
// Worker.
package cfaccesstest

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/big"
	"sync"
	"time"

	"github.com/redrive/redrive/clock"
)

// CertsPath is where Access publishes a team's key set.
const CertsPath = "/cdn-cgi/access/certs"

// Key is one signing key and its key id.
type Key struct {
	ID      string
	Private *rsa.PrivateKey
}

// NewKey generates an RSA key of bits bits (2048 when zero) with a key id
// made from its modulus.
func NewKey(bits int) (Key, error) {
	if bits == 0 {
		bits = 2048
	}
	priv, err := rsa.GenerateKey(rand.Reader, bits)
	if err != nil {
		return Key{}, fmt.Errorf("generate an RSA key: %w", err)
	}
	return KeyFrom(priv), nil
}

// KeyFrom names priv with a key id made from its modulus (the hex SHA-256
// of it, like Access's 64-character kids).
func KeyFrom(priv *rsa.PrivateKey) Key {
	sum := sha256.Sum256(priv.N.Bytes())
	return Key{ID: hex.EncodeToString(sum[:]), Private: priv}
}

// Issuer signs tokens for one team and application. Its methods may be
// called from any number of goroutines.
type Issuer struct {
	// Team is the iss of the tokens: the team domain
	// (https://team.cloudflareaccess.com, or the stand-in's own URL).
	Team string
	// Audience is the aud of the tokens Token mints.
	Audience string
	// Now is the time tokens are minted at.
	Now clock.Clock
	// KeepPrevious makes Rotate publish the previous key beside the new
	// one, like Access while a rotation settles; by default the key set
	// holds only the new key.
	KeepPrevious bool

	mu      sync.Mutex
	current Key
	prev    *Key
}

// NewIssuer returns an issuer for team and aud with a new RSA-2048 key.
func NewIssuer(team, aud string) (*Issuer, error) {
	k, err := NewKey(2048)
	if err != nil {
		return nil, err
	}
	return NewIssuerWithKey(team, aud, k), nil
}

// NewIssuerWithKey returns an issuer for team and aud that signs with k.
func NewIssuerWithKey(team, aud string, k Key) *Issuer {
	return &Issuer{Team: team, Audience: aud, current: k}
}

// Key returns the key tokens are signed with now.
func (i *Issuer) Key() Key {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.current
}

// Rotate generates a new key and signs with it from now on. The key set
// then holds only the new key, or also the previous one with KeepPrevious.
func (i *Issuer) Rotate() error {
	k, err := NewKey(2048)
	if err != nil {
		return err
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	prev := i.current
	i.current, i.prev = k, &prev
	return nil
}

// JWKS returns the key set as Access publishes it: {"keys": [...]} with
// the current key first, and "public_cert"/"public_certs" members (their
// "cert" left empty: a verifier reads only "keys").
func (i *Issuer) JWKS() []byte {
	i.mu.Lock()
	keys := []Key{i.current}
	if i.KeepPrevious && i.prev != nil {
		keys = append(keys, *i.prev)
	}
	i.mu.Unlock()
	type cert struct {
		Kid  string `json:"kid"`
		Cert string `json:"cert"`
	}
	set := struct {
		Keys        []map[string]string `json:"keys"`
		PublicCert  cert                `json:"public_cert"`
		PublicCerts []cert              `json:"public_certs"`
	}{PublicCert: cert{Kid: keys[0].ID}}
	for _, k := range keys {
		set.Keys = append(set.Keys, JWK(k.ID, &k.Private.PublicKey))
		set.PublicCerts = append(set.PublicCerts, cert{Kid: k.ID})
	}
	b, _ := json.Marshal(set)
	return b
}

// JWK is pub as a key of a key set, named kid.
func JWK(kid string, pub *rsa.PublicKey) map[string]string {
	return map[string]string{
		"kid": kid, "kty": "RSA", "alg": "RS256", "use": "sig",
		"n": b64(pub.N.Bytes()),
		"e": b64(big.NewInt(int64(pub.E)).Bytes()),
	}
}

// Claims returns the claims of a token for email, as Access sets them:
// aud (an array), iss, iat, nbf, exp (ttl after now), sub, email, type
// "app", and groups when groups is not nil. Change them and Sign to mint
// a bad token (another aud, an exp passed).
func (i *Issuer) Claims(email string, groups []string, ttl time.Duration) map[string]any {
	now := i.Now.Now()
	sum := sha256.Sum256([]byte(email))
	c := map[string]any{
		"aud":   []string{i.Audience},
		"iss":   i.Team,
		"iat":   now.Unix(),
		"nbf":   now.Unix(),
		"exp":   now.Add(ttl).Unix(),
		"sub":   hex.EncodeToString(sum[:16]),
		"email": email,
		"type":  "app",
	}
	if groups != nil {
		c["groups"] = groups
	}
	return c
}

// Token returns a valid token for email, with groups, that expires after ttl.
func (i *Issuer) Token(email string, groups []string, ttl time.Duration) (string, error) {
	return i.Sign(i.Claims(email, groups, ttl))
}

// Sign returns a token of claims, signed RS256 with the current key and
// naming its kid.
func (i *Issuer) Sign(claims map[string]any) (string, error) {
	k := i.Key()
	return SignRaw(map[string]any{"alg": "RS256", "kid": k.ID, "typ": "JWT"}, claims, k.Private)
}

// SignRaw returns header.claims.signature with header and claims as
// given: signed RS256 (PKCS1 v1.5, SHA-256) with key whatever header's
// alg says, or with an empty signature when key is nil (for "alg":
// "none").
func SignRaw(header, claims map[string]any, key *rsa.PrivateKey) (string, error) {
	h, err := json.Marshal(header)
	if err != nil {
		return "", err
	}
	c, err := json.Marshal(claims)
	if err != nil {
		return "", err
	}
	signed := b64(h) + "." + b64(c)
	if key == nil {
		return signed + ".", nil
	}
	sum := sha256.Sum256([]byte(signed))
	sig, err := rsa.SignPKCS1v15(nil, key, crypto.SHA256, sum[:])
	if err != nil {
		return "", err
	}
	return signed + "." + b64(sig), nil
}

func b64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }
