package handlers

// Permission is what a route lets its caller do, declared once per route
// in the route table (routeTable) and as x-permission on its operation in
// openapi.json; TestEveryRouteDeclaresItsPermission holds the two together.
// Today every credential that passes a route's check holds all of them (the
// API key with the admin secret; REPORT_TOKEN holds PermReport); roles and
// scoped keys grant subsets.
type Permission string

const (
	// PermPublic: anyone (GET /health; its details still need the admin pair).
	PermPublic Permission = "public"
	// PermRead: lists, counts, stats, groups, time series, detail, tasks,
	// audit, alerts, jobs, metrics and configuration, without message
	// bodies (include_raw and a detail's payload also need PermReadBody).
	PermRead Permission = "read"
	// PermReadBody: message bodies, raw and edited, and exports with them.
	PermReadBody Permission = "read_body"
	// PermReplay: replay rows, ad hoc or by filter.
	PermReplay Permission = "replay"
	// PermAcknowledge: acknowledge rows.
	PermAcknowledge Permission = "acknowledge"
	// PermEdit: replay one row with an edited body.
	PermEdit Permission = "edit"
	// PermTasks: create, pause, resume and cancel replay tasks.
	PermTasks Permission = "tasks"
	// PermMove: move a pipeline's rows between databases (import, release).
	PermMove Permission = "move"
	// PermEnrich: register beers for enrichment and enqueue them.
	PermEnrich Permission = "enrich"
	// PermBreaker: reset the provider's circuit breaker.
	PermBreaker Permission = "breaker"
	// PermKeys: create, list and revoke API keys.
	PermKeys Permission = "keys"
	// PermReport: report failed attempts (POST /admin/attempts).
	PermReport Permission = "report"
	// PermDev: the local development routes (/__dev/*), never deployed.
	PermDev Permission = "dev"
)

// Permissions lists every permission, in the order above.
var Permissions = []Permission{PermPublic, PermRead, PermReadBody, PermReplay, PermAcknowledge, PermEdit, PermTasks,
	PermMove, PermEnrich, PermBreaker, PermKeys, PermReport, PermDev}
