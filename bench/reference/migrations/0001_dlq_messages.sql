-- ============================================================================
-- dlq_messages: Dead Letter Queue message storage for admin inspection
-- ============================================================================
-- Stores messages that failed enrichment after exhausting retries
-- Enables persistent history, filtering, and manual replay/acknowledgment
CREATE TABLE IF NOT EXISTS dlq_messages (
    id INTEGER PRIMARY KEY AUTOINCREMENT,

    -- Message identification
    message_id TEXT NOT NULL UNIQUE,       -- Original queue message ID

    -- Beer data from message body
    beer_id TEXT NOT NULL,
    beer_name TEXT,
    brewer TEXT,

    -- Failure metadata
    failed_at INTEGER NOT NULL,            -- Timestamp when message hit DLQ (ms)
    failure_count INTEGER DEFAULT 3,       -- Number of retries before DLQ (from message.attempts)
    failure_reason TEXT,                   -- Last error message if captured

    -- Source tracking
    source_queue TEXT NOT NULL DEFAULT 'beer-enrichment',  -- Queue that sent to DLQ

    -- Status tracking
    -- pending: awaiting action
    -- replaying: optimistic status during replay (prevents race conditions)
    -- replayed: successfully sent back to main queue
    -- acknowledged: manually dismissed
    status TEXT NOT NULL DEFAULT 'pending',

    -- Replay tracking
    replay_count INTEGER DEFAULT 0,        -- Number of times message has been replayed

    -- Action timestamps (NULL until action taken)
    replayed_at INTEGER,                   -- When message was replayed to main queue
    acknowledged_at INTEGER,               -- When message was acknowledged/dismissed

    -- Full message for debugging
    raw_message TEXT                       -- JSON stringified original message body
);

-- Indexes for common query patterns
CREATE INDEX IF NOT EXISTS idx_dlq_status ON dlq_messages(status);
CREATE INDEX IF NOT EXISTS idx_dlq_beer_id ON dlq_messages(beer_id);
CREATE INDEX IF NOT EXISTS idx_dlq_failed_at ON dlq_messages(failed_at);
CREATE INDEX IF NOT EXISTS idx_dlq_status_failed ON dlq_messages(status, failed_at);

-- Indexes for cleanup queries (important for efficient DELETE operations)
CREATE INDEX IF NOT EXISTS idx_dlq_acknowledged_at ON dlq_messages(acknowledged_at);
CREATE INDEX IF NOT EXISTS idx_dlq_replayed_at ON dlq_messages(replayed_at);

-- Index for cursor-based pagination
CREATE INDEX IF NOT EXISTS idx_dlq_status_failed_id ON dlq_messages(status, failed_at, id);
