package alerts

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// The Standard Webhooks specification's headers
// (https://www.standardwebhooks.com): the message id, the attempt's Unix
// time in seconds, and its signatures.
const (
	HeaderWebhookID        = "webhook-id"
	HeaderWebhookTimestamp = "webhook-timestamp"
	HeaderWebhookSignature = "webhook-signature"
)

const (
	// webhookSecretPrefix starts a symmetric signing secret.
	webhookSecretPrefix = "whsec_"
	// webhookSignatureVersion marks an HMAC-SHA256 signature ("v1,<base64>").
	webhookSignatureVersion = "v1"
	// The specification's bounds on a symmetric key: 24 to 64 bytes.
	minWebhookKeyBytes = 24
	maxWebhookKeyBytes = 64
)

// Why a Standard Webhooks message was refused (VerifyStandardWebhook wraps one).
var (
	// ErrWebhookSecret: the secret is not "whsec_" and 24 to 64 bytes in base64.
	ErrWebhookSecret = errors.New("webhook secret: want whsec_ and 24 to 64 bytes in base64")
	// ErrWebhookHeaders: a header is missing or malformed.
	ErrWebhookHeaders = errors.New("webhook headers missing or malformed")
	// ErrWebhookTimestamp: the timestamp is outside the tolerance.
	ErrWebhookTimestamp = errors.New("webhook timestamp outside the tolerance")
	// ErrWebhookSignature: no v1 signature matches.
	ErrWebhookSignature = errors.New("no matching webhook signature")
)

// webhookKey decodes a "whsec_<base64>" secret into its HMAC key.
func webhookKey(secret string) ([]byte, error) {
	enc, ok := strings.CutPrefix(secret, webhookSecretPrefix)
	if !ok {
		return nil, ErrWebhookSecret
	}
	key, err := base64.StdEncoding.DecodeString(enc)
	if err != nil || len(key) < minWebhookKeyBytes || len(key) > maxWebhookKeyBytes {
		return nil, ErrWebhookSecret
	}
	return key, nil
}

// webhookMAC is the base64 HMAC-SHA256 under key of "id.ts.body".
func webhookMAC(key []byte, id string, ts int64, body []byte) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(id))
	m.Write([]byte("."))
	m.Write([]byte(strconv.FormatInt(ts, 10)))
	m.Write([]byte("."))
	m.Write(body)
	return base64.StdEncoding.EncodeToString(m.Sum(nil))
}

// checkWebhookID refuses an empty id or one with a "." (which would make
// the signed content "id.ts.body" ambiguous, as the specification warns).
func checkWebhookID(id string) error {
	if id == "" || strings.Contains(id, ".") {
		return fmt.Errorf("%w: id %q", ErrWebhookHeaders, id)
	}
	return nil
}

// SignStandardWebhook is the webhook-signature header of a message with
// id, sent at ts (Unix seconds) with body, under secret ("whsec_" and the
// key in base64): "v1," and the base64 HMAC-SHA256 of "id.ts.body".
func SignStandardWebhook(secret, id string, ts int64, body []byte) (string, error) {
	key, err := webhookKey(secret)
	if err != nil {
		return "", err
	}
	if err := checkWebhookID(id); err != nil {
		return "", err
	}
	return webhookSignatureVersion + "," + webhookMAC(key, id, ts, body), nil
}

// VerifyStandardWebhook checks a received message: id, ts and sigs are its
// webhook-id, webhook-timestamp and webhook-signature headers. It fails
// unless ts is within tolerance of now (either side) and one of the
// space-separated signatures is a v1 signature of "id.ts.body" under
// secret (compared in constant time); signatures of other versions (v1a)
// are skipped. The error wraps ErrWebhookSecret, ErrWebhookHeaders,
// ErrWebhookTimestamp or ErrWebhookSignature.
func VerifyStandardWebhook(secret, id, ts, sigs string, body []byte, now time.Time, tolerance time.Duration) error {
	key, err := webhookKey(secret)
	if err != nil {
		return err
	}
	if err := checkWebhookID(id); err != nil {
		return err
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || strconv.FormatInt(sec, 10) != ts || sigs == "" {
		return fmt.Errorf("%w: timestamp %q or no signature", ErrWebhookHeaders, ts)
	}
	if d := now.Sub(time.Unix(sec, 0)); d > tolerance || d < -tolerance {
		return fmt.Errorf("%w: %d is %s from now (tolerance %s)", ErrWebhookTimestamp, sec, d.Round(time.Second), tolerance)
	}
	want := []byte(webhookMAC(key, id, sec, body))
	for _, s := range strings.Fields(sigs) {
		version, sig, ok := strings.Cut(s, ",")
		if ok && version == webhookSignatureVersion && hmac.Equal([]byte(sig), want) {
			return nil
		}
	}
	return ErrWebhookSignature
}
