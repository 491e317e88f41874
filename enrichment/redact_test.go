package enrichment

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/internal/text"
	"github.com/redrive/redrive/outbound"
)

// echoedKey is a provider key of 55 bytes, the length of the review's test.
const echoedKey = "pplx-0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMN"

// keyPiece returns the first piece of key at least n bytes long found in s
// ("" when none).
func keyPiece(s, key string, n int) string {
	for i := 0; i+n <= len(key); i++ {
		if strings.Contains(s, key[i:i+n]) {
			return key[i : i+n]
		}
	}
	return ""
}

// errorEchoing is a provider error body whose message has the key at byte
// offset off.
func errorEchoing(key string, off int) string {
	b, _ := json.Marshal(map[string]any{"error": map[string]string{
		"message": strings.Repeat("x", off) + key + " is not a valid key for this model"}})
	return string(b)
}

// A provider that echoes the key anywhere in its error text, and in
// particular across the 200-byte cut of the reason, leaves no piece of it
// (8 bytes or more) in the attempt record, beers.last_error, the DLQ row's
// failure_reason and history, or the log.
func TestConsumerRedactsTheKeyEchoedAtEveryOffset(t *testing.T) {
	for off := 200 - len(echoedKey) - 4; off <= 204; off++ {
		t.Run(fmt.Sprint(off), func(t *testing.T) {
			f := newFixture(t)
			f.c.Provider.APIKey = echoedKey
			var logs strings.Builder
			f.c.Log = slog.New(slog.NewJSONHandler(&logs, nil))
			f.provider.status(500, errorEchoing(echoedKey, off))
			f.consume(t, msg("mk", "bk", "Lager", 2))
			a, ok := f.attempt(t, "mk")
			if !ok || !strings.HasPrefix(a.Error, "status 500: xxx") {
				t.Fatalf("attempt record %+v %v", a, ok)
			}
			s := f.beer(t, "bk")
			if s.LastError == nil {
				t.Fatal("no last_error")
			}
			// The last attempt stores the DLQ row, with both calls in its history.
			f.consume(t, msg("mk", "bk", "Lager", 4))
			var reason, history string
			if err := f.db.QueryRow(`SELECT failure_reason, history FROM dlq_messages WHERE message_id = 'mk'`).Scan(&reason, &history); err != nil {
				t.Fatal(err)
			}
			final := f.beer(t, "bk")
			for what, got := range map[string]string{"attempt": a.Error, "last_error": *s.LastError, "final last_error": *final.LastError,
				"failure_reason": reason, "history": history, "log": logs.String()} {
				if p := keyPiece(got, echoedKey, 8); p != "" {
					t.Errorf("%s keeps %q of the key: %s", what, p, got)
				}
			}
			if !strings.Contains(reason, "status 500: xxx") {
				t.Errorf("failure_reason %q lost the provider's text", reason)
			}
		})
	}
}

// The catch-up's key probe logs the provider's reason: redacted the same way.
func TestKeyProbeRedactsTheKeyEchoedAcrossTheCut(t *testing.T) {
	for _, off := range []int{200 - len(echoedKey) + 1, 180, 199} {
		f, c, _ := keyProbeFixture(t)
		var logs strings.Builder
		c.Log = slog.New(slog.NewJSONHandler(&logs, nil))
		c.KeyProbe.Provider.APIKey = echoedKey
		f.provider.status(http.StatusUnauthorized, errorEchoing(echoedKey, off))
		recordRun(t, f.db, catchUpNow.Add(-5*time.Minute), map[string]any{"up_since": catchUpNow.Add(-2 * time.Hour).UnixMilli()}, nil)
		f.now = time.UnixMilli(breakerOf(t, f).OpenUntil).Add(time.Second)
		if _, err := c.Run(context.Background(), f.now); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(logs.String(), "key probe failed") {
			t.Fatalf("offset %d: no probe logged: %s", off, logs.String())
		}
		if p := keyPiece(logs.String(), echoedKey, 8); p != "" {
			t.Errorf("offset %d: the log keeps %q of the key: %s", off, p, logs.String())
		}
	}
}

// realisticKey reports whether key is shaped like a provider's API key:
// 16 to 256 bytes of printable ASCII without spaces. (A key made of
// redrive's own words, "permanent: status", would be "found" in text
// redrive writes itself.)
func realisticKey(key string) bool {
	if len(key) < 16 || len(key) > 256 {
		return false
	}
	for i := 0; i < len(key); i++ {
		if key[i] <= ' ' || key[i] > '~' {
			return false
		}
	}
	return true
}

// No piece of the configured key of 8 bytes or more survives in a reason
// built from anything a provider can send, whatever the status, nor in the
// forms it is stored and logged in (class prefix; cut to the attempt
// history's 200, message_attempts' 500 and failure_reason's 1,000 bytes).
func FuzzClassifyRedactsTheKey(f *testing.F) {
	key := echoedKey
	for _, off := range []int{0, 150, 180, 199, 200, 250} {
		f.Add(errorEchoing(key, off), key, 500)
	}
	f.Add(`{"error":"`+key[:30]+`\n`+key[30:]+`"}`, key, 401)
	f.Add(strings.Repeat(" ", 300)+key, key, 429)
	f.Add(`{"message":"`+strings.Repeat(key, 5)+`"}`, key, 400)
	f.Add(`{"choices":[{"message":{"content":"`+key+`"}}]}`, key, 200)
	f.Add(`<html>`+strings.Repeat("é", 90)+key[:20]+`</html>`, key, 302)
	f.Fuzz(func(t *testing.T, body, key string, status int) {
		if !realisticKey(key) || status < 100 || status > 599 {
			return
		}
		now := time.Date(2030, 6, 1, 10, 0, 0, 0, time.UTC)
		resp := outbound.Response{Status: status, Header: map[string]string{"retry-after": "7"}, Body: []byte(body)}
		for _, v := range []Verdict{Classify(resp, nil, now, key), Classify(outbound.Response{}, errors.New(body), now, key),
			Classify(outbound.Response{}, fmt.Errorf("%w: %s", outbound.ErrTimeout, body), now, key)} {
			for _, stored := range []string{v.Reason, string(v.Outcome) + ": " + v.Reason,
				text.Clip(v.Reason, 200), text.Clip("transient: "+v.Reason, 500), text.Clip("permanent: "+v.Reason, 1000)} {
				if p := keyPiece(stored, key, text.SecretRun); p != "" {
					t.Fatalf("status %d: %q keeps %q of the key", status, stored, p)
				}
			}
		}
	})
}

// A provider that redirects is not followed (the bearer key would go with
// the request): the 3xx is a permanent failure that names where it
// pointed, and the target sees no request.
func TestConsumerFollowsNoProviderRedirect(t *testing.T) {
	f := newFixture(t)
	var elsewhere int
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { elsewhere++ }))
	defer other.Close()
	f.provider.set(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+"/v2/chat?token=abc", http.StatusTemporaryRedirect)
	})
	m := msg("mr", "br", "Lager", 1)
	f.consume(t, m)
	if elsewhere != 0 {
		t.Fatalf("the redirect's target got %d requests", elsewhere)
	}
	var reason string
	if err := f.db.QueryRow(`SELECT failure_reason FROM dlq_messages WHERE message_id = 'mr'`).Scan(&reason); err != nil || !m.Acked {
		t.Fatalf("dlq row: %v, acked %v", err, m.Acked)
	}
	host := strings.TrimPrefix(other.URL, "http://")
	if !strings.HasPrefix(reason, "permanent: status 307: redirect to http://"+host+" not followed") || strings.Contains(reason, "token=abc") {
		t.Fatalf("failure_reason %q", reason)
	}
}
