package platform

import (
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func TestParseHeaderList(t *testing.T) {
	h := http.Header{}
	if err := parseHeaderList("x-api-key\nk\naccept\n*/*\nset-cookie\na=1\nset-cookie\nb=2\nx-empty\n\n", h); err != nil {
		t.Fatal(err)
	}
	want := http.Header{"X-Api-Key": {"k"}, "Accept": {"*/*"}, "Set-Cookie": {"a=1", "b=2"}, "X-Empty": {""}}
	if !reflect.DeepEqual(h, want) {
		t.Errorf("got %v, want %v", h, want)
	}
	for _, bad := range []string{"name", "name\n", "name\nvalue", "a\n1\nb\n"} {
		if err := parseHeaderList(bad, http.Header{}); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
	if err := parseHeaderList("", h); err != nil {
		t.Errorf("empty list: %v", err)
	}
}

func TestHeaderListRoundTrip(t *testing.T) {
	h := http.Header{"Content-Type": {"application/json"}, "Set-Cookie": {"a=1", "b=2"}, "X-Request-Id": {"id"}}
	s := headerList(h)
	if !strings.HasSuffix(s, "\n") || strings.Count(s, "\n") != 8 {
		t.Fatalf("list %q", s)
	}
	if strings.ToLower(s) != s {
		t.Errorf("names not in lower case: %q", s)
	}
	back := http.Header{}
	if err := parseHeaderList(s, back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, h) {
		t.Errorf("round trip: got %v, want %v", back, h)
	}
	if got := headerList(http.Header{}); got != "" {
		t.Errorf("no headers: %q", got)
	}
}

// A CR or LF in a value would shift every pair after it: it becomes a
// space, as net/http's server writes it.
func TestHeaderListReplacesNewlines(t *testing.T) {
	got := headerList(http.Header{"X-A": {"one\r\ntwo\nthree"}})
	if got != "x-a\none  two three\n" {
		t.Errorf("got %q", got)
	}
}

// Whatever the list, parsing never panics, and what it accepts writes back
// to a list with the same pairs (names canonicalised, then lower-cased).
func FuzzParseHeaderList(f *testing.F) {
	for _, s := range []string{"", "a\nb\n", "x-api-key\nk\naccept\n*/*\n", "a\n", "a\nb", "\n\n", "A\r\nB\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		h := http.Header{}
		if err := parseHeaderList(s, h); err != nil {
			return
		}
		var want []string
		for k, vs := range h {
			for _, v := range vs {
				want = append(want, strings.ToLower(newlineToSpace.Replace(k))+"\n"+newlineToSpace.Replace(v))
			}
		}
		back, err := pairsOf(headerList(h))
		if err != nil {
			t.Fatalf("%q: written list does not parse: %v", s, err)
		}
		slices.Sort(want)
		slices.Sort(back)
		if !slices.Equal(back, want) {
			t.Fatalf("%q: got %q, want %q", s, back, want)
		}
	})
}

// pairsOf splits a header list into "name\nvalue" strings, as headers.mjs does.
func pairsOf(s string) ([]string, error) {
	var out []string
	for s != "" {
		name, rest, ok := strings.Cut(s, "\n")
		if !ok {
			return nil, errHeaderList
		}
		value, rest, ok := strings.Cut(rest, "\n")
		if !ok {
			return nil, errHeaderList
		}
		out = append(out, name+"\n"+value)
		s = rest
	}
	return out, nil
}

// The constant names are what net/http would make of them.
func TestCanonicalAndLowerNamesAreNetHTTPs(t *testing.T) {
	for _, n := range []string{"accept", "accept-encoding", "accept-language", "authorization", "cache-control", "cf-connecting-ip",
		"cf-ipcountry", "cf-ray", "cf-visitor", "connection", "content-length", "content-type", "cookie", "host", "if-none-match",
		"origin", "referer", "user-agent", "x-admin-secret", "x-api-key", "x-forwarded-proto", "x-real-ip", "x-other", "weird name"} {
		if got, want := canonicalName(n), http.CanonicalHeaderKey(n); got != want {
			t.Errorf("canonicalName(%q) = %q, want %q", n, got, want)
		}
	}
	for _, n := range []string{"Content-Type", "X-Request-Id", "Content-Disposition", "Cache-Control", "Allow", "X-Other"} {
		if got, want := lowerName(n), strings.ToLower(n); got != want {
			t.Errorf("lowerName(%q) = %q, want %q", n, got, want)
		}
	}
}
