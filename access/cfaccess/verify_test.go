package cfaccess

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redrive/redrive/access/cfaccess/cfaccesstest"
	"github.com/redrive/redrive/outbound"
)

const (
	team     = "https://redrive.cloudflareaccess.com"
	aud      = "4714c1358e65fe4b408ad6d432a5f878f08194bdb4752441fd56faefa9b2b6f2"
	certsURL = team + "/cdn-cgi/access/certs"
)

// fakeClock is a settable clock shared by the issuer and the verifier.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// jwksDoer serves the issuer's key set at certsURL and counts the
// fetches; fail makes them fail ("network", "status", "json", "empty").
type jwksDoer struct {
	iss     *cfaccesstest.Issuer
	mu      sync.Mutex
	fetches int
	fail    string
	urls    []string
}

func (d *jwksDoer) Do(_ context.Context, req outbound.Request) (outbound.Response, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.fetches++
	d.urls = append(d.urls, req.URL)
	switch {
	case req.Method != "GET" || req.URL != certsURL:
		return outbound.Response{Status: 404}, nil
	case d.fail == "network":
		return outbound.Response{}, errors.New("dial tcp 10.0.0.1:443: secret internal detail")
	case d.fail == "status":
		return outbound.Response{Status: 502, Body: []byte("bad gateway")}, nil
	case d.fail == "json":
		return outbound.Response{Status: 200, Body: []byte(`{"keys": [`)}, nil
	case d.fail == "empty":
		return outbound.Response{Status: 200, Body: []byte(`{"keys": []}`)}, nil
	}
	return outbound.Response{Status: 200, Body: d.iss.JWKS()}, nil
}

func (d *jwksDoer) count() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.fetches
}

func (d *jwksDoer) setFail(f string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.fail = f
}

type fixture struct {
	iss   *cfaccesstest.Issuer
	doer  *jwksDoer
	clock *fakeClock
	v     *Verifier
}

var (
	sharedKeyOnce sync.Once
	sharedKey     cfaccesstest.Key
)

// newFixture returns an issuer (one RSA key shared by the tests, which
// is enough: Rotate makes fresh ones), a verifier fetching its key set
// through a counting Doer, and their clock.
func newFixture(t testing.TB) *fixture {
	t.Helper()
	sharedKeyOnce.Do(func() {
		k, err := cfaccesstest.NewKey(2048)
		if err != nil {
			panic(err)
		}
		sharedKey = k
	})
	clk := &fakeClock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	iss := cfaccesstest.NewIssuerWithKey(team, aud, sharedKey)
	iss.Now = clk.Now
	d := &jwksDoer{iss: iss}
	v := &Verifier{TeamDomain: team, Audience: aud, Doer: d, Now: clk.Now}
	return &fixture{iss: iss, doer: d, clock: clk, v: v}
}

func (f *fixture) token(t testing.TB, mutate func(map[string]any)) string {
	t.Helper()
	c := f.iss.Claims("Ana@Example.com", []string{"dlq-operators"}, time.Hour)
	if mutate != nil {
		mutate(c)
	}
	tok, err := f.iss.Sign(c)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// wantError checks that err is an *Error with code and status, whose
// message repeats no part of tok.
func wantError(t *testing.T, err error, tok string, status int, code string) {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v (%T), want *Error %s", err, err, code)
	}
	if e.Status != status || e.Code != code {
		t.Fatalf("error %d %s (%s), want %d %s", e.Status, e.Code, e.Message, status, code)
	}
	for _, p := range strings.Split(tok, ".") {
		if len(p) >= 8 && strings.Contains(e.Error(), p) {
			t.Fatalf("the error %q repeats the token", e.Error())
		}
	}
	if strings.Contains(e.Error(), "secret internal detail") || strings.Contains(e.Error(), "10.0.0.1") {
		t.Fatalf("the error %q repeats the fetch's error", e.Error())
	}
}

func TestVerifyReturnsTheIdentity(t *testing.T) {
	f := newFixture(t)
	tok := f.token(t, nil)
	id, err := f.v.Verify(context.Background(), tok)
	if err != nil {
		t.Fatal(err)
	}
	if id.Email != "Ana@Example.com" || id.Subject == "" || len(id.Groups) != 1 || id.Groups[0] != "dlq-operators" {
		t.Fatalf("identity %+v", id)
	}
	if want := f.clock.Now().Add(time.Hour); !id.ExpiresAt.Equal(want) {
		t.Fatalf("ExpiresAt %v, want %v", id.ExpiresAt, want)
	}
	if f.doer.count() != 1 || f.doer.urls[0] != certsURL {
		t.Fatalf("%d fetches of %v, want 1 of %s", f.doer.count(), f.doer.urls, certsURL)
	}
	// The keys are kept: a second token costs no fetch.
	if _, err := f.v.Verify(context.Background(), f.token(t, nil)); err != nil || f.doer.count() != 1 {
		t.Fatalf("second token: %v, %d fetches", err, f.doer.count())
	}
}

// The forms of a team domain and audience a deployment may write, and the
// forms of claims Access may send, are accepted.
func TestVerifyAcceptsTheFormsOfConfigAndClaims(t *testing.T) {
	for _, c := range []struct {
		name, team, aud string
		mutate          func(map[string]any)
	}{
		{"no scheme", "redrive.cloudflareaccess.com", aud, nil},
		{"trailing slash", team + "/", aud, nil},
		{"audience list", team, "other-app, " + aud, nil},
		{"aud a string", team, aud, func(c map[string]any) { c["aud"] = aud }},
		{"aud among others", team, aud, func(c map[string]any) { c["aud"] = []string{"x", aud} }},
		{"iss with slash", team, aud, func(c map[string]any) { c["iss"] = team + "/" }},
		{"no nbf", team, aud, func(c map[string]any) { delete(c, "nbf") }},
		{"nbf within leeway", team, aud, func(c map[string]any) { c["nbf"] = c["nbf"].(int64) + 50 }},
		{"expired within leeway", team, aud, func(c map[string]any) { c["exp"] = c["iat"].(int64) - 50 }},
		{"fractional exp", team, aud, func(c map[string]any) { c["exp"] = float64(c["iat"].(int64)) + 0.5 }},
		{"groups as objects", team, aud, func(c map[string]any) { c["groups"] = []map[string]string{{"id": "1", "name": "g"}} }},
		{"groups of another shape", team, aud, func(c map[string]any) { c["groups"] = "g" }},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t)
			f.v.TeamDomain, f.v.Audience = c.team, c.aud
			if _, err := f.v.Verify(context.Background(), f.token(t, c.mutate)); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// refusal is a token Verify refuses; noFetch says the refusal comes before
// the key set is looked at.
type refusal struct {
	name    string
	token   func(t *testing.T, f *fixture) string
	status  int
	code    string
	noFetch bool
}

func claimsCase(name, code string, mutate func(map[string]any)) refusal {
	return refusal{name: name, status: 401, code: code, token: func(t *testing.T, f *fixture) string { return f.token(t, mutate) }}
}

func rawCase(name, code string, tok string) refusal {
	return refusal{name: name, status: 401, code: code, noFetch: true, token: func(*testing.T, *fixture) string { return tok }}
}

func headerCase(name string, header map[string]any, sign bool) refusal {
	return refusal{name: name, status: 401, code: CodeInvalid, noFetch: true, token: func(t *testing.T, f *fixture) string {
		var key *rsa.PrivateKey
		if sign {
			key = f.iss.Key().Private
		}
		tok, err := cfaccesstest.SignRaw(header, f.iss.Claims("a@example.com", nil, time.Hour), key)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}}
}

// flipSignature changes one byte of tok's signature.
func flipSignature(t *testing.T, tok string) string {
	i := strings.LastIndexByte(tok, '.')
	sig, err := base64.RawURLEncoding.DecodeString(tok[i+1:])
	if err != nil {
		t.Fatal(err)
	}
	sig[len(sig)/2] ^= 0x01
	return tok[:i+1] + base64.RawURLEncoding.EncodeToString(sig)
}

// hs256WithThePublicKey signs a token HS256 with the issuer's public key
// (PEM) as the HMAC secret: the algorithm-confusion attack.
func hs256WithThePublicKey(t *testing.T, f *fixture) string {
	der, err := x509.MarshalPKIXPublicKey(&f.iss.Key().Private.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	secret := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
	h, _ := json.Marshal(map[string]any{"alg": "HS256", "kid": f.iss.Key().ID, "typ": "JWT"})
	c, _ := json.Marshal(f.iss.Claims("a@example.com", nil, time.Hour))
	signed := base64.RawURLEncoding.EncodeToString(h) + "." + base64.RawURLEncoding.EncodeToString(c)
	mac := hmac.New(sha256.New, secret)
	mac.Write([]byte(signed))
	return signed + "." + base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
}

func manyClaims(t *testing.T, f *fixture) string {
	c := f.iss.Claims("a@example.com", nil, time.Hour)
	for i := range 10_000 {
		c[fmt.Sprintf("c%d", i)] = i
	}
	tok, err := f.iss.Sign(c)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

var refusals = []refusal{
	claimsCase("wrong aud", CodeInvalid, func(c map[string]any) { c["aud"] = []string{"another-app"} }),
	claimsCase("aud missing", CodeInvalid, func(c map[string]any) { delete(c, "aud") }),
	claimsCase("wrong iss", CodeInvalid, func(c map[string]any) { c["iss"] = "https://evil.cloudflareaccess.com" }),
	claimsCase("iss missing", CodeInvalid, func(c map[string]any) { delete(c, "iss") }),
	claimsCase("expired", CodeExpired, func(c map[string]any) { c["exp"] = c["iat"].(int64) - 61 }),
	claimsCase("exp missing", CodeInvalid, func(c map[string]any) { delete(c, "exp") }),
	claimsCase("exp null", CodeInvalid, func(c map[string]any) { c["exp"] = nil }),
	claimsCase("exp out of range", CodeInvalid, func(c map[string]any) { c["exp"] = 1e300 }),
	claimsCase("exp a string", CodeMalformed, func(c map[string]any) { c["exp"] = "2099-01-01" }),
	claimsCase("nbf in the future", CodeInvalid, func(c map[string]any) { c["nbf"] = c["iat"].(int64) + 120 }),
	{name: "signature flipped", status: 401, code: CodeInvalid, token: func(t *testing.T, f *fixture) string {
		return flipSignature(t, f.token(t, nil))
	}},
	{name: "claims changed", status: 401, code: CodeInvalid, token: func(t *testing.T, f *fixture) string {
		parts := strings.Split(f.token(t, nil), ".")
		other := strings.Split(f.token(t, func(c map[string]any) { c["email"] = "eve@example.com" }), ".")
		return parts[0] + "." + other[1] + "." + parts[2]
	}},
	{name: "signature cut short", status: 401, code: CodeInvalid, token: func(t *testing.T, f *fixture) string {
		tok := f.token(t, nil)
		i := strings.LastIndexByte(tok, '.')
		sig, _ := base64.RawURLEncoding.DecodeString(tok[i+1:])
		return tok[:i+1] + base64.RawURLEncoding.EncodeToString(sig[:len(sig)-3])
	}},
	{name: "unknown kid", status: 401, code: CodeInvalid, token: func(t *testing.T, f *fixture) string {
		tok, err := cfaccesstest.SignRaw(map[string]any{"alg": "RS256", "kid": "made-up"}, f.iss.Claims("a@example.com", nil, time.Hour), f.iss.Key().Private)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}},
	headerCase("alg none", map[string]any{"alg": "none", "typ": "JWT"}, false),
	headerCase("alg none with a kid", map[string]any{"alg": "none", "kid": sharedKeyID}, false),
	headerCase("alg None", map[string]any{"alg": "None", "kid": sharedKeyID}, false),
	headerCase("alg rs256", map[string]any{"alg": "rs256", "kid": sharedKeyID}, true),
	headerCase("alg RS512", map[string]any{"alg": "RS512", "kid": sharedKeyID}, true),
	headerCase("alg missing", map[string]any{"kid": sharedKeyID}, true),
	headerCase("kid missing", map[string]any{"alg": "RS256"}, true),
	headerCase("crit", map[string]any{"alg": "RS256", "kid": sharedKeyID, "crit": []string{"exp"}}, true),
	{name: "HS256 with the public key", status: 401, code: CodeInvalid, noFetch: true, token: hs256WithThePublicKey},
	{name: "10,000 claims", status: 401, code: CodeMalformed, noFetch: true, token: manyClaims},
	{name: "1 MB", status: 401, code: CodeMalformed, noFetch: true, token: func(t *testing.T, f *fixture) string {
		return f.token(t, func(c map[string]any) { c["pad"] = strings.Repeat("A", 1<<20) })
	}},
	{name: "NUL byte", status: 401, code: CodeMalformed, noFetch: true, token: func(t *testing.T, f *fixture) string {
		tok := f.token(t, nil)
		return tok[:20] + "\x00" + tok[20:]
	}},
	{name: "trailing NUL", status: 401, code: CodeMalformed, noFetch: true, token: func(t *testing.T, f *fixture) string {
		return f.token(t, nil) + "\x00"
	}},
	{name: "non-ASCII", status: 401, code: CodeMalformed, noFetch: true, token: func(t *testing.T, f *fixture) string {
		return "é" + f.token(t, nil)
	}},
	{name: "Bearer prefix", status: 401, code: CodeMalformed, noFetch: true, token: func(t *testing.T, f *fixture) string {
		return "Bearer " + f.token(t, nil)
	}},
	rawCase("empty", CodeMalformed, ""),
	rawCase("one part", CodeMalformed, "abc"),
	rawCase("two parts", CodeMalformed, "eyJhbGciOiJSUzI1NiJ9.e30"),
	rawCase("four parts", CodeMalformed, "eyJhbGciOiJSUzI1NiJ9.e30.AA.AA"),
	rawCase("empty header", CodeMalformed, ".e30.AA"),
	rawCase("padded base64", CodeMalformed, "eyJhbGciOiJSUzI1NiJ9.e30=.AA"),
	rawCase("header not JSON", CodeMalformed, "bm90IGpzb24.e30.AA"),
	rawCase("header an array", CodeMalformed, "WzFd.e30.AA"),
	rawCase("claims not JSON", CodeMalformed, b64(`{"alg":"RS256","kid":"k"}`)+"."+b64("nope")+".AA"),
	rawCase("claims null", CodeMalformed, b64(`{"alg":"RS256","kid":"k"}`)+"."+b64("null")+".AA"),
	rawCase("aud a number", CodeMalformed, b64(`{"alg":"RS256","kid":"k"}`)+"."+b64(`{"aud":5}`)+".AA"),
}

// sharedKeyID is the kid header cases name; any kid works, since they are
// refused before the keys are looked at.
const sharedKeyID = "0123456789abcdef"

func b64(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }

func TestVerifyRefuses(t *testing.T) {
	for _, c := range refusals {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t)
			tok := c.token(t, f)
			_, err := f.v.Verify(context.Background(), tok)
			wantError(t, err, tok, c.status, c.code)
			if c.noFetch && f.doer.count() != 0 {
				t.Fatalf("%d fetches of the key set, want none", f.doer.count())
			}
		})
	}
}

// A verifier without its team, audience or Doer refuses every token, as
// unavailable, without fetching.
func TestVerifyUnconfigured(t *testing.T) {
	for _, mutate := range []func(v *Verifier){
		func(v *Verifier) { v.TeamDomain = " " },
		func(v *Verifier) { v.Audience = " , " },
		func(v *Verifier) { v.Doer = nil },
	} {
		f := newFixture(t)
		tok := f.token(t, nil)
		mutate(f.v)
		_, err := f.v.Verify(context.Background(), tok)
		wantError(t, err, tok, 503, CodeUnavailable)
		if f.doer.count() != 0 {
			t.Fatalf("%d fetches, want none", f.doer.count())
		}
	}
}

func mustVerify(t *testing.T, v *Verifier, tok string) Identity {
	t.Helper()
	id, err := v.Verify(context.Background(), tok)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// The issuer rotates its key: a token of the new key is accepted after one
// refetch, and the old key's tokens then fail.
func TestRotation(t *testing.T) {
	f := newFixture(t)
	old := f.token(t, nil)
	mustVerify(t, f.v, old)
	if err := f.iss.Rotate(); err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(DefaultRefetchEvery)
	fresh := f.token(t, nil)
	mustVerify(t, f.v, fresh)
	if n := f.doer.count(); n != 2 {
		t.Fatalf("%d fetches, want 2 (the first and one refetch)", n)
	}
	_, err := f.v.Verify(context.Background(), old)
	wantError(t, err, old, 401, CodeInvalid)
	mustVerify(t, f.v, fresh)
	if n := f.doer.count(); n != 2 {
		t.Fatalf("%d fetches, want still 2", n)
	}
}

// With KeepPrevious, both keys verify after the refetch.
func TestRotationKeepingThePreviousKey(t *testing.T) {
	f := newFixture(t)
	f.iss.KeepPrevious = true
	old := f.token(t, nil)
	mustVerify(t, f.v, old)
	if err := f.iss.Rotate(); err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(DefaultRefetchEvery)
	mustVerify(t, f.v, f.token(t, nil))
	mustVerify(t, f.v, old)
}

// Within RefetchEvery of a fetch, even a token of a key the issuer does
// publish is refused, without a fetch; after it, one refetch finds it.
func TestRefetchWaitsForItsWindow(t *testing.T) {
	f := newFixture(t)
	mustVerify(t, f.v, f.token(t, nil))
	if err := f.iss.Rotate(); err != nil {
		t.Fatal(err)
	}
	tok := f.token(t, nil)
	f.clock.Advance(DefaultRefetchEvery - time.Second)
	_, err := f.v.Verify(context.Background(), tok)
	wantError(t, err, tok, 401, CodeInvalid)
	if n := f.doer.count(); n != 1 {
		t.Fatalf("%d fetches inside the window, want 1", n)
	}
	f.clock.Advance(time.Second)
	mustVerify(t, f.v, tok)
	if n := f.doer.count(); n != 2 {
		t.Fatalf("%d fetches, want 2", n)
	}
}

// A flood of tokens with made-up kids costs at most one fetch per
// RefetchEvery window.
func TestRefetchLimit(t *testing.T) {
	f := newFixture(t)
	f.v.RefetchEvery = 10 * time.Second
	mustVerify(t, f.v, f.token(t, nil))
	claims := f.iss.Claims("a@example.com", nil, time.Hour)
	flood := func(n int, step time.Duration) {
		for i := range n {
			f.clock.Advance(step)
			tok, err := cfaccesstest.SignRaw(map[string]any{"alg": "RS256", "kid": fmt.Sprintf("random-%d-%d", i, time.Now().UnixNano())}, claims, f.iss.Key().Private)
			if err != nil {
				t.Fatal(err)
			}
			_, err = f.v.Verify(context.Background(), tok)
			wantError(t, err, tok, 401, CodeInvalid)
		}
	}
	// 100 at once, inside the window of the first fetch: none.
	flood(100, 0)
	if n := f.doer.count(); n != 1 {
		t.Fatalf("%d fetches for 100 made-up kids inside the window, want 1", n)
	}
	// 100 at once after the window: one.
	f.clock.Advance(10 * time.Second)
	flood(100, 0)
	if n := f.doer.count(); n != 2 {
		t.Fatalf("%d fetches for 100 made-up kids in a new window, want 2", n)
	}
	// 100 over 50 s, one each 0.5 s: a refetch at 10, 20, 30, 40 and 50 s.
	flood(100, 500*time.Millisecond)
	if n := f.doer.count(); n != 7 {
		t.Fatalf("%d fetches for 100 made-up kids over 50 s, want 7", n)
	}
	// The real key still works, with no fetch.
	mustVerify(t, f.v, f.token(t, nil))
	if n := f.doer.count(); n != 7 {
		t.Fatal("a known kid fetched")
	}
}

// A key set that cannot be had is 503 for a kid not held, and with the
// key set back (after RefetchEvery) the token verifies.
func TestUnavailableThenRecovered(t *testing.T) {
	for _, fail := range []string{"network", "status", "json", "empty"} {
		t.Run(fail, func(t *testing.T) {
			f := newFixture(t)
			f.doer.setFail(fail)
			tok := f.token(t, nil)
			_, err := f.v.Verify(context.Background(), tok)
			wantError(t, err, tok, 503, CodeUnavailable)
			// Within the window: no second fetch, still unavailable.
			_, err = f.v.Verify(context.Background(), tok)
			wantError(t, err, tok, 503, CodeUnavailable)
			if n := f.doer.count(); n != 1 {
				t.Fatalf("%d fetches, want 1", n)
			}
			f.doer.setFail("")
			f.clock.Advance(DefaultRefetchEvery)
			mustVerify(t, f.v, tok)
		})
	}
}

// When the cache expires and the refetch fails, the keys held keep
// verifying (for up to maxStale); a successful refetch after CertsCacheFor
// replaces them.
func TestCacheExpiry(t *testing.T) {
	f := newFixture(t)
	f.v.CertsCacheFor = 10 * time.Minute
	mustVerify(t, f.v, f.token(t, nil))
	f.clock.Advance(11 * time.Minute)
	f.doer.setFail("status")
	mustVerify(t, f.v, f.token(t, nil))
	if n := f.doer.count(); n != 2 {
		t.Fatalf("%d fetches, want 2 (the expired cache is refetched)", n)
	}
	f.clock.Advance(maxStale)
	tok := f.token(t, nil)
	_, err := f.v.Verify(context.Background(), tok)
	wantError(t, err, tok, 503, CodeUnavailable)
	f.doer.setFail("")
	f.clock.Advance(DefaultRefetchEvery)
	mustVerify(t, f.v, f.token(t, nil))
	f.clock.Advance(11 * time.Minute)
	mustVerify(t, f.v, f.token(t, nil))
	if n := f.doer.count(); n != 5 {
		t.Fatalf("%d fetches, want 5", n)
	}
}

// Many goroutines verify at once, good tokens and made-up kids, on a
// verifier that holds no keys yet: one fetch serves them all.
func TestConcurrentVerify(t *testing.T) {
	f := newFixture(t)
	good := f.token(t, nil)
	bad, err := cfaccesstest.SignRaw(map[string]any{"alg": "RS256", "kid": "made-up"}, f.iss.Claims("a@example.com", nil, time.Hour), f.iss.Key().Private)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 200)
	for i := range 200 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tok := good
			if i%4 == 0 {
				tok = bad
			}
			_, err := f.v.Verify(context.Background(), tok)
			if (err == nil) != (tok == good) {
				errs <- fmt.Errorf("token %d: %v", i, err)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := f.doer.count(); n != 1 {
		t.Fatalf("%d fetches, want 1", n)
	}
}

func jwkSet(keys ...map[string]string) []byte {
	b, _ := json.Marshal(map[string]any{"keys": keys})
	return b
}

// Only RS256 signing keys of 2048 to 8192 bits with a sane exponent are
// read from a key set.
func TestParseJWKSKeepsOnlySoundKeys(t *testing.T) {
	good := newFixture(t).iss.Key()
	small, err := rsa.GenerateKey(rand.Reader, 1024)
	if err != nil {
		t.Fatal(err)
	}
	with := func(change func(map[string]string)) map[string]string {
		k := cfaccesstest.JWK("k", &good.Private.PublicKey)
		change(k)
		return k
	}
	for _, c := range []struct {
		name string
		key  map[string]string
		ok   bool
	}{
		{"good", with(func(map[string]string) {}), true},
		{"no alg or use", with(func(k map[string]string) { delete(k, "alg"); delete(k, "use") }), true},
		{"1024 bits", cfaccesstest.JWK("k", &small.PublicKey), false},
		{"no kid", with(func(k map[string]string) { k["kid"] = "" }), false},
		{"EC", with(func(k map[string]string) { k["kty"] = "EC" }), false},
		{"RS512", with(func(k map[string]string) { k["alg"] = "RS512" }), false},
		{"enc", with(func(k map[string]string) { k["use"] = "enc" }), false},
		{"e = 1", with(func(k map[string]string) { k["e"] = "AQ" }), false},
		{"e even", with(func(k map[string]string) { k["e"] = "AQAA" }), false},
		{"e of 5 bytes", with(func(k map[string]string) { k["e"] = "AQAAAAE" }), false},
		{"n with a leading zero", with(func(k map[string]string) { k["n"] = "AA" + k["n"] }), false},
		{"n not base64url", with(func(k map[string]string) { k["n"] = "!!" }), false},
	} {
		keys, err := parseJWKS(jwkSet(c.key))
		if got := err == nil && keys["k"] != nil; got != c.ok {
			t.Errorf("%s: read %v (%v), want %v", c.name, got, err, c.ok)
		}
	}
	if _, err := parseJWKS([]byte(`{"keys":{}}`)); err == nil {
		t.Error("keys an object: read")
	}
}

// A token verified once is remembered: it verifies again with no fetch,
// expires on time, and the identity returned is the caller's own copy.
func TestVerifiedTokensAreRemembered(t *testing.T) {
	f := newFixture(t)
	f.v.CertsCacheFor = 3 * time.Hour
	tok := f.token(t, nil)
	id := mustVerify(t, f.v, tok)
	id.Groups[0] = "changed"
	f.v.mu.Lock()
	keys := f.v.keys
	f.v.keys = nil // the remembered token needs no key
	f.v.mu.Unlock()
	again := mustVerify(t, f.v, tok)
	f.v.mu.Lock()
	f.v.keys = keys
	f.v.mu.Unlock()
	if again.Groups[0] != "dlq-operators" || !again.ExpiresAt.Equal(id.ExpiresAt) {
		t.Fatalf("remembered identity %+v", again)
	}
	if len(f.v.verified) != 1 || f.doer.count() != 1 {
		t.Fatalf("%d remembered, %d fetches", len(f.v.verified), f.doer.count())
	}
	// A changed token is not the same token.
	bad := flipSignature(t, tok)
	_, err := f.v.Verify(context.Background(), bad)
	wantError(t, err, bad, 401, CodeInvalid)
	f.clock.Advance(time.Hour + Leeway + time.Second)
	_, err = f.v.Verify(context.Background(), tok)
	wantError(t, err, tok, 401, CodeExpired)
}

// publicKey keeps an RS256 signing key of 2048 to 8192 bits with an odd
// modulus and an odd exponent in 3..2^31-1, and nothing else: each
// condition at its boundary.
func TestPublicKeyBoundaries(t *testing.T) {
	b64 := base64.RawURLEncoding.EncodeToString
	mod := func(bits int, odd bool) string { // a modulus of exactly bits bits
		n := make([]byte, (bits+7)/8)
		n[0] = byte(1 << ((bits - 1) % 8))
		if odd {
			n[len(n)-1] |= 1
		}
		return b64(n)
	}
	exp := func(e ...byte) string { return b64(e) }
	good := jwk{Kid: "k", Kty: "RSA", Alg: "RS256", Use: "sig", N: mod(2048, true), E: exp(1, 0, 1)}
	for _, c := range []struct {
		name string
		edit func(*jwk)
		ok   bool
	}{
		{"as Access publishes it", func(*jwk) {}, true},
		{"no alg, no use", func(k *jwk) { k.Alg, k.Use = "", "" }, true},
		{"no kid", func(k *jwk) { k.Kid = "" }, false},
		{"EC", func(k *jwk) { k.Kty = "EC" }, false},
		{"RS384", func(k *jwk) { k.Alg = "RS384" }, false},
		{"use enc", func(k *jwk) { k.Use = "enc" }, false},
		{"2047 bits", func(k *jwk) { k.N = mod(2047, true) }, false},
		{"2049 bits", func(k *jwk) { k.N = mod(2049, true) }, true},
		{"8192 bits", func(k *jwk) { k.N = mod(8192, true) }, true},
		{"8193 bits", func(k *jwk) { k.N = mod(8193, true) }, false},
		{"even modulus", func(k *jwk) { k.N = mod(2048, false) }, false},
		{"modulus with a leading zero byte", func(k *jwk) { k.N = b64(append([]byte{0}, mustDecode(t, mod(2048, true))...)) }, false},
		{"no modulus", func(k *jwk) { k.N = "" }, false},
		{"modulus not base64url", func(k *jwk) { k.N = "!!" }, false},
		{"e = 3", func(k *jwk) { k.E = exp(3) }, true},
		{"e = 1", func(k *jwk) { k.E = exp(1) }, false},
		{"e = 2", func(k *jwk) { k.E = exp(2) }, false},
		{"e even", func(k *jwk) { k.E = exp(1, 0, 0) }, false},
		{"e = 2^31-1", func(k *jwk) { k.E = exp(0x7f, 0xff, 0xff, 0xff) }, true},
		{"e = 2^31+1", func(k *jwk) { k.E = exp(0x80, 0, 0, 1) }, false},
		{"e of 5 bytes", func(k *jwk) { k.E = exp(1, 0, 0, 0, 1) }, false},
		{"e with a leading zero byte", func(k *jwk) { k.E = exp(0, 1, 0, 1) }, false},
		{"no e", func(k *jwk) { k.E = "" }, false},
		{"e not base64url", func(k *jwk) { k.E = "!" }, false},
	} {
		k := good
		c.edit(&k)
		if got := k.publicKey(); (got != nil) != c.ok {
			t.Errorf("%s: kept %v, want %v", c.name, got != nil, c.ok)
		}
	}
}

func mustDecode(t *testing.T, s string) []byte {
	t.Helper()
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The key set is kept exactly DefaultCertsCacheFor (zero CertsCacheFor),
// then fetched again; while fetches fail, the keys held verify until
// exactly maxStale past that, then the keys cannot be had (503).
func TestCacheBoundaries(t *testing.T) {
	f := newFixture(t)
	mustVerify(t, f.v, f.token(t, nil))
	f.clock.Advance(DefaultCertsCacheFor - time.Millisecond)
	mustVerify(t, f.v, f.token(t, nil))
	if n := f.doer.count(); n != 1 {
		t.Fatalf("%d fetches within DefaultCertsCacheFor, want 1", n)
	}
	f.clock.Advance(time.Millisecond)
	mustVerify(t, f.v, f.token(t, nil))
	if n := f.doer.count(); n != 2 {
		t.Fatalf("%d fetches at DefaultCertsCacheFor, want 2", n)
	}
	f.doer.setFail("status")
	f.clock.Advance(DefaultCertsCacheFor + maxStale - time.Millisecond)
	mustVerify(t, f.v, f.token(t, nil)) // the refetch fails; the keys held still verify
	f.clock.Advance(time.Millisecond)
	tok := f.token(t, nil)
	_, err := f.v.Verify(context.Background(), tok)
	wantError(t, err, tok, 503, CodeUnavailable)
	if n := f.doer.count(); n != 3 {
		t.Fatalf("%d fetches, want 3 (the last within its refetch window)", n)
	}
}

// countingRSA counts the signatures verified.
type countingRSA struct {
	mu sync.Mutex
	n  int
}

func (c *countingRSA) VerifyRS256(ctx context.Context, n, e, signed, sig []byte) (bool, error) {
	c.mu.Lock()
	c.n++
	c.mu.Unlock()
	return GoRSA{}.VerifyRS256(ctx, n, e, signed, sig)
}

// A token verified once is remembered (no second signature check) while
// the keys it was verified with are fresh, up to maxVerified tokens, past
// which the memory starts over; at exactly CertsCacheFor it is verified
// again.
func TestRememberedTokensBoundaries(t *testing.T) {
	f := newFixture(t)
	rsa := &countingRSA{}
	f.v.RSA = rsa
	tokens := make([]string, maxVerified+1)
	for i := range tokens {
		tok, err := f.iss.Token(fmt.Sprintf("u%d@example.com", i), nil, 2*time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		tokens[i] = tok
	}
	mustVerify(t, f.v, tokens[0])
	mustVerify(t, f.v, tokens[1])
	mustVerify(t, f.v, tokens[0])
	if rsa.n != 2 {
		t.Fatalf("%d signatures checked for two tokens, one of them twice: want 2", rsa.n)
	}
	for _, tok := range tokens[2:maxVerified] {
		mustVerify(t, f.v, tok)
	}
	mustVerify(t, f.v, tokens[0]) // maxVerified remembered, the first among them
	if rsa.n != maxVerified {
		t.Fatalf("%d signatures checked for %d tokens: want %d", rsa.n, maxVerified, maxVerified)
	}
	mustVerify(t, f.v, tokens[maxVerified]) // one more: the memory starts over
	mustVerify(t, f.v, tokens[0])
	if rsa.n != maxVerified+2 {
		t.Fatalf("%d signatures checked: want %d (the memory started over)", rsa.n, maxVerified+2)
	}
	f.clock.Advance(DefaultCertsCacheFor)
	mustVerify(t, f.v, tokens[0])
	if rsa.n != maxVerified+3 || f.doer.count() != 2 {
		t.Fatalf("at CertsCacheFor: %d signatures, %d fetches; want %d and 2", rsa.n, f.doer.count(), maxVerified+3)
	}
}
