package access

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"strings"
)

// A key's token is TokenPrefix, its id (idLen lowercase hex digits), "_"
// and its secret (secretLen base64url characters: 32 random bytes).
const (
	TokenPrefix = "rdk_"
	idLen       = 16
	secretLen   = 43
	tokenLen    = len(TokenPrefix) + idLen + 1 + secretLen
)

// ErrMalformed is a token that is not TokenPrefix, an id, "_" and a
// secret of the lengths and alphabets NewToken makes.
var ErrMalformed = errors.New("a key is rdk_, 16 hex digits, _ and 43 base64url characters")

// NewToken makes a key's id, its secret and its token from crypto/rand.
func NewToken() (id, secret, token string, err error) {
	var b [8 + 32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", "", "", err
	}
	id = hex.EncodeToString(b[:8])
	secret = base64.RawURLEncoding.EncodeToString(b[8:])
	return id, secret, TokenPrefix + id + "_" + secret, nil
}

// ParseToken splits a token into its id and secret, or ErrMalformed. It
// reads untrusted input (an Authorization header): it checks the length
// first and each byte once.
func ParseToken(token string) (id, secret string, err error) {
	if len(token) != tokenLen || !strings.HasPrefix(token, TokenPrefix) || token[len(TokenPrefix)+idLen] != '_' {
		return "", "", ErrMalformed
	}
	id, secret = token[len(TokenPrefix):len(TokenPrefix)+idLen], token[len(TokenPrefix)+idLen+1:]
	for i := 0; i < len(id); i++ {
		if c := id[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return "", "", ErrMalformed
		}
	}
	if _, err := base64.RawURLEncoding.Strict().DecodeString(secret); err != nil {
		return "", "", ErrMalformed
	}
	return id, secret, nil
}

// SecretHash is what D1 keeps of a key's secret: hex(SHA-256(secret)). The
// secret is 32 random bytes, so a hash without salt or stretching cannot
// be reversed.
func SecretHash(secret string) string {
	h := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(h[:])
}
