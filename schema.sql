-- redrive: the whole D1 schema. migrations/ holds the same DDL as numbered
-- steps for `wrangler d1 migrations apply`; a test checks that both agree.
-- Times are epoch milliseconds.

-- dlq_messages: every message that reached a dead-letter queue (the columns
-- of the original worker, bench/reference, with its beer_id, beer_name and
-- brewer named for every pipeline by migrations/0034, plus redrive's
-- additions below them).
CREATE TABLE IF NOT EXISTS dlq_messages (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    message_id TEXT NOT NULL UNIQUE,        -- queue message id of the first failure
    row_key TEXT NOT NULL,                  -- the key (its pipeline's key pointer); '__unparseable__' for poison bodies
    label_1 TEXT,                           -- the pipeline's first label
    label_2 TEXT,                           -- its second (dlq_tally counts pending rows by it)
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
    updated_at INTEGER NOT NULL DEFAULT 0,
    -- migrations/0010 (NULL in rows captured before it; see there)
    content_type TEXT,                      -- json | text | bytes | v8: how the message was sent
    body_hash TEXT,                         -- replay lineage key: hex(SHA-256(content_type || "\n" || text form)[:16])
    -- migrations/0012
    tally_seq INTEGER NOT NULL DEFAULT 0,   -- incremented by statements that keep dlq_tally/dlq_activity themselves (the triggers skip those rows)
    -- migrations/0015 (NULL in rows captured before it)
    history TEXT,                           -- JSON array of failed attempts: the first 5 and the newest 45
    history_dropped INTEGER NOT NULL DEFAULT 0, -- attempts left out of history
    signature TEXT,                         -- dlq_signatures.signature of the latest failure
    version TEXT,                           -- worker version the latest failure happened on
    -- migrations/0021
    body_edited INTEGER,                    -- 1: body_hash is the hash of an edited body sent by POST /admin/dlq/{id}/replay, not of raw_message
    moved_version TEXT                      -- the version (json_array(updated_at, status, replay_count)) of the row in the database it was imported from; release deletes the old row only while it is still that version
);

-- (migrations/0008 and 0012 dropped indexes no query needed; see there.)
CREATE INDEX IF NOT EXISTS idx_dlq_beer_id ON dlq_messages(row_key); -- named before migrations/0034
CREATE INDEX IF NOT EXISTS idx_dlq_status_failed ON dlq_messages(status, failed_at);

-- message_attempts: the last failed attempt of a message on its source queue,
-- written by the consumer before it calls Retry, read (and removed) by the DLQ
-- consumer for failure_count and failure_reason.
CREATE TABLE IF NOT EXISTS message_attempts (
    message_id TEXT NOT NULL,
    queue TEXT NOT NULL,
    attempt INTEGER NOT NULL,
    error_class TEXT NOT NULL,
    error TEXT NOT NULL,
    recorded_at INTEGER NOT NULL,
    -- migrations/0015
    history TEXT,                           -- JSON array, one object per failed attempt
    signature TEXT,                         -- signature of the latest attempt (dlq/signature.go)
    signature_text TEXT,                    -- its normalised reason
    version TEXT,                           -- worker version of the latest attempt
    -- migrations/0027
    history_dropped INTEGER NOT NULL DEFAULT 0, -- attempts left out of history
    -- migrations/0033: one record per queue and message id (a report names
    -- its queue and writes only that queue's records)
    PRIMARY KEY (queue, message_id)
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

-- beers: the source of truth for enrichment. A beer is registered by
-- POST /admin/enrich (or by the first queue message that names it) and moves
-- pending -> queued -> enriched | not_found, or -> failed after its last attempt.
CREATE TABLE IF NOT EXISTS beers (
    beer_id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    brewer TEXT NOT NULL DEFAULT '',
    status TEXT NOT NULL DEFAULT 'pending', -- pending | queued | waiting | enriched | not_found | failed
    abv REAL,                               -- percent, 0..70, set when enriched
    confidence REAL,                        -- trust in abv, 0..1 (provider answers: 0.7)
    source TEXT,                            -- where abv came from, e.g. 'llm:sonar'
    attempts INTEGER NOT NULL DEFAULT 0,    -- real attempts of the current episode, across deferrals (migrations/0022)
    next_attempt_at INTEGER,                -- when the pending retry is due (NULL when none)
    last_error TEXT,                        -- class and short text of the last failed attempt
    queued_at INTEGER,                      -- last time a message was sent for it
    enriched_at INTEGER,                    -- when it reached enriched or not_found
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    attempt_key TEXT,                       -- message id recording the episode's attempts (migrations/0022)
    waiting TEXT,                           -- why a waiting beer waits: breaker_open | auth | config
    waits INTEGER NOT NULL DEFAULT 0        -- consecutive deferrals of its work
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
    updated_at INTEGER NOT NULL,
    cause TEXT,                             -- why it opened: transient | auth (NULL while closed; migrations/0010)
    reopens INTEGER NOT NULL DEFAULT 0      -- consecutive failed probes since it last closed (migrations/0022)
);

-- enrichment_quota: provider calls reserved per UTC day (DAILY_ENRICHMENT_LIMIT).
CREATE TABLE IF NOT EXISTS enrichment_quota (
    day TEXT PRIMARY KEY,                   -- UTC date, YYYY-MM-DD
    used INTEGER NOT NULL DEFAULT 0,
    updated_at INTEGER NOT NULL
);

-- admin_audit: one row per replay or acknowledge request (dry runs included),
-- written before the action ('started') and completed after it.
CREATE TABLE IF NOT EXISTS admin_audit (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    at INTEGER NOT NULL,                    -- when the request started (epoch ms)
    action TEXT NOT NULL,                   -- replay | acknowledge
    request_id TEXT NOT NULL,
    key_fingerprint TEXT NOT NULL,          -- handlers.Auth.KeyFingerprint of X-API-Key (keyed hash), never the key
    dry_run INTEGER NOT NULL DEFAULT 0,
    ids TEXT,                               -- JSON array of requested row ids (ids form)
    filter TEXT,                            -- JSON object (bulk form)
    note TEXT,                              -- acknowledge note
    counts TEXT,                            -- JSON object: the response's counts
    outcome TEXT NOT NULL,                  -- started | ok | partial | failed | error
    error TEXT,                             -- JSON object {code, message} when outcome is error
    finished_at INTEGER,
    principal TEXT,                         -- who acted: key:<name>, access:<email>, admin (0036)
    source_queue TEXT                       -- the one queue the entry concerns; NULL: several or unknown (0036)
);
CREATE INDEX IF NOT EXISTS idx_admin_audit_action ON admin_audit(action, id);
CREATE INDEX IF NOT EXISTS idx_admin_audit_at ON admin_audit(at);
CREATE INDEX IF NOT EXISTS idx_admin_audit_principal ON admin_audit(principal, id) WHERE principal IS NOT NULL;
CREATE INDEX IF NOT EXISTS idx_admin_audit_queue ON admin_audit(source_queue, id) WHERE source_queue IS NOT NULL;

-- dlq_messages: partial indexes, each holding only the rows its queries ask
-- for (migrations/0012): a capture writes none of them, an acknowledge one,
-- a replay one. Repeat failures (stats, alerts); retention by action time.
CREATE INDEX IF NOT EXISTS idx_dlq_pending_replay_count ON dlq_messages(replay_count)
    WHERE status = 'pending' AND replay_count > 0;
CREATE INDEX IF NOT EXISTS idx_dlq_status_replayed_at ON dlq_messages(status, replayed_at) WHERE status = 'replayed';
CREATE INDEX IF NOT EXISTS idx_dlq_status_acknowledged_at ON dlq_messages(status, acknowledged_at) WHERE status = 'acknowledged';
-- Replay lineage (dlq/store.go): rows a replay claimed, by body. Rows enter it
-- when claimed, so capture pays no index write for body_hash.
CREATE INDEX IF NOT EXISTS idx_dlq_replay_lineage ON dlq_messages(source_queue, body_hash)
    WHERE status = 'replaying' OR replay_count > 0;

-- Counts kept instead of counted (migrations/0012, docs/costs.md "What it costs"):
-- dlq_tally gives by_status, by_source_queue, top_failing_brewers, the list's
-- total_count and the metrics gauges; dlq_activity gives last_24h and
-- dlq_captured_total. The triggers below keep them right for every change of
-- a row; acknowledge and replay keep them in their own batch (tally_seq).
CREATE TABLE IF NOT EXISTS dlq_tally (
    status TEXT NOT NULL,
    source_queue TEXT NOT NULL,
    label_key TEXT NOT NULL,    -- pending rows: '=' || label_2 ('' when label_2 is NULL); other statuses: ''
    n INTEGER NOT NULL,
    PRIMARY KEY (status, source_queue, label_key)
) WITHOUT ROWID;

CREATE TABLE IF NOT EXISTS dlq_activity (
    kind TEXT NOT NULL,         -- failed | replayed | acknowledged
    hour INTEGER NOT NULL,      -- the time (failed_at, replayed_at, acknowledged_at) / 3600000; -1: archive
    n INTEGER NOT NULL,         -- rows whose time falls in the hour (replayed, acknowledged: rows in that status)
    events INTEGER NOT NULL DEFAULT 0, -- failed: messages captured in the hour (dlq_captured_total is their sum)
    -- migrations/0030 ('': events from before it not attributed to a queue)
    source_queue TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (kind, hour, source_queue)
) WITHOUT ROWID;

-- D1 rows read and written per operation, added by each isolate (at most
-- once a minute) as one JSON object {op: [statements, rows_read, rows_written]}.
CREATE TABLE IF NOT EXISTS d1_usage (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    ops TEXT NOT NULL
);

-- The highest dlq_messages id before the running capture's INSERT: the rows
-- above it are the ones it inserted (migrations/0029, dlq/store.go).
CREATE TABLE IF NOT EXISTS capture_mark (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    last_id INTEGER NOT NULL
);

-- An import's earliest action time: the database's next dlq_retention run
-- looks again from there (migrations/0031, dlq/retention_rescans.go).
CREATE TABLE IF NOT EXISTS retention_rescans (
    seq INTEGER PRIMARY KEY,
    since INTEGER NOT NULL
);

-- A new row: its counts, its hour of failure (and of its action, for rows
-- inserted already acknowledged or replayed). A capture's rows (tally_seq 1)
-- are counted by the capture's own batch instead (migrations/0029).
CREATE TRIGGER IF NOT EXISTS dlq_messages_inserted AFTER INSERT ON dlq_messages
WHEN NEW.tally_seq = 0
BEGIN
    INSERT INTO dlq_tally(status, source_queue, label_key, n)
        VALUES (NEW.status, NEW.source_queue, CASE WHEN NEW.status = 'pending' AND NEW.label_2 IS NOT NULL THEN '=' || NEW.label_2 ELSE '' END , 1)
        ON CONFLICT(status, source_queue, label_key) DO UPDATE SET n = n + 1;
    INSERT INTO dlq_activity(kind, hour, source_queue, n, events) VALUES ('failed', CAST(NEW.failed_at AS INTEGER) / 3600000, NEW.source_queue, 1, 1)
        ON CONFLICT(kind, hour, source_queue) DO UPDATE SET n = n + 1, events = events + 1;
    INSERT INTO dlq_activity(kind, hour, source_queue, n, events)
        SELECT NEW.status, CAST( CASE NEW.status WHEN 'replayed' THEN NEW.replayed_at ELSE NEW.acknowledged_at END AS INTEGER) / 3600000, NEW.source_queue, 1, 0
        WHERE CASE NEW.status WHEN 'replayed' THEN NEW.replayed_at WHEN 'acknowledged' THEN NEW.acknowledged_at END IS NOT NULL
        ON CONFLICT(kind, hour, source_queue) DO UPDATE SET n = n + 1;
END;

-- Every new row: the poison counter and the removal of the attempt record it used.
CREATE TRIGGER IF NOT EXISTS dlq_messages_inserted_always AFTER INSERT ON dlq_messages
BEGIN
    INSERT INTO counters(name, value) SELECT 'dlq_poison_total', 1 WHERE NEW.failure_class = 'poison'
        ON CONFLICT(name) DO UPDATE SET value = value + 1;
    DELETE FROM message_attempts WHERE queue = NEW.source_queue AND message_id = NEW.last_message_id;
END;

-- A deleted pending or replaying row (retention deletes only acknowledged and
-- replayed rows, which the dlq_tally job recounts).
CREATE TRIGGER IF NOT EXISTS dlq_messages_deleted AFTER DELETE ON dlq_messages
WHEN OLD.status IN ('pending', 'replaying')
BEGIN
    UPDATE dlq_tally SET n = n - 1 WHERE status = OLD.status AND source_queue = OLD.source_queue
        AND label_key = CASE WHEN OLD.status = 'pending' AND OLD.label_2 IS NOT NULL THEN '=' || OLD.label_2 ELSE '' END;
    UPDATE dlq_activity SET n = n - 1 WHERE kind = 'failed' AND hour = CAST(OLD.failed_at AS INTEGER) / 3600000
        AND source_queue = OLD.source_queue;
END;

-- A row that changed status, source queue or label_2 (unless its statement
-- keeps the counts itself: tally_seq changed).
CREATE TRIGGER IF NOT EXISTS dlq_messages_moved AFTER UPDATE OF status, source_queue, label_2 ON dlq_messages
WHEN NEW.tally_seq = OLD.tally_seq AND (NEW.status IS NOT OLD.status OR NEW.source_queue IS NOT OLD.source_queue
    OR CASE WHEN NEW.status = 'pending' AND NEW.label_2 IS NOT NULL THEN '=' || NEW.label_2 ELSE '' END
        IS NOT CASE WHEN OLD.status = 'pending' AND OLD.label_2 IS NOT NULL THEN '=' || OLD.label_2 ELSE '' END)
BEGIN
    UPDATE dlq_tally SET n = n - 1 WHERE status = OLD.status AND source_queue = OLD.source_queue
        AND label_key = CASE WHEN OLD.status = 'pending' AND OLD.label_2 IS NOT NULL THEN '=' || OLD.label_2 ELSE '' END;
    INSERT INTO dlq_tally(status, source_queue, label_key, n)
        VALUES (NEW.status, NEW.source_queue, CASE WHEN NEW.status = 'pending' AND NEW.label_2 IS NOT NULL THEN '=' || NEW.label_2 ELSE '' END, 1)
        ON CONFLICT(status, source_queue, label_key) DO UPDATE SET n = n + 1;
END;

-- A row that failed again (a replayed message's repeat failure updates its
-- row, dlq/store.go) or whose failure time changed: its hour of failure
-- moves, the capture is counted and its attempt record removed.
CREATE TRIGGER IF NOT EXISTS dlq_messages_failed_again AFTER UPDATE OF failed_at, last_message_id ON dlq_messages
WHEN NEW.tally_seq = OLD.tally_seq AND (NEW.failed_at IS NOT OLD.failed_at OR NEW.last_message_id IS NOT OLD.last_message_id)
BEGIN
    UPDATE dlq_activity SET n = n - 1
        WHERE NEW.failed_at IS NOT OLD.failed_at AND kind = 'failed' AND hour = CAST(OLD.failed_at AS INTEGER) / 3600000
            AND source_queue = OLD.source_queue;
    INSERT INTO dlq_activity(kind, hour, source_queue, n, events)
        VALUES ('failed', CAST(NEW.failed_at AS INTEGER) / 3600000, NEW.source_queue, NEW.failed_at IS NOT OLD.failed_at, NEW.last_message_id IS NOT OLD.last_message_id)
        ON CONFLICT(kind, hour, source_queue) DO UPDATE SET n = n + excluded.n, events = events + excluded.events;
    DELETE FROM message_attempts WHERE NEW.last_message_id IS NOT OLD.last_message_id AND queue = NEW.source_queue
        AND message_id = NEW.last_message_id;
END;

-- A row that became (or stopped being) replayed or acknowledged, or whose
-- action time changed: its hour of action.
CREATE TRIGGER IF NOT EXISTS dlq_messages_acted AFTER UPDATE OF status, replayed_at, acknowledged_at ON dlq_messages
WHEN NEW.tally_seq = OLD.tally_seq AND (NEW.status IS NOT OLD.status
    OR CASE NEW.status WHEN 'replayed' THEN NEW.replayed_at WHEN 'acknowledged' THEN NEW.acknowledged_at END
        IS NOT CASE OLD.status WHEN 'replayed' THEN OLD.replayed_at WHEN 'acknowledged' THEN OLD.acknowledged_at END )
BEGIN
    UPDATE dlq_activity SET n = n - 1 WHERE kind = OLD.status AND OLD.status IN ('replayed', 'acknowledged')
        AND hour = CAST( CASE OLD.status WHEN 'replayed' THEN OLD.replayed_at ELSE OLD.acknowledged_at END AS INTEGER) / 3600000
        AND source_queue = OLD.source_queue;
    INSERT INTO dlq_activity(kind, hour, source_queue, n, events)
        SELECT NEW.status, CAST( CASE NEW.status WHEN 'replayed' THEN NEW.replayed_at ELSE NEW.acknowledged_at END AS INTEGER) / 3600000, NEW.source_queue, 1, 0
        WHERE CASE NEW.status WHEN 'replayed' THEN NEW.replayed_at WHEN 'acknowledged' THEN NEW.acknowledged_at END IS NOT NULL
        ON CONFLICT(kind, hour, source_queue) DO UPDATE SET n = n + 1;
END;

-- A row moved to another source queue by hand (the statements of redrive
-- never change it): its hours move with it, unless the triggers above
-- moved them already (a new failure time, a new status or action time).
CREATE TRIGGER IF NOT EXISTS dlq_messages_requeued AFTER UPDATE OF source_queue ON dlq_messages
WHEN NEW.tally_seq = OLD.tally_seq AND NEW.source_queue IS NOT OLD.source_queue
BEGIN
    UPDATE dlq_activity SET n = n - 1 WHERE NEW.failed_at IS OLD.failed_at
        AND kind = 'failed' AND hour = CAST(OLD.failed_at AS INTEGER) / 3600000 AND source_queue = OLD.source_queue;
    INSERT INTO dlq_activity(kind, hour, source_queue, n, events)
        SELECT 'failed', CAST(NEW.failed_at AS INTEGER) / 3600000, NEW.source_queue, 1, 0 WHERE NEW.failed_at IS OLD.failed_at
        ON CONFLICT(kind, hour, source_queue) DO UPDATE SET n = n + 1;
    UPDATE dlq_activity SET n = n - 1 WHERE NEW.status IS OLD.status AND OLD.status IN ('replayed', 'acknowledged')
        AND CASE OLD.status WHEN 'replayed' THEN NEW.replayed_at IS OLD.replayed_at ELSE NEW.acknowledged_at IS OLD.acknowledged_at END
        AND kind = OLD.status AND source_queue = OLD.source_queue
        AND hour = CAST( CASE OLD.status WHEN 'replayed' THEN OLD.replayed_at ELSE OLD.acknowledged_at END AS INTEGER) / 3600000;
    INSERT INTO dlq_activity(kind, hour, source_queue, n, events)
        SELECT OLD.status, CAST( CASE OLD.status WHEN 'replayed' THEN OLD.replayed_at ELSE OLD.acknowledged_at END AS INTEGER) / 3600000, NEW.source_queue, 1, 0
        WHERE NEW.status IS OLD.status AND OLD.status IN ('replayed', 'acknowledged')
            AND CASE OLD.status WHEN 'replayed' THEN NEW.replayed_at IS OLD.replayed_at ELSE NEW.acknowledged_at IS OLD.acknowledged_at END
            AND CASE OLD.status WHEN 'replayed' THEN OLD.replayed_at ELSE OLD.acknowledged_at END IS NOT NULL
        ON CONFLICT(kind, hour, source_queue) DO UPDATE SET n = n + 1;
END;

-- Rows acknowledged or replayed outside redrive's own statements (which
-- count them in their batch) and repeat failures that overtook their
-- replay's final update (dlq/store.go).
CREATE TRIGGER IF NOT EXISTS dlq_messages_acknowledged AFTER UPDATE OF status ON dlq_messages
WHEN NEW.tally_seq = OLD.tally_seq AND NEW.status = 'acknowledged' AND OLD.status <> 'acknowledged'
BEGIN
    INSERT INTO counters(name, value) VALUES ('dlq_acknowledged_total', 1)
        ON CONFLICT(name) DO UPDATE SET value = value + 1;
END;

CREATE TRIGGER IF NOT EXISTS dlq_messages_replayed AFTER UPDATE OF replay_count ON dlq_messages
WHEN NEW.tally_seq = OLD.tally_seq AND COALESCE(NEW.replay_count, 0) > COALESCE(OLD.replay_count, 0)
BEGIN
    INSERT INTO counters(name, value) VALUES ('dlq_replayed_total', NEW.replay_count - COALESCE(OLD.replay_count, 0))
        ON CONFLICT(name) DO UPDATE SET value = value + excluded.value;
END;

-- replay_tasks: durable replay tasks (dlq/replay_task.go, docs/admin-api.md
-- "Replay tasks"): a filter replayed at a rate by the 5-minute cron, each step
-- sending what the rate allows until the next one, with staggered delays.
CREATE TABLE IF NOT EXISTS replay_tasks (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    state TEXT NOT NULL,                    -- canary | running | paused | done | cancelled
    filter TEXT NOT NULL,                   -- the normalized dlq.Filter, JSON
    rate_per_minute INTEGER NOT NULL,
    delay_seconds INTEGER NOT NULL DEFAULT 0,
    destination TEXT,                       -- NULL: each row's source_queue
    matched INTEGER NOT NULL,               -- replayable pending rows matching at creation
    sent INTEGER NOT NULL DEFAULT 0,        -- rows sent
    send_failed INTEGER NOT NULL DEFAULT 0, -- rows whose send failed (back to pending, not retried by the task)
    slot_origin INTEGER NOT NULL,           -- delivery time (ms) of slot slot_base; slot k: origin + ceil((k - base) * 60 / rate) s
    slot_base INTEGER NOT NULL DEFAULT 0,
    pos_failed_at INTEGER NOT NULL,         -- scan position, newest failure first: rows before it are done
    pos_id INTEGER NOT NULL,
    steps INTEGER NOT NULL DEFAULT 0,       -- steps taken; a step holds the task by this number
    step_at INTEGER,                        -- when the step holding the task started (NULL: none)
    last_step_at INTEGER,
    finished_at INTEGER,
    created_by TEXT NOT NULL,               -- key fingerprint
    request_id TEXT NOT NULL,
    canary TEXT,                            -- JSON {size, min_success_ratio, observe_minutes}; NULL: none (0021)
    canary_result TEXT,                     -- JSON {succeeded, failed_again, ratio, passed, reasons}; NULL while undecided
    principal TEXT,                         -- who created it (0036)
    told_state TEXT                         -- the state its task.paused / task.finished event told (0037)
);
-- Tasks whose pause or end was not told yet (0037; a handful).
CREATE INDEX IF NOT EXISTS idx_replay_tasks_untold ON replay_tasks(updated_at)
    WHERE state IN ('paused', 'done', 'cancelled') AND told_state IS NOT state;
-- The cron reads only the tasks it may advance.
CREATE INDEX IF NOT EXISTS idx_replay_tasks_active ON replay_tasks(id) WHERE state IN ('running', 'canary');

-- replay_task_rows: every row a task sent and when it asked the queue to
-- deliver it: a row is sent at most once per task (the step's claim skips
-- the rows here), written in the replay's settle batch.
CREATE TABLE IF NOT EXISTS replay_task_rows (
    task_id INTEGER NOT NULL,
    dlq_id INTEGER NOT NULL,
    deliver_at INTEGER NOT NULL,            -- send time + the delay asked for (ms)
    PRIMARY KEY (task_id, dlq_id)
) WITHOUT ROWID;

-- dlq_signatures: one row per failure signature ever seen, with the rows of
-- each status kept as rows change (capture counts its new rows in its own
-- batch, one row written per signature and batch; acknowledge and replay in
-- theirs; the triggers below everything else), never counted per call.
CREATE TABLE IF NOT EXISTS dlq_signatures (
    signature TEXT PRIMARY KEY,             -- hex(SHA-256(class || "\n" || text)[:8])
    class TEXT NOT NULL,
    text TEXT NOT NULL,                     -- the normalised reason
    pending INTEGER NOT NULL DEFAULT 0,
    replaying INTEGER NOT NULL DEFAULT 0,
    replayed INTEGER NOT NULL DEFAULT 0,
    acknowledged INTEGER NOT NULL DEFAULT 0,
    first_seen INTEGER NOT NULL,
    last_seen INTEGER NOT NULL,
    versions TEXT NOT NULL DEFAULT '[]',    -- JSON array, newest first, at most 10
    sample_ids TEXT NOT NULL DEFAULT '[]',  -- JSON array of the first 5 row ids
    announced_at INTEGER,                   -- when dlq_new_failure_signature was sent (NULL: not yet)
    -- migrations/0028
    announce_claimed_at INTEGER,            -- when a run claimed it to send it (a lease; NULL: none)
    -- migrations/0030
    source_queue TEXT NOT NULL DEFAULT '',  -- the queue of its failures (signatures of other queues than the beer queue hash it)
    -- migrations/0037: the group as an incident (dlq/upkeep/incidents.go)
    incident TEXT NOT NULL DEFAULT 'open',  -- open | acknowledged | resolved | ignored | snoozed
    incident_seq INTEGER NOT NULL DEFAULT 1, -- its openings (a reopen adds one)
    incident_at INTEGER,                    -- when incident last changed
    resolved_at INTEGER,                    -- when it was last resolved
    snoozed_until INTEGER,                  -- a snoozed group opens again then
    owner TEXT,
    note TEXT
) WITHOUT ROWID;
-- GET /admin/dlq/groups pages by pending rows.
CREATE INDEX IF NOT EXISTS idx_dlq_signatures_pending ON dlq_signatures(pending DESC, signature);
-- ... or newest first, stable while paging (migrations/0028).
CREATE INDEX IF NOT EXISTS idx_dlq_signatures_first_seen ON dlq_signatures(first_seen DESC, signature);
-- ... of one pipeline (migrations/0030).
CREATE INDEX IF NOT EXISTS idx_dlq_signatures_queue_pending ON dlq_signatures(source_queue, pending DESC, signature);
CREATE INDEX IF NOT EXISTS idx_dlq_signatures_queue_first_seen ON dlq_signatures(source_queue, first_seen DESC, signature);
-- The alert's work: signatures not announced yet (a handful at any time).
CREATE INDEX IF NOT EXISTS idx_dlq_signatures_unannounced ON dlq_signatures(first_seen) WHERE announced_at IS NULL;
-- GET /admin/dlq/groups?incident=: by status, newest first.
CREATE INDEX IF NOT EXISTS idx_dlq_signatures_incident ON dlq_signatures(incident, first_seen DESC, signature);
-- Resolved groups that failed again since (the cron reopens them).
CREATE INDEX IF NOT EXISTS idx_dlq_signatures_recurred ON dlq_signatures(signature) WHERE incident = 'resolved' AND last_seen > resolved_at;
-- Open groups with nothing left to do (the cron resolves them once quiet).
CREATE INDEX IF NOT EXISTS idx_dlq_signatures_quiet ON dlq_signatures(last_seen)
    WHERE incident IN ('open', 'acknowledged') AND pending = 0 AND replaying = 0 AND announced_at IS NOT NULL;
-- Snoozed groups (the cron opens them again when the snooze ends).
CREATE INDEX IF NOT EXISTS idx_dlq_signatures_snoozed ON dlq_signatures(snoozed_until) WHERE incident = 'snoozed';

-- A row that changed status or signature outside the statements that keep
-- the counts themselves (tally_seq unchanged): a repeat failure of a
-- replayed message, a rescue, SQL typed by hand. One row written when the
-- signature stays.
CREATE TRIGGER IF NOT EXISTS dlq_messages_signature_moved AFTER UPDATE OF status, signature ON dlq_messages
WHEN NEW.tally_seq = OLD.tally_seq AND (NEW.status IS NOT OLD.status OR NEW.signature IS NOT OLD.signature)
BEGIN
    UPDATE dlq_signatures SET
        pending = pending + (signature IS NEW.signature AND NEW.status = 'pending') - (signature IS OLD.signature AND OLD.status = 'pending'),
        replaying = replaying + (signature IS NEW.signature AND NEW.status = 'replaying') - (signature IS OLD.signature AND OLD.status = 'replaying'),
        replayed = replayed + (signature IS NEW.signature AND NEW.status = 'replayed') - (signature IS OLD.signature AND OLD.status = 'replayed'),
        acknowledged = acknowledged + (signature IS NEW.signature AND NEW.status = 'acknowledged') - (signature IS OLD.signature AND OLD.status = 'acknowledged'),
        last_seen = CASE WHEN signature IS NEW.signature THEN max(last_seen, NEW.failed_at) ELSE last_seen END,
        versions = CASE WHEN signature IS NOT NEW.signature OR NEW.version IS NULL
                OR EXISTS (SELECT 1 FROM json_each(versions) WHERE value = NEW.version) THEN versions
            ELSE (SELECT json_group_array(v) FROM (SELECT v FROM (SELECT NEW.version AS v, -1 AS k
                UNION ALL SELECT value, key FROM json_each(versions)) ORDER BY k LIMIT 10)) END,
        sample_ids = CASE WHEN signature IS NEW.signature AND json_array_length(sample_ids) < 5
                AND NOT EXISTS (SELECT 1 FROM json_each(sample_ids) WHERE value = NEW.id)
            THEN json_insert(sample_ids, '$[#]', NEW.id) ELSE sample_ids END
    WHERE signature IN (OLD.signature, NEW.signature);
END;

-- A deleted pending or replaying row (retention deletes only acknowledged
-- and replayed rows; the daily dlq_tally job counts those again).
CREATE TRIGGER IF NOT EXISTS dlq_messages_signature_deleted AFTER DELETE ON dlq_messages
WHEN OLD.status IN ('pending', 'replaying') AND OLD.signature IS NOT NULL
BEGIN
    UPDATE dlq_signatures SET pending = pending - (OLD.status = 'pending'), replaying = replaying - (OLD.status = 'replaying')
    WHERE signature = OLD.signature;
END;

-- api_keys: named API keys (migrations/0035, access/). A key's token is
-- shown once, at its creation; only the hash of its secret is kept. A
-- revoked key keeps its row (and its name) for the audit log.
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
    last_used_at INTEGER,           -- written at most once a minute
    pipelines TEXT                  -- JSON array of pipeline names; NULL: every pipeline (0036)
) WITHOUT ROWID;

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
