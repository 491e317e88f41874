-- 0001: the initial schema (see schema.sql for the whole current schema).

-- dlq_messages: every message that reached a dead-letter queue (the original
-- worker's schema, every column kept as written there, plus redrive's additions below them).
CREATE TABLE IF NOT EXISTS dlq_messages (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    message_id TEXT NOT NULL UNIQUE,        -- queue message id of the first failure
    beer_id TEXT NOT NULL,                  -- '__unparseable__' for poison bodies
    beer_name TEXT,
    brewer TEXT,
    failed_at INTEGER NOT NULL,             -- latest time the message hit the DLQ
    failure_count INTEGER DEFAULT 3,        -- attempts made on the source queue
    failure_reason TEXT,                    -- class and short text of the last error
    source_queue TEXT NOT NULL DEFAULT 'beer-enrichment',  -- queue it failed on
    status TEXT NOT NULL DEFAULT 'pending', -- pending | replaying | replayed | acknowledged
    replay_count INTEGER DEFAULT 0,
    replayed_at INTEGER,
    acknowledged_at INTEGER,
    raw_message TEXT,                       -- the body as received (binary as base64)
    -- redrive additions
    last_message_id TEXT NOT NULL DEFAULT '', -- id of the latest delivery stored: tells a redelivery from a new failure
    first_failed_at INTEGER NOT NULL DEFAULT 0,
    failure_class TEXT,                     -- transient | permanent | rate_limited | poison | unknown
    raw_encoding TEXT NOT NULL DEFAULT 'text', -- text | base64
    replaying_at INTEGER,                   -- when a replay claimed the row (rescue uses it)
    acknowledged_note TEXT,
    updated_at INTEGER NOT NULL DEFAULT 0
);

CREATE INDEX IF NOT EXISTS idx_dlq_status ON dlq_messages(status);
CREATE INDEX IF NOT EXISTS idx_dlq_beer_id ON dlq_messages(beer_id);
CREATE INDEX IF NOT EXISTS idx_dlq_failed_at ON dlq_messages(failed_at);
CREATE INDEX IF NOT EXISTS idx_dlq_status_failed ON dlq_messages(status, failed_at);
CREATE INDEX IF NOT EXISTS idx_dlq_acknowledged_at ON dlq_messages(acknowledged_at);
CREATE INDEX IF NOT EXISTS idx_dlq_replayed_at ON dlq_messages(replayed_at);
CREATE INDEX IF NOT EXISTS idx_dlq_status_failed_id ON dlq_messages(status, failed_at, id);

-- message_attempts: the last failed attempt of a message on its source queue,
-- written by the consumer before it calls Retry, read (and removed) by the DLQ
-- consumer for failure_count and failure_reason.
CREATE TABLE IF NOT EXISTS message_attempts (
    message_id TEXT PRIMARY KEY,
    queue TEXT NOT NULL,
    attempt INTEGER NOT NULL,
    error_class TEXT NOT NULL,
    error TEXT NOT NULL,
    recorded_at INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS idx_attempts_recorded_at ON message_attempts(recorded_at);

-- job_runs: the last run of every scheduled job.
CREATE TABLE IF NOT EXISTS job_runs (
    job TEXT PRIMARY KEY,
    last_run_at INTEGER NOT NULL,           -- scheduled time of the run
    last_duration_ms INTEGER NOT NULL,
    last_ok INTEGER NOT NULL,               -- 1 ok, 0 failed
    last_error TEXT,
    last_summary TEXT,                      -- JSON
    runs INTEGER NOT NULL DEFAULT 0,
    failures INTEGER NOT NULL DEFAULT 0
);

-- counters: monotonic event counters for /admin/metrics.
CREATE TABLE IF NOT EXISTS counters (
    name TEXT PRIMARY KEY,
    value INTEGER NOT NULL DEFAULT 0
);
