package handlers

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"net/http"
)

// Auth holds the two admin credentials. Both come from secrets
// (`wrangler secret put API_KEY` / `ADMIN_SECRET`, or .dev.vars locally).
type Auth struct {
	// APIKey is expected in the X-API-Key header (missing or wrong: 401).
	APIKey string
	// AdminSecret is expected in the X-Admin-Secret header (missing or wrong: 403).
	AdminSecret string
	// ReportToken, when set, is also accepted on POST /admin/attempts, as
	// `Authorization: Bearer <token>` (secret REPORT_TOKEN): what a consumer
	// outside redrive reports failures with, without the admin pair.
	ReportToken string
}

// equal compares two secrets in constant time (hashing first, so that the
// comparison does not leak the expected length either).
func equal(got, want string) bool {
	g := sha256.Sum256([]byte(got))
	w := sha256.Sum256([]byte(want))
	return subtle.ConstantTimeCompare(g[:], w[:]) == 1
}

// KeyFingerprint identifies an API key in audit records without revealing
// it: the first 12 hex digits of its HMAC-SHA256 under a key derived from
// ADMIN_SECRET (as the cursors' key is, with another label). An unsalted
// hash of a weak key could be reversed offline by whoever reads the audit
// log (a D1 export, a backup); this one only by whoever also holds
// ADMIN_SECRET, who needs no fingerprint. A request reaching an audited
// action has already matched ADMIN_SECRET, so the secret is always set;
// rotating it changes the fingerprints of entries written after.
func (a Auth) KeyFingerprint(key string) string {
	derive := hmac.New(sha256.New, []byte(a.AdminSecret))
	derive.Write([]byte("redrive key fingerprint v1"))
	mac := hmac.New(sha256.New, derive.Sum(nil))
	mac.Write([]byte(key))
	return hex.EncodeToString(mac.Sum(nil)[:6])
}

// check returns nil when both headers match, otherwise the error to render.
// Unset credentials fail closed: no request is ever authorised by an empty secret.
func (a Auth) check(r *http.Request) *APIError {
	if a.APIKey == "" || a.AdminSecret == "" {
		return &APIError{Status: http.StatusServiceUnavailable, Code: "NOT_CONFIGURED", Message: "API_KEY and ADMIN_SECRET must be set (wrangler secret put, or .dev.vars locally)"}
	}
	if !equal(r.Header.Get("X-API-Key"), a.APIKey) {
		return &APIError{Status: http.StatusUnauthorized, Code: "UNAUTHORIZED", Message: "missing or invalid X-API-Key"}
	}
	if !equal(r.Header.Get("X-Admin-Secret"), a.AdminSecret) {
		return &APIError{Status: http.StatusForbidden, Code: "FORBIDDEN", Message: "missing or invalid X-Admin-Secret"}
	}
	return nil
}

// checkReportToken checks a bearer token that is not a named key against
// REPORT_TOKEN (401 when it differs, or whenever REPORT_TOKEN is unset).
func (a Auth) checkReportToken(token string) *APIError {
	if a.ReportToken == "" {
		return &APIError{Status: http.StatusUnauthorized, Code: "UNAUTHORIZED",
			Message: "REPORT_TOKEN is not set: report with X-API-Key and X-Admin-Secret, or set the secret"}
	}
	if !equal(token, a.ReportToken) {
		return &APIError{Status: http.StatusUnauthorized, Code: "UNAUTHORIZED", Message: "invalid bearer token"}
	}
	return nil
}
