package access

import (
	"context"
	"crypto/subtle"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redrive/redrive/clock"
)

// DefaultCacheFor is how long an isolate keeps a key's row: the longest a
// revocation takes to act in an isolate that did not make it.
const DefaultCacheFor = 30 * time.Second

// lastUsedEvery is how often a key's last_used_at is written at most.
const lastUsedEvery = time.Minute

// maxCached bounds the rows an isolate keeps (the cache starts over past it).
const maxCached = 1024

// validName reports whether s may name a key (it names the key in the
// audit log): 1 to 64 of a-z, 0-9, '.', '_' and '-', starting with a
// letter or digit. (A loop, not a regexp: compiling {0,63} overflows the
// wasm build's stack.)
func validName(s string) bool {
	if len(s) == 0 || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		alnum := 'a' <= c && c <= 'z' || '0' <= c && c <= '9'
		if !alnum && (i == 0 || c != '.' && c != '_' && c != '-') {
			return false
		}
	}
	return true
}

// Key is a named API key as the API lists it: never its secret.
type Key struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	Role Role   `json:"role"`
	// Pipelines limits the key to these pipelines (null: every pipeline).
	Pipelines  []string `json:"pipelines"`
	CreatedBy  string   `json:"created_by"`
	CreatedAt  int64    `json:"created_at"`
	ExpiresAt  *int64   `json:"expires_at"`
	RevokedAt  *int64   `json:"revoked_at"`
	RevokedBy  *string  `json:"revoked_by"`
	LastUsedAt *int64   `json:"last_used_at"`
}

// Keys keeps the named API keys in D1 (api_keys) and authenticates their
// tokens, keeping each row it read for CacheFor.
type Keys struct {
	DB  *sql.DB
	Now clock.Clock
	// CacheFor is how long a row read is used (0: DefaultCacheFor).
	CacheFor time.Duration
	// Admit, when set, is asked before each read of a row the isolate does
	// not hold: false refuses the check with 429 RATE_LIMITED, so that a
	// flood of made-up keys cannot spend D1's reads.
	Admit func(now time.Time) bool

	mu    sync.Mutex
	cache map[string]cached
}

// cached is a key's row as read at, or absent (no row for that id).
type cached struct {
	row    keyRow
	absent bool
	at     time.Time
}

// keyRow is what authentication needs of a key's row.
type keyRow struct {
	name, role, hash     string
	pipelines            sql.NullString
	expiresAt, revokedAt sql.NullInt64
	lastUsedAt           sql.NullInt64
}

// Error is a refused credential or key request: Status and Code for the
// API's envelope.
type Error struct {
	Status  int
	Code    string
	Message string
}

func (e *Error) Error() string { return e.Message }

var (
	errInvalid = &Error{401, "INVALID_KEY", "unknown key or wrong secret"}
	errRevoked = &Error{401, "KEY_REVOKED", "this key was revoked"}
	errExpired = &Error{401, "KEY_EXPIRED", "this key has expired"}
	// errRateLimited: Keys.Admit refused a read.
	errRateLimited = &Error{429, "RATE_LIMITED", "too many checks of keys this isolate has not seen: wait a second and try again"}
)

// ErrKeyNotFound is a revocation of an id no key has.
var ErrKeyNotFound = &Error{404, "KEY_NOT_FOUND", "no key has this id"}

func (k *Keys) cacheFor() time.Duration {
	if k.CacheFor > 0 {
		return k.CacheFor
	}
	return DefaultCacheFor
}

// Authenticate returns the principal of token (a key's token as
// NewToken makes it), or an *Error: MALFORMED_KEY, INVALID_KEY (no key
// has its id, or its secret differs), KEY_REVOKED or KEY_EXPIRED (told
// only to a caller holding the secret). It reads at most the key's row,
// and none while the isolate keeps it.
func (k *Keys) Authenticate(ctx context.Context, token string) (Principal, error) {
	id, secret, err := ParseToken(token)
	if err != nil {
		return Principal{}, &Error{401, "MALFORMED_KEY", err.Error()}
	}
	now := k.Now.Now()
	c, err := k.row(ctx, id, now)
	if err != nil {
		return Principal{}, err
	}
	hash := SecretHash(secret)
	if c.absent || subtle.ConstantTimeCompare([]byte(hash), []byte(c.row.hash)) != 1 {
		return Principal{}, errInvalid
	}
	switch {
	case c.row.revokedAt.Valid:
		return Principal{}, errRevoked
	case c.row.expiresAt.Valid && now.UnixMilli() >= c.row.expiresAt.Int64:
		return Principal{}, errExpired
	}
	k.touch(ctx, id, c, now)
	return Principal{Name: "key:" + c.row.name, Role: Role(c.row.role), Pipelines: pipelinesOf(c.row.pipelines)}, nil
}

// row returns id's row from the cache, or reads it (one row) and keeps it.
func (k *Keys) row(ctx context.Context, id string, now time.Time) (cached, error) {
	k.mu.Lock()
	c, ok := k.cache[id]
	k.mu.Unlock()
	if ok && now.Sub(c.at) < k.cacheFor() && !now.Before(c.at) {
		return c, nil
	}
	if k.Admit != nil && !k.Admit(now) {
		return cached{}, errRateLimited
	}
	c = cached{at: now}
	err := k.DB.QueryRowContext(ctx, `SELECT name, role, secret_hash, pipelines, expires_at, revoked_at, last_used_at FROM api_keys WHERE id = ?`, id).
		Scan(&c.row.name, &c.row.role, &c.row.hash, &c.row.pipelines, &c.row.expiresAt, &c.row.revokedAt, &c.row.lastUsedAt)
	if errors.Is(err, sql.ErrNoRows) {
		c.absent = true
	} else if err != nil {
		return cached{}, err
	}
	k.keep(id, c)
	return c, nil
}

// keep caches c for id (starting over past maxCached rows).
func (k *Keys) keep(id string, c cached) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.cache == nil || len(k.cache) >= maxCached {
		k.cache = map[string]cached{}
	}
	k.cache[id] = c
}

// forget drops id's cached row (after this isolate changed it).
func (k *Keys) forget(id string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	delete(k.cache, id)
}

// touch writes id's last_used_at when the row says it is a minute old or
// more; the statement's condition keeps it to one write a minute across
// isolates. A failure is not the caller's: the request goes on.
func (k *Keys) touch(ctx context.Context, id string, c cached, now time.Time) {
	ms := now.UnixMilli()
	if c.row.lastUsedAt.Valid && ms-c.row.lastUsedAt.Int64 < lastUsedEvery.Milliseconds() {
		return
	}
	c.row.lastUsedAt = sql.NullInt64{Int64: ms, Valid: true}
	k.keep(id, c)
	_, _ = k.DB.ExecContext(ctx, `UPDATE api_keys SET last_used_at = ?1 WHERE id = ?2 AND (last_used_at IS NULL OR last_used_at <= ?1 - ?3)`,
		ms, id, lastUsedEvery.Milliseconds())
}

// KeySpec is what a new key is made of.
type KeySpec struct {
	Name string
	Role Role
	// Pipelines limits the key to these pipelines (nil: every pipeline;
	// the caller checks that each is configured).
	Pipelines []string
	// ExpiresAt is when the key stops working (Unix ms; nil: never).
	ExpiresAt *int64
}

// MaxKeyPipelines bounds the pipelines one key names.
const MaxKeyPipelines = 32

// check validates s's name, role, pipelines and expiry at now (Unix ms).
func (s KeySpec) check(now int64) error {
	if !validName(s.Name) {
		return &Error{400, "INVALID_KEY_NAME", "name must be 1 to 64 of a-z, 0-9, '.', '_' and '-', starting with a letter or digit"}
	}
	if _, err := ParseRole(string(s.Role)); err != nil {
		return &Error{400, "INVALID_ROLE", err.Error()}
	}
	if s.Pipelines != nil && (len(s.Pipelines) == 0 || len(s.Pipelines) > MaxKeyPipelines) {
		return &Error{400, "INVALID_PIPELINES", fmt.Sprintf("pipelines must name 1 to %d pipelines, or be absent for every pipeline", MaxKeyPipelines)}
	}
	if s.ExpiresAt != nil && *s.ExpiresAt <= now {
		return &Error{400, "INVALID_EXPIRY", "expires_at must be in the future (Unix milliseconds)"}
	}
	return nil
}

// Create makes the key s, created by principal by, and returns it with
// its token (shown once). A name in use, revoked keys' included, is 409
// KEY_EXISTS.
func (k *Keys) Create(ctx context.Context, s KeySpec, by string) (Key, string, error) {
	now := k.Now.Now().UnixMilli()
	if err := s.check(now); err != nil {
		return Key{}, "", err
	}
	id, secret, token, err := NewToken()
	if err != nil {
		return Key{}, "", err
	}
	res, err := k.DB.ExecContext(ctx, `INSERT INTO api_keys(id, name, role, secret_hash, created_by, created_at, expires_at, pipelines)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`, id, s.Name, string(s.Role), SecretHash(secret), by, now, s.ExpiresAt, pipelinesColumn(s.Pipelines))
	if err != nil {
		return Key{}, "", err
	}
	if n, err := res.RowsAffected(); err != nil || n != 1 {
		return Key{}, "", &Error{409, "KEY_EXISTS", fmt.Sprintf("a key named %q exists (revoked keys keep their names)", s.Name)}
	}
	return Key{ID: id, Name: s.Name, Role: s.Role, Pipelines: s.Pipelines, CreatedBy: by, CreatedAt: now, ExpiresAt: s.ExpiresAt}, token, nil
}

// pipelinesColumn is ps as api_keys.pipelines stores it: a JSON array, or
// NULL for every pipeline.
func pipelinesColumn(ps []string) any {
	if ps == nil {
		return nil
	}
	js, _ := json.Marshal(ps)
	return string(js)
}

// pipelinesOf reads api_keys.pipelines (nil: every pipeline). A value that
// is not an array of names limits the key to no pipeline at all.
func pipelinesOf(col sql.NullString) []string {
	if !col.Valid {
		return nil
	}
	var ps []string
	if json.Unmarshal([]byte(col.String), &ps) != nil || ps == nil {
		return []string{}
	}
	return ps
}

// keyColumns are the columns of a listed key, in Key's order.
const keyColumns = `id, name, role, pipelines, created_by, created_at, expires_at, revoked_at, revoked_by, last_used_at`

func scanKey(s interface{ Scan(...any) error }) (Key, error) {
	var key Key
	var exp, rev, used sql.NullInt64
	var revBy, pipelines sql.NullString
	if err := s.Scan(&key.ID, &key.Name, &key.Role, &pipelines, &key.CreatedBy, &key.CreatedAt, &exp, &rev, &revBy, &used); err != nil {
		return Key{}, err
	}
	key.ExpiresAt, key.RevokedAt, key.LastUsedAt = optInt(exp), optInt(rev), optInt(used)
	key.Pipelines = pipelinesOf(pipelines)
	if revBy.Valid {
		key.RevokedBy = &revBy.String
	}
	return key, nil
}

func optInt(n sql.NullInt64) *int64 {
	if !n.Valid {
		return nil
	}
	return &n.Int64
}

// MaxKeys bounds the keys List returns (the newest).
const MaxKeys = 1000

// List returns the keys, newest first (at most MaxKeys).
func (k *Keys) List(ctx context.Context) ([]Key, error) {
	rows, err := k.DB.QueryContext(ctx, `SELECT `+keyColumns+` FROM api_keys ORDER BY created_at DESC, id LIMIT ?`, MaxKeys)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []Key{}
	for rows.Next() {
		key, err := scanKey(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, key)
	}
	return out, rows.Err()
}

// Revoke revokes key id as principal by, and returns it: a key revoked
// already keeps its first revocation; an unknown id is ErrKeyNotFound.
func (k *Keys) Revoke(ctx context.Context, id, by string) (Key, error) {
	key, err := scanKey(k.DB.QueryRowContext(ctx, `UPDATE api_keys SET revoked_at = COALESCE(revoked_at, ?), revoked_by = COALESCE(revoked_by, ?)
		WHERE id = ? RETURNING `+keyColumns, k.Now.Now().UnixMilli(), by, id))
	if errors.Is(err, sql.ErrNoRows) {
		return Key{}, ErrKeyNotFound
	}
	if err != nil {
		return Key{}, err
	}
	k.forget(id)
	return key, nil
}
