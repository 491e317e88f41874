package access

import (
	"strings"
	"testing"
)

func TestNewTokenParsesBack(t *testing.T) {
	seen := map[string]bool{}
	for range 100 {
		id, secret, token, err := NewToken()
		if err != nil {
			t.Fatal(err)
		}
		gid, gsecret, err := ParseToken(token)
		if err != nil || gid != id || gsecret != secret {
			t.Fatalf("%q: %q %q %v, want %q %q", token, gid, gsecret, err, id, secret)
		}
		if seen[id] || seen[secret] {
			t.Fatalf("%q repeats an id or a secret", token)
		}
		seen[id], seen[secret] = true, true
	}
}

func TestParseTokenRefusesWhatNewTokenDoesNotMake(t *testing.T) {
	_, _, good, _ := NewToken()
	for _, bad := range []string{
		"", "rdk_", good[:len(good)-1], good + "A", strings.Replace(good, "rdk_", "rdx_", 1),
		good[:4] + "0123456789ABCDEF" + good[20:], // upper-case hex
		good[:20] + "-" + good[21:],               // not "_" after the id
		good[:21] + "+" + good[22:],               // not base64url
		good[:21] + "\x00" + good[22:],
		good[:len(good)-1] + "B", // 32 bytes end in 4 bits: B's low bits are set, which strict decoding refuses
		"Bearer " + good,
		strings.Repeat("a", 1<<20),
	} {
		if id, secret, err := ParseToken(bad); err != ErrMalformed {
			t.Errorf("%.80q: %q %q %v, want ErrMalformed", bad, id, secret, err)
		}
	}
}

// FuzzParseToken: any input either parses into an id and a secret that
// make the same token again, or is ErrMalformed; never a panic.
func FuzzParseToken(f *testing.F) {
	_, _, good, _ := NewToken()
	f.Add(good)
	f.Add("rdk_0123456789abcdef_" + strings.Repeat("A", 43))
	f.Add("")
	f.Add("Bearer rdk_")
	f.Fuzz(func(t *testing.T, s string) {
		id, secret, err := ParseToken(s)
		if err != nil {
			if err != ErrMalformed || id != "" || secret != "" {
				t.Fatalf("%q: %q %q %v", s, id, secret, err)
			}
			return
		}
		if TokenPrefix+id+"_"+secret != s || len(id) != 16 || len(secret) != 43 {
			t.Fatalf("%q parsed into %q and %q", s, id, secret)
		}
	})
}
