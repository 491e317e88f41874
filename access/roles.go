package access

import (
	"fmt"
	"slices"
	"strings"
)

// Role is a named set of permissions a key is given.
type Role string

const (
	// Viewer looks: lists, counts, stats, groups, tasks and the audit log,
	// without message bodies.
	Viewer Role = "viewer"
	// Operator is a viewer who also reads bodies, replays, acknowledges,
	// replays edited bodies and runs replay tasks.
	Operator Role = "operator"
	// Admin may do everything a route offers: also move rows between
	// databases, enrich, reset the breaker and manage keys.
	Admin Role = "admin"
	// Reporter only reports failed attempts (POST /admin/attempts), like
	// REPORT_TOKEN.
	Reporter Role = "reporter"
)

// Roles lists every role, from least to most.
var Roles = []Role{Reporter, Viewer, Operator, Admin}

var rolePermissions = map[Role][]Permission{
	Reporter: {Self, Report},
	Viewer:   {Public, Self, Read},
	Operator: {Public, Self, Read, ReadBody, Replay, Acknowledge, Edit, Tasks},
	Admin:    {Public, Self, Read, ReadBody, Replay, Acknowledge, Edit, Tasks, Move, Enrich, Breaker, ManageKeys, Report},
}

// Can reports whether r holds p. No role holds Dev: the development routes
// answer the operator's pair of secrets only.
func (r Role) Can(p Permission) bool { return slices.Contains(rolePermissions[r], p) }

// ParseRole returns the role named s, or an error that names the roles.
func ParseRole(s string) (Role, error) {
	if slices.Contains(Roles, Role(s)) {
		return Role(s), nil
	}
	names := make([]string, len(Roles))
	for i, r := range Roles {
		names[i] = string(r)
	}
	return "", fmt.Errorf("role must be one of %s", strings.Join(names, ", "))
}

// Principal is who made a request: its name as the audit log records it
// and the role it acts with.
type Principal struct {
	// Name is "key:<name>" for a named key, "admin" for the pair of
	// secrets, "report-token" for REPORT_TOKEN.
	Name string
	Role Role
	// Pair is true for the operator's pair of secrets (API_KEY with
	// ADMIN_SECRET), which also opens the development routes.
	Pair bool
	// Pipelines limits the principal to these pipelines' rows (nil: every
	// pipeline): see Scoped.
	Pipelines []string
}

// Scoped reports whether p is limited to some pipelines: it sees and acts
// on their rows only, and a route about no pipeline in particular (the
// metrics, the breaker, enrichment, keys, jobs, alerts) refuses it.
func (p Principal) Scoped() bool { return p.Pipelines != nil }

// Can reports whether p may do what perm allows.
func (p Principal) Can(perm Permission) bool { return p.Pair || p.Role.Can(perm) }

// Permissions lists what p may do, in Permissions' order (Public, which
// anyone may, left out): GET /admin/whoami's answer.
func (p Principal) Permissions() []Permission {
	out := []Permission{}
	for _, perm := range Permissions {
		if perm != Public && p.Can(perm) {
			out = append(out, perm)
		}
	}
	return out
}

// PairPrincipal is the principal of the operator's pair of secrets.
var PairPrincipal = Principal{Name: "admin", Role: Admin, Pair: true}

// ReportTokenPrincipal is the principal of REPORT_TOKEN.
var ReportTokenPrincipal = Principal{Name: "report-token", Role: Reporter}
