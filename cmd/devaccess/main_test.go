package main

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/redrive/redrive/access/cfaccess"
	"github.com/redrive/redrive/outbound"
)

func post(t *testing.T, url, body string) (int, map[string]string) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]string
	json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

// A token from POST /token is accepted by a Verifier that knows the
// stand-in only by its URL; after POST /rotate a new token is accepted
// and the old one is refused.
func TestATokenOfTheStandInVerifies(t *testing.T) {
	s, err := start("127.0.0.1:0", "", "redrive-dev")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	v := &cfaccess.Verifier{TeamDomain: s.URL, Audience: "redrive-dev", Doer: outbound.HTTPDoer{}, RefetchEvery: 1}
	status, out := post(t, s.URL+"/token", `{"email":"ana@example.com","groups":["ops"],"ttl_seconds":600}`)
	if status != 200 || out["token"] == "" {
		t.Fatalf("POST /token: %d %v", status, out)
	}
	id, err := v.Verify(context.Background(), out["token"])
	if err != nil {
		t.Fatal(err)
	}
	if id.Email != "ana@example.com" || len(id.Groups) != 1 || id.Groups[0] != "ops" {
		t.Fatalf("identity %+v", id)
	}
	if status, kid := post(t, s.URL+"/rotate", ""); status != 200 || kid["kid"] == "" {
		t.Fatalf("POST /rotate: %d %v", status, kid)
	}
	_, fresh := post(t, s.URL+"/token", `{"email":"ana@example.com"}`)
	if _, err := v.Verify(context.Background(), fresh["token"]); err != nil {
		t.Fatalf("token of the new key: %v", err)
	}
	if _, err := v.Verify(context.Background(), out["token"]); err == nil || !strings.Contains(err.Error(), cfaccess.CodeInvalid) {
		t.Fatalf("token of the rotated-out key: %v", err)
	}
}

func TestTheStandInRefuses(t *testing.T) {
	if _, err := start("0.0.0.0:0", "", "a"); err == nil {
		t.Error("listened on every interface")
	}
	s, err := start("127.0.0.1:0", "https://team.cloudflareaccess.com", "a")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.issuer.Team != "https://team.cloudflareaccess.com" {
		t.Errorf("team %q", s.issuer.Team)
	}
	for _, body := range []string{`{}`, `{"email":"a@b.c","ttl_seconds":-1}`, `{"email":"a@b.c","ttl_seconds":86401}`, `{"email":"a@b.c","x":1}`, `nope`} {
		if status, _ := post(t, s.URL+"/token", body); status != 400 {
			t.Errorf("%s: %d, want 400", body, status)
		}
	}
	resp, err := http.Get(s.URL + "/cdn-cgi/access/certs")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var set struct {
		Keys []map[string]string `json:"keys"`
	}
	if json.NewDecoder(resp.Body).Decode(&set); resp.StatusCode != 200 || len(set.Keys) != 1 || set.Keys[0]["kty"] != "RSA" {
		t.Fatalf("GET certs: %d %v", resp.StatusCode, set)
	}
}
