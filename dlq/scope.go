package dlq

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
)

// Scope is the pipelines a credential may see and act on: every row of
// theirs and none of another's. The zero Scope (nil Pipelines) reaches
// every pipeline; an empty non-nil list reaches none.
type Scope struct {
	Pipelines []string
}

// All reports whether s reaches every pipeline.
func (s Scope) All() bool { return s.Pipelines == nil }

// Reaches reports whether s reaches pipeline name.
func (s Scope) Reaches(name string) bool { return s.All() || slices.Contains(s.Pipelines, name) }

// Queues returns the queues of s's configured pipelines (nil: every queue).
func (s Scope) Queues(ps Pipelines) []string {
	if s.All() {
		return nil
	}
	out := []string{}
	for _, p := range ps.All() {
		if s.Reaches(p.Name) {
			out = append(out, p.Queue)
		}
	}
	return out
}

// ReachesQueue reports whether s reaches the rows of source queue q.
func (s Scope) ReachesQueue(ps Pipelines, q string) bool {
	if s.All() {
		return true
	}
	p, ok := ps.OfQueue(q)
	return ok && s.Reaches(p.Name)
}

// outOfScope is the 403 of a pipeline the scope does not reach.
func (s Scope) outOfScope(name string) error {
	return &InputError{Status: http.StatusForbidden, Code: "FORBIDDEN",
		Message: fmt.Sprintf("this credential is limited to the pipelines %s; got %q", s.names(), ClipName(name))}
}

func (s Scope) names() string {
	if len(s.Pipelines) == 0 {
		return "(none)"
	}
	return strings.Join(s.Pipelines, ", ")
}

// Pipeline returns the pipeline a request of s reads or acts on, given
// the one it names ("" for none): the named one when s reaches it (403
// FORBIDDEN when not); for none, "" when s reaches every pipeline, its
// one pipeline when it has one, else 400 PIPELINE_REQUIRED (a scoped
// credential names the pipeline of a request that could span several).
func (s Scope) Pipeline(named string) (string, error) {
	switch {
	case s.All():
		return named, nil
	case named != "":
		if !s.Reaches(named) {
			return "", s.outOfScope(named)
		}
		return named, nil
	case len(s.Pipelines) == 1:
		return s.Pipelines[0], nil
	}
	return "", InputErr("PIPELINE_REQUIRED", "this credential is limited to the pipelines %s: name one (pipeline)", s.names())
}

// Filter returns f limited to s: its pipeline is the one Pipeline
// returns, found from its source_queue when it names none, so that
// Normalize then keeps the pipeline's rows alone (and refuses a
// source_queue of another pipeline).
func (s Scope) Filter(ps Pipelines, f Filter) (Filter, error) {
	if s.All() {
		return f, nil
	}
	named := f.Pipeline
	if named == "" && f.SourceQueue != "" {
		p, ok := ps.OfQueue(f.SourceQueue)
		if !ok {
			return f, s.outOfScope(f.SourceQueue)
		}
		named = p.Name
	}
	var err error
	f.Pipeline, err = s.Pipeline(named)
	return f, err
}

// BulkFilter is Filter for a bulk action (a replay or acknowledge by
// filter, a replay task): a scoped credential names the pipeline (or its
// source_queue) of what it acts on, even with one pipeline, so that a
// bulk action never reaches further than its caller wrote (400
// PIPELINE_REQUIRED).
func (s Scope) BulkFilter(ps Pipelines, f Filter) (Filter, error) {
	if !s.All() && f.Pipeline == "" && f.SourceQueue == "" {
		return f, InputErr("PIPELINE_REQUIRED", "this credential is limited to the pipelines %s: a bulk action names its pipeline (filter.pipeline)", s.names())
	}
	return s.Filter(ps, f)
}

// errOutOfScope is a named row the scope does not reach, or no row at
// all: both are answered as the row's absence (404), so that a scoped
// credential never learns that another pipeline holds an id.
var errOutOfScope = errors.New("no row of this credential's pipelines has this id")

// OutOfScopeID returns the id of a CheckScope refusal (ok false for any
// other error).
func OutOfScopeID(err error) (int64, bool) {
	var e *scopeError
	if errors.As(err, &e) {
		return e.id, true
	}
	return 0, false
}

type scopeError struct{ id int64 }

func (e *scopeError) Error() string { return fmt.Sprintf("%v: %d", errOutOfScope, e.id) }
func (e *scopeError) Unwrap() error { return errOutOfScope }

// CheckScope refuses (OutOfScopeID) a request of s naming ids in db when
// one of them is not a dlq_messages row of a queue s reaches, be it
// another pipeline's or none. One statement, reading the rows of s's
// queues it finds; nothing when s reaches every pipeline.
func (s Scope) CheckScope(ctx context.Context, ps Pipelines, db *sql.DB, ids []int64) error {
	if s.All() || len(ids) == 0 {
		return nil
	}
	list, _ := json.Marshal(ids)
	var id int64
	err := db.QueryRowContext(ctx, `SELECT value FROM json_each(?1) WHERE value NOT IN (SELECT id FROM dlq_messages
		WHERE id IN (SELECT value FROM json_each(?1)) AND source_queue IN (SELECT value FROM json_each(?2))) LIMIT 1`,
		string(list), JSONList(s.Queues(ps))).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("check the scope of ids: %w", err)
	}
	return &scopeError{id: id}
}
