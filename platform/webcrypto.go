//go:build js && wasm

package platform

import (
	"context"
	"encoding/base64"
	"sync"
	"syscall/js"
)

// WebCryptoRSA verifies RS256 signatures with the runtime's WebCrypto
// (crypto.subtle): cfaccess.Verifier's RSA in the Worker. Under wasm, Go's
// crypto/rsa costs about 5 ms of CPU a verification and some 110 KB of
// script; the runtime's native code is a fraction of that, and crypto/rsa
// is then not linked. Each key is imported once and kept (at most
// maxWebCryptoKeys: a team publishes two or three).
type WebCryptoRSA struct {
	mu   sync.Mutex
	keys map[string]js.Value
}

const maxWebCryptoKeys = 16

var (
	jsSubtle = js.Global().Get("crypto").Get("subtle")
	jsArray  = js.Global().Get("Array")
)

// rs256 is WebCrypto's name of RS256: RSASSA-PKCS1-v1_5 with SHA-256.
func rs256() js.Value {
	alg := jsObject.New()
	alg.Set("name", "RSASSA-PKCS1-v1_5")
	hash := jsObject.New()
	hash.Set("name", "SHA-256")
	alg.Set("hash", hash)
	return alg
}

func bytesJS(b []byte) js.Value {
	a := uint8Array.New(len(b))
	js.CopyBytesToJS(a, b)
	return a
}

// VerifyRS256 implements cfaccess.RSA.
func (w *WebCryptoRSA) VerifyRS256(ctx context.Context, n, e, signed, sig []byte) (bool, error) {
	key, err := w.key(ctx, n, e)
	if err != nil {
		return false, err
	}
	ok, err := await(ctx, jsSubtle.Call("verify", rs256(), key, bytesJS(sig), bytesJS(signed)))
	if err != nil {
		return false, err
	}
	return ok.Truthy(), nil
}

// key returns the CryptoKey of modulus n and exponent e, importing it (as
// a JWK) the first time.
func (w *WebCryptoRSA) key(ctx context.Context, n, e []byte) (js.Value, error) {
	id := string(n) + "\x00" + string(e)
	w.mu.Lock()
	k, ok := w.keys[id]
	w.mu.Unlock()
	if ok {
		return k, nil
	}
	jwk := jsObject.New()
	jwk.Set("kty", "RSA")
	jwk.Set("n", base64.RawURLEncoding.EncodeToString(n))
	jwk.Set("e", base64.RawURLEncoding.EncodeToString(e))
	jwk.Set("alg", "RS256")
	usages := jsArray.New()
	usages.Call("push", "verify")
	k, err := await(ctx, jsSubtle.Call("importKey", "jwk", jwk, rs256(), false, usages))
	if err != nil {
		return js.Value{}, err
	}
	w.mu.Lock()
	if w.keys == nil || len(w.keys) >= maxWebCryptoKeys {
		w.keys = map[string]js.Value{}
	}
	w.keys[id] = k
	w.mu.Unlock()
	return k, nil
}
