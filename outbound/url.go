package outbound

import (
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
)

// CheckURL reports why raw is not a URL redrive may send a secret to (a
// provider's API key, a webhook's token, the admin credentials): it must
// be an absolute https:// URL, or http:// to a loopback host (127.0.0.0/8,
// ::1, localhost), where nothing crosses a network. The error names no
// part of raw but its scheme and host (the URL may embed a token).
func CheckURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.Opaque != "" {
		return errors.New("want an absolute https:// URL")
	}
	switch strings.ToLower(u.Scheme) {
	case "https":
		return nil
	case "http":
		if Loopback(u.Hostname()) {
			return nil
		}
		return fmt.Errorf("http://%s is not a loopback host: want https:// (http:// only for 127.0.0.0/8, ::1 or localhost)", u.Hostname())
	}
	return fmt.Errorf("scheme %q: want https:// (http:// only for 127.0.0.0/8, ::1 or localhost)", u.Scheme)
}

// Loopback reports whether host (a URL's host name, without port or
// brackets) names this machine: localhost, ::1, or an IPv4 address in
// 127.0.0.0/8 written as four decimal numbers. Any other spelling is not
// loopback (the check fails closed).
func Loopback(host string) bool {
	if strings.EqualFold(host, "localhost") || host == "::1" {
		return true
	}
	parts := strings.Split(host, ".")
	if len(parts) != 4 || parts[0] != "127" {
		return false
	}
	for _, p := range parts[1:] {
		n, err := strconv.ParseUint(p, 10, 8)
		if err != nil || len(p) > 3 || (len(p) > 1 && p[0] == '0') || n > 255 {
			return false
		}
	}
	return true
}
