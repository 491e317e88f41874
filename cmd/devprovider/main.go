// Command devprovider is the local stand-in for the enrichment provider that
// `make dev` starts beside the worker (.dev.vars.example points
// ENRICHMENT_API_URL at it): an OpenAI-compatible chat-completions endpoint
// on loopback that answers every beer with an ABV of 5.0, unless the beer's
// name carries one of the keywords below, so a newcomer can watch retries,
// the DLQ and replay without an account anywhere.
package main

import (
	"flag"
	"fmt"
	"log"
	"net/http"
	"os"
	"os/signal"
	"syscall"

	"github.com/redrive/redrive/internal/fakeprovider"
)

// Keywords: a beer whose name contains one gets that answer, every time.
var keywords = []struct {
	word string
	b    fakeprovider.Behavior
	what string
}{
	{"[fail-500]", fakeprovider.Behavior{Status: http.StatusInternalServerError}, "500: transient, retried with backoff, then dead-lettered"},
	{"[fail-400]", fakeprovider.Behavior{Status: http.StatusBadRequest}, "400: permanent, dead-lettered at once"},
	{"[fail-401]", fakeprovider.Behavior{Status: http.StatusUnauthorized}, "401: the key is refused; breaker opens, messages wait"},
	{"[rate-limit]", fakeprovider.Behavior{Status: http.StatusTooManyRequests, RetryAfter: "30"}, "429 with Retry-After: 30"},
	{"[hang]", fakeprovider.Behavior{Hang: true}, "never answers: cut off at ENRICHMENT_TIMEOUT_MS"},
	{"[unknown]", fakeprovider.Behavior{Content: "unknown"}, "answers unknown: the beer becomes not_found"},
}

func main() {
	addr := flag.String("addr", "127.0.0.1:8788", "listen address (loopback)")
	flag.Parse()
	p, err := fakeprovider.Start(*addr)
	if err != nil {
		log.Fatalf("devprovider: %v", err)
	}
	for _, k := range keywords {
		p.On(k.word, k.b)
	}
	fmt.Printf("devprovider: %s answers ABV 5.0; a beer name containing\n", p.URL)
	for _, k := range keywords {
		fmt.Printf("  %-13s %s\n", k.word, k.what)
	}
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, os.Interrupt, syscall.SIGTERM)
	<-stop
	p.Close()
}
