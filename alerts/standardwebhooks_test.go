package alerts

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"strings"
	"testing"
	"time"
)

// The test vector of the Standard Webhooks reference libraries
// (github.com/standard-webhooks/standard-webhooks, libraries/*): a secret,
// a message, and the signature they publish for it.
const (
	vectorSecret    = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	vectorID        = "msg_p5jXN8AQM9LWM0D4loKWxJek"
	vectorTimestamp = int64(1614265330)
	vectorPayload   = `{"test": 2432232314}`
	vectorSignature = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
)

var vectorTime = time.Unix(vectorTimestamp, 0)

func TestSignStandardWebhookMatchesTheSpecificationsVector(t *testing.T) {
	got, err := SignStandardWebhook(vectorSecret, vectorID, vectorTimestamp, []byte(vectorPayload))
	if err != nil {
		t.Fatal(err)
	}
	if got != vectorSignature {
		t.Fatalf("signature %s, the reference libraries publish %s", got, vectorSignature)
	}
}

func TestVerifyStandardWebhookAcceptsTheSpecificationsVector(t *testing.T) {
	err := VerifyStandardWebhook(vectorSecret, vectorID, "1614265330", vectorSignature, []byte(vectorPayload), vectorTime, 5*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
}

// newWebhookSecret is a fresh "whsec_" secret of n random bytes.
func newWebhookSecret(t *testing.T, n int) string {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return "whsec_" + base64.StdEncoding.EncodeToString(b)
}

// webhookMessage is a received message's parts, for VerifyStandardWebhook.
type webhookMessage struct {
	secret, id, ts, sigs string
	body                 []byte
	now                  time.Time
}

func TestVerifyStandardWebhookRefuses(t *testing.T) {
	other := newWebhookSecret(t, 32)
	otherSig, err := SignStandardWebhook(other, vectorID, vectorTimestamp, []byte(vectorPayload))
	if err != nil {
		t.Fatal(err)
	}
	sigOnly := strings.TrimPrefix(vectorSignature, "v1,")
	cases := []struct {
		name   string
		change func(m *webhookMessage)
		want   error
	}{
		{"tampered body", func(m *webhookMessage) { m.body = []byte(`{"test": 2432232315}`) }, ErrWebhookSignature},
		{"body with a space more", func(m *webhookMessage) { m.body = []byte(`{"test":  2432232314}`) }, ErrWebhookSignature},
		{"empty body", func(m *webhookMessage) { m.body = nil }, ErrWebhookSignature},
		{"another id", func(m *webhookMessage) { m.id = "msg_p5jXN8AQM9LWM0D4loKWxJeK" }, ErrWebhookSignature},
		{"another timestamp", func(m *webhookMessage) { m.ts = "1614265331" }, ErrWebhookSignature},
		{"wrong secret", func(m *webhookMessage) { m.secret = other }, ErrWebhookSignature},
		{"signed under another secret", func(m *webhookMessage) { m.sigs = otherSig }, ErrWebhookSignature},
		{"version v1a", func(m *webhookMessage) { m.sigs = "v1a," + sigOnly }, ErrWebhookSignature},
		{"version v2", func(m *webhookMessage) { m.sigs = "v2," + sigOnly }, ErrWebhookSignature},
		{"no version", func(m *webhookMessage) { m.sigs = sigOnly }, ErrWebhookSignature},
		{"signature cut short", func(m *webhookMessage) { m.sigs = vectorSignature[:len(vectorSignature)-1] }, ErrWebhookSignature},
		{"signature of a signature", func(m *webhookMessage) { m.sigs = "v1," + vectorSignature }, ErrWebhookSignature},
		{"secret without whsec_", func(m *webhookMessage) { m.secret = strings.TrimPrefix(vectorSecret, "whsec_") }, ErrWebhookSecret},
		{"secret with another prefix", func(m *webhookMessage) { m.secret = "whsk_" + strings.TrimPrefix(vectorSecret, "whsec_") }, ErrWebhookSecret},
		{"secret not base64", func(m *webhookMessage) { m.secret = "whsec_not*base64" }, ErrWebhookSecret},
		{"secret too short", func(m *webhookMessage) { m.secret = newWebhookSecret(t, 23) }, ErrWebhookSecret},
		{"secret too long", func(m *webhookMessage) { m.secret = newWebhookSecret(t, 65) }, ErrWebhookSecret},
		{"no signature", func(m *webhookMessage) { m.sigs = "" }, ErrWebhookHeaders},
		{"no id", func(m *webhookMessage) { m.id = "" }, ErrWebhookHeaders},
		{"id with a dot", func(m *webhookMessage) { m.id = "msg.1" }, ErrWebhookHeaders},
		{"no timestamp", func(m *webhookMessage) { m.ts = "" }, ErrWebhookHeaders},
		{"timestamp not a number", func(m *webhookMessage) { m.ts = "soon" }, ErrWebhookHeaders},
		{"timestamp with a sign", func(m *webhookMessage) { m.ts = "+1614265330" }, ErrWebhookHeaders},
		{"timestamp in milliseconds", func(m *webhookMessage) { m.ts = "1614265330000" }, ErrWebhookTimestamp},
		{"expired", func(m *webhookMessage) { m.now = vectorTime.Add(5*time.Minute + time.Second) }, ErrWebhookTimestamp},
		{"from the future", func(m *webhookMessage) { m.now = vectorTime.Add(-5*time.Minute - time.Second) }, ErrWebhookTimestamp},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := webhookMessage{vectorSecret, vectorID, "1614265330", vectorSignature, []byte(vectorPayload), vectorTime}
			c.change(&m)
			err := VerifyStandardWebhook(m.secret, m.id, m.ts, m.sigs, m.body, m.now, 5*time.Minute)
			if !errors.Is(err, c.want) {
				t.Fatalf("error %v, want %v", err, c.want)
			}
			if key := strings.TrimPrefix(m.secret, "whsec_"); strings.Contains(err.Error(), key) {
				t.Fatalf("the error quotes the secret: %v", err)
			}
		})
	}
}

// At the edges of the tolerance the message passes: 5 minutes either side.
func TestVerifyStandardWebhookToleranceIsInclusive(t *testing.T) {
	for _, now := range []time.Time{vectorTime.Add(5 * time.Minute), vectorTime.Add(-5 * time.Minute)} {
		if err := VerifyStandardWebhook(vectorSecret, vectorID, "1614265330", vectorSignature, []byte(vectorPayload), now, 5*time.Minute); err != nil {
			t.Fatalf("at %s: %v", now.Sub(vectorTime), err)
		}
	}
}

// During a secret rotation the sender signs with both secrets: the header
// holds several signatures, and one that matches is enough, wherever it is.
func TestVerifyStandardWebhookAcceptsAnyOfSeveralSignatures(t *testing.T) {
	body := []byte(vectorPayload)
	old := newWebhookSecret(t, 32)
	oldSig, err := SignStandardWebhook(old, vectorID, vectorTimestamp, body)
	if err != nil {
		t.Fatal(err)
	}
	headers := []string{
		oldSig + " " + vectorSignature,
		vectorSignature + " " + oldSig,
		"v1a,hnO3f9T8Ytu9HwrXslvumlUpqtNVqkhqw/enGzPCXe5BdqzCInXqYXFymVJaA7AZdpXwVLPo3mNl8EM+m7TBAg== " + vectorSignature,
		"garbage " + oldSig + "  " + vectorSignature,
	}
	for _, h := range headers {
		if err := VerifyStandardWebhook(vectorSecret, vectorID, "1614265330", h, body, vectorTime, time.Minute); err != nil {
			t.Errorf("%q: %v", h, err)
		}
		err := VerifyStandardWebhook(old, vectorID, "1614265330", h, body, vectorTime, time.Minute)
		if strings.Contains(h, oldSig) != (err == nil) {
			t.Errorf("%q under the old secret: %v", h, err)
		}
	}
	third := newWebhookSecret(t, 32)
	if err := VerifyStandardWebhook(third, vectorID, "1614265330", headers[0], body, vectorTime, time.Minute); !errors.Is(err, ErrWebhookSignature) {
		t.Fatalf("a third secret: %v", err)
	}
}

// What SignStandardWebhook writes, VerifyStandardWebhook accepts, for
// keys of every allowed length and bodies of any bytes.
func TestSignedWebhooksVerify(t *testing.T) {
	for _, n := range []int{24, 32, 64} {
		secret := newWebhookSecret(t, n)
		body := []byte("{\"a\":\"\x00\xff.é\"}")
		sig, err := SignStandardWebhook(secret, "evt_1", 1700000000, body)
		if err != nil {
			t.Fatalf("%d bytes: %v", n, err)
		}
		if err := VerifyStandardWebhook(secret, "evt_1", "1700000000", sig, body, time.Unix(1700000000, 0), time.Second); err != nil {
			t.Fatalf("%d bytes: %v", n, err)
		}
	}
	if _, err := SignStandardWebhook(vectorSecret, "a.b", 1, nil); !errors.Is(err, ErrWebhookHeaders) {
		t.Fatalf("an id with a dot: %v", err)
	}
}
