package enrichment

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/queue"
)

// Beer is the body of an enrichment message and one item of POST /admin/enrich.
type Beer struct {
	BeerID   string `json:"beer_id"`
	BeerName string `json:"beer_name"`
	Brewer   string `json:"brewer"`
}

// message is the enrichment queue message for b: JSON text
// {beer_id, beer_name, brewer}, sent now. Every sender of enrichment work
// (Registry.Enqueue, CatchUp) builds it here.
func (b Beer) message() (queue.Outgoing, error) {
	body, err := json.Marshal(b)
	if err != nil {
		return queue.Outgoing{}, fmt.Errorf("encode message for beer %s: %w", b.BeerID, err)
	}
	return queue.Outgoing{Body: string(body)}, nil
}

// Beer statuses (beers.status).
const (
	// StatusPending: registered, no message sent yet (or the send failed).
	StatusPending = "pending"
	// StatusQueued: a message is on the queue or being retried.
	StatusQueued = "queued"
	// StatusWaiting: its work waits in D1 for the provider to be usable
	// again (breaker open, key refused or missing), not on the queue; the
	// catch-up sends it back when the breaker closes, or as its probe.
	StatusWaiting = "waiting"
	// StatusEnriched: the ABV is known.
	StatusEnriched = "enriched"
	// StatusNotFound: the provider answered that it does not know the ABV.
	StatusNotFound = "not_found"
	// StatusFailed: the last attempt failed (permanent error or retries exhausted).
	StatusFailed = "failed"
)

// Done reports whether a beer in status needs no more provider calls.
func Done(status string) bool { return status == StatusEnriched || status == StatusNotFound }

// ProviderConfidence is the confidence stored with an ABV answered by the
// LLM provider: unverified, so below the 1.0 of a curated value.
const ProviderConfidence = 0.7

// Limits of POST /admin/enrich.
const (
	MaxBeersPerRequest = 100
	MaxBeerIDLen       = 128
	MaxBeerTextLen     = 300
)

// Validate checks a registration request: 1..MaxBeersPerRequest beers,
// each with a beer_id (unique in the request) and a beer_name; brewer may be
// empty. The error text names the offending item. A beer_id is any text
// that GET /admin/beers/{id} can name with the id percent-encoded (a "/",
// "?", "#" or "%" in it included): 1..MaxBeerIDLen characters, not ".",
// ".." or "/", no control characters.
func Validate(beers []Beer) error {
	if len(beers) == 0 || len(beers) > MaxBeersPerRequest {
		return fmt.Errorf("beers must hold 1..%d items, got %d", MaxBeersPerRequest, len(beers))
	}
	seen := make(map[string]int, len(beers))
	for i, b := range beers {
		switch {
		case b.BeerID == "":
			return fmt.Errorf("beers[%d].beer_id is required", i)
		case utf8.RuneCountInString(b.BeerID) > MaxBeerIDLen:
			return fmt.Errorf("beers[%d].beer_id is longer than %d characters", i, MaxBeerIDLen)
		case b.BeerID == "." || b.BeerID == ".." || b.BeerID == "/":
			// GET /admin/beers/{id} cannot name it: %2e%2e is a dot segment,
			// and net/http's mux takes a segment that decodes to "/" for
			// the path's trailing slash.
			return fmt.Errorf("beers[%d].beer_id must not be \".\", \"..\" or \"/\"", i)
		case strings.IndexFunc(b.BeerID, unicode.IsControl) >= 0:
			return fmt.Errorf("beers[%d].beer_id must not contain control characters", i)
		case b.BeerName == "":
			return fmt.Errorf("beers[%d].beer_name is required", i)
		case utf8.RuneCountInString(b.BeerName) > MaxBeerTextLen || utf8.RuneCountInString(b.Brewer) > MaxBeerTextLen:
			return fmt.Errorf("beers[%d]: beer_name and brewer are limited to %d characters", i, MaxBeerTextLen)
		}
		if j, dup := seen[b.BeerID]; dup {
			return fmt.Errorf("beers[%d].beer_id %q repeats beers[%d]", i, b.BeerID, j)
		}
		seen[b.BeerID] = i
	}
	return nil
}

// BeerState is one row of the beers table, as GET /admin/beers/{id} shows it.
// Times are epoch milliseconds.
type BeerState struct {
	BeerID        string   `json:"beer_id"`
	BeerName      string   `json:"beer_name"`
	Brewer        string   `json:"brewer"`
	Status        string   `json:"status"`
	ABV           *float64 `json:"abv"`
	Confidence    *float64 `json:"confidence"`
	Source        *string  `json:"source"`
	Attempts      int64    `json:"attempts"`
	NextAttemptAt *int64   `json:"next_attempt_at"`
	LastError     *string  `json:"last_error"`
	QueuedAt      *int64   `json:"queued_at"`
	EnrichedAt    *int64   `json:"enriched_at"`
	CreatedAt     int64    `json:"created_at"`
	UpdatedAt     int64    `json:"updated_at"`
}

// ErrBeerNotFound is returned by Lookup for an unknown beer_id.
var ErrBeerNotFound = errors.New("beer not found")

// ErrQueueSend wraps a failed send of enrichment messages: the beers stay
// registered (pending) and the request can be repeated.
var ErrQueueSend = errors.New("enqueue enrichment messages")

// Registry registers beers for enrichment and reads their state.
type Registry struct {
	DB *sql.DB
	// Sender puts messages on the enrichment queue.
	Sender queue.Sender
}

// EnqueueResult says what happened to each beer of a registration.
type EnqueueResult struct {
	Received int `json:"received"`
	// Queued were sent to the enrichment queue (they were pending or failed).
	Queued []string `json:"queued"`
	// AlreadyQueued have a message on the queue already.
	AlreadyQueued []string `json:"already_queued"`
	// AlreadyDone are enriched or not_found: no provider call is spent on them.
	AlreadyDone []string `json:"already_done"`
}

// AuditOutcome is ok.
func (EnqueueResult) AuditOutcome() string { return dlq.OutcomeOK }

// AuditCounts are the beers received and what became of them.
func (r EnqueueResult) AuditCounts() any {
	return map[string]any{"received": r.Received, "queued": len(r.Queued),
		"already_queued": len(r.AlreadyQueued), "already_done": len(r.AlreadyDone)}
}

// scanPairs reads (beer_id, status) rows.
func scanPairs(rows *sql.Rows) (map[string]string, error) {
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var id, st string
		if err := rows.Scan(&id, &st); err != nil {
			return nil, err
		}
		out[id] = st
	}
	return out, rows.Err()
}

// Enqueue upserts the (validated) beers in one statement, claims those not
// yet enriched nor queued (pending/failed -> queued) in a second, and sends
// one message per claimed beer, in SendBatch calls of at most 100 messages
// and 256 KB. Beers a failed send leaves unsent go back to pending, due now
// (the catch-up sends them), and ErrQueueSend is returned.
func (r Registry) Enqueue(ctx context.Context, beers []Beer, now time.Time) (EnqueueResult, error) {
	res := EnqueueResult{Received: len(beers), Queued: []string{}, AlreadyQueued: []string{}, AlreadyDone: []string{}}
	// The upsert registers the beers and returns their status; then one
	// conditional UPDATE claims those to send (pending or failed -> queued),
	// like the catch-up's claim: whatever claimed a beer first sends it,
	// and nothing else does.
	status, err := r.register(ctx, beers, now)
	if err != nil {
		return res, err
	}
	claimed, err := r.claim(ctx, beers, status, now)
	if err != nil {
		return res, err
	}

	out, err := res.sortBeers(beers, status, claimed)
	if err != nil {
		return res, err
	}
	err = r.sendClaimed(ctx, &res, out, now)
	return res, err
}

// register upserts the beers in one statement (new ones pending, known
// ones keep their status) and returns each beer's status by beer_id.
func (r Registry) register(ctx context.Context, beers []Beer, now time.Time) (map[string]string, error) {
	js, err := json.Marshal(beers)
	if err != nil {
		return nil, fmt.Errorf("encode beers: %w", err)
	}
	rows, err := r.DB.QueryContext(ctx, `INSERT INTO beers(beer_id, name, brewer, status, created_at, updated_at)
		SELECT value ->> '$.beer_id', value ->> '$.beer_name', COALESCE(value ->> '$.brewer', ''), 'pending', ?2, ?2
		FROM json_each(?1) WHERE true
		ON CONFLICT(beer_id) DO UPDATE SET name = excluded.name, brewer = excluded.brewer, updated_at = excluded.updated_at
		RETURNING beer_id, status`, string(js), now.UnixMilli())
	if err != nil {
		return nil, fmt.Errorf("upsert beers: %w", err)
	}
	status, err := scanPairs(rows)
	if err != nil {
		return nil, fmt.Errorf("upsert beers: %w", err)
	}
	return status, nil
}

// claim moves the beers whose status is pending or failed to queued in
// one statement (claimBeersSQL) and returns those it claimed, by beer_id.
func (r Registry) claim(ctx context.Context, beers []Beer, status map[string]string, now time.Time) (map[string]string, error) {
	var candidates []string
	for _, b := range beers {
		if st := status[b.BeerID]; st == StatusPending || st == StatusFailed {
			candidates = append(candidates, b.BeerID)
		}
	}
	claimed := map[string]string{}
	if len(candidates) > 0 {
		ids, _ := json.Marshal(candidates)
		rows, err := r.DB.QueryContext(ctx, claimBeersSQL, string(ids), now.UnixMilli())
		if err != nil {
			return nil, fmt.Errorf("claim beers: %w", err)
		}
		if claimed, err = scanPairs(rows); err != nil {
			return nil, fmt.Errorf("claim beers: %w", err)
		}
	}
	return claimed, nil
}

// sortBeers files each beer under AlreadyDone, AlreadyQueued or (claimed
// by this registration) Queued, and returns the messages of the queued
// ones, in the order of beers.
func (res *EnqueueResult) sortBeers(beers []Beer, status, claimed map[string]string) ([]queue.Outgoing, error) {
	var out []queue.Outgoing
	for _, b := range beers {
		_, mine := claimed[b.BeerID]
		switch {
		case Done(status[b.BeerID]):
			res.AlreadyDone = append(res.AlreadyDone, b.BeerID)
		case !mine:
			res.AlreadyQueued = append(res.AlreadyQueued, b.BeerID)
		default:
			m, err := b.message()
			if err != nil {
				return nil, err
			}
			out = append(out, m)
			res.Queued = append(res.Queued, b.BeerID)
		}
	}
	return out, nil
}

// sendClaimed sends the messages of res.Queued in SendBatch calls. When a
// send fails, the beers not sent go back to pending (unclaimBeersSQL),
// res.Queued keeps only those sent, and the error wraps ErrQueueSend.
func (r Registry) sendClaimed(ctx context.Context, res *EnqueueResult, out []queue.Outgoing, now time.Time) error {
	sent := 0
	for _, group := range queue.Batches(out) {
		if err := r.Sender.SendBatch(ctx, queue.Enrichment, group); err != nil {
			// Put back what was claimed and not sent: pending and due now, so
			// the catch-up sends it on its next run if nobody repeats the request.
			unsent, _ := json.Marshal(res.Queued[sent:])
			if _, perr := r.DB.ExecContext(ctx, unclaimBeersSQL, string(unsent), now.UnixMilli()); perr != nil {
				err = fmt.Errorf("%w (and putting the beers back failed: %v)", err, perr)
			}
			res.Queued = res.Queued[:sent]
			return fmt.Errorf("%w: %w", ErrQueueSend, err)
		}
		sent += len(group)
	}
	return nil
}

// Statements on a list of beer ids (?1, one JSON parameter) write their
// status condition as +status: without statistics SQLite would otherwise
// search idx_beers_status_next and test every beer of that status against
// the list, instead of looking the ids up by primary key.
const (
	// claimBeersSQL moves the listed pending or failed beers to queued at ?2.
	// A failed beer starts a new episode: its attempts count from 0 again.
	claimBeersSQL = `UPDATE beers SET status = 'queued', queued_at = ?2, next_attempt_at = NULL, updated_at = ?2,
			attempts = CASE WHEN status = 'failed' THEN 0 ELSE attempts END,
			attempt_key = CASE WHEN status = 'failed' THEN NULL ELSE attempt_key END,
			waits = CASE WHEN status = 'failed' THEN 0 ELSE waits END
		WHERE beer_id IN (SELECT value FROM json_each(?1)) AND +status IN ('pending', 'failed')
		RETURNING beer_id, status`
	// unclaimBeersSQL returns the listed beers queued at ?2 and not sent to
	// pending, due at once.
	unclaimBeersSQL = `UPDATE beers SET status = 'pending', queued_at = NULL, next_attempt_at = ?2, updated_at = ?2
		WHERE beer_id IN (SELECT value FROM json_each(?1)) AND +status = 'queued' AND queued_at = ?2`
)

// Lookup returns one beer's state, or ErrBeerNotFound.
func (r Registry) Lookup(ctx context.Context, beerID string) (BeerState, error) {
	var s BeerState
	// database/sql scans NULL into a nil pointer field, a value into a new one.
	err := r.DB.QueryRowContext(ctx, `SELECT beer_id, name, brewer, status, abv, confidence, source, attempts,
			next_attempt_at, last_error, queued_at, enriched_at, created_at, updated_at
		FROM beers WHERE beer_id = ?`, beerID).Scan(&s.BeerID, &s.BeerName, &s.Brewer, &s.Status, &s.ABV, &s.Confidence, &s.Source,
		&s.Attempts, &s.NextAttemptAt, &s.LastError, &s.QueuedAt, &s.EnrichedAt, &s.CreatedAt, &s.UpdatedAt)
	if errors.Is(err, sql.ErrNoRows) {
		return s, ErrBeerNotFound
	}
	if err != nil {
		return s, fmt.Errorf("lookup beer: %w", err)
	}
	return s, nil
}

// beerStore is the consumer's side of the beers table.
type beerStore struct{ DB *sql.DB }

// tracked is a beer of a batch as track found it.
type tracked struct {
	status string
	// attempts are the real attempts of the beer's current episode (before
	// this delivery), across every deferral and copy of its message.
	attempts int
	// key is the message id the episode's attempts are recorded under
	// (message_attempts), so its history survives deferrals.
	key string
	// waits counts the consecutive deferrals of its work.
	waits int
}

// trackIn is one message of a batch for track.
type trackIn struct {
	Beer
	MessageID string `json:"message_id"`
}

// track registers the beers of a batch that are not known yet (messages may
// come from a replay or be sent directly), marks pending, waiting or failed
// ones queued (a message for them is being processed), and returns every
// beer's state, in one statement. A failed beer starts a new episode (a
// replay, a direct send): its attempts count from 0 again and this
// message's id becomes its attempt key; a beer without a key takes this
// message's.
func (s beerStore) track(ctx context.Context, in []trackIn, now time.Time) (map[string]*tracked, error) {
	out := make(map[string]*tracked, len(in))
	if len(in) == 0 {
		return out, nil
	}
	js, err := json.Marshal(in)
	if err != nil {
		return nil, fmt.Errorf("encode beers: %w", err)
	}
	rows, err := s.DB.QueryContext(ctx, `INSERT INTO beers(beer_id, name, brewer, status, queued_at, created_at, updated_at, attempt_key)
		SELECT value ->> '$.beer_id', COALESCE(value ->> '$.beer_name', ''), COALESCE(value ->> '$.brewer', ''), 'queued', ?2, ?2, ?2,
			value ->> '$.message_id'
		FROM json_each(?1) WHERE true
		ON CONFLICT(beer_id) DO UPDATE SET
			updated_at = CASE WHEN status IN ('pending', 'waiting', 'failed') THEN excluded.updated_at ELSE updated_at END,
			attempts = CASE WHEN status = 'failed' THEN 0 ELSE attempts END,
			waits = CASE WHEN status = 'failed' THEN 0 ELSE waits END,
			attempt_key = CASE WHEN status = 'failed' OR attempt_key IS NULL THEN excluded.attempt_key ELSE attempt_key END,
			status = CASE WHEN status IN ('pending', 'waiting', 'failed') THEN 'queued' ELSE status END
		RETURNING beer_id, status, attempts, attempt_key, waits`, string(js), now.UnixMilli())
	if err != nil {
		return nil, fmt.Errorf("track beers: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		var tb tracked
		var key sql.NullString
		if err := rows.Scan(&id, &tb.status, &tb.attempts, &key, &tb.waits); err != nil {
			return nil, fmt.Errorf("track beers: %w", err)
		}
		tb.key = key.String
		out[id] = &tb
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("track beers: %w", err)
	}
	return out, nil
}

// answered stores the provider's answer: enriched with abv, or not_found
// (note says why). The episode ends: its key and waits are cleared.
func (s beerStore) answered(ctx context.Context, beerID string, v Verdict, source string, now time.Time) error {
	var abv, confidence, note any
	status := StatusNotFound
	if v.Outcome == Enriched {
		status, abv, confidence = StatusEnriched, v.ABV, ProviderConfidence
	} else {
		note = "not_found: " + v.Reason
	}
	_, err := s.DB.ExecContext(ctx, `UPDATE beers SET status = ?2, abv = ?3, confidence = ?4, source = ?5,
			attempts = attempts + 1, next_attempt_at = NULL, last_error = ?6, enriched_at = ?7, updated_at = ?7,
			attempt_key = NULL, waiting = NULL, waits = 0
		WHERE beer_id = ?1`, beerID, status, abv, confidence, source, note, now.UnixMilli())
	if err != nil {
		return fmt.Errorf("store answer for beer %s: %w", beerID, err)
	}
	return nil
}

// failed records a failed attempt that ends the episode (a permanent
// failure): status failed, no next attempt. A beer already enriched or
// not_found (by another message) is left alone.
func (s beerStore) failed(ctx context.Context, beerID, lastError string, now time.Time) error {
	_, err := s.DB.ExecContext(ctx, `UPDATE beers SET status = 'failed', attempts = attempts + 1, last_error = ?2,
			next_attempt_at = NULL, waiting = NULL, updated_at = ?3
		WHERE beer_id = ?1 AND status NOT IN ('enriched', 'not_found')`, beerID, lastError, now.UnixMilli())
	if err != nil {
		return fmt.Errorf("record failure of beer %s: %w", beerID, err)
	}
	return nil
}

// spent is what attempted returns: the real attempt just spent.
type spent struct {
	// n is the episode's attempt number of this attempt (1-based).
	n int
	// key is the message id the episode's attempts are recorded under.
	key string
	// last: the episode has no attempt left (n >= max, or the queue's own
	// count reached it); the beer is now failed.
	last bool
	// found: the beer was updated (false when another message finished it).
	found bool
}

// attempted records a failed attempt that may be retried, in one statement:
// the episode's attempt count grows by one and the beer stays queued with
// its next attempt due at next, unless that was its last attempt (count
// reaching max, or lastByQueue): then it is failed with no next attempt.
// key becomes the beer's attempt key when it has none. A beer already
// enriched or not_found is left alone (found false).
func (s beerStore) attempted(ctx context.Context, beerID, key, lastError string, next time.Time, max int, lastByQueue bool, now time.Time) (spent, error) {
	var sp spent
	var k sql.NullString
	force := int64(0)
	if lastByQueue {
		force = 1
	}
	err := s.DB.QueryRowContext(ctx, `UPDATE beers SET attempts = attempts + 1, last_error = ?2, updated_at = ?4,
			status = CASE WHEN attempts + 1 >= ?5 OR ?6 THEN 'failed' ELSE 'queued' END,
			next_attempt_at = CASE WHEN attempts + 1 >= ?5 OR ?6 THEN NULL ELSE ?3 END,
			waiting = NULL, attempt_key = COALESCE(attempt_key, ?7)
		WHERE beer_id = ?1 AND status NOT IN ('enriched', 'not_found')
		RETURNING attempts, attempt_key, status = 'failed'`, beerID, lastError, next.UnixMilli(), now.UnixMilli(),
		int64(max), force, key).Scan(&sp.n, &k, &sp.last)
	if errors.Is(err, sql.ErrNoRows) {
		return sp, nil
	}
	if err != nil {
		return sp, fmt.Errorf("record failure of beer %s: %w", beerID, err)
	}
	sp.key, sp.found = k.String, true
	return sp, nil
}

// park records that a beer's work waits (Consumer.deferMessage) without
// spending an attempt, in one statement: status (StatusWaiting, released
// by the catch-up when the provider can be called again, or StatusPending,
// due at next for the catch-up's due rule), why (class, waiting beers
// only), next (the order in which waiting beers probe the breaker), and
// one more consecutive deferral. A beer already enriched or not_found is
// left alone.
func (s beerStore) park(ctx context.Context, beerID, status, class, lastError string, next, now time.Time) error {
	var why any
	if status == StatusWaiting {
		why = class
	}
	_, err := s.DB.ExecContext(ctx, `UPDATE beers SET status = ?2, waiting = ?3, waits = waits + 1, last_error = ?4,
			next_attempt_at = ?5, updated_at = ?6
		WHERE beer_id = ?1 AND status NOT IN ('enriched', 'not_found')`, beerID, status, why, lastError, next.UnixMilli(), now.UnixMilli())
	if err != nil {
		return fmt.Errorf("park beer %s: %w", beerID, err)
	}
	return nil
}
