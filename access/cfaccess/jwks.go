package cfaccess

import (
	"context"
	"encoding/base64"
	"errors"
	"math/bits"
	"time"

	"github.com/redrive/redrive/outbound"
)

// The sizes of RSA keys read from a key set: under 2048 bits is too weak;
// over 8192 makes each verification too slow for the Worker's CPU limit.
const (
	minKeyBits = 2048
	maxKeyBits = 8192
)

// key returns the public key named kid, fetching the key set when the
// keys held are stale or lack kid and the last fetch is RefetchEvery old.
// One goroutine fetches at a time, without holding mu; others that need
// the result wait for it (or for ctx).
func (v *Verifier) key(ctx context.Context, kid string) (*rsaKey, *Error) {
	for {
		v.mu.Lock()
		now := v.Now.Now()
		if k := v.keys[kid]; k != nil && now.Sub(v.fetchedAt) < v.cacheFor() {
			v.mu.Unlock()
			return k, nil
		}
		if wait := v.inflight; wait != nil {
			v.mu.Unlock()
			select {
			case <-wait:
				continue
			case <-ctx.Done():
				return nil, unavailable("the Cloudflare Access keys could not be fetched")
			}
		}
		if !v.attemptedAt.IsZero() && now.Sub(v.attemptedAt) < v.refetchEvery() && !now.Before(v.attemptedAt) {
			defer v.mu.Unlock()
			return v.held(kid, now)
		}
		done := make(chan struct{})
		v.inflight, v.attemptedAt = done, now
		v.mu.Unlock()

		keys, err := v.fetch(ctx)

		v.mu.Lock()
		defer v.mu.Unlock()
		if err == nil {
			v.keys, v.fetchedAt, v.verified = keys, now, nil
		}
		v.lastFailed = err != nil
		v.inflight = nil
		close(done)
		return v.held(kid, now)
	}
}

// held returns kid's key from the keys held (mu held), also when stale
// because the fetches fail, up to maxStale past CertsCacheFor. Without
// it a token is invalid, unless the last fetch failed: then the keys
// could not be had.
func (v *Verifier) held(kid string, now time.Time) (*rsaKey, *Error) {
	if k := v.keys[kid]; k != nil && now.Sub(v.fetchedAt) < v.cacheFor()+maxStale {
		return k, nil
	}
	if v.lastFailed {
		return nil, unavailable("the Cloudflare Access keys could not be fetched")
	}
	return nil, invalid("the Access token is signed with a key the team does not publish")
}

func (v *Verifier) cacheFor() time.Duration {
	if v.CertsCacheFor > 0 {
		return v.CertsCacheFor
	}
	return DefaultCertsCacheFor
}

func (v *Verifier) refetchEvery() time.Duration {
	if v.RefetchEvery > 0 {
		return v.RefetchEvery
	}
	return DefaultRefetchEvery
}

func (v *Verifier) certsURL() string {
	if v.CertsURL != "" {
		return v.CertsURL
	}
	return v.issuer() + "/cdn-cgi/access/certs"
}

var errNoKeys = errors.New("no usable key")

// fetch gets and reads the key set. A caller that goes away does not
// cancel it: its result serves the callers waiting for it.
func (v *Verifier) fetch(ctx context.Context) (map[string]*rsaKey, error) {
	resp, err := v.Doer.Do(context.WithoutCancel(ctx), outbound.Request{Method: "GET", URL: v.certsURL(), Timeout: fetchTimeout})
	if err != nil {
		return nil, err
	}
	if resp.Status != 200 {
		return nil, errors.New("unexpected status")
	}
	return parseJWKS(resp.Body)
}

// jwk is one key of a key set, as far as it is read.
type jwk struct {
	Kid string `json:"kid"`
	Kty string `json:"kty"`
	Alg string `json:"alg"`
	Use string `json:"use"`
	N   string `json:"n"`
	E   string `json:"e"`
}

// parseJWKS reads a JSON Web Key Set ({"keys": [...]}; other members
// ignored) into its RS256 signing keys by key id. Keys of another type or
// use, without a kid, under 2048 or over 8192 bits, or with an exponent
// that is even or outside 3 to 2^31-1 are left out; a set with none left
// is an error, as is one that is not JSON.
func parseJWKS(b []byte) (map[string]*rsaKey, error) {
	var set struct {
		Keys []jwk `json:"keys"`
	}
	if err := strictUnmarshal(b, &set); err != nil {
		return nil, err
	}
	keys := map[string]*rsaKey{}
	for i, k := range set.Keys {
		if i == maxKeys {
			break
		}
		if pub := k.publicKey(); pub != nil {
			keys[k.Kid] = pub
		}
	}
	if len(keys) == 0 {
		return nil, errNoKeys
	}
	return keys, nil
}

// rsaKey is an RSA public key of the team's: its modulus and exponent,
// big-endian, as the key set gives them (the RSA verifier imports them).
type rsaKey struct {
	n, e []byte
}

// publicKey is k as an RSA key, or nil when it is not one to verify RS256 with.
func (k jwk) publicKey() *rsaKey {
	if k.Kid == "" || k.Kty != "RSA" || (k.Alg != "" && k.Alg != "RS256") || (k.Use != "" && k.Use != "sig") {
		return nil
	}
	n, err := base64.RawURLEncoding.DecodeString(k.N)
	if err != nil || len(n) == 0 || n[0] == 0 {
		return nil
	}
	e, err := base64.RawURLEncoding.DecodeString(k.E)
	if err != nil || len(e) == 0 || len(e) > 4 || e[0] == 0 {
		return nil
	}
	var exp int64
	for _, c := range e {
		exp = exp<<8 | int64(c)
	}
	if size := (len(n)-1)*8 + bits.Len8(n[0]); size < minKeyBits || size > maxKeyBits || n[len(n)-1]&1 == 0 {
		return nil
	}
	if exp < 3 || exp > 1<<31-1 || exp%2 == 0 {
		return nil
	}
	return &rsaKey{n: n, e: e}
}
