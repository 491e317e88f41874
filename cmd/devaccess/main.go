// Command devaccess is the local stand-in for Cloudflare Access: a token
// issuer on loopback that publishes its key set where Access does
// (/cdn-cgi/access/certs) and mints tokens on request, so that `make dev`
// and the e2e tests can sign in through Access without a Cloudflare
// account. The worker's team domain (cfaccess.Verifier's TeamDomain) is
// the URL it prints, which is the tokens' iss, and its ACCESS_AUD is -aud.
//
//	curl -s -X POST <url>/token -d '{"email":"ana@example.com","groups":["ops"],"ttl_seconds":3600}'
//	→ {"token":"eyJ..."}: send it as the Cf-Access-Jwt-Assertion header.
//	curl -s -X POST <url>/rotate   new signing key; the old one is unpublished
package main

import (
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"

	"github.com/redrive/redrive/access/cfaccess/cfaccesstest"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8789", "listen address (loopback)")
	team := flag.String("team", "", "the tokens' iss, the team domain the worker is given (default: this server's URL)")
	aud := flag.String("aud", "redrive-dev", "the tokens' aud, the worker's ACCESS_AUD")
	flag.Parse()
	s, err := start(*addr, *team, *aud)
	if err != nil {
		log.Fatalf("devaccess: %v", err)
	}
	fmt.Printf("devaccess: %s issues Access tokens (iss %s, aud %s): POST /token, POST /rotate, GET %s\n",
		s.URL, s.issuer.Team, s.issuer.Audience, cfaccesstest.CertsPath)
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, os.Interrupt, syscall.SIGTERM)
	<-stop
	s.Close()
}

// server is a running stand-in.
type server struct {
	URL    string
	issuer *cfaccesstest.Issuer
	srv    *http.Server
}

// start listens on addr, which must be a loopback address ("127.0.0.1:0"
// for a free port), and serves an issuer for team (its own URL when "")
// and aud.
func start(addr, team, aud string) (*server, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("-addr %q: %v", addr, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return nil, fmt.Errorf("-addr %q: listen on a loopback address only (127.0.0.1)", addr)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	url := "http://" + ln.Addr().String()
	if team == "" {
		team = url
	}
	iss, err := cfaccesstest.NewIssuer(team, aud)
	if err != nil {
		ln.Close()
		return nil, err
	}
	s := &server{URL: url, issuer: iss, srv: &http.Server{Handler: iss.Handler()}}
	go s.srv.Serve(ln)
	return s, nil
}

// Close stops the server.
func (s *server) Close() error { return s.srv.Close() }
