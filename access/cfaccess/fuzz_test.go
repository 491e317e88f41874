package cfaccess

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/access"
	"github.com/redrive/redrive/access/cfaccess/cfaccesstest"
)

// fuzzKeyPEM is a fixed key, so that the valid token in the seed corpus
// (testdata/fuzz/FuzzVerify/valid) verifies in every run. It signs
// nothing but these tests. ("TESTING KEY" keeps secret scanners quiet.)
var fuzzKeyPEM = strings.ReplaceAll(`
-----BEGIN RSA TESTING KEY-----
MIIEogIBAAKCAQEA72uAVk1oacbi3mKvsz8wQM2samcHrFbS8X+PPb9stimBwZy1
WNPMXJNnuK4GLbX4vbMiEe+ICGGAW3YXzTSaeuTjc5PB286p3PGe7S3oJx8cWcfm
xFW4CmQHOUMDjRMZKFB/do1d/i9SJiUidWP1TSd7lNPfKrNjhB6rHTONgxb+PD5c
75sZe6TyBxXLukxHhsEbAfwU1nzLypP1opI/STyJEKt7RUieiboi48X+7T6inboZ
AwxuL7PA8W2CRFI9Aqqk43uwrI6qMSv4FgxSohrluS50DBpqb5txF4NF4HFaQXq3
CKkynq5LhTVclp1YvPULVZa08P8F3U8VFVynbwIDAQABAoIBAACwwaz+CigL78mO
ZU1SCFSXg0DHTUlc8rzJjmMyMyEPW5VwW0GHUtaNgkYREml9VdtOMfH1S+IiTdl1
rLnlxfBGyrUhnvSAUxMVC01JzZqXR2Cm5+53BNHa2f57R/5XKMJqAQQZgkTiZA1C
HChUgneXfo6+Ua1w2P+fiwTJikXvgJyOhZKjBagz5bxc1KH5ItAUtSnhTt7F2gYQ
PjbcKMYdMD6bVQG2puC7otlwl1GLsCOLUXmkz8RlEonlPABJLdYaKM1NDo46lyyI
0nXlnfsff01+eyJdI9o2utcrxNaSgOMMFHMPqQAqXlBSw+t7QuIhXczpqWkbiNbV
bD8HXFECgYEA/O0aU9XQ9yIAXG4IFfYSXWLA7lrUrzVd4II3LeOb2UuoMoacfPT6
TUECyXzIa0SiBH+gRaHcOapyZ86+2WdTsOeZF/ynSWhz5l+cX+8OBU0YGZ0bTlBg
dSdBwmt6Ua1A/Wzetgx63M2EBxhGQaBAkTnk91QT7xyiUB7bYbnlzBkCgYEA8lRg
z/8/k9LL8rS7F45cESCWMUZYf0FUBSITQt2cJJrAjP8eapyeyVAloRZ6hJLuUJi9
sZGP0VzWbtnYygVinVVRV3Pjf0KNWf+egCbjYKWiDSMj56L5U54/35F5XWN88m8R
LCNQHSoP4fb8UimWh1H2b7vOL8r0fFs3/pjzAMcCgYB/rkIoKDxBRczg3DsAuyQy
OHQk332WpV4qxBGO/OPkIilauFGvUww4i6UYigGzBQa1Nqh1/mvqQH1Yoin+HgdF
uuSyEz1v9Wbs2T9bvpZZXr3X0FPEiRbojVTJDPDG4qt4Q8l6JXqwlJ8d5ccxwfBW
X9+Sa8NUZiQaRjmBcBLtoQKBgFo/UFrGDZBo5el6o16vdtwuDaFGOHkUBE1xFklF
rPv44hLghBxiPcRtY8YtT+2Fptk/OQ4jTrNC5t0bpl/+R26eso9mKmhfibLlvsqt
MOryZHqOBrYifMZGXjVNwSwlfAfxkyyj7hcebhHSYL/cmyHERYnxIGWuKQUTF7Rq
k71LAoGAFZX6tmvtkM1JVOn1Mzj3dTtzNfYSUNMMt0O7A8cwhc918LTXjcwkRXee
tgCeLdFDfCUU3IpN7dTTTCw6SvgPPaneg9UTO7b6NfMQhdptTlrO3n4zwVZjCKih
IWhQEHD/tKmOpAtRKbFIcX1gsvSBbjhRqMBYMUv5FRLazXDCrzc=
-----END RSA TESTING KEY-----
`, "TESTING KEY", "PRIVATE KEY")

// fuzzNow is the fixed time of FuzzVerify: the seed token is valid then.
var fuzzNow = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func fuzzIssuer(t testing.TB) *cfaccesstest.Issuer {
	t.Helper()
	block, _ := pem.Decode([]byte(fuzzKeyPEM))
	if block == nil {
		t.Fatal("no PEM block in fuzzKeyPEM")
	}
	priv, err := x509.ParsePKCS1PrivateKey(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	iss := cfaccesstest.NewIssuerWithKey(team, aud, cfaccesstest.KeyFrom(priv))
	iss.Now = func() time.Time { return fuzzNow }
	return iss
}

// Whatever the token, Verify neither panics nor returns an error that is
// not an *Error with a known status and code, and no message repeats it.
func FuzzVerify(f *testing.F) {
	iss := fuzzIssuer(f)
	valid, err := iss.Token("ana@example.com", []string{"dlq-operators"}, time.Hour)
	if err != nil {
		f.Fatal(err)
	}
	none, _ := cfaccesstest.SignRaw(map[string]any{"alg": "none", "kid": iss.Key().ID}, iss.Claims("a@example.com", nil, time.Hour), nil)
	f.Add(valid)
	f.Add(none)
	f.Add("garbage")
	f.Add("a.b.c")
	f.Add(strings.Repeat(".", 5))
	v := &Verifier{TeamDomain: team, Audience: aud, Doer: &jwksDoer{iss: iss}, Now: func() time.Time { return fuzzNow }}
	if _, err := v.Verify(context.Background(), valid); err != nil {
		f.Fatalf("the valid seed is refused: %v", err)
	}
	codes := map[string]int{CodeMalformed: 401, CodeInvalid: 401, CodeExpired: 401, CodeUnavailable: 503}
	f.Fuzz(func(t *testing.T, tok string) {
		id, err := v.Verify(context.Background(), tok)
		if err == nil {
			if id.ExpiresAt.IsZero() {
				t.Fatalf("accepted %q with no expiry", tok)
			}
			return
		}
		e, ok := err.(*Error)
		if !ok {
			t.Fatalf("error %T %v is not an *Error", err, err)
		}
		if status, known := codes[e.Code]; !known || status != e.Status || e.Message == "" {
			t.Fatalf("error %d %q %q", e.Status, e.Code, e.Message)
		}
		if len(tok) >= 12 && strings.Contains(e.Message, tok) {
			t.Fatalf("the message %q repeats the token", e.Message)
		}
	})
}

// The seed corpus's valid token (minted with fuzzKeyPEM at fuzzNow) is
// accepted, so that the fuzzer mutates a token that gets as far as the
// claims.
func TestFuzzSeedTokenIsValid(t *testing.T) {
	raw, err := os.ReadFile("testdata/fuzz/FuzzVerify/valid")
	if err != nil {
		t.Fatal(err)
	}
	_, lit, _ := strings.Cut(strings.TrimSpace(string(raw)), "\nstring(")
	tok, err := strconv.Unquote(strings.TrimSuffix(lit, ")"))
	if err != nil {
		t.Fatal(err)
	}
	iss := fuzzIssuer(t)
	v := &Verifier{TeamDomain: team, Audience: aud, Doer: &jwksDoer{iss: iss}, Now: func() time.Time { return fuzzNow }}
	if id, err := v.Verify(context.Background(), tok); err != nil || id.Email != "ana@example.com" {
		t.Fatalf("%+v, %v", id, err)
	}
}

// Whatever ACCESS_ROLES says, ParseRules does not panic; rules it accepts
// are valid, read the same once written back, and Match does not panic.
func FuzzParseRules(f *testing.F) {
	f.Add(exampleRules)
	f.Add(`[{"email":"a@b.c","role":"admin","pipelines":["beers"]}]`)
	f.Add(`[{"group":"g","role":"root"}]`)
	f.Add(`[]`)
	f.Add(`{`)
	f.Fuzz(func(t *testing.T, s string) {
		rs, err := ParseRules(s)
		if err != nil {
			return
		}
		if len(rs) > MaxRules {
			t.Fatalf("%d rules accepted", len(rs))
		}
		for _, r := range rs {
			if _, err := access.ParseRole(r.Role); err != nil {
				t.Fatalf("rule %+v accepted with role %q", r, r.Role)
			}
			if n := len(r.Email + r.EmailDomain + r.Group); n == 0 || n != len(r.Email) && n != len(r.EmailDomain) && n != len(r.Group) {
				t.Fatalf("rule %+v accepted without exactly one subject", r)
			}
		}
		if len(rs) == 0 {
			return
		}
		b, err := json.Marshal(rs)
		if err != nil {
			t.Fatal(err)
		}
		again, err := ParseRules(string(b))
		for i := range rs {
			if len(rs[i].Pipelines) == 0 {
				rs[i].Pipelines = nil // written back as no pipelines
			}
		}
		if err != nil || !reflect.DeepEqual(again, rs) {
			t.Fatalf("written back as %s: %v %+v", b, err, again)
		}
		for _, r := range rs {
			rs.Match(Identity{Email: r.Email, Groups: []string{r.Group}})
			rs.Match(Identity{Email: "x@" + r.EmailDomain})
		}
	})
}
