-- 0003: enrichment: beers (source of truth), the provider's circuit breaker and daily quota.

-- beers: the source of truth for enrichment. A beer is registered by
-- POST /admin/enrich (or by the first queue message that names it) and moves
-- pending -> queued -> enriched | not_found, or -> failed after its last attempt.
CREATE TABLE IF NOT EXISTS beers (
    beer_id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    brewer TEXT NOT NULL DEFAULT '',
    status TEXT NOT NULL DEFAULT 'pending', -- pending | queued | enriched | not_found | failed
    abv REAL,                               -- percent, 0..70, set when enriched
    confidence REAL,                        -- trust in abv, 0..1 (provider answers: 0.7)
    source TEXT,                            -- where abv came from, e.g. 'llm:sonar'
    attempts INTEGER NOT NULL DEFAULT 0,    -- deliveries processed for this beer (all messages)
    next_attempt_at INTEGER,                -- when the pending retry is due (NULL when none)
    last_error TEXT,                        -- class and short text of the last failed attempt
    queued_at INTEGER,                      -- last time a message was sent for it
    enriched_at INTEGER,                    -- when it reached enriched or not_found
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS idx_beers_status_next ON beers(status, next_attempt_at);

-- enrichment_breaker: the provider's circuit breaker, shared by every call
-- (each runs in a fresh Go instance). One row, name 'provider'.
CREATE TABLE IF NOT EXISTS enrichment_breaker (
    name TEXT PRIMARY KEY,
    state TEXT NOT NULL DEFAULT 'closed',   -- closed | open | half_open
    previous_state TEXT NOT NULL DEFAULT 'closed', -- state before the latest update (tells transitions)
    failures INTEGER NOT NULL DEFAULT 0,    -- consecutive transient failures
    open_until INTEGER,                     -- end of the cooldown while open
    probe_until INTEGER,                    -- lease of the half-open probe
    updated_at INTEGER NOT NULL
);

-- enrichment_quota: provider calls reserved per UTC day (DAILY_ENRICHMENT_LIMIT).
CREATE TABLE IF NOT EXISTS enrichment_quota (
    day TEXT PRIMARY KEY,                   -- UTC date, YYYY-MM-DD
    used INTEGER NOT NULL DEFAULT 0,
    updated_at INTEGER NOT NULL
);
