//go:build js && wasm

package cfaccess

// defaultRSA is none in the Worker: it sets Verifier.RSA to the runtime's
// WebCrypto (platform.WebCryptoRSA), so that crypto/rsa stays out of the
// script.
func defaultRSA() RSA { return nil }
