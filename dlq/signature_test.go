package dlq

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestNormalizeReason(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"status 500: fake outage", "status <n>: fake outage"},
		{"status 502: fake outage", "status <n>: fake outage"},
		{"timeout: request 7f3a9c2e-1b4d-4e8f-9a0b-123456789abc after 15000 ms", "timeout: request <uuid> after <n> ms"},
		{"beer 7239443 not found (took 1.25 s)", "beer <n> not found (took <n> s)"},
		{`status 400: invalid model "sonar-pro-2" for key 'abc'`, "status <n>: invalid model <q> for key <q>"},
		{"trace deadbeefcafe0042 failed", "trace <hex> failed"},
		{"token tok3nXY9 failed", "token <id> failed"},
		{"GET https://api.example.com/v1/beers/12345/abv?key=s3cr3t&lang=en: 404", "GET https://api.example.com/v1/beers/<n>/abv?key=<v>&lang=<v>: <n>"},
		{"GET https://api.example.com/v1/items/a1b2c3d4e5f6a7b8: 500", "GET https://api.example.com/v1/items/<hex>: <n>"},
		{"  many   spaces\n\tand lines  ", "many spaces and lines"},
		{"", ""},
		{"binary body (48 base64 characters), sha256 abc1234", "binary body (<n> base64 characters), sha256 <id>"},
		{"rate limit for key id=3e7 exceeded (12/100)", "rate limit for key id=<v> exceeded (<n>/<n>)"},
		{"no attempt record", "no attempt record"},
	} {
		if got := NormalizeReason(c.in); got != c.want {
			t.Errorf("NormalizeReason(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// One cause is one signature whatever its durations and sizes: a number
// with a unit (Retry-After's 20s, 30s and 2m0s, a 5ms timeout, 2h, 10KB)
// is a number.
func TestSignatureOfNumbersWithUnits(t *testing.T) {
	want := SignatureOf("rate_limited", "status 429: slow down (retry after 7s)")
	for _, d := range []string{"20s", "30s", "2m0s", "1h0m0s", "1.5s", "500ms", "250µs", "1m30.5s", "2h", "45m", "3d"} {
		if got := SignatureOf("rate_limited", "status 429: slow down (retry after "+d+")"); got != want {
			t.Errorf("retry after %s: %q, want %q", d, got.Text, want.Text)
		}
	}
	for _, c := range []struct{ in, want string }{
		{"deadline exceeded after 5ms", "deadline exceeded after <n>"},
		{"body of 10KB exceeds 8kb; 1.5MiB buffered", "body of <n> exceeds <n>; <n> buffered"},
		{"retry after 2m0s (attempt 3)", "retry after <n> (attempt <n>)"},
		// Names and ids keep their form.
		{"http2 stream v1 sha256 x86", "http2 stream v1 sha256 x86"},
		{"token 9abcdefzz failed", "token <id> failed"},
	} {
		if got := NormalizeReason(c.in); got != c.want {
			t.Errorf("NormalizeReason(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// An apostrophe inside a word (can't, it's, users') is not a quote: two
// causes that differ outside their quoted values stay apart, and a quoted
// value with an apostrophe inside is one value.
func TestNormalizeReasonApostrophes(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"can't find 'beer_name'", "can't find <q>"},
		{"can't parse 'beer_name'", "can't parse <q>"},
		{"field 'it's here' isn't valid", "field <q> isn't valid"},
		{"the users' names: 'a', 'b'", "the users' names: <q>, <q>"},
		{"key='v1' and 'x'", "key=<v> and <q>"},
		{"'quoted' at the start", "<q> at the start"},
		{"don't stop", "don't stop"},
	} {
		if got := NormalizeReason(c.in); got != c.want {
			t.Errorf("NormalizeReason(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	if a, b := SignatureOf("permanent", "can't find 'beer_name'"), SignatureOf("permanent", "can't parse 'beer_name'"); a.Key == b.Key {
		t.Errorf("different causes share signature %s (%q)", a.Key, a.Text)
	}
}

func TestSignatureGroupsVariableParts(t *testing.T) {
	a := SignatureOf("transient", "status 500: upstream 10.0.0.12 reset after 312 bytes")
	b := SignatureOf("transient", "status 503: upstream 10.0.0.99 reset after 7 bytes")
	if a != b {
		t.Errorf("same failure, different signatures: %+v %+v", a, b)
	}
	if p := SignatureOf("permanent", "status 500: upstream 10.0.0.12 reset after 312 bytes"); p.Key == a.Key {
		t.Error("the class is part of the signature")
	}
	if c := SignatureOf("transient", "status 500: connection refused"); c.Key == a.Key {
		t.Error("different reasons share a signature")
	}
	if !ValidSignatureKey(a.Key) || ValidSignatureKey("XYZ") || ValidSignatureKey(strings.ToUpper(a.Key)) {
		t.Errorf("key %q", a.Key)
	}
}

func TestNormalizeReasonIsBounded(t *testing.T) {
	got := NormalizeReason(strings.Repeat("word ", 1000))
	if len(got) > maxSignatureText+len("…") {
		t.Errorf("%d bytes", len(got))
	}
}

// FuzzNormalizeReason: any text normalises to valid UTF-8 of bounded size,
// no number with a unit survives it, and the signature key has its form.
func FuzzNormalizeReason(f *testing.F) {
	for _, s := range []string{"status 500: fake", `quoted "x\"y" 'z'`, "https://h/p/1?a=1&b=2", "\xff\xfe 12", "7f3a9c2e-1b4d-4e8f-9a0b-123456789abc"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := NormalizeReason(s)
		if !utf8.ValidString(got) || len(got) > maxSignatureText+len("…") {
			t.Fatalf("NormalizeReason(%q) = %q", s, got)
		}
		if u := signatureRegexps().unit.FindString(got); u != "" {
			t.Fatalf("NormalizeReason(%q) = %q keeps %q", s, got, u)
		}
		if sig := SignatureOf("transient", s); !ValidSignatureKey(sig.Key) || sig.Text != got {
			t.Fatalf("SignatureOf(%q) = %+v", s, sig)
		}
	})
}

// UnknownSignature is written out (no regexp at package initialisation): it
// must be what SignatureOf computes.
func TestUnknownSignatureIsSignatureOf(t *testing.T) {
	if want := SignatureOf("unknown", "no attempt record"); UnknownSignature != want {
		t.Errorf("unknownSignature = %+v, SignatureOf gives %+v", UnknownSignature, want)
	}
}
