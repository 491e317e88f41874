-- 0005: scheduled work (alerts; see schema.sql for the whole current schema).

-- alert_state: one row per alert condition, so that a cron every few minutes
-- notifies once when a condition starts, once when it resolves, and reminds
-- after ALERT_REMINDER_MINUTES while it keeps firing. Every transition is
-- claimed by one conditional statement (overlapping runs never send twice).
CREATE TABLE IF NOT EXISTS alert_state (
    name TEXT PRIMARY KEY,                  -- condition name, e.g. dlq_pending_high
    firing INTEGER NOT NULL DEFAULT 0,      -- 1 firing, 0 resolved
    since INTEGER,                          -- when it started firing (NULL when resolved)
    last_notified_at INTEGER,               -- last start or reminder notification
    resolved_at INTEGER,                    -- when it last resolved
    detail TEXT,                            -- what the condition reported last
    notifications INTEGER NOT NULL DEFAULT 0, -- webhook messages claimed so far
    updated_at INTEGER NOT NULL DEFAULT 0
);
