package handlers

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/redrive/redrive/access"
	"github.com/redrive/redrive/dlq"
)

// keyCreateRequest is POST /admin/keys's body.
type keyCreateRequest struct {
	Name string `json:"name"`
	Role string `json:"role"`
	// Pipelines limits the key to these pipelines (absent or null: every pipeline).
	Pipelines []string `json:"pipelines"`
	// ExpiresAt is when the key stops working (Unix ms; absent or null: never).
	ExpiresAt *int64 `json:"expires_at"`
}

// createdKeyData answers POST /admin/keys: the key and its token, shown
// this once.
type createdKeyData struct {
	access.Key
	Token string `json:"token"`
}

// AuditOutcome: a key created.
func (createdKeyData) AuditOutcome() string { return dlq.OutcomeOK }

// AuditCounts names the key and its role, never its token.
func (k createdKeyData) AuditCounts() any {
	return map[string]any{"id": k.ID, "name": k.Name, "role": k.Role, "pipelines": k.Pipelines}
}

// revokedKeyData answers POST /admin/keys/{id}/revoke.
type revokedKeyData struct{ access.Key }

// AuditOutcome: a key revoked.
func (revokedKeyData) AuditOutcome() string { return dlq.OutcomeOK }

// AuditCounts names the key.
func (k revokedKeyData) AuditCounts() any { return map[string]any{"id": k.ID, "name": k.Name} }

// keyCreate creates a named API key (POST /admin/keys, audited as
// key_create): 201 with its token, which is never shown again.
func (a *API) keyCreate(w http.ResponseWriter, r *http.Request) error {
	keys := a.keys()
	var body keyCreateRequest
	if err := decodeJSON(w, r, &body); err != nil {
		return err
	}
	if err := checkPipelines(a.databases().Pipelines(), body.Pipelines); err != nil {
		return err
	}
	by := principalOf(r).Name
	spec := access.KeySpec{Name: body.Name, Role: access.Role(body.Role), Pipelines: body.Pipelines, ExpiresAt: body.ExpiresAt}
	start := dlq.AuditStart{Action: dlq.ActionKeyCreate, Requester: a.requester(r)}
	res, err := a.auditLog().Run(r.Context(), start, dlq.AuditAround, func(ctx context.Context) (dlq.Audited, error) {
		key, token, err := keys.Create(ctx, spec, by)
		if err != nil {
			return nil, keyError(err)
		}
		return createdKeyData{Key: key, Token: token}, nil
	})
	if err != nil {
		return err
	}
	respond(w, r, http.StatusCreated, res)
	return nil
}

// keyList lists the named API keys, newest first (GET /admin/keys).
func (a *API) keyList(w http.ResponseWriter, r *http.Request) error {
	keys := a.keys()
	list, err := keys.List(r.Context())
	if err != nil {
		return err
	}
	respond(w, r, http.StatusOK, map[string]any{"keys": list})
	return nil
}

// keyRevoke revokes a named API key (POST /admin/keys/{id}/revoke,
// audited as key_revoke). It acts at once in this isolate and within
// access.DefaultCacheFor in the others.
func (a *API) keyRevoke(w http.ResponseWriter, r *http.Request) error {
	keys := a.keys()
	if err := decodeEmptyBody(w, r); err != nil {
		return err
	}
	id, by := r.PathValue("id"), principalOf(r).Name
	start := dlq.AuditStart{Action: dlq.ActionKeyRevoke, Requester: a.requester(r)}
	res, err := a.auditLog().Run(r.Context(), start, dlq.AuditAround, func(ctx context.Context) (dlq.Audited, error) {
		key, err := keys.Revoke(ctx, id, by)
		if err != nil {
			return nil, keyError(err)
		}
		return revokedKeyData{Key: key}, nil
	})
	if err != nil {
		return err
	}
	respond(w, r, http.StatusOK, res)
	return nil
}

// An isolate reads at most keyReadsPerSecond rows of keys it does not
// hold (after a burst of keyReadBurst): each distinct key is read once per
// access.DefaultCacheFor, so that is 300 keys in use per isolate, and a
// flood of made-up keys costs at most that many D1 reads a second.
const (
	keyReadBurst      = 50
	keyReadsPerSecond = 10
)

// keys returns the API's named keys (api_keys in DB), made on first use:
// one per isolate, whose cache every request shares.
func (a *API) keys() *access.Keys {
	a.keysOnce.Do(func() {
		limit := newRateLimit(keyReadBurst, keyReadsPerSecond)
		a.keyStore = &access.Keys{DB: a.DB, Now: a.Clock, Admit: func(now time.Time) bool {
			_, ok := limit.take(now)
			return ok
		}}
	})
	return a.keyStore
}

// keyError is err as the API answers it: an *access.Error's status and
// code, anything else as it is.
func keyError(err error) error {
	if e, ok := accessError(err); ok {
		return e
	}
	return err
}

// accessError is an *access.Error as an *APIError.
func accessError(err error) (*APIError, bool) {
	var e *access.Error
	if !errors.As(err, &e) {
		return nil, false
	}
	return &APIError{Status: e.Status, Code: e.Code, Message: e.Message}, true
}
