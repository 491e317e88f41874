package handlers

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"path"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redrive/redrive/access"
	"github.com/redrive/redrive/alerts"

	"github.com/google/uuid"

	"github.com/redrive/redrive/clock"
	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/enrichment"
	"github.com/redrive/redrive/internal/text"
	"github.com/redrive/redrive/metrics"
	"github.com/redrive/redrive/queue"
	"github.com/redrive/redrive/sqlbatch"
	"github.com/redrive/redrive/version"
)

// API is the HTTP side of redrive: health, the admin API and (only when
// enabled by DEV_ROUTES, locally and in the e2e tests) the send route.
type API struct {
	// DB is the D1 database (SQLite in native tests).
	DB *sql.DB
	// Batch sends several statements to DB in one round trip, all or
	// nothing (D1's batch()); a transaction on DB when nil (native tests).
	Batch sqlbatch.Runner
	// DBs are the databases of the DLQ rows (DB's and each pipeline's own;
	// dlq.Databases). Empty: DB alone (native tests).
	DBs dlq.Databases
	// Log receives one JSON line per failure, with the request id.
	Log *slog.Logger
	// Auth guards every /admin/* route.
	Auth Auth
	// Access, when set, signs in the requests that came through Cloudflare
	// Access (ACCESS_TEAM_DOMAIN, ACCESS_AUD, ACCESS_ROLES).
	Access *AccessSignIn
	// failedSignIns limits the failed sign-ins of each client (signIn).
	failedSignIns signIns
	// keyStore holds the named API keys (keys: made once, on first use).
	keysOnce sync.Once
	keyStore *access.Keys
	// Version is reported by /health.
	Version string
	// Running is the running worker's version (id, tag, timestamp, build),
	// reported by the stats as current_version.
	Running version.Info
	// Now is the clock; time.Now when nil.
	Clock clock.Clock
	// Sender sends replayed DLQ messages back to their source queues.
	Sender queue.Sender
	// ReplayDestinations are the queues a replay may name as its
	// destination: those the worker has a producer binding for.
	ReplayDestinations []string
	// MissingProducers maps the main queue of each capture-only pipeline
	// (its producer binding is absent) to that binding: a replay to it is
	// refused with a 400 naming the binding.
	MissingProducers map[string]string
	// Outbox records events (a group's status change) and lists them (GET
	// /admin/alerts/events); nil: one in DB without channels.
	Outbox *alerts.Outbox
	// Backlogs reads the backlog of the ReplayDestinations queues (GET
	// /admin/queues); nil: none is available.
	Backlogs queue.BacklogReader
	// ReportQueues says whether a failure report (POST /admin/attempts) may
	// name a queue: the main queue of a pipeline whose consumer is external.
	// nil: none may.
	ReportQueues func(queue string) bool
	// BulkReplayMax caps the rows one bulk replay call claims (DLQ_BULK_REPLAY_MAX).
	BulkReplayMax int
	// BulkAcknowledgeMax caps the rows one bulk acknowledge call moves (DLQ_BULK_ACKNOWLEDGE_MAX).
	BulkAcknowledgeMax int
	// DevSender, when non-nil, enables POST /__dev/send (admin auth): raw,
	// poison or any messages onto a bound queue. Set only with DEV_ROUTES
	// (local runs and the e2e tests), never in production.
	DevSender DevSender
	// DevCron, when non-nil, enables POST /__dev/cron (admin auth): a cron's
	// jobs at a chosen scheduled time (CronRouter.Run). DEV_ROUTES only.
	DevCron func(ctx context.Context, cron string, at time.Time) error
	// Instance describes the Go instance serving calls (reported by /health).
	Instance *Instance
	// Beers registers beers for enrichment and reads their state.
	Beers *enrichment.Registry
	// Meter counts D1's rows read and written per route (each request is an
	// operation named by its route pattern) and is flushed after each
	// request; nil: nothing is counted.
	Meter *metrics.Meter
}

// Instance identifies one running Go instance; with one instance per isolate
// (platform/worker/worker.mjs) many calls share it.
type Instance struct {
	ID        string
	StartedAt time.Time
	calls     atomic.Int64
}

// NewInstance returns an instance with a fresh id.
func NewInstance(now time.Time) *Instance {
	return &Instance{ID: uuid.NewString(), StartedAt: now}
}

// Call counts one call served by this instance and returns the new total.
func (i *Instance) Call() int64 { return i.calls.Add(1) }

// handlerFunc is an HTTP handler that returns its error for the envelope.
type handlerFunc func(w http.ResponseWriter, r *http.Request) error

// public adapts a handlerFunc without authentication.
func (a *API) public(h handlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := h(w, r); err != nil {
			fail(w, r, a.Log, err)
		}
	})
}

// guarded is a route's handler behind a check of its request's headers
// (credentials): the server's Gate runs the same check before the body is
// read.
type guarded struct {
	check func(r *http.Request) *APIError
	next  http.Handler
}

func (g *guarded) ServeHTTP(w http.ResponseWriter, r *http.Request) { g.next.ServeHTTP(w, r) }

// guard adapts a handlerFunc behind check, which admits a principal: the
// handler finds it in its request (principalOf).
func (a *API) guard(check func(r *http.Request) (access.Principal, *APIError), h handlerFunc) http.Handler {
	headers := func(r *http.Request) *APIError {
		_, err := check(r)
		return err
	}
	return &guarded{check: headers, next: a.public(func(w http.ResponseWriter, r *http.Request) error {
		p, err := check(r)
		if err != nil {
			return err
		}
		return h(w, r.WithContext(context.WithValue(r.Context(), principalKey{}, p)))
	})}
}

// dev adapts a DEV_ROUTES handlerFunc: answered only to a request
// addressed to a loopback host (loopbackHost), then behind the pair of
// admin secrets alone. A page served from elsewhere that rebinds its own
// name to 127.0.0.1 still sends its own name as Host: it gets the 404 of a
// path that is no route.
func (a *API) dev(h handlerFunc) http.Handler {
	return a.guard(func(r *http.Request) (access.Principal, *APIError) {
		if !loopbackHost(r.Host) {
			return access.Principal{}, notFound(r)
		}
		if err := a.Auth.check(r); err != nil {
			return access.Principal{}, err
		}
		return access.PairPrincipal, nil
	}, h)
}

// loopbackHost reports whether host (a Host header: a name or address,
// with or without a port) names this machine: localhost, 127.0.0.0/8 or
// [::1].
func loopbackHost(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	} else {
		host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.Zone() == "" && ip.IsLoopback()
}

// Handler returns the root handler: every route, request ids, and envelopes
// for unknown paths (404) and wrong methods (405). It also answers, before
// a request's body is read, the requests whose answer does not depend on it
// (Gate).
func (a *API) Handler() http.Handler {
	return &server{api: a, mux: a.routes()}
}

// server is the root handler (API.Handler).
type server struct {
	api *API
	mux *http.ServeMux
}

// begin gives the request its id (X-Request-ID, and in the context for
// envelopes and logs) and sets the headers of every answer: API answers
// are never sniffed as another type nor kept by a cache.
func begin(w http.ResponseWriter, r *http.Request) *http.Request {
	id := uuid.NewString()
	h := w.Header()
	h.Set("X-Request-ID", id)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-store")
	return r.WithContext(context.WithValue(r.Context(), requestIDKey{}, id))
}

// route returns r's route (its handler and pattern), or the error that
// answers a request that reaches none: a target that is not a URL (400),
// a path that is not clean or no route (404), a route's path with another
// method (405, Allow in w).
func (s *server) route(w http.ResponseWriter, r *http.Request) (http.Handler, string, error) {
	if err := checkTarget(r); err != nil {
		return nil, "", err
	}
	if p := r.URL.EscapedPath(); p != path.Clean(p) || dotSegment(p) {
		// The mux would redirect to the clean path (//admin/dlq,
		// /admin/./dlq, /admin/dlq/): no route is ever reached that way.
		return nil, "", notFound(r)
	}
	h, pattern := s.mux.Handler(r)
	if pattern != "" {
		return h, pattern, nil
	}
	// No route: let the mux decide between 404 and 405, then answer
	// with the envelope instead of its plain-text body.
	rec := &statusRecorder{header: http.Header{}}
	h.ServeHTTP(rec, r)
	if rec.status == http.StatusMethodNotAllowed {
		w.Header().Set("Allow", rec.header.Get("Allow"))
		return nil, "", &APIError{Status: http.StatusMethodNotAllowed, Code: "METHOD_NOT_ALLOWED",
			Message: text.Clip(r.Method, maxEcho) + " is not allowed on " + quote(r.URL.EscapedPath())}
	}
	return nil, "", notFound(r)
}

func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	r = begin(w, r)
	a := s.api
	if a.Instance != nil {
		a.Instance.Call()
	}
	defer func() {
		// A bug in one handler answers 500 and leaves the shared Go
		// instance serving. (Nothing has been written yet by then in
		// practice: handlers write their envelope last.)
		if p := recover(); p != nil {
			fail(w, r, a.Log, fmt.Errorf("panic: %v", p))
		}
	}()
	h, pattern, err := s.route(w, r)
	if err == nil {
		r, err = admitQuery(h, pattern, r)
	}
	if err != nil {
		fail(w, r, a.Log, err)
		return
	}
	// The request is an operation named by its route: the D1 rows its
	// statements read and write are counted under that name.
	ctx, _ := metrics.Start(r.Context(), pattern)
	s.mux.ServeHTTP(w, r.WithContext(ctx)) // (not the route's handler: only the mux sets path values like {id})
	a.Meter.Flush(ctx)                     // a nil Meter counts nothing
}

// admitQuery checks r's query string against its route's parameters
// (checkQuery) before the route's handler runs, and returns the request to
// hand to it. A refused query string of a guarded route is answered with
// the route's own credential check first when that fails: a caller without
// credentials learns nothing of a route's parameters (401, 403 or the
// DEV_ROUTES 404 as without the query string). With a query string it
// accepts, the credentials are checked by the route's handler, as always.
func admitQuery(h http.Handler, pattern string, r *http.Request) (*http.Request, error) {
	r, err := checkQuery(r, pattern)
	if err == nil {
		return r, nil
	}
	if g, ok := h.(*guarded); ok {
		if e := g.check(r); e != nil {
			return r, e
		}
	}
	return r, err
}

// Gate answers r, as ServeHTTP would, when the answer does not depend on
// its body, and reports whether it did: a request that reaches no route,
// whose headers its route's check refuses (missing or wrong credentials, a
// DEV_ROUTES route not addressed to a loopback host), or, after that check,
// whose query string its route refuses (admitQuery). The worker
// (platform.Serve) asks it before reading a body, so an anonymous request,
// or one with a parameter its route does not take, is refused without its
// body ever being read. r's body is not touched.
func (s *server) Gate(w http.ResponseWriter, r *http.Request) bool {
	r = begin(w, r)
	h, pattern, err := s.route(w, r)
	if err == nil {
		if g, ok := h.(*guarded); ok {
			err = asError(g.check(r))
		}
		if err == nil {
			_, err = admitQuery(h, pattern, r)
		}
		if err == nil {
			return false
		}
	}
	if s.api.Instance != nil {
		s.api.Instance.Call()
	}
	fail(w, r, s.api.Log, err)
	return true
}

// asError is e as an error: nil when e is nil (a nil *APIError is not a
// nil error).
func asError(e *APIError) error {
	if e == nil {
		return nil
	}
	return e
}

// dotSegment reports whether an escaped path has a segment that decodes to
// "." or ".." (sent escaped, %2e): the mux would take it as a {id}. A
// segment is decoded on its own, as the mux does: an escaped "/" (%2F) is
// part of its segment, so an id such as "a/../b" sent as a%2F..%2Fb is one
// segment, not a dot segment.
//
// It runs on every request, so it splits without allocating, and decodes
// only segments of at most 6 bytes: ".." is at most "%2e%2e" escaped.
func dotSegment(escaped string) bool {
	for rest, more := escaped, true; more; {
		var seg string
		seg, rest, more = strings.Cut(rest, "/")
		if len(seg) > 6 {
			continue
		}
		if u, err := url.PathUnescape(seg); err == nil && (u == "." || u == "..") {
			return true
		}
	}
	return false
}

func notFound(r *http.Request) *APIError {
	return &APIError{Status: http.StatusNotFound, Code: "NOT_FOUND", Message: "no route for " + text.Clip(r.Method, maxEcho) + " " + quote(r.URL.EscapedPath())}
}

// checkTarget rejects a request whose target (path and query as sent) is
// not a URL, such as an invalid percent-escape in the path. net/http's
// server refuses those itself; the worker's bridge (platform) hands them
// on with the raw target in RequestURI and an empty URL path.
func checkTarget(r *http.Request) error {
	if r.RequestURI == "" {
		return nil
	}
	if _, err := url.ParseRequestURI(r.RequestURI); err == nil {
		return nil
	}
	p, _, _ := strings.Cut(r.RequestURI, "?")
	if _, err := url.PathUnescape(p); err != nil {
		return badRequest("INVALID_REQUEST", "the path has an invalid percent-escape (% must be followed by two hex digits)")
	}
	return badRequest("INVALID_REQUEST", "the request target is not a valid URL path")
}

// statusRecorder keeps the status and headers of the mux's own 404/405
// answer (its plain-text body is discarded).
type statusRecorder struct {
	header http.Header
	status int
}

func (r *statusRecorder) Header() http.Header { return r.header }
func (r *statusRecorder) WriteHeader(status int) {
	if r.status == 0 {
		r.status = status
	}
}
func (r *statusRecorder) Write(p []byte) (int, error) {
	r.WriteHeader(http.StatusOK)
	return len(p), nil
}

// Routes returns every registered "METHOD /path" pattern (for the OpenAPI check).
func (a *API) Routes() []string {
	var out []string
	for _, rt := range a.routeTable() {
		out = append(out, rt.pattern)
	}
	return out
}

type route struct {
	pattern string
	// perm is what the route lets its caller do (x-permission in
	// openapi.json): access.Public is answered to anyone, access.Dev only
	// to the pair on a loopback host (dev), any other to a principal that
	// holds it (allow).
	perm access.Permission
	// scope says whether the route serves a credential limited to
	// pipelines (handlers/scope.go).
	scope routeScope
	h     handlerFunc
}

// routeTable is the single list of routes.
func (a *API) routeTable() []route {
	rs := []route{
		{"GET /health", access.Public, perPipeline, a.health}, // anyone
		{"GET /admin/whoami", access.Self, perPipeline, a.whoami},
		{"GET /admin/metrics", access.Read, everyPipeline, a.metrics},
		{"POST /admin/enrich", access.Enrich, everyPipeline, a.enrich},
		{"GET /admin/beers/{id}", access.Read, everyPipeline, a.beer},
		{"GET /admin/enrichment/breaker", access.Read, everyPipeline, a.breakerShow},
		{"POST /admin/enrichment/breaker/reset", access.Breaker, everyPipeline, a.breakerReset},
		{"POST /admin/attempts", access.Report, perPipeline, a.limitReports(newRateLimit(reportBurst, reportPerSecond), a.attempts)},

		{"GET /admin/dlq", access.Read, perPipeline, a.dlqList},
		{"GET /admin/dlq/stats", access.Read, perPipeline, a.dlqStats},
		{"GET /admin/dlq/groups", access.Read, perPipeline, a.dlqGroups},
		{"GET /admin/dlq/export", access.Read, perPipeline, a.dlqExport},
		{"POST /admin/dlq/import", access.Move, everyPipeline, a.dlqImport},
		{"POST /admin/dlq/release", access.Move, everyPipeline, a.dlqRelease},
		{"POST /admin/dlq/replay", access.Replay, perPipeline, a.dlqReplay},
		{"POST /admin/dlq/acknowledge", access.Acknowledge, perPipeline, a.dlqAcknowledge},
		{"POST /admin/dlq/{id}/replay", access.Edit, perPipeline, a.dlqReplayEdited},
		{"GET /admin/audit", access.Read, perPipeline, a.auditList},
		{"POST /admin/dlq/replay-tasks", access.Tasks, perPipeline, a.taskCreate},
		{"GET /admin/dlq/replay-tasks", access.Read, perPipeline, a.taskList},
		{"GET /admin/dlq/replay-tasks/{id}", access.Read, perPipeline, a.taskGet},
		{"POST /admin/dlq/replay-tasks/{id}/pause", access.Tasks, perPipeline, a.taskAction(dlq.TaskPause)},
		{"POST /admin/dlq/replay-tasks/{id}/resume", access.Tasks, perPipeline, a.taskAction(dlq.TaskResume)},
		{"POST /admin/dlq/replay-tasks/{id}/cancel", access.Tasks, perPipeline, a.taskAction(dlq.TaskCancel)},
		// For the console (handlers/console.go).
		{"GET /admin/dlq/{id}", access.ReadBody, perPipeline, a.dlqDetail}, // its payload
		{"GET /admin/dlq/timeseries", access.Read, perPipeline, a.dlqTimeseries},
		{"GET /admin/alerts", access.Read, everyPipeline, a.alertsList},
		{"GET /admin/alerts/events", access.Read, everyPipeline, a.alertEvents},
		{"POST /admin/alerts/channels/{name}/enable", access.Breaker, everyPipeline, a.channelEnable},
		{"POST /admin/dlq/groups/{signature}/status", access.Acknowledge, perPipeline, a.groupStatus},
		{"GET /admin/jobs", access.Read, everyPipeline, a.jobsList},
		{"GET /admin/queues", access.Read, everyPipeline, a.queuesList},
		{"GET /admin/openapi.json", access.Read, perPipeline, a.openAPI},
		{"GET /admin/pipelines", access.Read, perPipeline, a.pipelinesList},

		{"POST /admin/keys", access.ManageKeys, everyPipeline, a.keyCreate},
		{"GET /admin/keys", access.ManageKeys, everyPipeline, a.keyList},
		{"POST /admin/keys/{id}/revoke", access.ManageKeys, everyPipeline, a.keyRevoke},
	}
	if a.DevSender != nil {
		rs = append(rs, route{"POST /__dev/send", access.Dev, everyPipeline, a.devSend}, route{"POST /__dev/sql", access.Dev, everyPipeline, a.testSQL})
	}
	if a.DevCron != nil {
		rs = append(rs, route{"POST /__dev/cron", access.Dev, everyPipeline, a.devCron})
	}
	return rs
}

// handler is rt's handler behind the check its permission asks for.
func (a *API) handler(rt route) http.Handler {
	switch rt.perm {
	case access.Public:
		return a.public(rt.h)
	case access.Dev:
		return a.dev(rt.h)
	}
	return a.guard(a.allow(rt.perm, rt.scope), rt.h)
}

func (a *API) routes() *http.ServeMux {
	mux := http.NewServeMux()
	for _, rt := range a.routeTable() {
		mux.Handle(rt.pattern, a.handler(rt))
	}
	return mux
}

// healthData is /health's report: the status alone for a caller without
// both admin credentials, everything for one with them.
type healthData struct {
	Status   string        `json:"status"`
	Version  string        `json:"version,omitempty"`
	D1       *d1Health     `json:"d1,omitempty"`
	Time     *time.Time    `json:"time,omitempty"`
	Instance *instanceData `json:"instance,omitempty"`
}

type instanceData struct {
	ID        string    `json:"id"`
	StartedAt time.Time `json:"started_at"`
	Calls     int64     `json:"calls"`
}

type d1Health struct {
	OK        bool   `json:"ok"`
	LatencyMS int64  `json:"latency_ms"`
	Error     string `json:"error,omitempty"`
}

// health reports D1 reachability (200) or its failure (503); the version,
// the time, D1's latency and the instance only to a caller with both admin
// credentials (the status alone otherwise).
func (a *API) health(w http.ResponseWriter, r *http.Request) error {
	ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
	defer cancel()
	start := a.Clock.Now()
	var one int
	err := a.DB.QueryRowContext(ctx, "SELECT 1").Scan(&one)
	d := healthData{Status: "ok"}
	if a.Auth.check(r) == nil {
		now := a.Clock.Now().UTC()
		d.Version, d.Time = a.Version, &now
		d.D1 = &d1Health{OK: err == nil, LatencyMS: a.Clock.Now().Sub(start).Milliseconds()}
		if a.Instance != nil {
			d.Instance = &instanceData{ID: a.Instance.ID, StartedAt: a.Instance.StartedAt.UTC(), Calls: a.Instance.calls.Load()}
		}
	}
	if err != nil {
		a.Log.ErrorContext(r.Context(), "health: d1 unreachable", "request_id", RequestID(r.Context()), "error", err.Error())
		d.Status = "degraded"
		if d.D1 != nil {
			d.D1.Error = "d1 query failed"
		}
		writeEnvelope(w, http.StatusServiceUnavailable, false, RequestID(r.Context()), d,
			&errorBody{Code: "D1_UNAVAILABLE", Message: "D1 is not reachable"})
		return nil
	}
	respond(w, r, http.StatusOK, d)
	return nil
}
