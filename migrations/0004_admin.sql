-- 0004: the admin API (issue 4): the audit log of replays and acknowledges,
-- and the indexes behind the list filters and /admin/dlq/stats.

-- admin_audit: one row per replay or acknowledge request (dry runs included),
-- written before the action ('started') and completed after it.
CREATE TABLE IF NOT EXISTS admin_audit (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    at INTEGER NOT NULL,                    -- when the request started (epoch ms)
    action TEXT NOT NULL,                   -- replay | acknowledge
    request_id TEXT NOT NULL,
    key_fingerprint TEXT NOT NULL,          -- handlers.KeyFingerprint of X-API-Key, never the key
    dry_run INTEGER NOT NULL DEFAULT 0,
    ids TEXT,                               -- JSON array of requested row ids (ids form)
    filter TEXT,                            -- JSON object (bulk form)
    note TEXT,                              -- acknowledge note
    counts TEXT,                            -- JSON object: the response's counts
    outcome TEXT NOT NULL,                  -- started | ok | partial | failed | error
    error TEXT,
    finished_at INTEGER
);
CREATE INDEX IF NOT EXISTS idx_admin_audit_action ON admin_audit(action, id);
CREATE INDEX IF NOT EXISTS idx_admin_audit_at ON admin_audit(at);

-- dlq_messages: indexes for the list filters and the stats (each stat reads
-- one index instead of the table; see dlq/stats.go).
CREATE INDEX IF NOT EXISTS idx_dlq_status_source_failed ON dlq_messages(status, source_queue, failed_at);
CREATE INDEX IF NOT EXISTS idx_dlq_status_brewer ON dlq_messages(status, brewer);
CREATE INDEX IF NOT EXISTS idx_dlq_status_reason ON dlq_messages(status, failure_reason);
CREATE INDEX IF NOT EXISTS idx_dlq_status_replay_count ON dlq_messages(status, replay_count);
CREATE INDEX IF NOT EXISTS idx_dlq_status_replayed_at ON dlq_messages(status, replayed_at);
CREATE INDEX IF NOT EXISTS idx_dlq_status_acknowledged_at ON dlq_messages(status, acknowledged_at);
