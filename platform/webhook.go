//go:build js && wasm

package platform

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/outbound"
)

// Webhook posts alert messages (dlq.WebhookPayload: Slack-compatible JSON)
// through Fetch, bounded by its timeout. It implements dlq.Notifier.
type Webhook struct {
	// URL is ALERT_WEBHOOK_URL; it may embed a token and is never logged.
	URL string
	// Timeout aborts the call (ALERT_WEBHOOK_TIMEOUT_SECONDS).
	Timeout time.Duration
}

// Notify posts text and fails unless the response status is 2xx.
func (w Webhook) Notify(ctx context.Context, text string) error {
	resp, err := Fetch{}.Do(ctx, outbound.Request{
		Method:  http.MethodPost,
		URL:     w.URL,
		Header:  map[string]string{"content-type": "application/json"},
		Body:    dlq.WebhookPayload(text),
		Timeout: w.Timeout,
	})
	if err != nil {
		return fmt.Errorf("webhook: %w", err)
	}
	if resp.Status < 200 || resp.Status > 299 {
		return fmt.Errorf("webhook: status %d", resp.Status)
	}
	return nil
}
