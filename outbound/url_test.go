package outbound

import (
	"strings"
	"testing"
)

func TestCheckURL(t *testing.T) {
	for raw, ok := range map[string]bool{
		"https://api.perplexity.ai/chat/completions": true,
		"HTTPS://example.com":                        true,
		"http://127.0.0.1:8787/chat":                 true,
		"http://127.255.0.9/x":                       true,
		"http://localhost:9/x":                       true,
		"http://LOCALHOST/x":                         true,
		"http://[::1]:8080/x":                        true,
		"http://example.com/x":                       false,
		"http://10.0.0.1/x":                          false,
		"http://128.0.0.1/x":                         false,
		"http://127.0.0.1.example.com/x":             false,
		"http://localhost.example.com/x":             false,
		"http://127.1/x":                             false, // other spellings fail closed
		"http://0177.0.0.1/x":                        false,
		"http://127.0.0.256/x":                       false,
		"http://[::2]/x":                             false,
		"ftp://secret-token@example/x":               false,
		"https:///no-host":                           false,
		"/relative":                                  false,
		"":                                           false,
		"https:opaque":                               false,
		"http://%zz":                                 false,
	} {
		err := CheckURL(raw)
		if (err == nil) != ok {
			t.Errorf("CheckURL(%q) = %v, want ok %v", raw, err, ok)
		}
		if err != nil && strings.Contains(err.Error(), "secret-token") {
			t.Errorf("CheckURL(%q) echoes the URL's user info: %v", raw, err)
		}
	}
}
