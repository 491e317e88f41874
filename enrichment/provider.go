package enrichment

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/redrive/redrive/outbound"
)

// ChatProvider asks an OpenAI-compatible chat-completions API for a beer's ABV.
type ChatProvider struct {
	// URL is the chat-completions endpoint.
	URL string
	// Model is sent as "model".
	Model string
	// APIKey is sent as a bearer token; never logged.
	APIKey string
	// Timeout aborts a call in flight.
	Timeout time.Duration
	// Doer sends the request.
	Doer outbound.Doer
}

// Configured reports whether calls can be made at all; a provider without an
// API key is a configuration error, not a failed lookup.
func (p ChatProvider) Configured() bool { return p.APIKey != "" }

// Source names the provider in the beers table ("llm:<model>").
func (p ChatProvider) Source() string { return "llm:" + p.Model }

// systemPrompt asks for exactly what Classify accepts.
const systemPrompt = "You look up the alcohol by volume (ABV) of beers. " +
	"Answer with the ABV in percent as a single number (for example 5.2) and nothing else, " +
	"or with the single word unknown when you cannot find it."

// Ask sends one chat-completions request for b and returns the provider's
// response (or the transport error) for Classify.
func (p ChatProvider) Ask(ctx context.Context, b Beer) (outbound.Response, error) {
	user := fmt.Sprintf("What is the ABV of the beer %q", b.BeerName)
	if b.Brewer != "" {
		user += fmt.Sprintf(" brewed by %q", b.Brewer)
	}
	body, err := json.Marshal(chatRequest{
		Model: p.Model,
		Messages: []chatMessage{
			{Role: "system", Content: systemPrompt},
			{Role: "user", Content: user + "?"},
		},
		Temperature: 0,
	})
	if err != nil {
		return outbound.Response{}, fmt.Errorf("encode provider request: %w", err)
	}
	return p.Doer.Do(ctx, outbound.Request{
		Method: "POST",
		URL:    p.URL,
		Header: map[string]string{
			"Content-Type":  "application/json",
			"Accept":        "application/json",
			"Authorization": "Bearer " + p.APIKey,
		},
		Body:    body,
		Timeout: p.Timeout,
	})
}

type chatMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

type chatRequest struct {
	Model       string        `json:"model"`
	Messages    []chatMessage `json:"messages"`
	Temperature float64       `json:"temperature"`
}

type chatResponse struct {
	Choices []struct {
		Message struct {
			Content *string `json:"content"`
		} `json:"message"`
	} `json:"choices"`
}
