package handlers

import (
	"net/http/httptest"
	"testing"
)

// One credential unset fails closed even when the request's header matches
// the empty value: no request is authorised by an empty secret.
func TestAuthWithOneCredentialUnsetFailsClosed(t *testing.T) {
	for _, a := range []Auth{{APIKey: "k"}, {AdminSecret: "s"}, {}} {
		for _, hdr := range []map[string]string{
			{"X-API-Key": a.APIKey, "X-Admin-Secret": a.AdminSecret},
			{"X-API-Key": "", "X-Admin-Secret": ""},
			{},
		} {
			r := httptest.NewRequest("GET", "/admin/dlq", nil)
			for k, v := range hdr {
				r.Header.Set(k, v)
			}
			if err := a.check(r); err == nil || err.Status != 503 || err.Code != "NOT_CONFIGURED" {
				t.Errorf("auth %+v, headers %v: %+v, want 503 NOT_CONFIGURED", a, hdr, err)
			}
		}
	}
}
