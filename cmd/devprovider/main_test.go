package main

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/redrive/redrive/internal/fakeprovider"
)

// Each keyword in a beer's name selects its answer; any other beer is 5.0.
func TestKeywordsSelectTheAnswer(t *testing.T) {
	p, err := fakeprovider.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for _, k := range keywords {
		if !k.b.Hang {
			p.On(k.word, k.b)
		}
	}
	ask := func(name string) (int, string) {
		body := `{"model":"m","messages":[{"role":"user","content":"ABV of ` + name + `?"}]}`
		resp, err := http.Post(p.URL, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var r struct {
			Choices []struct {
				Message struct{ Content string } `json:"message"`
			} `json:"choices"`
		}
		json.NewDecoder(resp.Body).Decode(&r)
		if len(r.Choices) == 0 {
			return resp.StatusCode, ""
		}
		return resp.StatusCode, r.Choices[0].Message.Content
	}
	if status, content := ask("Hop Stoopid"); status != 200 || content != "5.0" {
		t.Fatalf("plain beer: %d %q", status, content)
	}
	for _, c := range []struct {
		name    string
		status  int
		content string
	}{
		{"Hop Stoopid [fail-500]", 500, ""}, {"X [fail-400]", 400, ""}, {"X [fail-401]", 401, ""},
		{"X [rate-limit]", 429, ""}, {"X [unknown]", 200, "unknown"},
	} {
		if status, content := ask(c.name); status != c.status || content != c.content {
			t.Errorf("%s: %d %q, want %d %q", c.name, status, content, c.status, c.content)
		}
	}
}
