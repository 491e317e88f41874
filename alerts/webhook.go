package alerts

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/redrive/redrive/outbound"
)

// Webhook posts alert messages (WebhookPayload: Slack-compatible JSON)
// through Doer, bounded by its timeout. It implements Notifier.
type Webhook struct {
	// Doer sends the request (platform.Fetch in the Worker).
	Doer outbound.Doer
	// URL is ALERT_WEBHOOK_URL; it may embed a token and is never logged.
	URL string
	// Timeout aborts the call (ALERT_WEBHOOK_TIMEOUT_SECONDS).
	Timeout time.Duration
}

// Notify posts text and fails unless the response status is 2xx.
func (w Webhook) Notify(ctx context.Context, text string) error {
	resp, err := w.Doer.Do(ctx, outbound.Request{
		Method:  http.MethodPost,
		URL:     w.URL,
		Header:  map[string]string{"content-type": "application/json"},
		Body:    WebhookPayload(text),
		Timeout: w.Timeout,
		// Only the status tells: the body is cancelled unread.
		DiscardBody: true,
	})
	if err != nil {
		return fmt.Errorf("webhook: %w", err)
	}
	if resp.Status < 200 || resp.Status > 299 {
		return fmt.Errorf("webhook: status %d", resp.Status)
	}
	return nil
}
