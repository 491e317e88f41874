package access

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/internal/sqlitetest"
)

func code(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	if err != nil {
		return "ERROR " + err.Error()
	}
	return ""
}

func TestKeysCreateAuthenticateRevoke(t *testing.T) {
	ctx := context.Background()
	now := time.UnixMilli(1_800_000_000_000)
	k := &Keys{DB: sqlitetest.New(t), Now: func() time.Time { return now }}
	key, token, err := k.Create(ctx, KeySpec{Name: "ci-bot", Role: Operator}, "admin")
	if err != nil || key.Name != "ci-bot" || key.Role != Operator || key.CreatedBy != "admin" || key.CreatedAt != now.UnixMilli() {
		t.Fatalf("create: %+v %v", key, err)
	}
	p, err := k.Authenticate(ctx, token)
	if err != nil || !reflect.DeepEqual(p, Principal{Name: "key:ci-bot", Role: Operator}) || !p.Can(Replay) || p.Can(Move) || p.Can(Dev) {
		t.Fatalf("authenticate: %+v %v", p, err)
	}
	var stored string
	k.DB.QueryRow(`SELECT secret_hash FROM api_keys WHERE id = ?`, key.ID).Scan(&stored)
	if _, secret, _ := ParseToken(token); stored != SecretHash(secret) || stored == secret {
		t.Fatalf("stored %q: not the secret's hash", stored)
	}
	for _, c := range []struct {
		name, role string
		exp        *int64
		want       string
	}{
		{"ci-bot", "viewer", nil, "KEY_EXISTS"}, {"Upper", "viewer", nil, "INVALID_KEY_NAME"}, {"", "viewer", nil, "INVALID_KEY_NAME"},
		{"x", "root", nil, "INVALID_ROLE"}, {"x", "viewer", new(int64), "INVALID_EXPIRY"},
		{"x", "viewer", func() *int64 { n := now.UnixMilli(); return &n }(), "INVALID_EXPIRY"}, // now is not the future
	} {
		if _, _, err := k.Create(ctx, KeySpec{Name: c.name, Role: Role(c.role), ExpiresAt: c.exp}, "admin"); code(err) != c.want {
			t.Errorf("create %q %q: %v, want %s", c.name, c.role, err, c.want)
		}
	}
	_, _, other, _ := NewToken()
	tampered := token[:len(token)-2] + "AA"
	for tok, want := range map[string]string{other: "INVALID_KEY", tampered: "INVALID_KEY", "rdk_x": "MALFORMED_KEY", "": "MALFORMED_KEY"} {
		if _, err := k.Authenticate(ctx, tok); code(err) != want && !(tok == tampered && tampered == token) {
			t.Errorf("authenticate %.30q: %v, want %s", tok, err, want)
		}
	}
	if r, err := k.Revoke(ctx, key.ID, "admin"); err != nil || r.RevokedAt == nil || *r.RevokedBy != "admin" {
		t.Fatalf("revoke: %+v %v", r, err)
	}
	if _, err := k.Authenticate(ctx, token); code(err) != "KEY_REVOKED" {
		t.Fatalf("after revoke: %v", err)
	}
	if _, err := k.Revoke(ctx, "0123456789abcdef", "admin"); code(err) != "KEY_NOT_FOUND" {
		t.Fatalf("revoke unknown: %v", err)
	}
	exp := now.Add(time.Hour).UnixMilli()
	_, short, _ := k.Create(ctx, KeySpec{Name: "short", Role: Viewer, ExpiresAt: &exp}, "admin")
	now = now.Add(time.Hour)
	if _, err := k.Authenticate(ctx, short); code(err) != "KEY_EXPIRED" {
		t.Fatalf("expired: %v", err)
	}
}

// A Keys without CacheFor keeps a row for DefaultCacheFor: a key revoked
// by another isolate is still accepted just before, refused from then on;
// and the cache holds at most maxCached rows, however many ids are tried.
func TestKeysCacheDefaultsAndBound(t *testing.T) {
	ctx := context.Background()
	now := time.UnixMilli(1_800_000_000_000)
	db := sqlitetest.New(t)
	clk := func() time.Time { return now }
	a, b := &Keys{DB: db, Now: clk}, &Keys{DB: db, Now: clk}
	key, token, err := a.Create(ctx, KeySpec{Name: "k", Role: Viewer}, "admin")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Authenticate(ctx, token); err != nil {
		t.Fatal(err)
	}
	a.Revoke(ctx, key.ID, "admin")
	now = now.Add(DefaultCacheFor - time.Millisecond)
	if _, err := b.Authenticate(ctx, token); err != nil {
		t.Fatalf("within DefaultCacheFor of its read: %v, want the cached row", err)
	}
	now = now.Add(time.Millisecond)
	if _, err := b.Authenticate(ctx, token); code(err) != "KEY_REVOKED" {
		t.Fatalf("DefaultCacheFor after its read: %v, want KEY_REVOKED", err)
	}
	for i := range 3 * maxCached {
		b.Authenticate(ctx, fmt.Sprintf("rdk_%016x_%s", i, strings.Repeat("A", 43)))
		if n := len(b.cache); n > maxCached {
			t.Fatalf("%d rows cached after %d ids, at most %d", n, i+1, maxCached)
		}
	}
}

// isolate is one Keys of the model test (an isolate of the worker) and
// what the model expects it to hold: per key id, the time it read the row
// and whether the row was revoked then, and the last_used_at it holds.
type isolate struct {
	k        *Keys
	readAt   map[string]time.Time
	revoked  map[string]bool
	lastUsed map[string]int64
}

type modelKey struct {
	id, token string
	role      Role
	pipelines []string // nil: every pipeline
	expiresAt int64    // 0: never
	revoked   bool
	lastUsed  int64 // 0: never (D1's last_used_at)
}

// TestKeysMatchAModel interleaves creations, revocations (in either of two
// isolates), authentications with good, tampered and unknown tokens,
// listings and clock steps, seeded, and checks each answer and D1's rows
// against a model: a revocation acts at once in its isolate and within
// CacheFor in the other, a row is read at most once per CacheFor per
// isolate, and last_used_at is written at most once a minute.
func TestKeysMatchAModel(t *testing.T) {
	var stale, refused, touched int
	for seed := uint64(1); seed <= 60; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			s, r, w := runKeysModel(t, seed, 400)
			stale, refused, touched = stale+s, refused+r, touched+w
		})
	}
	// The interleavings reached what the model is about.
	if stale == 0 || refused == 0 || touched == 0 {
		t.Fatalf("%d revoked keys accepted from a cache, %d refused, %d last_used_at writes: an interleaving the seeds never reach", stale, refused, touched)
	}
}

// runKeysModel runs one seed, and counts the revoked keys an isolate still
// accepted from its cache, the ones refused, and the last_used_at writes.
func runKeysModel(t *testing.T, seed uint64, steps int) (stale, refused, touched int) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(seed, 46))
	db := sqlitetest.New(t)
	now := time.UnixMilli(1_800_000_000_000)
	clk := func() time.Time { return now }
	iso := []*isolate{}
	for range 2 {
		iso = append(iso, &isolate{k: &Keys{DB: db, Now: clk, CacheFor: 30 * time.Second}, readAt: map[string]time.Time{}, revoked: map[string]bool{}, lastUsed: map[string]int64{}})
	}
	keys := map[string]*modelKey{} // by name
	names := []string{"a", "b", "c"}
	for step := 0; step < steps; step++ {
		x := iso[rng.IntN(2)]
		switch op := rng.IntN(6); op {
		case 0: // create
			name := names[rng.IntN(len(names))]
			role := Roles[rng.IntN(len(Roles))]
			var exp *int64
			if rng.IntN(3) == 0 {
				e := now.Add(time.Duration(1+rng.IntN(4)) * 30 * time.Second).UnixMilli() // on the steps' boundaries
				exp = &e
			}
			var pipelines []string // every pipeline, one, or two
			if n := rng.IntN(3); n > 0 {
				pipelines = []string{"beers", "orders"}[:n]
			}
			key, token, err := x.k.Create(ctx, KeySpec{Name: name, Role: role, Pipelines: pipelines, ExpiresAt: exp}, "admin")
			if _, taken := keys[name]; taken != (code(err) == "KEY_EXISTS") || (!taken && err != nil) {
				t.Fatalf("step %d: create %q: %v (taken %v)", step, name, err, taken)
			}
			if err == nil {
				m := &modelKey{id: key.ID, token: token, role: role, pipelines: pipelines}
				if exp != nil {
					m.expiresAt = *exp
				}
				keys[name] = m
			}
		case 1: // revoke
			if m := pick(rng, keys); m != nil {
				if _, err := x.k.Revoke(ctx, m.id, "admin"); err != nil {
					t.Fatalf("step %d: revoke: %v", step, err)
				}
				m.revoked = true
				delete(x.readAt, m.id)
			}
		case 2, 3: // authenticate a key's token, or a tampered one
			m := pick(rng, keys)
			if m == nil {
				continue
			}
			token := m.token
			if op == 3 {
				token = m.token[:len(m.token)-1] + string("AQgw"[rng.IntN(4)])
			}
			p, err := x.k.Authenticate(ctx, token)
			used := m.lastUsed
			want := x.expect(m, token == m.token, now)
			if code(err) != want || (want == "" && (p.Role != m.role || !slices.Equal(p.Pipelines, m.pipelines) || p.Scoped() != (m.pipelines != nil))) {
				t.Fatalf("step %d: authenticate %s (tampered %v): %+v %v, want %q", step, m.id, token != m.token, p, err, want)
			}
			switch {
			case want == "" && m.revoked:
				stale++
			case want == "KEY_REVOKED":
				refused++
			}
			if m.lastUsed != used {
				touched++
			}
		case 4: // clock
			// Steps that land on the boundaries (the cache's time, a
			// minute, an expiry in whole seconds) as well as between them.
			steps := []time.Duration{0, time.Millisecond, time.Second, 30 * time.Second, time.Minute, time.Duration(rng.IntN(40_000)) * time.Millisecond}
			now = now.Add(steps[rng.IntN(len(steps))])
		case 5: // list
			listed, err := x.k.List(ctx)
			if err != nil || len(listed) != len(keys) {
				t.Fatalf("step %d: list %d keys, want %d: %v", step, len(listed), len(keys), err)
			}
			for _, l := range listed {
				m := keys[l.Name]
				if m == nil || l.ID != m.id || l.Role != m.role || !slices.Equal(l.Pipelines, m.pipelines) || (l.RevokedAt != nil) != m.revoked || ptr(l.LastUsedAt) != m.lastUsed {
					t.Fatalf("step %d: listed %+v, model %+v", step, l, m)
				}
			}
		}
	}
	return stale, refused, touched
}

// expect is what x answers for m's token (good: the secret is m's) at now,
// updating the model of x's cache and of D1's last_used_at.
func (x *isolate) expect(m *modelKey, good bool, now time.Time) string {
	at, ok := x.readAt[m.id]
	if !ok || now.Sub(at) >= x.k.CacheFor || now.Before(at) {
		x.readAt[m.id], x.revoked[m.id], x.lastUsed[m.id] = now, m.revoked, m.lastUsed
	}
	switch {
	case !good:
		return "INVALID_KEY"
	case x.revoked[m.id]:
		return "KEY_REVOKED"
	case m.expiresAt != 0 && now.UnixMilli() >= m.expiresAt:
		return "KEY_EXPIRED"
	}
	ms := now.UnixMilli()
	if x.lastUsed[m.id] == 0 || ms-x.lastUsed[m.id] >= time.Minute.Milliseconds() {
		x.lastUsed[m.id] = ms
		if m.lastUsed == 0 || m.lastUsed <= ms-time.Minute.Milliseconds() {
			m.lastUsed = ms
		}
	}
	return ""
}

func pick(rng *rand.Rand, keys map[string]*modelKey) *modelKey {
	var names []string
	for n := range keys {
		names = append(names, n)
	}
	if len(names) == 0 {
		return nil
	}
	slices.Sort(names)
	return keys[names[rng.IntN(len(names))]]
}

func ptr(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}

func TestValidNameIsThePattern(t *testing.T) {
	pattern := regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,63}$`) // the API's pattern (openapi.json)
	names := []string{"", "a", "0", "ci-bot", "a.b_c-d", ".a", "-a", "_a", "A", "a b", "é", "a\x00", strings.Repeat("a", 64), strings.Repeat("a", 65), "a/b"}
	for b := 0; b < 256; b++ { // every byte first and later
		c := string([]byte{byte(b)})
		names = append(names, c, "a"+c, "a"+c+"b")
	}
	for _, s := range names {
		if got, want := validName(s), pattern.MatchString(s); got != want {
			t.Errorf("validName(%q) = %v, the pattern says %v", s, got, want)
		}
	}
}

// A key names 1 to MaxKeyPipelines pipelines, or none for every pipeline;
// its stored pipelines read back as they were, and a value that is not a
// list of names (null, an empty list, broken JSON) as no pipeline at all.
func TestKeyPipelinesBounds(t *testing.T) {
	now := time.UnixMilli(1_800_000_000_000).UnixMilli()
	names := func(n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprintf("p%d", i)
		}
		return out
	}
	for _, c := range []struct {
		ps []string
		ok bool
	}{{nil, true}, {names(0), false}, {names(1), true}, {names(MaxKeyPipelines), true}, {names(MaxKeyPipelines + 1), false}} {
		if err := (KeySpec{Name: "k", Role: Viewer, Pipelines: c.ps}).check(now); (err == nil) != c.ok {
			t.Errorf("%d pipelines (nil %v): %v", len(c.ps), c.ps == nil, err)
		}
	}
	for col, want := range map[string]string{`["a","b"]`: "a,b", `null`: "", `[]`: "", `not json`: "", `{"a":1}`: ""} {
		got := pipelinesOf(sql.NullString{String: col, Valid: true})
		if got == nil || strings.Join(got, ",") != want {
			t.Errorf("pipelinesOf(%s) = %#v, want the pipelines %q (never nil: every pipeline)", col, got, want)
		}
	}
	if got := pipelinesOf(sql.NullString{}); got != nil {
		t.Errorf("pipelinesOf(NULL) = %#v, want nil (every pipeline)", got)
	}
}

// last_used_at is written when the row's is a minute old or more, not a
// millisecond before.
func TestLastUsedBoundary(t *testing.T) {
	ctx := context.Background()
	now := time.UnixMilli(1_800_000_000_000)
	k := &Keys{DB: sqlitetest.New(t), Now: func() time.Time { return now }, CacheFor: time.Hour}
	_, token, _ := k.Create(ctx, KeySpec{Name: "k", Role: Viewer}, "admin")
	used := func() int64 {
		var ms int64
		k.DB.QueryRow(`SELECT last_used_at FROM api_keys`).Scan(&ms)
		return ms
	}
	mustAuth := func() {
		if _, err := k.Authenticate(ctx, token); err != nil {
			t.Fatal(err)
		}
	}
	mustAuth()
	first := used()
	now = now.Add(time.Minute - time.Millisecond)
	mustAuth()
	if used() != first {
		t.Fatalf("written again %d ms later", used()-first)
	}
	now = now.Add(time.Millisecond)
	mustAuth()
	if used() != first+time.Minute.Milliseconds() {
		t.Fatalf("a minute later: %d, want %d", used(), first+time.Minute.Milliseconds())
	}
}

// Admit is asked before each read of a row the isolate does not hold, and
// a refusal reads nothing: 429 RATE_LIMITED; rows it holds need no leave.
func TestAdmitBoundsTheReadsOfUnknownKeys(t *testing.T) {
	ctx := context.Background()
	now := time.UnixMilli(1_800_000_000_000)
	leave := 2
	asked := 0
	k := &Keys{DB: sqlitetest.New(t), Now: func() time.Time { return now }, Admit: func(time.Time) bool { asked++; leave--; return leave >= 0 }}
	_, token, _ := k.Create(ctx, KeySpec{Name: "k", Role: Viewer}, "admin")
	if _, err := k.Authenticate(ctx, token); err != nil || asked != 1 {
		t.Fatalf("first: %v, asked %d", err, asked)
	}
	if _, err := k.Authenticate(ctx, token); err != nil || asked != 1 {
		t.Fatalf("a held row: %v, asked %d", err, asked)
	}
	bogus := "rdk_0123456789abcdef_" + strings.Repeat("A", 43)
	if _, err := k.Authenticate(ctx, bogus); code(err) != "INVALID_KEY" {
		t.Fatalf("unknown: %v", err)
	}
	other := "rdk_fedcba9876543210_" + strings.Repeat("A", 43)
	if _, err := k.Authenticate(ctx, other); code(err) != "RATE_LIMITED" || asked != 3 {
		t.Fatalf("past the leave: %v, asked %d", err, asked)
	}
	if _, err := k.Authenticate(ctx, token); err != nil {
		t.Fatalf("a held row past the leave: %v", err)
	}
}
