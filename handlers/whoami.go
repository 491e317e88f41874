package handlers

import (
	"net/http"

	"github.com/redrive/redrive/access"
)

// whoamiData answers GET /admin/whoami: the caller's principal, role,
// pipelines and permissions, for the console's and the CLI's views (each
// shows the actions the caller may take, and says why the others are off).
type whoamiData struct {
	Principal string `json:"principal"`
	Role      string `json:"role"`
	// Pipelines limits the caller to these pipelines (null: every pipeline).
	Pipelines   []string            `json:"pipelines"`
	Permissions []access.Permission `json:"permissions"`
}

// whoami serves GET /admin/whoami (any authenticated caller; no D1 read
// beyond its credential's).
func (a *API) whoami(w http.ResponseWriter, r *http.Request) error {
	p := principalOf(r)
	respond(w, r, http.StatusOK, whoamiData{Principal: p.Name, Role: string(p.Role), Pipelines: p.Pipelines, Permissions: p.Permissions()})
	return nil
}
