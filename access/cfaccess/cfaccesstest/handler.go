package cfaccesstest

import (
	"encoding/json"
	"net/http"
	"time"
)

// MaxTTL is the longest ttl_seconds POST /token accepts.
const MaxTTL = 24 * time.Hour

// TokenRequest is the body of POST /token.
type TokenRequest struct {
	Email  string   `json:"email"`
	Groups []string `json:"groups,omitempty"`
	// TTLSeconds is the token's lifetime (one hour when zero, at most MaxTTL).
	TTLSeconds int64 `json:"ttl_seconds,omitempty"`
}

// Handler serves the issuer over HTTP:
//
//	GET  /cdn-cgi/access/certs  the key set (JWKS)
//	POST /token                 {"email","groups","ttl_seconds"} → {"token"}
//	POST /rotate                a new signing key → {"kid"}
func (i *Issuer) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+CertsPath, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write(i.JWKS())
	})
	mux.HandleFunc("POST /token", i.serveToken)
	mux.HandleFunc("POST /rotate", func(w http.ResponseWriter, r *http.Request) {
		if err := i.Rotate(); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		writeJSON(w, map[string]string{"kid": i.Key().ID})
	})
	return mux
}

func (i *Issuer) serveToken(w http.ResponseWriter, r *http.Request) {
	var req TokenRequest
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 64<<10))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		http.Error(w, "body must be {\"email\",\"groups\",\"ttl_seconds\"}: "+err.Error(), http.StatusBadRequest)
		return
	}
	if req.Email == "" || req.TTLSeconds < 0 || req.TTLSeconds > int64(MaxTTL/time.Second) {
		http.Error(w, "email is required and ttl_seconds must be 0 to 86400", http.StatusBadRequest)
		return
	}
	ttl := time.Duration(req.TTLSeconds) * time.Second
	if ttl == 0 {
		ttl = time.Hour
	}
	tok, err := i.Token(req.Email, req.Groups, ttl)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	writeJSON(w, map[string]string{"token": tok})
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}
