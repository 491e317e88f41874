-- 0035: named API keys (access/). A key's token is shown once, at its
-- creation; only the hash of its secret is kept. A revoked key keeps its
-- row (and its name) for the audit log.
CREATE TABLE IF NOT EXISTS api_keys (
    id TEXT PRIMARY KEY,            -- the token's public part (16 hex digits)
    name TEXT NOT NULL UNIQUE,
    role TEXT NOT NULL,             -- viewer | operator | admin | reporter
    secret_hash TEXT NOT NULL,      -- hex(SHA-256(secret))
    created_by TEXT NOT NULL,       -- the principal that created it
    created_at INTEGER NOT NULL,
    expires_at INTEGER,             -- NULL: never
    revoked_at INTEGER,
    revoked_by TEXT,
    last_used_at INTEGER            -- written at most once a minute
) WITHOUT ROWID;
