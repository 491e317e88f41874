package access

// Permission is what a route lets its caller do, declared once per route
// in the route table (handlers) and as x-permission on its operation in
// openapi.json. A Principal holds the permissions of its Role.
type Permission string

const (
	// Public: anyone (GET /health; its details still need the admin pair).
	Public Permission = "public"
	// Self: who the caller is and what it may do (GET /admin/whoami),
	// held by every role.
	Self Permission = "self"
	// Read: lists, counts, stats, groups, time series, detail, tasks,
	// audit, alerts, jobs, metrics and configuration, without message
	// bodies (include_raw and a detail's payload also need ReadBody).
	Read Permission = "read"
	// ReadBody: message bodies, raw and edited, and exports with them.
	ReadBody Permission = "read_body"
	// Replay: replay rows, ad hoc or by filter.
	Replay Permission = "replay"
	// Acknowledge: acknowledge rows, and change a failure group's incident
	// status (acknowledge, resolve, ignore, snooze).
	Acknowledge Permission = "acknowledge"
	// Edit: replay one row with an edited body.
	Edit Permission = "edit"
	// Tasks: create, pause, resume and cancel replay tasks.
	Tasks Permission = "tasks"
	// Move: move a pipeline's rows between databases (import, release).
	Move Permission = "move"
	// Enrich: register beers for enrichment and enqueue them.
	Enrich Permission = "enrich"
	// Breaker: reset the provider's circuit breaker, and enable an alert
	// channel again after its receiver answered 410.
	Breaker Permission = "breaker"
	// ManageKeys: create, list and revoke API keys.
	ManageKeys Permission = "keys"
	// Report: report failed attempts (POST /admin/attempts).
	Report Permission = "report"
	// Dev: the local development routes (/__dev/*), never deployed.
	Dev Permission = "dev"
)

// Permissions lists every permission, in the order above.
var Permissions = []Permission{Public, Self, Read, ReadBody, Replay, Acknowledge, Edit, Tasks,
	Move, Enrich, Breaker, ManageKeys, Report, Dev}
