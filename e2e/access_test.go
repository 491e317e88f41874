//go:build e2e

package e2e

import (
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/redrive/redrive/access/cfaccess/cfaccesstest"
)

// accessIssuer serves a Cloudflare Access stand-in on loopback (its own URL
// is the team domain, the tokens' issuer), stopped at cleanup.
func accessIssuer(t *testing.T, aud string) *cfaccesstest.Issuer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	iss, err := cfaccesstest.NewIssuer("http://"+ln.Addr().String(), aud)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: iss.Handler(), ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return iss
}

// Cloudflare Access in workerd, against the stand-in: a valid token signs
// in as its identity with the role and pipelines ACCESS_ROLES gives it; a
// wrong audience, an expired token, a bad signature, an unknown key id,
// alg none and a token of 10,000 claims are 401 with a code that says
// which, never a 500; a change sent from another site is 403; a key
// rotation is followed within cfaccess.DefaultRefetchEvery; an action is
// audited under the identity.
func TestAccessSignInInWorkerd(t *testing.T) {
	iss := accessIssuer(t, "redrive-e2e")
	w := startWorker(t, map[string]string{"ACCESS_TEAM_DOMAIN": iss.Team, "ACCESS_AUD": "redrive-e2e",
		"ACCESS_ROLES": `[{"email":"alice@example.com","role":"operator"},{"email_domain":"example.com","role":"viewer","pipelines":["beers"]}]`})
	do := func(method, path, token string, hdr map[string]string) *Response {
		t.Helper()
		h := map[string]string{"Cf-Access-Jwt-Assertion": token}
		for k, v := range hdr {
			h[k] = v
		}
		var body any
		if method == http.MethodPost {
			body, h["Content-Type"] = `{"ids":[999999999],"dry_run":true}`, "application/json"
		}
		r, err := w.Do(method, path, body, h)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	claims := func(email string, edit func(map[string]any)) string {
		c := iss.Claims(email, nil, time.Hour)
		if edit != nil {
			edit(c)
		}
		tok, err := iss.Sign(c)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	alice := claims("alice@example.com", nil)
	for token, want := range map[string]string{
		alice:                            `"principal":"access:alice@example.com","role":"operator","pipelines":null`,
		claims("bob@example.com", nil):   `"principal":"access:bob@example.com","role":"viewer","pipelines":["beers"]`,
		claims("eve@elsewhere.org", nil): `"code":"FORBIDDEN"`,
		claims("alice@example.com", func(c map[string]any) { c["aud"] = "other" }):                           `"code":"INVALID_ACCESS_TOKEN"`,
		claims("alice@example.com", func(c map[string]any) { c["exp"] = time.Now().Add(-time.Hour).Unix() }): `"code":"ACCESS_TOKEN_EXPIRED"`,
		alice[:len(alice)-4] + "AAAA":                                       `"code":"INVALID_ACCESS_TOKEN"`,
		"eyJhbGciOiJub25lIn0." + strings.Repeat("eyJhIjoxfQ", 10_000) + ".": `"code":"MALFORMED_ACCESS_TOKEN"`,
	} {
		r := do(http.MethodGet, "/admin/whoami", token, nil)
		if !strings.Contains(string(r.Raw), want) || r.Status >= 500 {
			t.Errorf("%.40s…: %d %.300s, want %s", token, r.Status, r.Raw, want)
		}
	}
	none, _ := cfaccesstest.SignRaw(map[string]any{"alg": "none", "kid": iss.Key().ID}, iss.Claims("alice@example.com", nil, time.Hour), nil)
	stranger, _ := cfaccesstest.NewIssuer(iss.Team, "redrive-e2e")
	foreign, _ := stranger.Token("alice@example.com", nil, time.Hour)
	for _, token := range []string{none, foreign} {
		if r := do(http.MethodGet, "/admin/whoami", token, nil); r.Status != 401 || !strings.Contains(string(r.Raw), "INVALID_ACCESS_TOKEN") {
			t.Errorf("%.40s…: %d %.300s", token, r.Status, r.Raw)
		}
	}
	// What a verification costs: the median answer to a token seen for the
	// first time (its signature verified) against one seen before (a hash),
	// logged for docs/costs.md.
	median := func(tokens func(i int) string) time.Duration {
		var ds []time.Duration
		for i := 0; i < 21; i++ {
			tok := tokens(i)
			start := time.Now()
			if r := do(http.MethodGet, "/admin/whoami", tok, nil); r.Status != 200 {
				t.Fatalf("whoami: %d %.200s", r.Status, r.Raw)
			}
			ds = append(ds, time.Since(start))
		}
		slices.Sort(ds)
		return ds[len(ds)/2]
	}
	fresh := median(func(i int) string { return claims(fmt.Sprintf("user%d@example.com", i), nil) })
	seen := median(func(int) string { return alice })
	t.Logf("GET /admin/whoami through Access, median of 21: %s with a new token (signature verified), %s with one seen before", fresh, seen)
	// A change from another site; from the worker's own origin.
	if r := do(http.MethodPost, "/admin/dlq/replay", alice, map[string]string{"Origin": "https://evil.example"}); r.Status != 403 || !strings.Contains(string(r.Raw), "CROSS_SITE") {
		t.Errorf("cross-site replay: %d %.300s", r.Status, r.Raw)
	}
	if r := do(http.MethodPost, "/admin/dlq/replay", alice, map[string]string{"Origin": w.URL}); r.Status != 200 {
		t.Errorf("same-origin replay: %d %.300s", r.Status, r.Raw)
	}
	r := w.Admin(t, http.MethodGet, "/admin/audit?principal=access:alice@example.com", nil)
	if r.Status != 200 || !strings.Contains(string(r.Raw), `"principal":"access:alice@example.com"`) {
		t.Errorf("audit: %d %.300s", r.Status, r.Raw)
	}
	// Rotation: the new key is fetched once the refetch window since the
	// last fetch (the foreign token's) has passed.
	if err := iss.Rotate(); err != nil {
		t.Fatal(err)
	}
	rotated := claims("alice@example.com", nil)
	Eventually(t, 50*time.Second, "a token of the rotated key accepted", func() bool {
		return do(http.MethodGet, "/admin/whoami", rotated, nil).Status == 200
	})
	if r := do(http.MethodGet, "/admin/whoami", alice, nil); r.Status != 401 {
		t.Errorf("a token of the key rotated out: %d %.300s", r.Status, r.Raw)
	}
}

// The console behind Cloudflare Access: the browser sends the identity's
// JWT with every request (Access's edge adds it; here DevTools does), and
// the console signs in without a key, names the identity and its role, and
// offers an operator's actions; an acknowledge from the console (a POST
// from its own origin) is done and audited under the identity. axe finds
// nothing on the page.
func TestConsoleSignsInThroughAccess(t *testing.T) {
	chromiumPath(t)
	iss := accessIssuer(t, "redrive-e2e")
	w := startWorker(t, map[string]string{"ACCESS_TEAM_DOMAIN": iss.Team, "ACCESS_AUD": "redrive-e2e",
		"ACCESS_ROLES": `[{"email":"alice@example.com","role":"operator"}]`})
	prefix := newPrefix("consaccess")
	w.Exec(t, seedSQL(prefix, 2, 1, time.Now().UnixMilli(), "beer-enrichment"))
	token, err := iss.Token("alice@example.com", nil, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	b := rolesBrowser(t)
	if _, err := chromedp.Call(b.ctx, network.Enable, network.EnableParams{}); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Call(b.ctx, network.SetExtraHTTPHeaders, network.SetExtraHTTPHeadersParams{
		Headers: network.Headers{"Cf-Access-Jwt-Assertion": token}}); err != nil {
		t.Fatal(err)
	}
	b.Do(chromedp.Navigate(w.URL + "/"))
	b.Wait("signed in through Access", `document.querySelector('#who')?.textContent.includes('access:alice@example.com (operator)')`)
	if got := Eval[string](b, `String(sessionStorage.getItem('redrive.token')) + '|' + String(sessionStorage.getItem('redrive.apiKey'))`); got != "null|null" {
		t.Errorf("a credential is kept for an Access sign-in: %q", got)
	}
	b.Do(chromedp.Navigate(w.URL + "/#/failures?q=" + prefix))
	b.Wait("the rows", failuresRows+`.length === 2`)
	b.Click("table.rows tbody tr input[type=checkbox]")
	b.Wait("a row selected", `document.querySelector('.toolbar .count').textContent.includes('1 selected')`)
	wantButtons(t, b, "failures through Access", map[string]string{"Replay selected": "enabled", "Acknowledge selected": "enabled"})
	b.ClickText("main button", "Acknowledge selected")
	b.Wait("the dry run", `document.querySelector('dialog[open] .preview-count')`)
	b.ClickText("dialog[open] button", "Acknowledge 1 row")
	b.Wait("the result", `document.querySelector('dialog[open] .result')?.textContent.includes('Acknowledged 1')`)
	b.ClickText("dialog[open] button", "Close")
	if n := w.Int(t, `SELECT COUNT(*) FROM admin_audit WHERE action = 'acknowledge' AND principal = 'access:alice@example.com' AND dry_run = 0`); n != 1 {
		t.Errorf("%d acknowledges audited under access:alice@example.com, want 1", n)
	}
	fitsAndAxe(b, "failures through Access")
	b.CheckCSP("access")
	b.Check()
}
