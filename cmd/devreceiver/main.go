// Command devreceiver is the local stand-in for where alerts go: the
// receiver of internal/receiver on loopback, which `make dev` starts so
// that a newcomer can watch redrive's alert channels deliver without a
// Slack workspace or a PagerDuty account. Point the channels at it:
//
//	webhook    <url>/webhook      signed with -secret (its default is DevSecret)
//	pagerduty  <url>/v2/enqueue   routing key -routing-key
//	slack      <url>/slack
//
//	curl -s <url>/__received                      everything received, as JSON
//	curl -s -X POST <url>/__fault -d '{"status":503}'   every route answers 503 ({"status":0} clears)
//
// It logs one JSON line per received event (never the secret, the routing
// key or a signature).
package main

import (
	"flag"
	"fmt"
	"log"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"

	"github.com/redrive/redrive/internal/receiver"
)

// DevSecret is the Standard Webhooks signing secret of the local run (32
// fixed bytes): the secret of a webhook channel pointed at devreceiver.
// Never use it anywhere else.
const DevSecret = "whsec_CYzaD83a1NsYKOlVMgIB2M4BgXy1WMdx1cB6AcTNPPg="

// DevRoutingKey is the PagerDuty routing key of the local run.
const DevRoutingKey = "dev-routing-key"

func main() {
	addr := flag.String("addr", "127.0.0.1:8790", "listen address (loopback)")
	secret := flag.String("secret", DevSecret, "Standard Webhooks signing secret (whsec_ and 24 to 64 bytes in base64) POST /webhook verifies")
	key := flag.String("routing-key", DevRoutingKey, "the routing_key POST /v2/enqueue accepts")
	flag.Parse()
	s, err := start(*addr, receiver.Config{Secret: *secret, RoutingKey: *key, Log: slog.New(slog.NewJSONHandler(os.Stdout, nil))})
	if err != nil {
		log.Fatalf("devreceiver: %v", err)
	}
	fmt.Printf("devreceiver: %s receives alerts: POST %s (Standard Webhooks), POST %s (PagerDuty), POST %s (Slack); GET %s shows them, POST %s {\"status\":503} drills a failure\n",
		s.URL, receiver.WebhookPath, receiver.PagerDutyPath, receiver.SlackPath, receiver.ReceivedPath, receiver.FaultPath)
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, os.Interrupt, syscall.SIGTERM)
	<-stop
	s.Close()
}

// server is a running stand-in.
type server struct {
	URL      string
	Receiver *receiver.Receiver
	srv      *http.Server
}

// start listens on addr, which must be a loopback address ("127.0.0.1:0"
// for a free port), and serves a receiver of cfg.
func start(addr string, cfg receiver.Config) (*server, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("-addr %q: %v", addr, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return nil, fmt.Errorf("-addr %q: listen on a loopback address only (127.0.0.1)", addr)
	}
	r, err := receiver.New(cfg)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	s := &server{URL: "http://" + ln.Addr().String(), Receiver: r, srv: &http.Server{Handler: r}}
	go s.srv.Serve(ln)
	return s, nil
}

// Close stops the server.
func (s *server) Close() error { return s.srv.Close() }
