package handlers

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/access/cfaccess"
	"github.com/redrive/redrive/access/cfaccess/cfaccesstest"
	"github.com/redrive/redrive/outbound"
)

// accessAPI is everyRouteAPI behind a Cloudflare Access stand-in (an
// issuer served on loopback): alice is an operator of every pipeline, the
// example.com domain viewers of tickets.
func accessAPI(t *testing.T) (*API, *cfaccesstest.Issuer, *time.Duration) {
	t.Helper()
	api, _, _ := everyRouteAPI(t)
	iss, err := cfaccesstest.NewIssuer("https://team.example.com", "redrive-aud")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(iss.Handler())
	t.Cleanup(srv.Close)
	rules, err := cfaccess.ParseRules(`[{"email":"alice@example.com","role":"operator"},
		{"email_domain":"example.com","role":"viewer","pipelines":["tickets"]}]`)
	if err != nil {
		t.Fatal(err)
	}
	skew := new(time.Duration) // the verifier's clock runs ahead by it
	api.Access = &AccessSignIn{Rules: rules, Verifier: &cfaccess.Verifier{TeamDomain: iss.Team, Audience: "redrive-aud",
		CertsURL: srv.URL + cfaccesstest.CertsPath, Doer: outbound.HTTPDoer{}, Now: func() time.Time { return time.Now().Add(*skew) }}}
	return api, iss, skew
}

// A request through Access is signed in as its identity, with the role and
// pipelines of the first rule that matches; a token the verifier refuses
// is a 401 that says why; an identity no rule names, and a change sent
// from another site, are 403; explicit credentials win over Access's.
func TestAccessSignIn(t *testing.T) {
	api, iss, skew := accessAPI(t)
	token := func(email string, edit func(map[string]any)) map[string]string {
		c := iss.Claims(email, nil, time.Hour)
		if edit != nil {
			edit(c)
		}
		tok, err := iss.Sign(c)
		if err != nil {
			t.Fatal(err)
		}
		return map[string]string{AccessHeader: tok}
	}
	whoami := func(hdr map[string]string) (int, string) {
		rec, env := checkedDo(t, api, "GET", "/admin/whoami", "", hdr)
		if env.Error != nil {
			return rec.Code, env.Error.Code
		}
		return rec.Code, rec.Body.String()
	}
	for _, c := range []struct {
		hdr        map[string]string
		status     int
		want       string
		wantAbsent string
	}{
		{token("alice@example.com", nil), 200, `"principal":"access:alice@example.com","role":"operator","pipelines":null`, ""},
		{token("bob@example.com", nil), 200, `"principal":"access:bob@example.com","role":"viewer","pipelines":["tickets"]`, ""},
		{token("eve@elsewhere.org", nil), 403, "FORBIDDEN", ""},
		{token("alice@example.com", func(c map[string]any) { c["aud"] = []string{"another-app"} }), 401, cfaccess.CodeInvalid, ""},
		{token("alice@example.com", func(c map[string]any) { c["exp"] = time.Now().Add(-time.Hour).Unix() }), 401, cfaccess.CodeExpired, ""},
		{token("alice@example.com", func(c map[string]any) { c["iss"] = "https://other.example.com" }), 401, cfaccess.CodeInvalid, ""},
		{map[string]string{AccessHeader: "not.a.jwt"}, 401, cfaccess.CodeMalformed, ""},
		{map[string]string{AccessHeader: strings.Repeat("A", 1<<20)}, 401, cfaccess.CodeMalformed, ""},
	} {
		if code, body := whoami(c.hdr); code != c.status || !strings.Contains(body, c.want) {
			t.Errorf("%.60s: %d %s, want %d %s", c.hdr[AccessHeader], code, body, c.status, c.want)
		}
	}
	// alg none, and a token of a key the team does not publish.
	none, _ := cfaccesstest.SignRaw(map[string]any{"alg": "none", "kid": iss.Key().ID}, iss.Claims("alice@example.com", nil, time.Hour), nil)
	stranger, _ := cfaccesstest.NewIssuer(iss.Team, "redrive-aud")
	foreign, _ := stranger.Token("alice@example.com", nil, time.Hour)
	for _, tok := range []string{none, foreign} {
		if code, body := whoami(map[string]string{AccessHeader: tok}); code != 401 || body != cfaccess.CodeInvalid {
			t.Errorf("%.40s: %d %s", tok, code, body)
		}
	}
	// Rotation: a token of the new key is followed (one fetch of the keys),
	// once cfaccess.DefaultRefetchEvery has passed since the last fetch
	// (the foreign token's, just above).
	if err := iss.Rotate(); err != nil {
		t.Fatal(err)
	}
	if code, body := whoami(token("alice@example.com", nil)); code != 401 || body != cfaccess.CodeInvalid {
		t.Errorf("rotated, within the refetch window: %d %s", code, body)
	}
	*skew = cfaccess.DefaultRefetchEvery
	if code, body := whoami(token("alice@example.com", nil)); code != 200 {
		t.Errorf("after rotation: %d %s", code, body)
	}
	// A change from another site is refused; from the console's own origin it is done.
	alice := token("alice@example.com", nil)
	for _, c := range []struct {
		name, value string
		want        int
	}{
		{"Origin", "https://evil.example", 403}, {"Origin", "http://example.com", 200}, {"Origin", "::not a url", 403},
		{"Sec-Fetch-Site", "cross-site", 403}, {"Sec-Fetch-Site", "same-site", 403}, {"Sec-Fetch-Site", "same-origin", 200},
		{"Sec-Fetch-Site", "none", 200}, {"X-Nothing", "", 200},
	} {
		hdr := map[string]string{AccessHeader: alice[AccessHeader], c.name: c.value, "Content-Type": "application/json"}
		if rec, _ := checkedDo(t, api, "POST", "/admin/dlq/replay", `{"ids":[2],"dry_run":true}`, hdr); rec.Code != c.want {
			t.Errorf("replay with %s: %s: %d %s, want %d", c.name, c.value, rec.Code, rec.Body, c.want)
		}
	}
	// The pair's headers win over the Access identity; a viewer cannot replay.
	hdr := map[string]string{AccessHeader: token("bob@example.com", nil)[AccessHeader], "X-API-Key": "k", "X-Admin-Secret": "s"}
	if code, body := whoami(hdr); code != 200 || !strings.Contains(body, `"principal":"admin"`) {
		t.Errorf("pair and Access: %d %s", code, body)
	}
	bob := token("bob@example.com", nil)
	if rec, env := checkedDo(t, api, "POST", "/admin/dlq/replay", `{"ids":[1]}`, bob); rec.Code != 403 || !strings.Contains(env.Error.Message, "access:bob@example.com (role viewer) lacks the replay permission") {
		t.Errorf("bob replays: %d %s", rec.Code, rec.Body)
	}
	// An action through Access is audited under the identity.
	rec, _ := checkedDo(t, api, "GET", "/admin/audit?principal=access:alice@example.com", "", adminHeaders)
	if rec.Code != 200 || !strings.Contains(rec.Body.String(), `"principal":"access:alice@example.com"`) {
		t.Errorf("audit: %d %s", rec.Code, rec.Body)
	}
}

// Without Access configured, the header is ignored: the request is judged
// by the pair alone.
func TestAccessHeaderIgnoredWhenOff(t *testing.T) {
	api, iss, _ := accessAPI(t)
	api.Access = nil
	tok, _ := iss.Token("alice@example.com", nil, time.Hour)
	if rec, env := checkedDo(t, api, "GET", "/admin/whoami", "", map[string]string{AccessHeader: tok}); rec.Code != http.StatusUnauthorized || env.Error.Code != "UNAUTHORIZED" {
		t.Errorf("Access off: %d %s", rec.Code, rec.Body)
	}
}
