//go:build !(js && wasm)

package cfaccess

import (
	"context"
	"crypto"
	"crypto/rsa"
	"crypto/sha256"
	"math/big"
)

// defaultRSA is Go's crypto/rsa (native builds: tests, tools).
func defaultRSA() RSA { return GoRSA{} }

// GoRSA verifies with Go's crypto/rsa.
type GoRSA struct{}

// VerifyRS256 implements RSA.
func (GoRSA) VerifyRS256(_ context.Context, n, e, signed, sig []byte) (bool, error) {
	var exp int
	for _, c := range e {
		exp = exp<<8 | int(c)
	}
	sum := sha256.Sum256(signed)
	return rsa.VerifyPKCS1v15(&rsa.PublicKey{N: new(big.Int).SetBytes(n), E: exp}, crypto.SHA256, sum[:], sig) == nil, nil
}
