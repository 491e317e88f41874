-- 0037: failure groups become incidents, and alerts go through an outbox
-- (alerts/, dlq/upkeep/incidents.go, issue 48).
-- dlq_signatures.incident: open | acknowledged | resolved | ignored |
-- snoozed; incident_seq counts its openings (a reopen adds one: the stable
-- event ids use it); resolved_at, snoozed_until, owner and note go with it.
-- Groups with nothing pending or replaying start resolved at their last
-- failure: a migration sends no event. One row written per such group,
-- once; the partial indexes take an entry only while a group is in their
-- state (the cron's work: a handful, whatever the backlog).
ALTER TABLE dlq_signatures ADD COLUMN incident TEXT NOT NULL DEFAULT 'open';
ALTER TABLE dlq_signatures ADD COLUMN incident_seq INTEGER NOT NULL DEFAULT 1;
ALTER TABLE dlq_signatures ADD COLUMN incident_at INTEGER;
ALTER TABLE dlq_signatures ADD COLUMN resolved_at INTEGER;
ALTER TABLE dlq_signatures ADD COLUMN snoozed_until INTEGER;
ALTER TABLE dlq_signatures ADD COLUMN owner TEXT;
ALTER TABLE dlq_signatures ADD COLUMN note TEXT;
UPDATE dlq_signatures SET incident = 'resolved', resolved_at = last_seen, incident_at = last_seen
WHERE pending = 0 AND replaying = 0;
-- GET /admin/dlq/groups?incident=: by status, newest first.
CREATE INDEX IF NOT EXISTS idx_dlq_signatures_incident ON dlq_signatures(incident, first_seen DESC, signature);
-- Resolved groups that failed again since (the cron reopens them).
CREATE INDEX IF NOT EXISTS idx_dlq_signatures_recurred ON dlq_signatures(signature) WHERE incident = 'resolved' AND last_seen > resolved_at;
-- Open groups with nothing left to do (the cron resolves them once quiet).
CREATE INDEX IF NOT EXISTS idx_dlq_signatures_quiet ON dlq_signatures(last_seen)
    WHERE incident IN ('open', 'acknowledged') AND pending = 0 AND replaying = 0 AND announced_at IS NOT NULL;
-- Snoozed groups (the cron opens them again when the snooze ends).
CREATE INDEX IF NOT EXISTS idx_dlq_signatures_snoozed ON dlq_signatures(snoozed_until) WHERE incident = 'snoozed';

-- replay_tasks.told_state: the state a task.paused or task.finished event
-- was recorded for (dlq/upkeep/task_events.go); tasks that ended before
-- this migration count as told (one row written per such task, once).
ALTER TABLE replay_tasks ADD COLUMN told_state TEXT;
UPDATE replay_tasks SET told_state = state WHERE state IN ('paused', 'done', 'cancelled');
CREATE INDEX IF NOT EXISTS idx_replay_tasks_untold ON replay_tasks(updated_at)
    WHERE state IN ('paused', 'done', 'cancelled') AND told_state IS NOT state;

-- alert_events: every event redrive told (alerts.Event), by its stable id:
-- writing an occurrence twice is one event. body is the JSON sent.
CREATE TABLE IF NOT EXISTS alert_events (
    id TEXT PRIMARY KEY,                    -- evt_ + 24 hex digits
    type TEXT NOT NULL,
    dedup_key TEXT NOT NULL,                -- the incident's key (redrive:group:<sig>, ...)
    pipeline TEXT,
    severity TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    body TEXT NOT NULL
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS idx_alert_events_created ON alert_events(created_at DESC, id);

-- alert_deliveries: the outbox, one row per event and channel, written in
-- the batch that wrote the event. The alerts job delivers the due ones in
-- seq order, one channel and incident at a time in order, with backoff.
CREATE TABLE IF NOT EXISTS alert_deliveries (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    event_id TEXT NOT NULL,
    channel TEXT NOT NULL,
    dedup_key TEXT NOT NULL,
    state TEXT NOT NULL DEFAULT 'pending',  -- pending | sent | failed | skipped
    attempts INTEGER NOT NULL DEFAULT 0,
    next_at INTEGER NOT NULL,               -- due time; a claim moves it a lease ahead
    last_status INTEGER,                    -- the receiver's last HTTP status
    last_error TEXT,
    done_at INTEGER,
    UNIQUE (event_id, channel)
);
CREATE INDEX IF NOT EXISTS idx_alert_deliveries_due ON alert_deliveries(next_at) WHERE state = 'pending';
CREATE INDEX IF NOT EXISTS idx_alert_deliveries_order ON alert_deliveries(channel, dedup_key, seq) WHERE state = 'pending';
CREATE INDEX IF NOT EXISTS idx_alert_deliveries_failed ON alert_deliveries(done_at) WHERE state = 'failed';

-- alert_channels: a configured channel's state; a receiver that answered
-- 410 Gone is disabled until an admin enables it again.
CREATE TABLE IF NOT EXISTS alert_channels (
    name TEXT PRIMARY KEY,
    disabled_at INTEGER,
    reason TEXT
) WITHOUT ROWID;
