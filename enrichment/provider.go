package enrichment

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
)

// ChatProvider calls an OpenAI-compatible chat-completions API.
type ChatProvider struct {
	URL    string
	Model  string
	APIKey string
	Client *http.Client
}

// LookupABV asks the model for the ABV; nil means unknown.
func (p ChatProvider) LookupABV(ctx context.Context, b Beer) (*float64, error) {
	reqBody, _ := json.Marshal(map[string]any{
		"model": p.Model,
		"messages": []map[string]string{
			{"role": "system", "content": "Answer with the beer's ABV as a single number, or the word unknown."},
			{"role": "user", "content": fmt.Sprintf("ABV of %q by %q?", b.BeerName, b.Brewer)},
		},
	})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.URL, bytes.NewReader(reqBody))
	if err != nil {
		return nil, fmt.Errorf("provider request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+p.APIKey)
	resp, err := p.Client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("provider call: %w", err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode/100 != 2 {
		return nil, fmt.Errorf("provider status %d: %.200s", resp.StatusCode, data)
	}
	var out struct {
		Choices []struct {
			Message struct {
				Content string `json:"content"`
			} `json:"message"`
		} `json:"choices"`
	}
	if err := json.Unmarshal(data, &out); err != nil || len(out.Choices) == 0 {
		return nil, fmt.Errorf("provider response unparseable")
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(out.Choices[0].Message.Content), 64)
	if err != nil {
		return nil, nil
	}
	return &v, nil
}
